/* SPDX-License-Identifier: Apache-2.0 */
/* The reduce kernel, and the helpers the reduction kernels share (eval_reduce.h).
 *
 * Builtin regions (add, multiply, maximum, minimum, and, or) on one input take a typed
 * path: the reduced dimensions are grouped into runs of adjacent axes and reduced one run
 * at a time, innermost first, each as [outer, reduced, inner]: a horizontal reduction
 * when inner is 1 (contiguous), else accumulating whole rows. Float sums are pairwise
 * (numpy's scheme: 8 accumulators over blocks of 128, halves above that; rows: blocks of
 * 16 rows combined by a binary counter), so the error grows with log n. Float
 * maximum/minimum compare integer keys. f16 and bf16 are converted to f32, reduced in f32
 * and rounded once. The init value is combined once, at the end (the spec leaves the
 * schedule to the implementation).
 *
 * f32 and f64 go through kiln__reduce_f32/f64 (also the fused-kernel engine's entry
 * points): each kernel is built for the baseline ISA and for AVX2 (picked at run time, same
 * operations in the same order, so the same bits), and the work is split with
 * kiln__parallel_for at points that do not depend on the thread count (the pairwise tree's
 * nodes, fixed blocks, whole columns or outer entries), so results are bitwise the same for
 * every thread count. Integer passes are split too; their ops are exact.
 *
 * Other regions, and variadic reduces, call the region per element on rank-0 tensors,
 * folding each result element's inputs in row-major order: acc = body(acc, x). */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "backends/cpu/lib/cpu_features.h"
#include "backends/cpu/eval/eval_elementwise.h"
#include "backends/cpu/eval/eval_reduce.h"
#include "backends/cpu/eval/eval_reduce_sum.h"
#include "backends/cpu/eval/float_keys.h"
#include "base/alloc.h"
#include "base/threads.h"
#include "core/tensor_internal.h"

/* The room for one rank-0 value between a region call and its copy: the largest element,
 * complex<f64>. */
#define VALUE_BYTES 16

/* ---- scalar regions -------------------------------------------------------------------- */

kiln_status kiln__scalar_region_init(kiln__scalar_region *s, kiln_ctx *cx,
                                     const kiln_region *region, const char *fn, const char *role,
                                     const kiln_dtype *arg_dtypes, int n_args,
                                     const kiln_dtype *result_dtypes, int n_results) {
    memset(s, 0, sizeof *s);
    s->cx = cx;
    s->region = region;
    snprintf(s->what, sizeof s->what, "%s: %s", fn, role);
    size_t bytes = (size_t)(n_args + n_results) * sizeof(kiln_tensor *) +
                   (size_t)n_results * (sizeof(size_t) + VALUE_BYTES + sizeof(kiln_dtype));
    s->block = kiln__calloc(cx, bytes, _Alignof(max_align_t), fn);
    if (!s->block) return KILN_RESOURCE_EXHAUSTED;
    s->block_bytes = bytes;
    char *p = s->block;
    s->args = (kiln_tensor **)(void *)p;
    p += (size_t)n_args * sizeof(kiln_tensor *);
    s->results = (kiln_tensor **)(void *)p;
    p += (size_t)n_results * sizeof(kiln_tensor *);
    s->result_sizes = (size_t *)(void *)p;
    p += (size_t)n_results * sizeof(size_t);
    s->values = (unsigned char *)p;
    p += (size_t)n_results * VALUE_BYTES;
    s->result_dtypes = (kiln_dtype *)(void *)p;
    s->n_results = n_results;
    for (int i = 0; i < n_results; i++) {
        s->result_dtypes[i] = result_dtypes[i];
        s->result_sizes[i] = kiln_dtype_size(result_dtypes[i]);
    }
    for (int i = 0; i < n_args; i++) {
        s->args[i] = kiln__tensor_new(cx, fn, arg_dtypes[i], KILN_SHAPE_SCALAR);
        if (!s->args[i])
            return kiln_ctx_status(cx) != KILN_OK ? kiln_ctx_status(cx) : KILN_RESOURCE_EXHAUSTED;
        s->n_args = i + 1;
        memset(kiln__tensor_mutable_data(s->args[i]), 0, kiln_dtype_size(arg_dtypes[i]));
    }
    return KILN_OK;
}

void *kiln__scalar_region_arg(kiln__scalar_region *s, int i) {
    return kiln__tensor_mutable_data(s->args[i]);
}

static void release_results(kiln__scalar_region *s) {
    for (int i = 0; i < s->n_results; i++) {
        kiln_tensor_release(s->results[i]);
        s->results[i] = NULL;
    }
}

kiln_status kiln__scalar_region_call(kiln__scalar_region *s, void *const *dst) {
    kiln_status st =
        kiln__region_call(s->cx, s->region, s->what, s->args, s->n_args, s->results, s->n_results);
    if (st != KILN_OK) return st;
    for (int i = 0; i < s->n_results; i++) {
        const kiln_tensor *r = s->results[i];
        if (r->dtype != s->result_dtypes[i] || r->shape.rank != 0) {
            char shape[KILN_MAX_RANK * 21 + 3];
            kiln_shape_format(&r->shape, shape, sizeof shape);
            st = kiln_ctx_set_error(
                s->cx, KILN_INVALID_ARGUMENT, "%s result %d has type %s%s; expected %s[]", s->what,
                i + 1, kiln_dtype_name(r->dtype), shape, kiln_dtype_name(s->result_dtypes[i]));
            release_results(s);
            return st;
        }
    }
    for (int i = 0; i < s->n_results; i++)
        memcpy(s->values + VALUE_BYTES * i, kiln_tensor_data(s->results[i]), s->result_sizes[i]);
    release_results(s);
    /* An argument the region kept a reference to must not change under it: leave it to
     * the scope and use a fresh one. */
    for (int i = 0; i < s->n_args; i++) {
        kiln_tensor *a = s->args[i];
        if (atomic_load(&a->refs) == 1) continue;
        kiln_tensor *fresh = kiln__tensor_new(s->cx, s->what, a->dtype, KILN_SHAPE_SCALAR);
        if (!fresh) {
            s->args[i] = NULL;
            s->n_args = i; /* fini releases the ones before; the rest stay with the scope */
            return kiln_ctx_status(s->cx) != KILN_OK ? kiln_ctx_status(s->cx)
                                                     : KILN_RESOURCE_EXHAUSTED;
        }
        memcpy(kiln__tensor_mutable_data(fresh), kiln_tensor_data(a), kiln_dtype_size(a->dtype));
        s->args[i] = fresh;
    }
    for (int i = 0; i < s->n_results; i++)
        memcpy(dst ? dst[i] : kiln__tensor_mutable_data(s->args[i]), s->values + VALUE_BYTES * i,
               s->result_sizes[i]);
    return KILN_OK;
}

void kiln__scalar_region_fini(kiln__scalar_region *s) {
    if (!s->block) return;
    for (int i = 0; i < s->n_args; i++) {
        kiln_tensor *a = s->args[i];
        if (a && atomic_load(&a->refs) == 1) kiln_tensor_release(a);
    }
    kiln__free(s->cx, s->block, s->block_bytes);
    s->block = NULL;
}

kiln_status kiln__reducer_region_init(kiln__scalar_region *s, kiln_ctx *cx,
                                      const kiln__attrs *attrs, kiln_tensor *const *operands,
                                      int n, const char *fn) {
    kiln_dtype fixed[16];
    kiln_dtype *types = fixed;
    size_t types_bytes = (size_t)(2 * n) * sizeof *types;
    if (2 * n > 16 && !(types = kiln__alloc(cx, types_bytes, _Alignof(kiln_dtype), fn))) {
        memset(s, 0, sizeof *s);
        return KILN_RESOURCE_EXHAUSTED;
    }
    for (int j = 0; j < n; j++)
        types[j] = types[n + j] = operands[j]->dtype;
    kiln_status st = kiln__scalar_region_init(s, cx, kiln__attrs_region(attrs, 0), fn, "region",
                                              types, 2 * n, types, n);
    if (types != fixed) kiln__free(cx, types, types_bytes);
    return st;
}

/* ---- typed combiners ------------------------------------------------------------------- */

#define ADD_OP(a, b) ((a) + (b))
#define MUL_U(a, b) ((a)*1u * (b)) /* unsigned: no promotion to signed int */
#define MUL_F(a, b) ((a) * (b))
#define AND_OP(a, b) ((a) & (b))
#define OR_OP(a, b) ((a) | (b))
#define MAX_I(a, b) ((a) > (b) ? (a) : (b))
#define MIN_I(a, b) ((a) < (b) ? (a) : (b))

#define MAX_F32(a, b) fmax_f32(a, b)
#define MIN_F32(a, b) fmin_f32(a, b)
#define MAX_F64(a, b) fmax_f64(a, b)
#define MIN_F64(a, b) fmin_f64(a, b)

/* The kind and dtype a fast path really computes with: f32 for f16/bf16; bool's add and
 * maximum are or, multiply and minimum are and (on u8); signed add, multiply, and, or
 * wrap as their unsigned counterparts. */
static void impl_of(kiln__region_kind *kind, kiln_dtype *dtype) {
    kiln_dtype d = kiln__acc_dtype(*dtype);
    if (d == KILN_BOOL) {
        if (*kind == KILN_REGION_ADD || *kind == KILN_REGION_MAXIMUM) *kind = KILN_REGION_OR;
        if (*kind == KILN_REGION_MULTIPLY || *kind == KILN_REGION_MINIMUM) *kind = KILN_REGION_AND;
        d = KILN_U8;
    }
    if (*kind != KILN_REGION_MAXIMUM && *kind != KILN_REGION_MINIMUM) {
        switch (d) {
        case KILN_I8: d = KILN_U8; break;
        case KILN_I16: d = KILN_U16; break;
        case KILN_I32: d = KILN_U32; break;
        case KILN_I64: d = KILN_U64; break;
        default: break;
        }
    }
    *dtype = d;
}

bool kiln__fast_kind(kiln__region_kind kind, kiln_dtype dtype) {
    if (kiln_dtype_is_complex(dtype)) return false; /* through the region, one call a value */
    switch (kind) {
    case KILN_REGION_ADD:
    case KILN_REGION_MULTIPLY:
    case KILN_REGION_MAXIMUM:
    case KILN_REGION_MINIMUM: return true;
    case KILN_REGION_AND:
    case KILN_REGION_OR: return !kiln_dtype_is_float(dtype);
    default: return false;
    }
}

kiln_status kiln__check_builtin_arity(kiln_ctx *cx, const char *fn, const kiln_region *region,
                                      int n) {
    static const char *const names[KILN_REGION_KIND_COUNT] = {
        "custom", "add",     "multiply", "maximum", "minimum",       "and",
        "or",     "replace", "less",     "greater", "greater_equal", "less_equal"};
    kiln__region_kind kind = kiln__region_kind_of(region);
    if (kind == KILN_REGION_CUSTOM || n == 1) return KILN_OK;
    return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                              "%s: the builtin region '%s' combines 2 values into 1; reducing %d "
                              "inputs needs a region of %d arguments and %d results",
                              fn, names[kind], n, 2 * n, n);
}

/* STRIDED_OP combines a strided source (it may differ from OP where OP vectorizes only
 * over contiguous data). */
/* The loops: reduce_combine.inc (reduce_combine_int.inc for the integer types). */

/* Scalar float maximum/minimum: ordered, distinct operands (the usual case) take a
 * predictable branch; ties (±0) and NaN go through the keys. */
#define MAX_F32_SCALAR(a, b) ((a) > (b) ? (a) : (b) > (a) ? (b) : fmax_f32(a, b))
#define MIN_F32_SCALAR(a, b) ((a) < (b) ? (a) : (b) < (a) ? (b) : fmin_f32(a, b))
#define MAX_F64_SCALAR(a, b) ((a) > (b) ? (a) : (b) > (a) ? (b) : fmax_f64(a, b))
#define MIN_F64_SCALAR(a, b) ((a) < (b) ? (a) : (b) < (a) ? (b) : fmin_f64(a, b))

#define NAME_OF(type) combine_add_##type
#define INT_OP ADD_OP
#define SIGNED 0
#include "backends/cpu/eval/reduce_combine_int.inc"
#define NAME combine_add_f32
#define T float
#define OP ADD_OP
#define STRIDED_OP ADD_OP
#include "backends/cpu/eval/reduce_combine.inc"
#define NAME combine_add_f64
#define T double
#define OP ADD_OP
#define STRIDED_OP ADD_OP
#include "backends/cpu/eval/reduce_combine.inc"
#define NAME_OF(type) combine_mul_##type
#define INT_OP MUL_U
#define SIGNED 0
#include "backends/cpu/eval/reduce_combine_int.inc"
#define NAME combine_mul_f32
#define T float
#define OP MUL_F
#define STRIDED_OP MUL_F
#include "backends/cpu/eval/reduce_combine.inc"
#define NAME combine_mul_f64
#define T double
#define OP MUL_F
#define STRIDED_OP MUL_F
#include "backends/cpu/eval/reduce_combine.inc"
#define NAME_OF(type) combine_and_##type
#define INT_OP AND_OP
#define SIGNED 0
#include "backends/cpu/eval/reduce_combine_int.inc"
#define NAME_OF(type) combine_or_##type
#define INT_OP OR_OP
#define SIGNED 0
#include "backends/cpu/eval/reduce_combine_int.inc"
#define NAME_OF(type) combine_max_##type
#define INT_OP MAX_I
#define SIGNED 0
#include "backends/cpu/eval/reduce_combine_int.inc"
#define NAME_OF(type) combine_max_##type
#define INT_OP MAX_I
#define SIGNED 1
#include "backends/cpu/eval/reduce_combine_int.inc"
#define NAME combine_max_f32
#define T float
#define OP MAX_F32
#define STRIDED_OP MAX_F32_SCALAR
#include "backends/cpu/eval/reduce_combine.inc"
#define NAME combine_max_f64
#define T double
#define OP MAX_F64
#define STRIDED_OP MAX_F64_SCALAR
#include "backends/cpu/eval/reduce_combine.inc"
#define NAME_OF(type) combine_min_##type
#define INT_OP MIN_I
#define SIGNED 0
#include "backends/cpu/eval/reduce_combine_int.inc"
#define NAME_OF(type) combine_min_##type
#define INT_OP MIN_I
#define SIGNED 1
#include "backends/cpu/eval/reduce_combine_int.inc"
#define NAME combine_min_f32
#define T float
#define OP MIN_F32
#define STRIDED_OP MIN_F32_SCALAR
#include "backends/cpu/eval/reduce_combine.inc"
#define NAME combine_min_f64
#define T double
#define OP MIN_F64
#define STRIDED_OP MIN_F64_SCALAR
#include "backends/cpu/eval/reduce_combine.inc"

typedef void (*combine_fn)(void *d, const void *s, int64_t n, int64_t ss);

/* Index of a dtype among u8 u16 u32 u64 i8 i16 i32 i64 f32 f64, or -1. */
static int type_slot(kiln_dtype d) {
    switch (d) {
    case KILN_U8: return 0;
    case KILN_U16: return 1;
    case KILN_U32: return 2;
    case KILN_U64: return 3;
    case KILN_I8: return 4;
    case KILN_I16: return 5;
    case KILN_I32: return 6;
    case KILN_I64: return 7;
    case KILN_F32: return 8;
    case KILN_F64: return 9;
    default: return -1;
    }
}

static int kind_slot(kiln__region_kind kind) {
    switch (kind) {
    case KILN_REGION_ADD: return 0;
    case KILN_REGION_MULTIPLY: return 1;
    case KILN_REGION_MAXIMUM: return 2;
    case KILN_REGION_MINIMUM: return 3;
    case KILN_REGION_AND: return 4;
    case KILN_REGION_OR: return 5;
    default: return -1;
    }
}

void kiln__to_acc(kiln_dtype dtype, const void *src, void *dst, int64_t n) {
    if (dtype == KILN_F16 || dtype == KILN_BF16)
        kiln__ew_load_half(dtype, src, dst, n);
    else if (n > 0)
        memcpy(dst, src, (size_t)n * kiln_dtype_size(dtype));
}

void kiln__from_acc(kiln_dtype dtype, const void *src, void *dst, int64_t n) {
    if (dtype == KILN_F16 || dtype == KILN_BF16)
        kiln__ew_store_half(dtype, src, dst, n);
    else if (n > 0)
        memmove(dst, src, (size_t)n * kiln_dtype_size(dtype));
}

void kiln__fill_elements(void *dst, const void *value, size_t size, int64_t n) {
#define FILL(T)                         \
    do {                                \
        T v, *d = dst;                  \
        memcpy(&v, value, sizeof v);    \
        for (int64_t i = 0; i < n; i++) \
            d[i] = v;                   \
    } while (0)
    switch (size) {
    case 1: memset(dst, *(const uint8_t *)value, (size_t)n); return;
    case 2: FILL(uint16_t); return;
    case 4: FILL(uint32_t); return;
    case 8: FILL(uint64_t); return;
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy((char *)dst + (size_t)i * size, value, size);
    }
#undef FILL
}

/* ---- reduction passes: [O, R, I] -> [O, I] --------------------------------------------- */

typedef void (*pass_fn)(const void *x, int64_t O, int64_t R, int64_t I, void *out);

#define RED_SUM_BLOCK 16               /* rows summed in order before the pairwise tree */
#define RED_STACK_BYTES 262144         /* scratch per column chunk, on the stack */
#define RED_CHUNK 65536                /* elements per block of a product, or per parallel item */
#define RED_MIN_PARALLEL 131072        /* elements below which a reduction stays on one thread */
#define RED_MAX_LEVELS 64              /* binary-counter levels: enough for any int64 row count */
#define TILE 16384                     /* columns per tile when combining rows */

/* Integer passes: any associative op, 8 lanes along a contiguous run; rows combined tile by
 * tile. The ops are exact, associative and commutative (unsigned wrap-around, and, or,
 * maximum, minimum), so splitting the work across threads cannot change a result. The
 * passes of each integer type: reduce_pass_int.inc. */
#define T uint8_t
#define IS_SIGNED 0
#define LOWEST 0
#define HIGHEST UINT8_MAX
#define NAME(kind) pass_##kind##_u8
#define PART(kind, name) pass_##kind##_u8_##name
#include "backends/cpu/eval/reduce_pass_int.inc"
#define T uint16_t
#define IS_SIGNED 0
#define LOWEST 0
#define HIGHEST UINT16_MAX
#define NAME(kind) pass_##kind##_u16
#define PART(kind, name) pass_##kind##_u16_##name
#include "backends/cpu/eval/reduce_pass_int.inc"
#define T uint32_t
#define IS_SIGNED 0
#define LOWEST 0
#define HIGHEST UINT32_MAX
#define NAME(kind) pass_##kind##_u32
#define PART(kind, name) pass_##kind##_u32_##name
#include "backends/cpu/eval/reduce_pass_int.inc"
#define T uint64_t
#define IS_SIGNED 0
#define LOWEST 0
#define HIGHEST UINT64_MAX
#define NAME(kind) pass_##kind##_u64
#define PART(kind, name) pass_##kind##_u64_##name
#include "backends/cpu/eval/reduce_pass_int.inc"
#define T int8_t
#define IS_SIGNED 1
#define LOWEST INT8_MIN
#define HIGHEST INT8_MAX
#define NAME(kind) pass_##kind##_i8
#define PART(kind, name) pass_##kind##_i8_##name
#include "backends/cpu/eval/reduce_pass_int.inc"
#define T int16_t
#define IS_SIGNED 1
#define LOWEST INT16_MIN
#define HIGHEST INT16_MAX
#define NAME(kind) pass_##kind##_i16
#define PART(kind, name) pass_##kind##_i16_##name
#include "backends/cpu/eval/reduce_pass_int.inc"
#define T int32_t
#define IS_SIGNED 1
#define LOWEST INT32_MIN
#define HIGHEST INT32_MAX
#define NAME(kind) pass_##kind##_i32
#define PART(kind, name) pass_##kind##_i32_##name
#include "backends/cpu/eval/reduce_pass_int.inc"
#define T int64_t
#define IS_SIGNED 1
#define LOWEST INT64_MIN
#define HIGHEST INT64_MAX
#define NAME(kind) pass_##kind##_i64
#define PART(kind, name) pass_##kind##_i64_##name
#include "backends/cpu/eval/reduce_pass_int.inc"

/* ---- contiguous f32/f64 reductions: kiln__reduce_f32 / kiln__reduce_f64 ---------------- */

/* Each kernel exists twice, for the baseline ISA and for AVX2 (eval_reduce_sum.h): the AVX2
 * variant is chosen at run time unless forced off (the tests compare the two). */
#if KILN_RED_HAVE_AVX2
static int red_force_baseline;

void kiln__reduce_force_baseline(bool on) {
    __atomic_store_n(&red_force_baseline, on ? 1 : 0, __ATOMIC_RELAXED);
}

static bool red_use_avx2(void) {
    return kiln__cpu_avx2() && !__atomic_load_n(&red_force_baseline, __ATOMIC_RELAXED);
}
#else
void kiln__reduce_force_baseline(bool on) { (void)on; }
#endif

static int red_bit_length(uint64_t v) {
    int n = 0;
    for (; v; v >>= 1)
        n++;
    return n;
}

/* Where numpy's pairwise sum splits a run of n > 128: the left half, a multiple of 8 (never
 * longer than the right). */
static int64_t red_half(int64_t n) { return n / 2 - (n / 2) % 8; }

/* Whether a sum along runs reads four leaves of its tree at once. In cache that is about
 * twice as fast as one leaf after another (a leaf is one chain of dependent additions); from
 * memory it was measured slower on some machines (four streams 512 bytes apart confuse
 * their prefetchers, while one leaf after another is a single sequential stream). So four at
 * once for an input the last-level cache can hold, whatever its size (64 MiB read from a
 * 480 MiB L3 went from 2.6 to 2.4 ms), one at a time beyond. Either way the additions and
 * their order are the same. */
static int64_t red_interleave_limit; /* 0: the last-level cache's size */

void kiln__reduce_set_interleave_limit(int64_t bytes) {
    __atomic_store_n(&red_interleave_limit, bytes > 0 ? bytes : 0, __ATOMIC_RELAXED);
}

static bool red_interleave(double elements, size_t elem_bytes) {
    int64_t limit = __atomic_load_n(&red_interleave_limit, __ATOMIC_RELAXED);
    return elements * (double)elem_bytes <= (double)(limit ? limit : kiln__cpu_llc_bytes());
}

/* Levels of the binary counter that combines the row blocks of R rows. */
static int red_levels(int64_t R) {
    return red_bit_length((uint64_t)((R + RED_SUM_BLOCK - 1) / RED_SUM_BLOCK));
}


/* A kernel's variant chosen at run time. fn (for example FN(sum_run)) is expanded before
 * RED_CALL_VARIANT pastes the variant's suffix onto it. */
#define RED_CALL(fn, ...) RED_CALL_VARIANT(fn, __VA_ARGS__)
#if KILN_RED_HAVE_AVX2
#define RED_CALL_VARIANT(fn, ...) \
    (red_use_avx2() ? fn##_avx2(__VA_ARGS__) : fn##_base(__VA_ARGS__))
#else
#define RED_CALL_VARIANT(fn, ...) fn##_base(__VA_ARGS__)
#endif

/* The reduce of each float type (reduce_float.inc). */
#include "backends/cpu/eval/float_layout_f32.inc"
#define FN(name) f32_##name
#define KEY key_f32
#define UNKEY unkey_f32
#define ENTRY kiln__reduce_f32
#include "backends/cpu/eval/reduce_float.inc"
#include "backends/cpu/eval/float_layout_f64.inc"
#define FN(name) f64_##name
#define KEY key_f64
#define UNKEY unkey_f64
#define ENTRY kiln__reduce_f64
#include "backends/cpu/eval/reduce_float.inc"

/* The reduce kernel's passes on floats. */
#define DEF_FLOAT_PASS(NAME, KIND, S, T)                                          \
    static void NAME(const void *x, int64_t O, int64_t R, int64_t I, void *out) { \
        kiln__reduce_##S(KIND, (const T *)x, O, R, I, (T *)out, true);            \
    }
DEF_FLOAT_PASS(pass_add_f32, KILN_REGION_ADD, f32, float)
DEF_FLOAT_PASS(pass_add_f64, KILN_REGION_ADD, f64, double)
DEF_FLOAT_PASS(pass_mul_f32, KILN_REGION_MULTIPLY, f32, float)
DEF_FLOAT_PASS(pass_mul_f64, KILN_REGION_MULTIPLY, f64, double)
DEF_FLOAT_PASS(pass_max_f32, KILN_REGION_MAXIMUM, f32, float)
DEF_FLOAT_PASS(pass_max_f64, KILN_REGION_MAXIMUM, f64, double)
DEF_FLOAT_PASS(pass_min_f32, KILN_REGION_MINIMUM, f32, float)
DEF_FLOAT_PASS(pass_min_f64, KILN_REGION_MINIMUM, f64, double)

/* The kernels of each builtin region kind (kind_slot) on each dtype (type_slot): combine
 * folds one row into another, pass reduces a whole [O, R, I] block. Both exist for the same
 * pairs; a pair left out (signed add, multiply, and, or: impl_of runs them as unsigned; and,
 * or of floats) is NULL. */
typedef struct reduce_kernels {
    combine_fn combine;
    pass_fn pass;
} reduce_kernels;

#define KERNELS(KIND, T) {combine_##KIND##_##T, pass_##KIND##_##T}
#define UNSIGNED_KERNELS(KIND) \
    KERNELS(KIND, u8), KERNELS(KIND, u16), KERNELS(KIND, u32), KERNELS(KIND, u64)
#define SIGNED_KERNELS(KIND) \
    KERNELS(KIND, i8), KERNELS(KIND, i16), KERNELS(KIND, i32), KERNELS(KIND, i64)

static const reduce_kernels kernel_table[6][10] = {
    {UNSIGNED_KERNELS(add), [8] = KERNELS(add, f32), KERNELS(add, f64)},
    {UNSIGNED_KERNELS(mul), [8] = KERNELS(mul, f32), KERNELS(mul, f64)},
    {UNSIGNED_KERNELS(max), SIGNED_KERNELS(max), KERNELS(max, f32), KERNELS(max, f64)},
    {UNSIGNED_KERNELS(min), SIGNED_KERNELS(min), KERNELS(min, f32), KERNELS(min, f64)},
    {UNSIGNED_KERNELS(and)},
    {UNSIGNED_KERNELS(or)},
};

void kiln__combine(kiln__region_kind kind, kiln_dtype dtype, void *dst, const void *src, int64_t n,
                   int64_t src_stride) {
    impl_of(&kind, &dtype);
    int k = kind_slot(kind), t = type_slot(dtype);
    if (k < 0 || t < 0 || !kernel_table[k][t].combine || n <= 0) return;
    kernel_table[k][t].combine(dst, src, n, src_stride);
}

/* ---- reduce: the builtin fast path ----------------------------------------------------- */

typedef struct group {
    int64_t size;
    bool reduced;
} group;

typedef struct {
    kiln_dtype dtype;
    const void *src;
    float *dst;
} to_acc_job;

static void to_acc_range(void *user, int64_t begin, int64_t end) {
    const to_acc_job *j = user;
    kiln__to_acc(j->dtype, (const uint16_t *)j->src + begin, j->dst + begin, end - begin);
}

/* f16/bf16 to f32, split across threads (each element converts on its own). */
static void to_acc_parallel(kiln_dtype dtype, const void *src, void *dst, int64_t n) {
    to_acc_job j = {dtype, src, dst};
    kiln__parallel_for(n, RED_MIN_PARALLEL, to_acc_range, &j);
}

static kiln_status reduce_fast(kiln_ctx *cx, const kiln__attrs *attrs, kiln__region_kind kind,
                               const kiln_tensor *x, const kiln_tensor *init, kiln_tensor *out) {
    const char *fn = attrs->fn ? attrs->fn : "reduce";
    kiln_dtype dtype = x->dtype, adt = kiln__acc_dtype(dtype);
    kiln__region_kind ik = kind;
    kiln_dtype it = dtype;
    impl_of(&ik, &it);
    pass_fn pass = kernel_table[kind_slot(ik)][type_slot(it)].pass;
    size_t asz = kiln_dtype_size(adt);
    const bool half = adt != dtype;
    int64_t n_out = out->numel;
    if (n_out == 0) return KILN_OK;
    if (x->numel == 0) {
        kiln__fill_elements(kiln__out(out), kiln__in(init), kiln_dtype_size(dtype), n_out);
        return KILN_OK;
    }
    _Alignas(8) unsigned char init_acc[8];
    kiln__to_acc(dtype, kiln__in(init), init_acc, 1);

    bool reduced[KILN_MAX_RANK] = {false};
    for (int32_t i = 0; i < attrs->u.reduce_dims.count; i++)
        reduced[attrs->u.reduce_dims.v[i]] = true;
    group g[KILN_MAX_RANK];
    int ng = 0;
    for (int32_t d = 0; d < x->shape.rank; d++) {
        int64_t size = x->shape.dims[d];
        if (size == 1) continue;
        if (ng > 0 && g[ng - 1].reduced == reduced[d])
            g[ng - 1].size *= size;
        else
            g[ng++] = (group){size, reduced[d]};
    }

    void *out_data = kiln__out(out);
    const void *cur = kiln__in(x);
    void *acc = NULL;   /* the latest result, writable: out_data or a buffer of ours */
    void *owned = NULL; /* the buffer of ours that cur points to, if any */
    size_t owned_bytes = 0;
    if (half) {
        owned_bytes = (size_t)x->numel * asz;
        if (!(owned = kiln__alloc(cx, owned_bytes, KILN_DATA_ALIGNMENT, fn)))
            return KILN_RESOURCE_EXHAUSTED;
        to_acc_parallel(dtype, cur, owned, x->numel);
        cur = acc = owned;
    }
    for (;;) {
        int gi = -1, remaining = 0;
        for (int i = 0; i < ng; i++) {
            if (g[i].reduced) {
                gi = i;
                remaining++;
            }
        }
        if (gi < 0) break;
        int64_t O = 1, I = 1;
        for (int i = 0; i < gi; i++)
            O *= g[i].size;
        for (int i = gi + 1; i < ng; i++)
            I *= g[i].size;
        void *dst = out_data;
        size_t dst_bytes = 0;
        if (remaining > 1 || half) {
            dst_bytes = (size_t)(O * I) * asz;
            if (!(dst = kiln__alloc(cx, dst_bytes, KILN_DATA_ALIGNMENT, fn))) {
                if (owned) kiln__free(cx, owned, owned_bytes);
                return KILN_RESOURCE_EXHAUSTED;
            }
        }
        pass(cur, O, g[gi].size, I, dst);
        if (owned) kiln__free(cx, owned, owned_bytes);
        owned = dst == out_data ? NULL : dst;
        owned_bytes = dst_bytes;
        cur = acc = dst;
        for (int i = gi; i + 1 < ng; i++)
            g[i] = g[i + 1];
        ng--;
    }
    if (!acc) { /* nothing to reduce: only size-1 (or no) reduced dimensions */
        memcpy(out_data, cur, out->nbytes);
        acc = out_data;
    }
    kiln__combine(kind, dtype, acc, init_acc, n_out, 0);
    if (half) kiln__from_acc(dtype, acc, out_data, n_out);
    if (owned) kiln__free(cx, owned, owned_bytes);
    return KILN_OK;
}

/* ---- reduce: argmax / argmin ----------------------------------------------------------- */

#define NAN_F(a) ((a) != (a))
#define NAN_I(a) 0
#define LOAD_ID(v) (v)
#define LOAD_F16(v) kiln__f16_to_f32_inline(v)
#define LOAD_BF16(v) kiln__bf16_to_f32_inline(v)

/* The loops (reduce_arg_pair.inc): argmax_<type> and argmin_<type>. */
#define GT(a, b) ((a) > (b))
#define LT(a, b) ((a) < (b))
#define MAX_NAME argmax_u8
#define MIN_NAME argmin_u8
#define T uint8_t
#define A uint8_t
#define LOAD LOAD_ID
#define ISNAN NAN_I
#include "backends/cpu/eval/reduce_arg_pair.inc"
#define MAX_NAME argmax_u16
#define MIN_NAME argmin_u16
#define T uint16_t
#define A uint16_t
#define LOAD LOAD_ID
#define ISNAN NAN_I
#include "backends/cpu/eval/reduce_arg_pair.inc"
#define MAX_NAME argmax_u32
#define MIN_NAME argmin_u32
#define T uint32_t
#define A uint32_t
#define LOAD LOAD_ID
#define ISNAN NAN_I
#include "backends/cpu/eval/reduce_arg_pair.inc"
#define MAX_NAME argmax_u64
#define MIN_NAME argmin_u64
#define T uint64_t
#define A uint64_t
#define LOAD LOAD_ID
#define ISNAN NAN_I
#include "backends/cpu/eval/reduce_arg_pair.inc"
#define MAX_NAME argmax_i8
#define MIN_NAME argmin_i8
#define T int8_t
#define A int8_t
#define LOAD LOAD_ID
#define ISNAN NAN_I
#include "backends/cpu/eval/reduce_arg_pair.inc"
#define MAX_NAME argmax_i16
#define MIN_NAME argmin_i16
#define T int16_t
#define A int16_t
#define LOAD LOAD_ID
#define ISNAN NAN_I
#include "backends/cpu/eval/reduce_arg_pair.inc"
#define MAX_NAME argmax_i32
#define MIN_NAME argmin_i32
#define T int32_t
#define A int32_t
#define LOAD LOAD_ID
#define ISNAN NAN_I
#include "backends/cpu/eval/reduce_arg_pair.inc"
#define MAX_NAME argmax_i64
#define MIN_NAME argmin_i64
#define T int64_t
#define A int64_t
#define LOAD LOAD_ID
#define ISNAN NAN_I
#include "backends/cpu/eval/reduce_arg_pair.inc"
#define MAX_NAME argmax_f16
#define MIN_NAME argmin_f16
#define T uint16_t
#define A float
#define LOAD LOAD_F16
#define ISNAN NAN_F
#include "backends/cpu/eval/reduce_arg_pair.inc"
#define MAX_NAME argmax_bf16
#define MIN_NAME argmin_bf16
#define T uint16_t
#define A float
#define LOAD LOAD_BF16
#define ISNAN NAN_F
#include "backends/cpu/eval/reduce_arg_pair.inc"
#define MAX_NAME argmax_f32
#define MIN_NAME argmin_f32
#define T float
#define A float
#define LOAD LOAD_ID
#define ISNAN NAN_F
#include "backends/cpu/eval/reduce_arg_pair.inc"
#define MAX_NAME argmax_f64
#define MIN_NAME argmin_f64
#define T double
#define A double
#define LOAD LOAD_ID
#define ISNAN NAN_F
#include "backends/cpu/eval/reduce_arg_pair.inc"

static void reduce_arg(bool is_max, const kiln_tensor *x, int64_t axis, const kiln_tensor *init_v,
                       const kiln_tensor *init_k, kiln_tensor *v, kiln_tensor *k) {
    int64_t O = 1, I = 1, R = x->shape.dims[axis];
    for (int32_t d = 0; d < axis; d++)
        O *= x->shape.dims[d];
    for (int32_t d = (int32_t)axis + 1; d < x->shape.rank; d++)
        I *= x->shape.dims[d];
    if (v->numel == 0) return;
    int64_t ik = *(const int64_t *)kiln__in(init_k);
    int64_t *kd = kiln__out(k);
    const void *xd = kiln__in(x), *ivp = kiln__in(init_v);
    void *vd = kiln__out(v);
#define ARG_CASE(DT, SUFFIX, T)                                                                 \
    case DT:                                                                                    \
        (is_max ? argmax_##SUFFIX : argmin_##SUFFIX)(xd, O, R, I, *(const T *)ivp, ik, vd, kd); \
        return;
    switch (x->dtype) {
        ARG_CASE(KILN_BOOL, u8, uint8_t)
        ARG_CASE(KILN_U8, u8, uint8_t)
        ARG_CASE(KILN_U16, u16, uint16_t)
        ARG_CASE(KILN_U32, u32, uint32_t)
        ARG_CASE(KILN_U64, u64, uint64_t)
        ARG_CASE(KILN_I8, i8, int8_t)
        ARG_CASE(KILN_I16, i16, int16_t)
        ARG_CASE(KILN_I32, i32, int32_t)
        ARG_CASE(KILN_I64, i64, int64_t)
        ARG_CASE(KILN_F16, f16, uint16_t)
        ARG_CASE(KILN_BF16, bf16, uint16_t)
        ARG_CASE(KILN_F32, f32, float)
        ARG_CASE(KILN_F64, f64, double)
    default: return;
    }
#undef ARG_CASE
}

/* ---- reduce: any region, per element --------------------------------------------------- */

void kiln__reduce_walk_init(kiln__reduce_walk *w, const kiln_shape *x, const kiln_dims *dims) {
    bool reduced[KILN_MAX_RANK] = {false};
    for (int32_t i = 0; i < dims->count; i++)
        reduced[dims->v[i]] = true;
    int64_t stride[KILN_MAX_RANK], s = 1;
    for (int32_t d = x->rank - 1; d >= 0; d--) {
        stride[d] = s;
        s *= x->dims[d];
    }
    w->nk = w->nr = 0;
    w->n_red = 1;
    for (int32_t d = 0; d < x->rank; d++) {
        if (reduced[d]) {
            w->rdim[w->nr] = x->dims[d];
            w->rstride[w->nr++] = stride[d];
            w->n_red *= x->dims[d];
        } else {
            w->kdim[w->nk] = x->dims[d];
            w->kstride[w->nk++] = stride[d];
        }
    }
}

static kiln_status reduce_generic(kiln_ctx *cx, const kiln__attrs *attrs,
                                  kiln_tensor *const *operands, int n, kiln_tensor **results) {
    const char *fn = attrs->fn ? attrs->fn : "reduce";
    const int64_t n_out = results[0]->numel;
    if (n_out == 0) return KILN_OK;
    kiln__reduce_walk wk;
    kiln__reduce_walk_init(&wk, &operands[0]->shape, &attrs->u.reduce_dims);
    const int nk = wk.nk, nr = wk.nr;
    const int64_t n_red = wk.n_red, *kdim = wk.kdim, *kstride = wk.kstride, *rdim = wk.rdim,
                  *rstride = wk.rstride;

    kiln__scalar_region sr;
    kiln_status st = kiln__reducer_region_init(&sr, cx, attrs, operands, n, fn);
    int64_t kidx[KILN_MAX_RANK] = {0}, ridx[KILN_MAX_RANK];
    int64_t base = 0;
    for (int64_t o = 0; o < n_out && st == KILN_OK; o++) {
        for (int j = 0; j < n; j++)
            memcpy(kiln__scalar_region_arg(&sr, j), kiln__in(operands[n + j]),
                   kiln_dtype_size(operands[j]->dtype));
        int64_t off = 0;
        for (int k = 0; k < nr; k++)
            ridx[k] = 0;
        for (int64_t r = 0; r < n_red && st == KILN_OK; r++) {
            for (int j = 0; j < n; j++) {
                size_t es = kiln_dtype_size(operands[j]->dtype);
                memcpy(kiln__scalar_region_arg(&sr, n + j),
                       (const char *)kiln__in(operands[j]) + (size_t)(base + off) * es, es);
            }
            st = kiln__scalar_region_call(&sr, NULL);
            for (int k = nr - 1; k >= 0; k--) {
                off += rstride[k];
                if (++ridx[k] < rdim[k]) break;
                off -= ridx[k] * rstride[k];
                ridx[k] = 0;
            }
        }
        if (st != KILN_OK) break;
        for (int j = 0; j < n; j++) {
            size_t es = kiln_dtype_size(operands[j]->dtype);
            memcpy((char *)kiln__out(results[j]) + (size_t)o * es, kiln__scalar_region_arg(&sr, j),
                   es);
        }
        for (int k = nk - 1; k >= 0; k--) {
            base += kstride[k];
            if (++kidx[k] < kdim[k]) break;
            base -= kidx[k] * kstride[k];
            kidx[k] = 0;
        }
    }
    kiln__scalar_region_fini(&sr);
    return st;
}

KILN__EVAL(REDUCE) {
    (void)n_results;
    const int n = n_operands / 2;
    const kiln_region *region = kiln__attrs_region(attrs, 0);
    const kiln_dims *dims = &attrs->u.reduce_dims;
    if (n == 2 && region &&
        (region->user == &kiln__argmax_tag || region->user == &kiln__argmin_tag) &&
        dims->count == 1 && operands[1]->dtype == KILN_I64) {
        reduce_arg(region->user == &kiln__argmax_tag, operands[0], dims->v[0], operands[2],
                   operands[3], results[0], results[1]);
        return KILN_OK;
    }
    kiln_status st = kiln__check_builtin_arity(cx, attrs->fn ? attrs->fn : "reduce", region, n);
    if (st != KILN_OK) return st;
    kiln__region_kind kind = kiln__region_kind_of(region);
    if (n == 1 && kiln__fast_kind(kind, operands[0]->dtype))
        return reduce_fast(cx, attrs, kind, operands[0], operands[1], results[0]);
    return reduce_generic(cx, attrs, operands, n, results);
}
