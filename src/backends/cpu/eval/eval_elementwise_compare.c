/* Evaluator kernels for compare, select and clamp. */
#include <string.h>

#include "backends/cpu/eval/eval_elementwise.h"

#define KERNEL(NAME) KILN__EW_KERNEL(NAME)

/* ---- compare ------------------------------------------------------------------------------ */

/* Keys whose signed integer order is the IEEE totalOrder of the floats they come from:
 * -NaN < -inf < ... < -0 < +0 < ... < inf < +NaN. Negative values have their magnitude bits
 * flipped. */
static inline int16_t total_key16(uint16_t bits) {
    int16_t k = (int16_t)bits;
    return k < 0 ? (int16_t)(k ^ INT16_MAX) : k;
}
static inline int32_t total_key32(float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    int32_t k = (int32_t)bits;
    return k < 0 ? k ^ INT32_MAX : k;
}
static inline int64_t total_key64(double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int64_t k = (int64_t)bits;
    return k < 0 ? k ^ INT64_MAX : k;
}

#define KEY_ID(v) (v)
#define KEY_F16(v) kiln_f16_to_f32(v)
#define KEY_BF16(v) kiln_bf16_to_f32(v)
#define KEY_TOTAL16(v) total_key16(v)
#define KEY_TOTAL32(v) total_key32(v)
#define KEY_TOTAL64(v) total_key64(v)

/* One loop per direction over elements of type T compared as KEY(x) <op> KEY(y). */
#define CMP_LOOP(T, KEY, OP)                        \
    do {                                            \
        const T *pa_ = a_;                          \
        const T *pb_ = b_;                          \
        uint8_t *pr_ = r_;                          \
        for (int64_t i_ = 0; i_ < n; i_++)          \
            pr_[i_] = KEY(pa_[i_]) OP KEY(pb_[i_]); \
    } while (0)
#define CMP(T, KEY)                                                                              \
    do {                                                                                         \
        switch (dir) {                                                                           \
        case KILN_CMP_EQ: CMP_LOOP(T, KEY, ==); break;                                           \
        case KILN_CMP_NE: CMP_LOOP(T, KEY, !=); break;                                           \
        case KILN_CMP_GE: CMP_LOOP(T, KEY, >=); break;                                           \
        case KILN_CMP_GT: CMP_LOOP(T, KEY, >); break;                                            \
        case KILN_CMP_LE: CMP_LOOP(T, KEY, <=); break;                                           \
        case KILN_CMP_LT: CMP_LOOP(T, KEY, <); break;                                            \
        default:                                                                                 \
            return kiln_ctx_set_error(cx, KILN_INTERNAL, "cpu: compare direction %d", (int)dir); \
        }                                                                                        \
    } while (0)

KERNEL(COMPARE) {
    (void)n_operands, (void)n_results;
    kiln_dtype dt = kiln_tensor_dtype(operands[0]);
    int64_t n = kiln_tensor_numel(results[0]);
    if (n == 0) return KILN_OK;
    const void *a_ = kiln__in(operands[0]), *b_ = kiln__in(operands[1]);
    void *r_ = kiln__out(results[0]);
    kiln_compare_direction dir = attrs->u.compare.direction;
    /* Integer and i1 comparisons follow the dtype (inference checked the type suits it);
     * floats compare as IEEE (FLOAT, the default) or by total order. */
    bool total = attrs->u.compare.type == KILN_CMP_TOTALORDER;
    switch (dt) {
    case KILN_BOOL:
    case KILN_U8: CMP(uint8_t, KEY_ID); break;
    case KILN_U16: CMP(uint16_t, KEY_ID); break;
    case KILN_U32: CMP(uint32_t, KEY_ID); break;
    case KILN_U64: CMP(uint64_t, KEY_ID); break;
    case KILN_I8: CMP(int8_t, KEY_ID); break;
    case KILN_I16: CMP(int16_t, KEY_ID); break;
    case KILN_I32: CMP(int32_t, KEY_ID); break;
    case KILN_I64: CMP(int64_t, KEY_ID); break;
    case KILN_F16:
        if (total)
            CMP(uint16_t, KEY_TOTAL16);
        else
            CMP(uint16_t, KEY_F16);
        break;
    case KILN_BF16:
        if (total)
            CMP(uint16_t, KEY_TOTAL16);
        else
            CMP(uint16_t, KEY_BF16);
        break;
    case KILN_F32:
        if (total)
            CMP(float, KEY_TOTAL32);
        else
            CMP(float, KEY_ID);
        break;
    case KILN_F64:
        if (total)
            CMP(double, KEY_TOTAL64);
        else
            CMP(double, KEY_ID);
        break;
    default: return kiln__ew_bad_dtype(cx, "compare", dt);
    }
    return KILN_OK;
}

/* ---- select ------------------------------------------------------------------------------- */

#define SELECT_LOOP(T)                            \
    do {                                          \
        const T *pt_ = t_;                        \
        const T *pf_ = f_;                        \
        T *pr_ = r_;                              \
        for (int64_t i_ = 0; i_ < n; i_++)        \
            pr_[i_] = p_[i_] ? pt_[i_] : pf_[i_]; \
    } while (0)

KERNEL(SELECT) {
    (void)attrs, (void)n_operands, (void)n_results;
    kiln_tensor *r = results[0];
    int64_t n = kiln_tensor_numel(r);
    if (n == 0) return KILN_OK;
    const uint8_t *p_ = kiln__in(operands[0]);
    const void *t_ = kiln__in(operands[1]), *f_ = kiln__in(operands[2]);
    void *r_ = kiln__out(r);
    if (kiln_tensor_rank(operands[0]) == 0) {
        memmove(r_, p_[0] ? t_ : f_, kiln_tensor_nbytes(r)); /* r may be t or f */
        return KILN_OK;
    }
    switch (kiln_dtype_size(kiln_tensor_dtype(r))) {
    case 1: SELECT_LOOP(uint8_t); break;
    case 2: SELECT_LOOP(uint16_t); break;
    case 4: SELECT_LOOP(uint32_t); break;
    case 8: SELECT_LOOP(uint64_t); break;
    default: return kiln__ew_bad_dtype(cx, "select", kiln_tensor_dtype(r));
    }
    return KILN_OK;
}

/* ---- clamp -------------------------------------------------------------------------------- */

/* min(max(x, lo), hi) over elements of type T loaded with LOAD and stored with STORE, with
 * lo and hi either scalars (hoisted) or arrays; the two common cases, both scalars and both
 * arrays, have loops of their own, with unit strides, so that they vectorize. */
#define CLAMP_LOOP(T, C, LOAD, STORE, MAX, MIN)                                                   \
    do {                                                                                          \
        const T *plo_ = lo_;                                                                      \
        const T *px_ = x_;                                                                        \
        const T *phi_ = hi_;                                                                      \
        T *pr_ = r_;                                                                              \
        if (!lo_step && !hi_step) {                                                               \
            C lo = LOAD(plo_[0]), hi = LOAD(phi_[0]);                                             \
            for (int64_t i_ = 0; i_ < n; i_++)                                                    \
                pr_[i_] = STORE(MIN(MAX(LOAD(px_[i_]), lo), hi));                                 \
        } else if (lo_step && hi_step) {                                                          \
            for (int64_t i_ = 0; i_ < n; i_++)                                                    \
                pr_[i_] = STORE(MIN(MAX(LOAD(px_[i_]), LOAD(plo_[i_])), LOAD(phi_[i_])));         \
        } else {                                                                                  \
            for (int64_t i_ = 0; i_ < n; i_++)                                                    \
                pr_[i_] = STORE(                                                                  \
                    MIN(MAX(LOAD(px_[i_]), LOAD(plo_[i_ * lo_step])), LOAD(phi_[i_ * hi_step]))); \
        }                                                                                         \
    } while (0)

#define ID(v) (v)
#define OR(a, b) ((uint8_t)((a) | (b)))
#define AND(a, b) ((uint8_t)((a) & (b)))
#define IMAX(a, b) ((a) > (b) ? (a) : (b))
#define IMIN(a, b) ((a) < (b) ? (a) : (b))
#define TO_F16(v) kiln_f32_to_f16(v)
#define TO_BF16(v) kiln_f32_to_bf16(v)

/* Integer maximum/minimum on values, as functions so each argument is evaluated once. */
#define INT_MINMAX(T, name)                                     \
    static inline T max_##name(T a, T b) { return IMAX(a, b); } \
    static inline T min_##name(T a, T b) { return IMIN(a, b); }
INT_MINMAX(int8_t, i8)
INT_MINMAX(int16_t, i16)
INT_MINMAX(int32_t, i32)
INT_MINMAX(int64_t, i64)
INT_MINMAX(uint8_t, u8)
INT_MINMAX(uint16_t, u16)
INT_MINMAX(uint32_t, u32)
INT_MINMAX(uint64_t, u64)

KERNEL(CLAMP) {
    (void)attrs, (void)n_operands, (void)n_results;
    kiln_tensor *r = results[0];
    kiln_dtype dt = kiln_tensor_dtype(r);
    int64_t n = kiln_tensor_numel(r);
    if (n == 0) return KILN_OK;
    const void *lo_ = kiln__in(operands[0]), *x_ = kiln__in(operands[1]),
               *hi_ = kiln__in(operands[2]);
    void *r_ = kiln__out(r);
    int64_t lo_step = kiln_tensor_rank(operands[0]) == 0 ? 0 : 1;
    int64_t hi_step = kiln_tensor_rank(operands[2]) == 0 ? 0 : 1;
    switch (dt) {
    case KILN_BOOL: CLAMP_LOOP(uint8_t, uint8_t, ID, ID, OR, AND); break;
    case KILN_I8: CLAMP_LOOP(int8_t, int8_t, ID, ID, max_i8, min_i8); break;
    case KILN_I16: CLAMP_LOOP(int16_t, int16_t, ID, ID, max_i16, min_i16); break;
    case KILN_I32: CLAMP_LOOP(int32_t, int32_t, ID, ID, max_i32, min_i32); break;
    case KILN_I64: CLAMP_LOOP(int64_t, int64_t, ID, ID, max_i64, min_i64); break;
    case KILN_U8: CLAMP_LOOP(uint8_t, uint8_t, ID, ID, max_u8, min_u8); break;
    case KILN_U16: CLAMP_LOOP(uint16_t, uint16_t, ID, ID, max_u16, min_u16); break;
    case KILN_U32: CLAMP_LOOP(uint32_t, uint32_t, ID, ID, max_u32, min_u32); break;
    case KILN_U64: CLAMP_LOOP(uint64_t, uint64_t, ID, ID, max_u64, min_u64); break;
    case KILN_F16:
        CLAMP_LOOP(uint16_t, float, kiln_f16_to_f32, TO_F16, kiln__nanmaxf, kiln__nanminf);
        break;
    case KILN_BF16:
        CLAMP_LOOP(uint16_t, float, kiln_bf16_to_f32, TO_BF16, kiln__nanmaxf, kiln__nanminf);
        break;
    case KILN_F32: CLAMP_LOOP(float, float, ID, ID, kiln__nanmaxf, kiln__nanminf); break;
    case KILN_F64: CLAMP_LOOP(double, double, ID, ID, kiln__nanmax, kiln__nanmin); break;
    default: return kiln__ew_bad_dtype(cx, "clamp", dt);
    }
    return KILN_OK;
}
