/* SPDX-License-Identifier: Apache-2.0 */
/* Random programs batched: each program of the random-program generator
 * (tests/support/random_prog.h) runs under kiln_vmap on a batch of 3 inputs each, against
 * the program run on each example by itself, eagerly. A value computed by exact ops must
 * match bit for bit; the others within the generator's error bound (a batched reduction or
 * contraction may add in another order). KILN_VMAP_RANDOM_COUNT=N runs N programs. */
#include <stdlib.h>

#include "random_prog.h"
#include "test_util.h"

#define BATCH 3

static int program_count(void) {
    const char *s = getenv("KILN_VMAP_RANDOM_COUNT");
    return s && *s ? atoi(s) : 1000;
}

/* Example b of x along axis 0. */
static kiln_tensor *row(kiln_ctx *cx, kiln_tensor *x, int64_t b) {
    const kiln_shape *s = kiln_tensor_shape(x);
    kiln_dims start = {.count = s->rank}, limit = {.count = s->rank};
    kiln_shape rest = {.rank = s->rank - 1};
    for (int32_t d = 0; d < s->rank; d++) {
        start.v[d] = d == 0 ? b : 0;
        limit.v[d] = d == 0 ? b + 1 : s->dims[d];
        if (d) rest.dims[d - 1] = s->dims[d];
    }
    return kiln_reshape(cx, kiln_slice(cx, x, start, limit, KILN_DIMS_NONE), rest);
}

/* Runs program p batched and one example at a time; false (with the reason) on a
 * mismatch. */
static bool check(kiln_ctx *cx, const prog *p, char *why, size_t size) {
    kiln_tensor *in[MAX_IN], *batched[MAX_IN], *out[MAX_OUT] = {0};
    for (int i = 0; i < p->n_in; i++) {
        const node *n = &p->nodes[p->in_node[i]];
        kiln_tensor *rows[BATCH];
        for (int b = 0; b < BATCH; b++)
            rows[b] = random_tensor(cx, n->seed + (uint64_t)b * 7919, n->dtype, n->shape);
        batched[i] = kiln_stack(cx, rows, BATCH, 0);
    }
    run_env plain = {p, NULL};
    kiln_region f = {run_prog, &plain};
    if (kiln_vmap(cx, &f, p->n_in, batched, p->n_out, NULL, out) != KILN_OK) {
        snprintf(why, size, "kiln_vmap failed: %s", kiln_ctx_error_message(cx));
        return false;
    }
    for (int b = 0; b < BATCH; b++) {
        kiln_tensor *keep[MAX_NODES] = {0}, *ref[MAX_OUT];
        for (int i = 0; i < p->n_in; i++)
            in[i] = row(cx, batched[i], b);
        run_env env = {p, keep};
        kiln_status s = run_prog(cx, in, ref, &env);
        if (s != KILN_OK) {
            snprintf(why, size, "example %d failed eagerly: %s", b, kiln_ctx_error_message(cx));
            return false;
        }
        double mag[MAX_NODES], err[MAX_NODES];
        magnitudes(p, keep, mag);
        error_bounds(p, mag, err);
        bool ok = true;
        for (int r = 0; r < p->n_out && ok; r++) {
            char detail[400];
            int o = p->out_node[r];
            if (!same(keep[o], row(cx, out[r], b), 4 * err[o], detail, sizeof detail)) {
                snprintf(why, size, "result %d of example %d: %s", r, b, detail);
                ok = false;
            }
        }
        for (int i = 0; i < p->n; i++)
            kiln_tensor_release(keep[i]);
        if (!ok) return false;
    }
    return true;
}

Test(vmap_random, programs_batched_match_one_example_at_a_time) {
    int count = program_count(), failures = 0;
    for (int k = 0; k < count && failures < 3; k++) {
        static prog p; /* large: not on the stack */
        uint64_t seed = UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(k + 1);
        gen_program(&p, seed, false);
        kiln_ctx *cx = test_ctx();
        char why[512] = "";
        kiln_scope_begin(cx);
        bool ok = check(cx, &p, why, sizeof why);
        kiln_scope_end(cx);
        if (!ok) {
            failures++;
            fprintf(stderr, "vmap of random program %d (seed %llu) differs: %s\n", k,
                    (unsigned long long)seed, why);
            describe(&p, stderr);
        }
        kiln_ctx_release(cx);
    }
    cr_assert_eq(failures, 0, "%d batched random programs differ (listed above)", failures);
}
