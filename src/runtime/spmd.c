/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_exe_call_spmd (kiln/spmd.h): an executable called on every process of a local
 * communicator at once. Each process's results are made in its own ctx; the process hands
 * them over unowned, and the caller's innermost scope adopts them once all have run. */
#include <string.h>

#include "base/scope.h"
#include "core/tensor_internal.h"
#include "kiln/spmd.h"

typedef struct spmd_call {
    kiln_exe *exe;
    kiln_tensor *const *args;
    kiln_tensor **results;
    int32_t n_args, n_results;
} spmd_call;

static kiln_status call_one(kiln_ctx *cx, int32_t process, void *user) {
    const spmd_call *c = user;
    kiln_tensor **out = c->results + (size_t)process * (size_t)c->n_results;
    kiln_status s = kiln_exe_call(cx, c->exe, c->args + (size_t)process * (size_t)c->n_args, out);
    if (s != KILN_OK) return s;
    for (int32_t j = 0; j < c->n_results; j++)
        kiln__owned_unlink(&out[j]->owned); /* the scope's reference is now the caller's */
    return KILN_OK;
}

kiln_status kiln_exe_call_spmd(kiln_ctx *cx, kiln_exe *exe, kiln_comm *comm,
                               kiln_tensor *const *args, kiln_tensor **out_results) {
    static const char fn[] = "kiln_exe_call_spmd";
    if (!cx) return KILN_INVALID_ARGUMENT;
    if (!exe) return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: exe is NULL", fn);
    if (!comm) return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: comm is NULL", fn);
    if (!out_results)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: out_results is NULL", fn);
    kiln_exe_info info;
    kiln_status s = kiln_exe_info_get(cx, exe, &info);
    if (s != KILN_OK) return s;
    int32_t n = kiln_comm_num_replicas(comm) * kiln_comm_num_partitions(comm);
    size_t n_out = (size_t)n * (size_t)info.n_results;
    memset(out_results, 0, n_out * sizeof *out_results);
    if (!args && info.n_args > 0)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT, "%s: args is NULL", fn);
    spmd_call c = {.exe = exe,
                   .args = args,
                   .results = out_results,
                   .n_args = info.n_args,
                   .n_results = info.n_results};
    s = kiln_spmd_run(cx, comm, call_one, &c);
    for (size_t i = 0; i < n_out; i++) {
        if (!out_results[i]) continue;
        if (s == KILN_OK) {
            kiln__scope_adopt(cx, &out_results[i]->owned);
        } else { /* a process that succeeded when another failed: all or nothing */
            kiln_tensor_release(out_results[i]);
            out_results[i] = NULL;
        }
    }
    return s;
}
