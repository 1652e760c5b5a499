/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_exe_call: checks a call against the executable's convention, decides which donated
 * buffers the backend may reuse, runs the backend's executable on the executable's device,
 * and kills the donated arguments. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "backend/registry.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"
#include "runtime/exe.h"

static const char call_fn[] = "kiln_exe_call";

/* Per-argument scratch up to this many arguments lives on the stack. */
#define FIXED_ARGS 32

/* " ('params.w1')" for a named argument, "" otherwise. */
static const char *arg_label(const kiln_exe *exe, int32_t i, char *buf, size_t cap) {
    buf[0] = '\0';
    if (exe->arg_names[i]) snprintf(buf, cap, " ('%s')", exe->arg_names[i]);
    return buf;
}

static bool same_device(kiln_device a, kiln_device b) { return a.type == b.type && a.id == b.id; }

static kiln_status check_args(kiln_ctx *cx, const kiln_exe *exe, kiln_tensor *const *args) {
    char what[48], label[96];
    for (int32_t i = 0; i < exe->n_args; i++) {
        const kiln_tensor *t = args[i];
        const kiln__type *want = &exe->arg_types[i];
        /* The common case first, without formatting any message. */
        if (t && !t->trace && !t->dead && t->dtype == want->dtype &&
            kiln_shape_equal(&t->shape, &want->shape) && t->storage &&
            same_device(t->storage->device, exe->device))
            continue;
        snprintf(what, sizeof what, "args[%d]", (int)i);
        if (!t) return kiln__null_argument(cx, call_fn, what);
        if (t->trace || t->dead) {
            char fn[96];
            snprintf(fn, sizeof fn, "%s: %s%s", call_fn, what,
                     arg_label(exe, i, label, sizeof label));
            return t->trace ? kiln__traced_error(cx, fn) : kiln__dead_error(cx, fn, t);
        }
        if (t->dtype != want->dtype || !kiln_shape_equal(&t->shape, &want->shape)) {
            char have_text[KILN__TYPE_TEXT], want_text[KILN__TYPE_TEXT];
            kiln__type have = {.dtype = t->dtype, .shape = t->shape};
            return kiln_ctx_set_error(
                cx, KILN_INVALID_ARGUMENT, "%s: %s%s has type %s; expected %s", call_fn, what,
                arg_label(exe, i, label, sizeof label), kiln__type_text(&have, have_text),
                kiln__type_text(want, want_text));
        }
        char have_dev[48], want_dev[48];
        return kiln_ctx_set_error(
            cx, KILN_INVALID_ARGUMENT,
            "%s: %s%s is on device %s, not on the executable's device %s (move it with "
            "kiln_tensor_to_device)",
            call_fn, what, arg_label(exe, i, label, sizeof label),
            t->storage ? kiln__device_text(t->storage->device, have_dev, sizeof have_dev) : "none",
            kiln__device_text(exe->device, want_dev, sizeof want_dev));
    }
    for (int32_t i = 0; i < exe->n_args && exe->n_donated; i++) {
        if (!exe->donated[i]) continue;
        for (int32_t j = 0; j < exe->n_args; j++) {
            if (j == i || args[j] != args[i]) continue;
            if (exe->donated[j])
                return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                          "%s: args[%d] and args[%d] are the same tensor, donated "
                                          "twice",
                                          call_fn, (int)(i < j ? i : j), (int)(i < j ? j : i));
            return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                      "%s: args[%d] is donated, and the same tensor is also "
                                      "args[%d]",
                                      call_fn, (int)i, (int)j);
        }
    }
    return KILN_OK;
}

/* The messages donated arguments die with, and which of their buffers a result may take
 * (msgs and reusable come in NULL and false):
 * one no other tensor shares, unless it is the caller's memory that kiln may only read
 * (kiln_tensor_wrap_host). */
static kiln_status donation(kiln_ctx *cx, const kiln_exe *exe, kiln_tensor *const *args,
                            char **msgs, bool *reusable) {
    char text[320], label[200];
    for (int32_t i = 0; i < exe->n_args; i++) {
        if (!exe->donated[i]) continue;
        reusable[i] = !args[i]->storage->read_only &&
                      atomic_load_explicit(&args[i]->storage->refs, memory_order_acquire) == 1;
        if (exe->arg_names[i])
            snprintf(label, sizeof label, "'%s'", exe->arg_names[i]);
        else
            snprintf(label, sizeof label, "args[%d]", (int)i);
        snprintf(text, sizeof text, "tensor was donated to '%s' as %s", exe->name, label);
        if (!(msgs[i] = kiln__dead_message_new(cx, args[i], text))) return KILN_RESOURCE_EXHAUSTED;
    }
    return KILN_OK;
}

kiln_status kiln_exe_call_n(kiln_ctx *cx, kiln_exe *exe, kiln_tensor *const *args, int32_t n_args,
                            kiln_tensor **out_results, int32_t n_results) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!exe) return kiln__null_argument(cx, call_fn, "exe");
    if (n_results > 0 && !out_results) return kiln__null_argument(cx, call_fn, "out_results");
    for (int32_t r = 0; r < n_results; r++)
        out_results[r] = NULL;
    if (n_results != exe->n_results)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: room for %d results given; the executable returns %d",
                                  call_fn, (int)n_results, (int)exe->n_results);
    if (n_args != exe->n_args)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "%s: %d arguments given; the executable takes %d", call_fn,
                                  (int)n_args, (int)exe->n_args);
    if (n_args > 0 && !args) return kiln__null_argument(cx, call_fn, "args");
    kiln_status s = check_args(cx, exe, args);
    if (s != KILN_OK) return s;

    char *fixed_msgs[FIXED_ARGS];
    bool fixed_reusable[FIXED_ARGS];
    char **msgs = fixed_msgs;
    bool *reusable = fixed_reusable;
    size_t msg_bytes = (size_t)n_args * sizeof *msgs, reuse_bytes = (size_t)n_args;
    if (n_args > FIXED_ARGS) {
        msgs = kiln__alloc(cx, msg_bytes, _Alignof(char *), call_fn);
        reusable = msgs ? kiln__alloc(cx, reuse_bytes, 1, call_fn) : NULL;
        if (!reusable) {
            if (msgs) kiln__free(cx, msgs, msg_bytes);
            return KILN_RESOURCE_EXHAUSTED;
        }
    }
    for (int32_t i = 0; i < n_args; i++) {
        msgs[i] = NULL;
        reusable[i] = false;
    }
    s = exe->n_donated ? donation(cx, exe, args, msgs, reusable) : KILN_OK;
    if (s == KILN_OK) {
        /* What the backend makes goes on the executable's device. */
        kiln_device saved = kiln__ctx_use_device(cx, exe->device);
        kiln__execute_args a = {.args = args,
                                .n_args = n_args,
                                .reusable = reusable,
                                .results = out_results,
                                .n_results = n_results};
        kiln__event *done = NULL;
        bool started = false;
        a.started = &started;
        s = exe->backend->execute(cx, exe->impl, &a, &done);
        kiln_status w = kiln__event_finish(cx, done);
        if (s == KILN_OK) s = w;
        kiln__ctx_use_device(cx, saved);
        if (s != KILN_OK) {
            for (int32_t r = 0; r < n_results; r++) {
                kiln_tensor_release(out_results[r]);
                out_results[r] = NULL;
            }
            if (kiln_ctx_status(cx) == KILN_OK)
                kiln_ctx_set_error(cx, s, "%s: '%s' failed (%s)", call_fn, exe->name,
                                   kiln_status_name(s));
        }
        /* Donated arguments die once the run has begun: their buffers may hold results. */
        for (int32_t i = 0; i < n_args; i++) {
            if (!exe->donated[i]) continue;
            if (started || s == KILN_OK)
                kiln__tensor_kill(args[i], msgs[i]);
            else
                kiln__dead_message_free(args[i], msgs[i]);
            msgs[i] = NULL;
        }
    } else {
        for (int32_t i = 0; i < n_args; i++)
            kiln__dead_message_free(args[i], msgs[i]);
    }
    if (msgs != fixed_msgs) {
        kiln__free(cx, msgs, msg_bytes);
        kiln__free(cx, reusable, reuse_bytes);
    }
    return s;
}

kiln_status kiln_exe_call(kiln_ctx *cx, kiln_exe *exe, kiln_tensor *const *args,
                          kiln_tensor **out_results) {
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!exe) return kiln__null_argument(cx, call_fn, "exe");
    return kiln_exe_call_n(cx, exe, args, exe->n_args, out_results, exe->n_results);
}
