/* SPDX-License-Identifier: Apache-2.0 */
/* Communicators over a transport of the caller's (kiln_comm_impl, kiln/spmd.h): one process
 * per OS process, the primitives forwarded. */
#include <string.h>

#include "backend/comm.h"
#include "base/alloc.h"
#include "base/ctx_internal.h"

typedef struct custom {
    kiln_comm base;
    kiln_comm_impl impl;
} custom;

static kiln_status custom_all_gather(kiln_ctx *cx, kiln_comm *c, int32_t process,
                                     const int32_t *members, int32_t n_members, const void *send,
                                     size_t nbytes, void *recv, const char *what, uint64_t sig) {
    (void)process;
    const custom *u = (const custom *)c;
    return u->impl.all_gather(u->impl.user, cx, members, n_members, send, nbytes, recv, what, sig);
}

/* An all-to-all from the transport's, or else from its all-gather of every chunk. */
static kiln_status custom_all_to_all(kiln_ctx *cx, kiln_comm *c, int32_t process,
                                     const int32_t *members, int32_t n_members, const void *send,
                                     size_t chunk_bytes, void *recv, const char *what,
                                     uint64_t sig) {
    const custom *u = (const custom *)c;
    if (u->impl.all_to_all)
        return u->impl.all_to_all(u->impl.user, cx, members, n_members, send, chunk_bytes, recv,
                                  what, sig);
    int32_t index = -1;
    for (int32_t k = 0; k < n_members; k++)
        if (members[k] == process) index = k;
    size_t row = (size_t)n_members * chunk_bytes, total = (size_t)n_members * row;
    unsigned char *all = kiln__alloc(cx, total ? total : 1, 64, what);
    if (!all) return KILN_RESOURCE_EXHAUSTED;
    kiln_status s =
        u->impl.all_gather(u->impl.user, cx, members, n_members, send, row, all, what, sig);
    for (int32_t k = 0; k < n_members && s == KILN_OK && index >= 0; k++)
        memcpy((unsigned char *)recv + (size_t)k * chunk_bytes,
               all + (size_t)k * row + (size_t)index * chunk_bytes, chunk_bytes);
    kiln__free(cx, all, total ? total : 1);
    return s;
}

static kiln_status custom_permute(kiln_ctx *cx, kiln_comm *c, int32_t process, int32_t to,
                                  int32_t from, const void *send, size_t nbytes, void *recv,
                                  const char *what, uint64_t sig) {
    (void)process;
    const custom *u = (const custom *)c;
    return u->impl.permute(u->impl.user, cx, to, from, send, nbytes, recv, what, sig);
}

/* One process here: nothing to tell, nothing to forget. */
static void custom_abort(kiln_comm *c, int32_t process, const char *message) {
    (void)c, (void)process, (void)message;
}
static void custom_reset(kiln_comm *c) { (void)c; }

static void custom_destroy(kiln_comm *c) {
    custom *u = (custom *)c;
    if (u->impl.destroy) u->impl.destroy(u->impl.user);
    kiln_allocator a = c->allocator;
    kiln__raw_free(&a, u, sizeof *u);
}

static const kiln__comm_ops custom_ops = {
    .kind = "custom",
    .all_gather = custom_all_gather,
    .all_to_all = custom_all_to_all,
    .permute = custom_permute,
    .abort = custom_abort,
    .reset = custom_reset,
    .destroy = custom_destroy,
};

kiln_status kiln_comm_create(kiln_ctx *cx, const kiln_comm_options *options,
                             const kiln_comm_impl *impl, kiln_comm **out_comm) {
    static const char fn[] = "kiln_comm_create";
    if (out_comm) *out_comm = NULL;
    if (!cx) return KILN_INVALID_ARGUMENT;
    kiln_status s = KILN_OK;
    kiln_comm_options o;
    if (!impl)
        s = kiln__null_argument(cx, fn, "impl");
    else if (!out_comm)
        s = kiln__null_argument(cx, fn, "out_comm");
    else if (impl->struct_size < sizeof *impl || !impl->all_gather || !impl->permute || !impl->kind)
        s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: impl needs struct_size, kind, all_gather and permute", fn);
    else if ((s = kiln__comm_options(cx, fn, options, &o)) == KILN_OK &&
             (impl->self < 0 || impl->self >= o.num_replicas * o.num_partitions))
        s = kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                               "%s: impl->self is %d; the grid has %d processes", fn,
                               (int)impl->self, (int)(o.num_replicas * o.num_partitions));
    custom *u = s == KILN_OK ? kiln__alloc(cx, sizeof *u, _Alignof(custom), fn) : NULL;
    if (!u) {
        if (impl && impl->destroy) impl->destroy(impl->user);
        return s != KILN_OK ? s : KILN_RESOURCE_EXHAUSTED;
    }
    memset(u, 0, sizeof *u);
    u->impl = *impl;
    kiln__comm_init(cx, &u->base, &custom_ops, &o, impl->self);
    u->base.kind = impl->kind;
    *out_comm = &u->base;
    return KILN_OK;
}
