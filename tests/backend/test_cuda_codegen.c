/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA C generated from fused kernels (src/backends/cuda/codegen.c), checked without a
 * GPU: the source of a kernel as golden text; every kernel of a set of programs (exact
 * ops over every dtype; broadcast, strided, constant and iota inputs) compiled by the host
 * C compiler against the same prelude, run, and compared with the evaluator bit for bit;
 * and the same kernels compiled by the CUDA toolkit's nvcc for sm_90, with their register
 * and spill counts (skipped, saying so, when the toolkit is not installed). */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/region.h"
#include "backends/cuda/driver_api.h"
#include "base/arena.h"
#include "codegen/kernel_source.h"
#include "ir/ir.h"
#include "passes/passes.h"
#include "test_util.h"

static void *arena_alloc(void *user, size_t size, size_t align) {
    return kiln__arena_alloc(user, size, align);
}

/* ---- the programs -------------------------------------------------------------------------- */

#define N 37 /* elements per row: not a multiple of anything */

static kiln_tensor *c32(kiln_ctx *cx, kiln_tensor *like, double v) {
    return kiln_scalar_like(cx, like, v);
}

/* f32: arithmetic, compare/select, NaN-propagating max/min, a broadcast row, a transposed
 * (strided) read, sqrt, floor, round, clamp, convert to i32 and back. */
static kiln_status prog_f32(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = a[0], *row = a[1], *sq = a[2];
    kiln_tensor *t = kiln_add(cx, kiln_multiply(cx, x, c32(cx, x, 2.5)), row);
    kiln_tensor *p = kiln_compare(cx, t, c32(cx, t, 0), KILN_CMP_GT, KILN_CMP_DEFAULT);
    kiln_tensor *s = kiln_select(cx, p, kiln_sqrt(cx, t), kiln_negate(cx, t));
    kiln_tensor *m = kiln_maximum(cx, kiln_minimum(cx, s, x), kiln_divide(cx, x, row));
    kiln_tensor *f = kiln_add(cx, kiln_floor(cx, m), kiln_round_nearest_even(cx, t));
    kiln_tensor *tr = kiln_transpose(cx, sq, KILN_DIMS(1, 0));
    kiln_tensor *c = kiln_clamp(cx, c32(cx, x, -3), kiln_add(cx, f, tr), c32(cx, x, 40));
    kiln_tensor *i = kiln_convert(cx, kiln_multiply(cx, c, c32(cx, c, 1e8)), KILN_I32);
    r[0] = kiln_add(cx, c, kiln_convert(cx, i, KILN_F32));
    r[1] = i;
    return kiln_ctx_status(cx);
}

/* i32: StableHLO's integer edges: division and remainder by 0 and of INT_MIN by -1,
 * shifts past the width, power, abs of INT_MIN, leading zeros, popcount. */
static kiln_status prog_i32(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = a[0], *y = a[1];
    kiln_tensor *q = kiln_divide(cx, x, y), *m = kiln_remainder(cx, x, y);
    kiln_tensor *sl = kiln_shift_left(cx, x, y), *sa = kiln_shift_right_arithmetic(cx, x, y);
    kiln_tensor *sr = kiln_shift_right_logical(cx, x, y);
    kiln_tensor *pw = kiln_power(cx, x, kiln_and(cx, y, kiln_scalar_like(cx, y, 7)));
    kiln_tensor *e = kiln_add(cx, kiln_abs(cx, x), kiln_count_leading_zeros(cx, y));
    r[0] = kiln_xor(cx, kiln_add(cx, q, m), kiln_subtract(cx, sl, sa));
    r[1] = kiln_add(cx, kiln_multiply(cx, sr, pw), kiln_add(cx, e, kiln_popcnt(cx, x)));
    return kiln_ctx_status(cx);
}

/* f16 and bf16: computed in f32, rounded after every op; convert between them and f32. */
static kiln_status prog_half(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *h = kiln_convert(cx, a[0], KILN_F16), *b = kiln_convert(cx, a[0], KILN_BF16);
    kiln_tensor *h2 = kiln_maximum(cx, kiln_multiply(cx, h, h), kiln_add(cx, h, h));
    kiln_tensor *b2 = kiln_divide(cx, kiln_subtract(cx, b, kiln_scalar_like(cx, b, 0.1)), b);
    r[0] = h2;
    r[1] = kiln_add(cx, kiln_convert(cx, b2, KILN_F32), kiln_convert(cx, h2, KILN_F32));
    /* from f64 and from integers past 2^24: one rounding (round to odd first) */
    kiln_tensor *d64 = kiln_convert(cx, a[0], KILN_F64);
    kiln_tensor *d = kiln_multiply(cx, d64, kiln_scalar_like(cx, d64, 1.0000001));
    r[2] = kiln_add(cx, kiln_convert(cx, d, KILN_F16),
                    kiln_convert(cx, kiln_convert(cx, d, KILN_BF16), KILN_F16));
    kiln_tensor *w = kiln_convert(cx, kiln_multiply(cx, d, kiln_scalar_like(cx, d, 3e6)), KILN_I64);
    r[3] = kiln_add(cx, kiln_convert(cx, w, KILN_BF16),
                    kiln_convert(cx, kiln_convert(cx, w, KILN_U32), KILN_BF16));
    return kiln_ctx_status(cx);
}

/* u8, i8, i64, u64 and i1: bitwise ops, unsigned compares, converts that wrap. */
static kiln_status prog_ints(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = a[0]; /* i64 */
    kiln_tensor *b = kiln_convert(cx, x, KILN_U8), *s = kiln_convert(cx, x, KILN_I8);
    kiln_tensor *p =
        kiln_compare(cx, b, kiln_scalar_like(cx, b, 200), KILN_CMP_LT, KILN_CMP_DEFAULT);
    kiln_tensor *q = kiln_or(cx, p,
                             kiln_not(cx, kiln_compare(cx, s, kiln_scalar_like(cx, s, 0),
                                                       KILN_CMP_GE, KILN_CMP_DEFAULT)));
    kiln_tensor *w = kiln_convert(cx, kiln_multiply(cx, x, x), KILN_U64);
    r[0] = kiln_select(cx, q, kiln_convert(cx, b, KILN_I64), kiln_negate(cx, x));
    r[1] = kiln_add(cx, w, kiln_convert(cx, kiln_and(cx, b, kiln_not(cx, b)), KILN_U64));
    r[2] = kiln_convert(cx, kiln_add(cx, s, s), KILN_I32);
    return kiln_ctx_status(cx);
}

/* f64: divide, sqrt, max/min with NaN and signed zeros, total-order compare, converts to
 * f32 and (saturating) to i64 and u8. */
static kiln_status prog_f64(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = a[0], *y = a[1];
    kiln_tensor *m = kiln_maximum(cx, kiln_divide(cx, x, y), kiln_minimum(cx, x, y));
    kiln_tensor *t = kiln_compare(cx, x, y, KILN_CMP_LT, KILN_CMP_TOTALORDER);
    kiln_tensor *v = kiln_select(cx, t, kiln_sqrt(cx, kiln_abs(cx, m)), m);
    r[0] = kiln_convert(cx, v, KILN_F32);
    r[1] = kiln_convert(cx, kiln_multiply(cx, v, kiln_scalar_like(cx, v, 1e18)), KILN_I64);
    r[2] = kiln_convert(cx, v, KILN_U8);
    return kiln_ctx_status(cx);
}

/* Reductions: a sum (of a fused chain) over the rows, a maximum over the columns (NaN and
 * signed zeros in it), a minimum over everything; i32 sums that wrap, an i64 product,
 * i1 and/or. */
static kiln_status prog_reduce(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *x = a[0], *y = a[1];
    r[0] = kiln_sum(cx, kiln_add(cx, kiln_multiply(cx, x, x), kiln_scalar_like(cx, x, 1)),
                    KILN_DIMS(1), false);
    r[1] = kiln_max(cx, kiln_negate(cx, x), KILN_DIMS(0), false);
    r[2] = kiln_min(cx, kiln_multiply(cx, x, kiln_scalar_like(cx, x, 0.5)), KILN_DIMS(0, 1), false);
    kiln_tensor *w = kiln_multiply(cx, y, kiln_scalar_like(cx, y, 1 << 20));
    r[3] = kiln_sum(cx, w, KILN_DIMS(0), false);
    r[4] = kiln_prod(cx, kiln_convert(cx, y, KILN_I64), KILN_DIMS(1), false);
    kiln_tensor *p = kiln_compare(cx, y, kiln_scalar_like(cx, y, 0), KILN_CMP_GT, KILN_CMP_DEFAULT);
    kiln_tensor *init_t =
        kiln_tensor_from_host(cx, KILN_BOOL, KILN_SHAPE_SCALAR, (uint8_t[]){1}, 1);
    kiln_tensor *init_f =
        kiln_tensor_from_host(cx, KILN_BOOL, KILN_SHAPE_SCALAR, (uint8_t[]){0}, 1);
    kiln_reduce(cx, &p, &init_t, 1, KILN_DIMS(1), kiln_region_and(), &r[5]);
    kiln_tensor *p2 =
        kiln_compare(cx, y, kiln_scalar_like(cx, y, 3), KILN_CMP_LT, KILN_CMP_DEFAULT);
    kiln_reduce(cx, &p2, &init_f, 1, KILN_DIMS(0), kiln_region_or(), &r[6]);
    return kiln_ctx_status(cx);
}

/* Converts that round once where f32 in between would round twice: f64 just above a tie of
 * f16/bf16, integers past 2^24 just above a tie of bf16 (the inputs are made for it). */
static kiln_status prog_round_once(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    r[0] = kiln_convert(cx, a[0], KILN_F16);
    r[1] = kiln_convert(cx, a[0], KILN_BF16);
    r[2] = kiln_convert(cx, a[1], KILN_BF16);
    r[3] = kiln_convert(cx, kiln_convert(cx, a[1], KILN_U64), KILN_BF16);
    return kiln_ctx_status(cx);
}

typedef struct program {
    const char *name;
    kiln_region_fn fn;
    kiln_arg_spec args[3];
    int32_t n_args, n_results;
} program;

static const program programs[] = {
    {"f32",
     prog_f32,
     {{.dtype = KILN_F32, .shape = {2, {N, N}}},
      {.dtype = KILN_F32, .shape = {1, {N}}},
      {.dtype = KILN_F32, .shape = {2, {N, N}}}},
     3,
     2},
    {"i32",
     prog_i32,
     {{.dtype = KILN_I32, .shape = {1, {N * 8}}}, {.dtype = KILN_I32, .shape = {1, {N * 8}}}},
     2,
     2},
    {"half", prog_half, {{.dtype = KILN_F32, .shape = {1, {N * 8}}}}, 1, 4},
    {"ints", prog_ints, {{.dtype = KILN_I64, .shape = {1, {N * 8}}}}, 1, 3},
    {"f64",
     prog_f64,
     {{.dtype = KILN_F64, .shape = {1, {N * 8}}}, {.dtype = KILN_F64, .shape = {1, {N * 8}}}},
     2,
     3},
    {"round_once",
     prog_round_once,
     {{.dtype = KILN_F64, .shape = {1, {64}}}, {.dtype = KILN_I64, .shape = {1, {64}}}},
     2,
     4},
    {"reduce",
     prog_reduce,
     {{.dtype = KILN_F32, .shape = {2, {N, N + 2}}}, {.dtype = KILN_I32, .shape = {2, {N, 5}}}},
     2,
     7},
};

/* Inputs with the edges in them: NaN, infinities, signed zeros, huge and tiny values, and
 * for integers 0, -1, INT_MIN, and shift amounts past the width. */
static kiln_tensor *input(kiln_ctx *cx, const kiln_arg_spec *s, uint32_t seed, bool ties) {
    kiln_shape sh = s->shape;
    int64_t n = 1;
    for (int32_t d = 0; d < sh.rank; d++)
        n *= sh.dims[d];
    size_t es = kiln_dtype_size(s->dtype);
    unsigned char *buf = calloc((size_t)n, es);
    if (ties) { /* just above (or below) the ties of f16 and bf16 */
        for (int64_t i = 0; i < n; i++) {
            double sign = i % 2 ? -1 : 1, tiny = ldexp(1, -45) * (double)(i % 7 + 1);
            double v = i % 4 < 2 ? 1 + ldexp(1, -11) + sign * tiny : 1 + ldexp(1, -8) + sign * tiny;
            if (s->dtype == KILN_F64) ((double *)buf)[i] = v * ldexp(1, (int)(i % 9) - 4);
            if (s->dtype == KILN_I64) /* 2^30 + 2^22 (a bf16 tie) + a little */
                ((int64_t *)buf)[i] = ((int64_t)1 << 30) + ((int64_t)1 << 22) + (i % 5) - 2;
        }
        kiln_tensor *t = kiln_tensor_from_host(cx, s->dtype, sh, buf, (size_t)n * es);
        free(buf);
        return t;
    }
    uint32_t h = seed * 0x9e3779b9u + 1;
    for (int64_t i = 0; i < n; i++) {
        h ^= h << 13, h ^= h >> 17, h ^= h << 5;
        double v = ((double)(h % 20001) - 10000) / 137.0;
        int64_t iv = (int64_t)(h % 401) - 200;
        switch (i % 11) {
        case 0: v = NAN, iv = 0; break;
        case 1: v = -0.0, iv = -1; break;
        case 2: v = INFINITY, iv = INT32_MIN; break;
        case 3: v = 1e30 * (seed & 1 ? 1 : -1), iv = 31 + (int64_t)(h % 40); break;
        case 4: v = 3e-39, iv = INT64_MIN / 3; break;
        default: break;
        }
        switch (s->dtype) {
        case KILN_F32: ((float *)buf)[i] = (float)v; break;
        case KILN_F64: ((double *)buf)[i] = v; break;
        case KILN_I32: ((int32_t *)buf)[i] = (int32_t)iv; break;
        case KILN_I64: ((int64_t *)buf)[i] = iv * (int64_t)(h % 3 + 1); break;
        default: break;
        }
    }
    kiln_tensor *t = kiln_tensor_from_host(cx, s->dtype, sh, buf, (size_t)n * es);
    free(buf);
    return t;
}

static kiln__kreduce reduce_kind(const kiln__ir_op *op) {
    if (op->n_regions != 1 || !op->attrs->region[0]) return KILN__KREDUCE_NONE;
    switch (kiln__region_kind_of(op->attrs->region[0])) {
    case KILN_REGION_ADD: return KILN__KREDUCE_ADD;
    case KILN_REGION_MULTIPLY: return KILN__KREDUCE_MUL;
    case KILN_REGION_MAXIMUM: return KILN__KREDUCE_MAX;
    case KILN_REGION_MINIMUM: return KILN__KREDUCE_MIN;
    case KILN_REGION_AND: return KILN__KREDUCE_AND;
    case KILN_REGION_OR: return KILN__KREDUCE_OR;
    default: return KILN__KREDUCE_NONE;
    }
}

/* The kernels of program p: lowered, simplified as kiln_compile does, planned. */
typedef struct planned {
    kiln_module *m;
    kiln__arena arena;
    kiln__fusion f;
    kiln__kernel kernels[16];
    int32_t n;
} planned;

static void plan(kiln_ctx *cx, const program *p, planned *out) {
    kiln_region r = {.fn = p->fn};
    cr_assert_eq(kiln_lower(cx, &r, p->args, p->n_args, p->n_results, NULL, &out->m), KILN_OK,
                 "%s: %s", p->name, kiln_ctx_error_message(cx));
    kiln__passes_simplify(out->m, 0);
    kiln__arena_init(&out->arena, cx, 4096);
    kiln__fusion_options o = {
        .reduce_kind = reduce_kind, .alloc = arena_alloc, .alloc_user = &out->arena};
    cr_assert_eq(kiln__fusion_plan(cx, out->m->funcs[0]->body, &o, &out->f), KILN_OK);
    out->n = out->f.n_kernels;
    cr_assert(out->n >= 1 && out->n <= 16, "%s: %d kernels", p->name, (int)out->n);
    for (int32_t k = 0; k < out->n; k++)
        cr_assert_eq(kiln__fusion_kernel(&out->f, k, &out->kernels[k], arena_alloc, &out->arena),
                     KILN_OK);
}

static void plan_free(planned *p) {
    kiln__arena_destroy(&p->arena);
    kiln_module_release(p->m);
}

/* ---- golden ------------------------------------------------------------------------------ */

static kiln_status golden_fn(kiln_ctx *cx, kiln_tensor *const *a, kiln_tensor **r, void *u) {
    (void)u;
    kiln_tensor *t = kiln_add(cx, kiln_multiply(cx, a[0], kiln_scalar_like(cx, a[0], 0.5)), a[1]);
    r[0] = kiln_maximum(cx, t, kiln_transpose(cx, a[0], KILN_DIMS(1, 0)));
    return kiln_ctx_status(cx);
}

static const char golden_source[] =
    "/* kernel #0: 3x3, 4 inputs, 3 instructions, 1 outputs */\n"
    "KILN_KERNEL kiln_kernel_0(kiln_args a) {\n"
    "    for (long long i = KILN_FIRST; i < KILN_LAST; i += KILN_STEP) {\n"
    "        long long q = i;\n"
    "        const long long x1 = q % 3; q /= 3;\n"
    "        const long long x0 = q;\n"
    "        (void)q;\n"
    "        const float r0 = ((const float *)a.in[0])[i];\n"
    "        const float r1 = kiln_f32_of(0x3f000000u);\n"
    "        const float r2 = ((const float *)a.in[2])[0 + x1 * 1];\n"
    "        const float r3 = ((const float *)a.in[0])[0 + x0 * 1 + x1 * 3];\n"
    "        const float r4 = r0 * r1;\n"
    "        const float r5 = r4 + r2;\n"
    "        const float r6 = kiln_maxf(r5, r3);\n"
    "        ((float *)a.out[0])[i] = r6;\n"
    "    }\n"
    "}\n";

Test(cuda_codegen, source_golden) {
    kiln_ctx *cx = test_ctx();
    program p = {
        "golden",
        golden_fn,
        {{.dtype = KILN_F32, .shape = {2, {3, 3}}}, {.dtype = KILN_F32, .shape = {1, {3}}}},
        2,
        1};
    planned pl;
    plan(cx, &p, &pl);
    cr_assert_eq(pl.n, 1);
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    cr_assert_eq(kiln__kernel_source(cx, &pl.kernels[0], "kiln_kernel_0", &sb), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text = kiln__strbuf_take(&sb);
    if (strcmp(text, golden_source) != 0) {
        cr_log_error("got\n%s", text);
        cr_assert_fail("the generated source differs from its golden");
    }
    kiln__strbuf_free_string(cx, text);
    plan_free(&pl);
    kiln_ctx_release(cx);
}

/* ---- host-compiled kernels against the evaluator ------------------------------------------- */

typedef struct kiln_args_host {
    const void *in[24];
    void *out[8];
    long long n, first, last;
} kiln_args_host;
typedef void (*kernel_fn)(kiln_args_host);

/* The source of every kernel of every program, after the prelude. */
static char *all_sources(kiln_ctx *cx, planned *pl, int n_programs) {
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    kiln__strbuf_puts(&sb, kiln__kernel_prelude());
    for (int p = 0; p < n_programs; p++)
        for (int32_t k = 0; k < pl[p].n; k++) {
            char name[64];
            snprintf(name, sizeof name, "kernel_%s_%d", programs[p].name, (int)k);
            cr_assert_eq(kiln__kernel_source(cx, &pl[p].kernels[k], name, &sb), KILN_OK, "%s: %s",
                         name, kiln_ctx_error_message(cx));
        }
    return kiln__strbuf_take(&sb);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

#define NP ((int)(sizeof programs / sizeof programs[0]))

/* How a kernel is run: by the host build of the source, or on the GPU. in_bytes and
 * out_bytes: the buffers' sizes (for copies). */
typedef struct runner {
    void *lib;               /* host: the shared object */
    kiln__cuda_session *gpu; /* device: the session */
} runner;

static void run_kernel(runner *rn, const char *name, const kiln__kernel *k, kiln_args_host *a,
                       const size_t *in_bytes, const size_t *out_bytes, int32_t n_outs) {
    if (!rn->gpu) {
        kernel_fn fn = (kernel_fn)(uintptr_t)dlsym(rn->lib, name);
        cr_assert_not_null(fn, "%s", name);
        /* in three calls, as a thread pool would split it: the same results */
        long long total = a->last;
        for (int part = 0; part < 3; part++) {
            kiln_args_host chunk = *a;
            chunk.first = total * part / 3;
            chunk.last = total * (part + 1) / 3;
            fn(chunk);
        }
        return;
    }
    char err[256];
    kiln_args_host d = *a;
    uint64_t ptr;
    for (int32_t i = 0; i < k->n_operands; i++) {
        if (!a->in[i]) continue;
        cr_assert(kiln__cuda_alloc(rn->gpu, in_bytes[i], &ptr, err, sizeof err), "%s", err);
        cr_assert(kiln__cuda_copy_in(rn->gpu, ptr, a->in[i], in_bytes[i], err, sizeof err), "%s",
                  err);
        d.in[i] = (const void *)(uintptr_t)ptr;
    }
    for (int32_t o = 0; o < n_outs; o++) {
        cr_assert(kiln__cuda_alloc(rn->gpu, out_bytes[o], &ptr, err, sizeof err), "%s", err);
        d.out[o] = (void *)(uintptr_t)ptr;
    }
    bool reduces = k->reduce != KILN__KREDUCE_NONE;
    long long blocks = reduces
                           ? (long long)(out_bytes[n_outs - 1] / kiln_dtype_size(k->reduce_dtype))
                           : (a->n + 255) / 256;
    unsigned grid = (unsigned)(blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks);
    cr_assert(kiln__cuda_launch(rn->gpu, name, grid, 256, &d, sizeof d, err, sizeof err), "%s: %s",
              name, err);
    for (int32_t o = 0; o < n_outs; o++)
        cr_assert(kiln__cuda_copy_out(rn->gpu, a->out[o], (uint64_t)(uintptr_t)d.out[o],
                                      out_bytes[o], err, sizeof err),
                  "%s", err);
}

static size_t type_bytes(const kiln__type *t) {
    size_t n = kiln_dtype_size(t->dtype);
    for (int32_t d = 0; d < t->shape.rank; d++)
        n *= (size_t)t->shape.dims[d];
    return n;
}

/* Every kernel of every program run by rn on its arguments, each result compared with the
 * evaluator's; the number of results compared. */
static int check_programs(kiln_ctx *cx, planned *pl, runner *rn) {
    int compared = 0;
    for (int p = 0; p < NP; p++) {
        const program *pr = &programs[p];
        kiln_tensor *args[3];
        for (int i = 0; i < pr->n_args; i++)
            args[i] =
                input(cx, &pr->args[i], (uint32_t)(p * 7 + i + 1), !strcmp(pr->name, "round_once"));
        /* the evaluator's results */
        kiln_compile_options o = kiln_compile_options_default();
        o.backend = "interpreter";
        kiln_exe *exe;
        cr_assert_eq(kiln_compile(cx, pl[p].m, &o, &exe), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        kiln_tensor *want[8];
        cr_assert_eq(kiln_exe_call(cx, exe, args, want), KILN_OK, "%s", kiln_ctx_error_message(cx));
        kiln_exe_release(exe);
        /* each kernel reads the program's arguments (or constants) and writes its results */
        const kiln__block *body = pl[p].m->funcs[0]->body;
        for (int32_t k = 0; k < pl[p].n; k++) {
            const kiln__kernel *kr = &pl[p].kernels[k];
            kiln_args_host a = {.n = 1};
            size_t in_bytes[24] = {0}, out_bytes[8] = {0};
            for (int32_t d = 0; d < kr->shape.rank; d++)
                a.n *= kr->shape.dims[d];
            for (int32_t o2 = 0; o2 < kr->n_operands; o2++) {
                const kiln__value *v = kr->operands[o2];
                in_bytes[o2] = type_bytes(v->type);
                if (v->def && v->def->kind == KILN_OP_CONSTANT) { /* a reduction's init, ... */
                    a.in[o2] = kiln_tensor_data(v->def->attrs->u.constant);
                    continue;
                }
                cr_assert(v->block == body, "%s: kernel %d reads a value that is not an argument",
                          pr->name, (int)k);
                a.in[o2] = kiln_tensor_data(args[v->index]);
            }
            bool reduces = kr->reduce != KILN__KREDUCE_NONE;
            a.first = 0; /* the host runs all of it in one call */
            a.last = reduces ? (long long)(type_bytes(kr->reduce_value->type) /
                                           kiln_dtype_size(kr->reduce_dtype))
                             : a.n;
            void *outs[8];
            int32_t result_of[8], n_outs = kr->n_outputs + (reduces ? 1 : 0);
            for (int32_t o2 = 0; o2 < n_outs; o2++) {
                const kiln__value *v =
                    o2 == kr->n_outputs ? kr->reduce_value : kr->outputs[o2].value;
                result_of[o2] = -1;
                for (int32_t r = 0; r < body->n_results; r++)
                    if (body->results[r] == v) result_of[o2] = r;
                out_bytes[o2] = type_bytes(v->type);
                outs[o2] = calloc(1, out_bytes[o2] + 64);
                a.out[o2] = outs[o2];
            }
            char name[64];
            snprintf(name, sizeof name, "kernel_%s_%d", pr->name, (int)k);
            run_kernel(rn, name, kr, &a, in_bytes, out_bytes, n_outs);
            for (int32_t o2 = 0; o2 < n_outs; o2++) {
                int32_t r = result_of[o2];
                if (r < 0) continue; /* an intermediate another kernel reads */
                kiln_dtype dt = kiln_tensor_dtype(want[r]);
                size_t nb = kiln_tensor_nbytes(want[r]);
                const unsigned char *w = kiln_tensor_data(want[r]), *g = outs[o2];
                size_t es = kiln_dtype_size(dt);
                /* a float sum in another order: close, not the same bits */
                bool close = o2 == kr->n_outputs && kr->reduce == KILN__KREDUCE_ADD &&
                             kiln_dtype_is_float(dt);
                for (size_t e = 0; e < nb / es; e++) {
                    if (close) {
                        float wf, gf;
                        memcpy(&wf, w + e * es, 4);
                        memcpy(&gf, g + e * es, 4);
                        cr_assert(wf == gf || (isnan(wf) && isnan(gf)) ||
                                      fabsf(wf - gf) <= 1e-5f * fabsf(wf),
                                  "%s: result %d, element %zu: %g, the evaluator's %g", pr->name,
                                  (int)r, e, (double)gf, (double)wf);
                        continue;
                    }
                    if (memcmp(w + e * es, g + e * es, es) != 0 &&
                        !(test_is_nan(dt, w + e * es) && test_is_nan(dt, g + e * es))) {
                        uint64_t wb = 0, gb = 0;
                        memcpy(&wb, w + e * es, es);
                        memcpy(&gb, g + e * es, es);
                        cr_assert_fail("%s: result %d, element %zu: 0x%llx, the evaluator's 0x%llx",
                                       pr->name, (int)r, e, (unsigned long long)gb,
                                       (unsigned long long)wb);
                    }
                }
                compared++;
            }
            for (int32_t o2 = 0; o2 < n_outs; o2++)
                free(outs[o2]);
        }
    }
    return compared;
}

Test(cuda_codegen, host_compiled_kernels_give_the_evaluators_bits) {
    kiln_ctx *cx = test_ctx();
    static planned pl[NP];
    for (int p = 0; p < NP; p++)
        plan(cx, &programs[p], &pl[p]);
    char *src = all_sources(cx, pl, NP);
    char dir[] = KILN_TEST_TMP_DIR "/cudagenXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[512], so[512], cmd[2048];
    snprintf(path, sizeof path, "%s/kernels.c", dir);
    snprintf(so, sizeof so, "%s/kernels.so", dir);
    write_file(path, src);
    kiln__strbuf_free_string(cx, src);
    /* IEEE arithmetic as written: no contraction, no fast math */
    snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -ffp-contract=off -fPIC -shared -w %s -o %s -lm",
             KILN_TEST_CC, path, so);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    runner rn = {.lib = dlopen(so, RTLD_NOW | RTLD_LOCAL)};
    cr_assert_not_null(rn.lib, "%s", dlerror());
    int compared = check_programs(cx, pl, &rn);
    cr_assert_eq(compared, 25, "%d results compared: every result of every program", compared);
    dlclose(rn.lib);
    for (int p = 0; p < NP; p++)
        plan_free(&pl[p]);
    kiln_ctx_release(cx);
}

/* The same kernels on a GPU (cubins from nvcc for the device's architecture, launched
 * through the driver): the evaluator's bits for exact ops, float sums to 1e-5. Skipped, and
 * saying so, without a driver and a device (as in CI). */
Test(cuda_codegen, kernels_on_the_gpu_give_the_evaluators_bits) {
    const kiln__cuda_driver *drv = kiln__cuda_driver_get();
    if (!drv->loaded) cr_skip_test("SKIPPED: no GPU to run the kernels on: %s", drv->reason);
    if (access(KILN_TEST_NVCC, X_OK) != 0)
        cr_skip_test("SKIPPED: a GPU but no nvcc at %s to build the kernels", KILN_TEST_NVCC);
    kiln_ctx *cx = test_ctx();
    static planned pl[NP];
    for (int p = 0; p < NP; p++)
        plan(cx, &programs[p], &pl[p]);
    char *src = all_sources(cx, pl, NP);
    char dir[] = KILN_TEST_TMP_DIR "/cudagpuXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[512], cubin[512], cmd[2048];
    snprintf(path, sizeof path, "%s/kernels.cu", dir);
    snprintf(cubin, sizeof cubin, "%s/kernels.cubin", dir);
    write_file(path, src);
    kiln__strbuf_free_string(cx, src);
    snprintf(cmd, sizeof cmd,
             "%s -arch=sm_%d%d -cubin --fmad=false -prec-div=true -prec-sqrt=true -o %s %s",
             KILN_TEST_NVCC, drv->devices[0].major, drv->devices[0].minor, cubin, path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    FILE *f = fopen(cubin, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *image = malloc((size_t)size);
    cr_assert_eq(fread(image, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    runner rn = {0};
    char err[256];
    cr_assert(kiln__cuda_session_open(image, (size_t)size, &rn.gpu, err, sizeof err), "%s", err);
    int compared = check_programs(cx, pl, &rn);
    cr_log_info("%d results of generated kernels on %s match the evaluator", compared,
                drv->devices[0].name);
    cr_assert_eq(compared, 25);
    kiln__cuda_session_close(rn.gpu);
    free(image);
    for (int p = 0; p < NP; p++)
        plan_free(&pl[p]);
    kiln_ctx_release(cx);
}

/* ---- nvcc for sm_90 ------------------------------------------------------------------------ */

Test(cuda_codegen, every_kernel_compiles_for_sm_90) {
    if (access(KILN_TEST_NVCC, X_OK) != 0) {
        cr_skip_test("SKIPPED: no CUDA toolkit (nvcc not at %s): the generated kernels are not "
                     "compiled for a GPU in this build",
                     KILN_TEST_NVCC);
    }
    kiln_ctx *cx = test_ctx();
    static planned pl[NP];
    for (int p = 0; p < NP; p++)
        plan(cx, &programs[p], &pl[p]);
    char *src = all_sources(cx, pl, NP);
    char dir[] = KILN_TEST_TMP_DIR "/cudanvccXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[512], cubin[512], log[512], cmd[2048];
    snprintf(path, sizeof path, "%s/kernels.cu", dir);
    snprintf(cubin, sizeof cubin, "%s/kernels.cubin", dir);
    snprintf(log, sizeof log, "%s/ptxas.log", dir);
    write_file(path, src);
    kiln__strbuf_free_string(cx, src);
    /* IEEE: no fused multiply-add, exact division and square root */
    snprintf(cmd, sizeof cmd,
             "%s -arch=sm_90 -cubin --fmad=false -prec-div=true -prec-sqrt=true -Xptxas -v "
             "-o %s %s > %s 2>&1",
             KILN_TEST_NVCC, cubin, path, log);
    int rc = system(cmd);
    FILE *f = fopen(log, "r");
    char line[512];
    int kernels = 0, spills = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strstr(line, "Used") && strstr(line, "registers")) kernels++;
        unsigned st = 0, ld = 0;
        const char *at = strstr(line, "bytes spill stores");
        if (at &&
            sscanf(line, "%*[^0-9]%*u bytes stack frame, %u bytes spill stores, %u", &st, &ld) >= 1)
            spills += (int)(st + ld);
        if (rc != 0 || strstr(line, "registers")) cr_log_info("%s", line);
    }
    if (f) fclose(f);
    cr_assert_eq(rc, 0, "nvcc failed (%s)", log);
    int total = 0;
    for (int p = 0; p < NP; p++)
        total += pl[p].n;
    cr_assert_eq(kernels, total, "ptxas reported %d kernels of %d", kernels, total);
    cr_assert_eq(spills, 0, "spills: %d bytes", spills);
    for (int p = 0; p < NP; p++)
        plan_free(&pl[p]);
    kiln_ctx_release(cx);
}

/* ---- the backend's listing ----------------------------------------------------------------- */

Test(cuda_codegen, the_backend_says_why_it_cannot_run) {
    /* a driver library that is not there (each test runs in a process of its own, so this
     * is what the backend's one probe sees) */
    setenv("KILN_CUDA_DRIVER", "/nonexistent/libcuda-for-kiln-tests.so.1", 1);
    kiln_ctx *cx = test_ctx();
    kiln_backend_info info;
    bool found = false;
    for (int32_t i = 0; i < kiln_backend_count(cx); i++)
        if (kiln_backend_info_get(cx, i, &info) == KILN_OK && !strcmp(info.name, "cuda")) {
            found = true;
            break;
        }
    cr_assert(found, "cuda is not listed");
    cr_assert_not(info.available);
    cr_assert(strstr(info.reason, "the CUDA driver") &&
                  strstr(info.reason, "/nonexistent/libcuda-for-kiln-tests.so.1"),
              "%s", info.reason);
    kiln_region r = {.fn = golden_fn};
    kiln_arg_spec a[2] = {{.dtype = KILN_F32, .shape = {2, {3, 3}}},
                          {.dtype = KILN_F32, .shape = {1, {3}}}};
    kiln_module *m;
    cr_assert_eq(kiln_lower(cx, &r, a, 2, 1, NULL, &m), KILN_OK);
    kiln_compile_options o = kiln_compile_options_default();
    o.backend = "cuda";
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, &o, &exe), KILN_UNAVAILABLE);
    cr_assert(strstr(kiln_ctx_error_message(cx), "backend 'cuda' is unavailable: the CUDA driver"),
              "%s", kiln_ctx_error_message(cx));
    cr_assert_null(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

/* ---- the random programs' kernels ---------------------------------------------------------- */

#include "random_prog.h"

/* Every kernel of 80 random programs (tests/support/random_prog.c: every op, dtype and
 * access pattern the generator makes): generated, compiled by the host compiler and, when
 * the toolkit is there, by nvcc for sm_90. Kernels the generator does not take yet are
 * counted by reason, and must stay few. */
Test(cuda_codegen, the_random_programs_kernels_compile) {
    kiln_ctx *cx = test_ctx();
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    kiln__strbuf_puts(&sb, kiln__kernel_prelude());
    int generated = 0, refused = 0;
    char last_reason[256] = "";
    for (uint64_t seed = 1; seed <= 80; seed++) {
        prog p;
        gen_program(&p, seed * 7919, false);
        run_env env = {&p, NULL};
        kiln_region fn = {run_prog, &env};
        kiln_arg_spec specs[MAX_IN];
        for (int i = 0; i < p.n_in; i++)
            specs[i] = (kiln_arg_spec){.dtype = p.nodes[p.in_node[i]].dtype,
                                       .shape = p.nodes[p.in_node[i]].shape};
        planned pl;
        cr_assert_eq(kiln_lower(cx, &fn, specs, p.n_in, p.n_out, NULL, &pl.m), KILN_OK, "%s",
                     kiln_ctx_error_message(cx));
        kiln__passes_simplify(pl.m, 0);
        kiln__arena_init(&pl.arena, cx, 4096);
        kiln__fusion_options o = {
            .reduce_kind = reduce_kind, .alloc = arena_alloc, .alloc_user = &pl.arena};
        cr_assert_eq(kiln__fusion_plan(cx, pl.m->funcs[0]->body, &o, &pl.f), KILN_OK);
        for (int32_t k = 0; k < pl.f.n_kernels; k++) {
            kiln__kernel kr;
            cr_assert_eq(kiln__fusion_kernel(&pl.f, k, &kr, arena_alloc, &pl.arena), KILN_OK);
            char name[64];
            snprintf(name, sizeof name, "random_%llu_%d", (unsigned long long)seed, (int)k);
            size_t mark = sb.length;
            if (kiln__kernel_source(cx, &kr, name, &sb) == KILN_OK) {
                generated++;
                continue;
            }
            cr_assert_eq(kiln_ctx_status(cx), KILN_UNIMPLEMENTED, "%s: %s", name,
                         kiln_ctx_error_message(cx));
            snprintf(last_reason, sizeof last_reason, "%s", kiln_ctx_error_message(cx));
            kiln_ctx_clear_error(cx);
            sb.length = mark; /* drop the partial source */
            sb.data[mark] = 0;
            refused++;
        }
        kiln__arena_destroy(&pl.arena);
        kiln_module_release(pl.m);
    }
    cr_log_info("random programs: %d kernels generated, %d not yet (last: %s)", generated, refused,
                last_reason);
    cr_assert_geq(generated, 100, "only %d kernels", generated);
    cr_assert_leq(refused * 10, generated, "%d kernels refused: %s", refused, last_reason);
    char *src = kiln__strbuf_take(&sb);
    char dir[] = KILN_TEST_TMP_DIR "/cudarandXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char c_path[512], cu_path[512], cmd[2048];
    snprintf(c_path, sizeof c_path, "%s/kernels.c", dir);
    snprintf(cu_path, sizeof cu_path, "%s/kernels.cu", dir);
    write_file(c_path, src);
    write_file(cu_path, src);
    kiln__strbuf_free_string(cx, src);
    snprintf(cmd, sizeof cmd,
             "%s -std=c11 -O1 -ffp-contract=off -fPIC -shared -w %s -o %s/k.so -lm", KILN_TEST_CC,
             c_path, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    if (access(KILN_TEST_NVCC, X_OK) == 0) {
        snprintf(cmd, sizeof cmd,
                 "%s -arch=sm_90 -cubin --fmad=false -o %s/k.cubin %s > %s/log 2>&1",
                 KILN_TEST_NVCC, dir, cu_path, dir);
        cr_assert_eq(system(cmd), 0, "%s (see %s/log)", cmd, dir);
    } else {
        cr_log_warn("SKIPPED: nvcc not at %s: the random kernels were not compiled for sm_90",
                    KILN_TEST_NVCC);
    }
    kiln_ctx_release(cx);
}

/* ---- compiling through the cache ----------------------------------------------------------- */

#include "backends/cuda/compiler.h"
#include "base/disk_cache.h"

/* The f32 program's kernels compiled for sm_90 (NVRTC, or nvcc here): a cubin (an ELF
 * image) and ptxas's report; the second time from the cache, the same bytes; a corrupted
 * entry compiled again; a source that does not compile is an error with the log. */
Test(cuda_codegen, cubins_compile_once_then_come_from_the_cache) {
    char reason[512];
    if (!kiln__cuda_compiler_available(reason, sizeof reason)) cr_skip_test("SKIPPED: %s", reason);
    kiln_ctx *cx = test_ctx();
    planned pl;
    plan(cx, &programs[0], &pl);
    kiln__strbuf sb;
    kiln__strbuf_init(&sb, cx);
    for (int32_t k = 0; k < pl.n; k++) {
        char name[32];
        snprintf(name, sizeof name, "k%d", (int)k);
        cr_assert_eq(kiln__kernel_source(cx, &pl.kernels[k], name, &sb), KILN_OK);
    }
    char *src = kiln__strbuf_take(&sb);
    char dir[] = KILN_TEST_TMP_DIR "/cudacacheXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    kiln__disk_cache *cache = NULL;
    cr_assert_eq(kiln__disk_cache_open(cx, dir, 0, &cache), KILN_OK);
    kiln__cubin a, b, c;
    cr_assert_eq(kiln__cuda_compile(cx, src, 90, cache, &a), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_not(a.cached);
    cr_assert_gt(a.size, 64);
    cr_assert_eq(memcmp(a.data,
                        "\x7f"
                        "ELF",
                        4),
                 0, "a cubin is an ELF image");
    cr_assert(strstr(a.log, "registers"), "%s", a.log);
    cr_log_info("%s: %zu bytes", a.compiler, a.size);
    cr_assert_eq(kiln__cuda_compile(cx, src, 90, cache, &b), KILN_OK);
    cr_assert(b.cached, "the second compile comes from the cache");
    cr_assert_eq(b.size, a.size);
    cr_assert_eq(memcmp(a.data, b.data, a.size), 0);
    /* another architecture is another entry */
    kiln__cubin other;
    cr_assert_eq(kiln__cuda_compile(cx, src, 80, cache, &other), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_not(other.cached);
    free(other.data);
    /* every entry corrupted: compiled again, the same bytes */
    char cmd[1024];
    snprintf(
        cmd, sizeof cmd,
        "for f in %s/*.kc; do printf 'x' | dd of=$f bs=1 seek=40 conv=notrunc status=none; done",
        dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(kiln__cuda_compile(cx, src, 90, cache, &c), KILN_OK);
    cr_assert_not(c.cached, "a corrupted entry is compiled again");
    cr_assert_eq(memcmp(a.data, c.data, a.size), 0);
    free(a.data), free(b.data), free(c.data);
    kiln__cubin bad;
    cr_assert_eq(kiln__cuda_compile(cx, "KILN_KERNEL broken(kiln_args a) { no_such_thing(a); }", 90,
                                    cache, &bad),
                 KILN_INVALID_ARGUMENT);
    cr_assert(strstr(kiln_ctx_error_message(cx), "no_such_thing"), "%s",
              kiln_ctx_error_message(cx));
    kiln__disk_cache_close(cache);
    kiln__strbuf_free_string(cx, src);
    plan_free(&pl);
    kiln_ctx_release(cx);
}

Test(cuda_codegen, without_a_compiler_compiling_is_unavailable_with_the_reason) {
    setenv("KILN_NVRTC", "/nonexistent/libnvrtc-for-kiln-tests.so", 1);
    setenv("KILN_NVCC", "/nonexistent/nvcc-for-kiln-tests", 1);
    kiln_ctx *cx = test_ctx();
    char reason[512];
    cr_assert_not(kiln__cuda_compiler_available(reason, sizeof reason));
    cr_assert(strstr(reason, "libnvrtc-for-kiln-tests") && strstr(reason, "nvcc-for-kiln-tests"),
              "%s", reason);
    kiln__cubin out;
    cr_assert_eq(kiln__cuda_compile(cx, "", 90, NULL, &out), KILN_UNAVAILABLE);
    cr_assert(strstr(kiln_ctx_error_message(cx), "no CUDA compiler"), "%s",
              kiln_ctx_error_message(cx));
    kiln_ctx_release(cx);
}
