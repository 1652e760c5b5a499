/* SPDX-License-Identifier: Apache-2.0 */
/* The prelude of kiln's generated CUDA kernels (codegen.c): StableHLO's semantics for the
 * elementwise ops, as the CPU evaluator computes them (src/backends/cpu/eval_*.c), in C
 * that NVRTC compiles for a device and that the host C compiler compiles too (without
 * __CUDACC__: one "thread" walks the whole grid-stride loop), so the same generated source
 * can be checked against the evaluator on a machine without a GPU, and run by a CPU.
 *
 * Registers are C values: float, double, integers by width and sign, bool as unsigned
 * char 0/1, f16 and bf16 as their 16-bit patterns, computed in f32 and rounded to
 * nearest even after every op. Integer arithmetic wraps (computed unsigned); x / 0 = -1,
 * INT_MIN / -1 = INT_MIN, x % 0 = x, INT_MIN % -1 = 0; shifts by at least the width give 0
 * (or the sign); float -> int truncates, saturates, NaN -> 0; maximum and minimum
 * propagate NaN (quieted) and order -0 below +0. Transcendentals are the platform's
 * (CUDA's libdevice, or the host's libm): not the CPU engine's bits. */
#ifdef __CUDACC__
#define KILN_DEV __device__ static __forceinline__
#define KILN_KERNEL extern "C" __global__ void
#define KILN_REDUCE_THREADS 256 /* the block size reductions are launched with */
/* a grid-stride loop over the elements; a reduction's blocks over its result elements */
#define KILN_FIRST ((long long)blockIdx.x * blockDim.x + threadIdx.x)
#define KILN_LAST a.n
#define KILN_STEP ((long long)blockDim.x * gridDim.x)
#define KILN_ROWS_FIRST ((long long)blockIdx.x)
#define KILN_ROWS_LAST(n) (n)
#define KILN_ROWS_STEP ((long long)gridDim.x)
#else
#define KILN_REDUCE_THREADS 1
/* one call runs [a.first, a.last): of the elements, or of a reduction's result elements
 * (a thread's share, for a pool of threads) */
#define KILN_FIRST a.first
#define KILN_LAST a.last
#define KILN_STEP 1
#define KILN_ROWS_FIRST a.first
#define KILN_ROWS_LAST(n) a.last
#define KILN_ROWS_STEP 1
#define __shared__
#define __syncthreads()
#include <math.h>
#include <string.h>
#define KILN_DEV static inline
#define KILN_KERNEL void
typedef struct kiln_dim3 {
    unsigned x;
} kiln_dim3;
static const kiln_dim3 threadIdx = {0}, blockIdx = {0}, blockDim = {1}, gridDim = {1};
#endif

typedef signed char kiln_i8;
typedef short kiln_i16;
typedef int kiln_i32;
typedef long long kiln_i64;
typedef unsigned char kiln_u8;
typedef unsigned short kiln_u16;
typedef unsigned int kiln_u32;
typedef unsigned long long kiln_u64;
typedef unsigned char kiln_pred;

/* A kernel's buffers: inputs, then outputs, and the element count of its iteration space. */
typedef struct kiln_args {
    const void *in[24];
    void *out[8];
    long long n;           /* elements of the iteration space */
    long long first, last; /* on the host: the part this call runs (see KILN_FIRST) */
} kiln_args;

/* ---- bits ---------------------------------------------------------------------------- */

KILN_DEV float kiln_f32_of(kiln_u32 b) {
#ifdef __CUDACC__
    return __uint_as_float(b);
#else
    float f;
    memcpy(&f, &b, 4);
    return f;
#endif
}
KILN_DEV kiln_u32 kiln_bits_f32(float f) {
#ifdef __CUDACC__
    return __float_as_uint(f);
#else
    kiln_u32 b;
    memcpy(&b, &f, 4);
    return b;
#endif
}
KILN_DEV double kiln_f64_of(kiln_u64 b) {
#ifdef __CUDACC__
    return __longlong_as_double((long long)b);
#else
    double f;
    memcpy(&f, &b, 8);
    return f;
#endif
}
KILN_DEV kiln_u64 kiln_bits_f64(double f) {
#ifdef __CUDACC__
    return (kiln_u64)__double_as_longlong(f);
#else
    kiln_u64 b;
    memcpy(&b, &f, 8);
    return b;
#endif
}

/* ---- f16 and bf16 (round to nearest even; NaN stays NaN, quieted) ---------------------- */

KILN_DEV float kiln_f16_to_f32(kiln_u16 h) {
    kiln_u32 sign = (kiln_u32)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1fu) return kiln_f32_of(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0) return kiln_f32_of(sign);
        float f = (float)man * 5.9604644775390625e-8f; /* man x 2^-24, exact */
        return sign ? -f : f;
    }
    return kiln_f32_of(sign | ((exp + 112u) << 23) | (man << 13));
}

KILN_DEV kiln_u16 kiln_f32_to_f16(float f) {
    kiln_u32 x = kiln_bits_f32(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (kiln_u16)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) return (kiln_u16)(sign | 0x7c00u); /* overflows to infinity */
    if (ax < 0x38800000u) {                                    /* a subnormal (or zero) */
        if (ax < 0x33000000u) return (kiln_u16)sign;           /* below half the least */
        kiln_u32 e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e;
        kiln_u32 q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        q += rem > half || (rem == half && (q & 1u));
        return (kiln_u16)(sign | q);
    }
    kiln_u32 r = ax - 0x38000000u; /* rebias */
    kiln_u32 q = r >> 13, rem = r & 0x1fffu;
    q += rem > 0x1000u || (rem == 0x1000u && (q & 1u));
    return (kiln_u16)(sign | q);
}

KILN_DEV float kiln_bf16_to_f32(kiln_u16 h) { return kiln_f32_of((kiln_u32)h << 16); }

KILN_DEV kiln_u16 kiln_f32_to_bf16(float f) {
    kiln_u32 x = kiln_bits_f32(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (kiln_u16)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (kiln_u16)(x >> 16);
}

/* To f16/bf16 from what f32 cannot hold exactly: rounded to f32 with round-to-odd first,
 * then to nearest even, which is the correctly rounded result (f32 keeps at least two more
 * bits than either 16-bit format): f64, and integers past 2^24. */
KILN_DEV float kiln_f64_to_f32_odd(double v) {
    float f = (float)v;
    if (v != v || (double)f == v) return f;
    if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f);
    return kiln_f32_of(kiln_bits_f32(f) | 1u);
}
KILN_DEV float kiln_u64_to_f32_odd(kiln_u64 m) {
    if (m < (1u << 24)) return (float)m;
    int shift = 0;
    while ((m >> shift) >= (1ull << 24))
        shift++;
    kiln_u64 t = m >> shift;
    if (m & ((1ull << shift) - 1)) t |= 1u;
    return ldexpf((float)t, shift);
}
KILN_DEV kiln_u16 kiln_u64_to_bf16(kiln_u64 v) { return kiln_f32_to_bf16(kiln_u64_to_f32_odd(v)); }
KILN_DEV kiln_u16 kiln_i64_to_bf16(kiln_i64 v) {
    float f = kiln_u64_to_f32_odd(v < 0 ? 0 - (kiln_u64)v : (kiln_u64)v);
    return kiln_f32_to_bf16(v < 0 ? -f : f);
}

/* ---- floats --------------------------------------------------------------------------- */

/* maximum / minimum on the bits: NaN propagates (quieted), -0 < +0. For non-NaN values the
 * order is the sign-magnitude one: negative values' magnitude bits flipped compare as
 * signed integers. */
#define KILN_MINMAX(NAME, FT, IT, UT, OF, BITS, MAXMAG, QUIET, QBIT, OP)                \
    KILN_DEV FT NAME(FT a, FT b) {                                                    \
        IT ia = (IT)BITS(a), ib = (IT)BITS(b);                                        \
        IT ka = ia < 0 ? ia ^ (IT)(MAXMAG) : ia, kb = ib < 0 ? ib ^ (IT)(MAXMAG) : ib; \
        UT ma = (UT)ia & (UT)(MAXMAG), mb = (UT)ib & (UT)(MAXMAG);                    \
        UT r = (UT)(ka OP kb ? ia : ib);                                              \
        if (mb > (UT)(QUIET)) r = (UT)ib | (UT)(QBIT);                                \
        if (ma > (UT)(QUIET)) r = (UT)ia | (UT)(QBIT);                                \
        return OF(r);                                                                 \
    }
KILN_MINMAX(kiln_maxf, float, int, kiln_u32, kiln_f32_of, kiln_bits_f32, 0x7fffffff, 0x7f800000u,
            0x400000u, >)
KILN_MINMAX(kiln_minf, float, int, kiln_u32, kiln_f32_of, kiln_bits_f32, 0x7fffffff, 0x7f800000u,
            0x400000u, <)
KILN_MINMAX(kiln_max, double, long long, kiln_u64, kiln_f64_of, kiln_bits_f64,
            0x7fffffffffffffffLL, 0x7ff0000000000000ULL, 0x8000000000000ULL, >)
KILN_MINMAX(kiln_min, double, long long, kiln_u64, kiln_f64_of, kiln_bits_f64,
            0x7fffffffffffffffLL, 0x7ff0000000000000ULL, 0x8000000000000ULL, <)

KILN_DEV float kiln_signf(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x; }
KILN_DEV double kiln_sign(double x) { return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : x; }

/* Total order keys (compare type TOTALORDER). */
KILN_DEV int kiln_total32(float v) {
    int k = (int)kiln_bits_f32(v);
    return k < 0 ? k ^ 0x7fffffff : k;
}
KILN_DEV long long kiln_total64(double v) {
    long long k = (long long)kiln_bits_f64(v);
    return k < 0 ? k ^ 0x7fffffffffffffffLL : k;
}
KILN_DEV int kiln_total16(kiln_u16 v) {
    int k = (short)v;
    return k < 0 ? k ^ 0x7fff : k;
}

/* float -> integer: truncation, saturation, NaN -> 0 (lo and hi: the least value and the
 * power of two just past the greatest, exact in f32 and f64). */
#define KILN_F2I(NAME, T, FT, LO, HI, TMIN, TMAX, SIGNED)                 \
    KILN_DEV T NAME(FT v) {                                                 \
        if (SIGNED ? v != v : !(v > (FT)0)) return 0;                       \
        return v <= (FT)(LO) ? (T)(TMIN) : v >= (FT)(HI) ? (T)(TMAX) : (T)v; \
    }
KILN_F2I(kiln_f2i8, kiln_i8, float, -128.0, 128.0, -128, 127, 1)
KILN_F2I(kiln_f2i16, kiln_i16, float, -32768.0, 32768.0, -32768, 32767, 1)
KILN_F2I(kiln_f2i32, kiln_i32, float, -2147483648.0, 2147483648.0, (-2147483647 - 1), 2147483647, 1)
KILN_F2I(kiln_f2i64, kiln_i64, float, -9223372036854775808.0, 9223372036854775808.0,
         (-9223372036854775807LL - 1), 9223372036854775807LL, 1)
KILN_F2I(kiln_f2u8, kiln_u8, float, 0.0, 256.0, 0, 255u, 0)
KILN_F2I(kiln_f2u16, kiln_u16, float, 0.0, 65536.0, 0, 65535u, 0)
KILN_F2I(kiln_f2u32, kiln_u32, float, 0.0, 4294967296.0, 0, 4294967295u, 0)
KILN_F2I(kiln_f2u64, kiln_u64, float, 0.0, 18446744073709551616.0, 0, 18446744073709551615ULL, 0)
KILN_F2I(kiln_d2i8, kiln_i8, double, -128.0, 128.0, -128, 127, 1)
KILN_F2I(kiln_d2i16, kiln_i16, double, -32768.0, 32768.0, -32768, 32767, 1)
KILN_F2I(kiln_d2i32, kiln_i32, double, -2147483648.0, 2147483648.0, (-2147483647 - 1), 2147483647, 1)
KILN_F2I(kiln_d2i64, kiln_i64, double, -9223372036854775808.0, 9223372036854775808.0,
         (-9223372036854775807LL - 1), 9223372036854775807LL, 1)
KILN_F2I(kiln_d2u8, kiln_u8, double, 0.0, 256.0, 0, 255u, 0)
KILN_F2I(kiln_d2u16, kiln_u16, double, 0.0, 65536.0, 0, 65535u, 0)
KILN_F2I(kiln_d2u32, kiln_u32, double, 0.0, 4294967296.0, 0, 4294967295u, 0)
KILN_F2I(kiln_d2u64, kiln_u64, double, 0.0, 18446744073709551616.0, 0, 18446744073709551615ULL, 0)

/* ---- integers ------------------------------------------------------------------------- */

KILN_DEV kiln_u64 kiln_ipow(kiln_u64 base, kiln_u64 e) {
    kiln_u64 r = 1;
    while (e) {
        if (e & 1u) r *= base;
        base *= base;
        e >>= 1;
    }
    return r;
}
KILN_DEV kiln_i64 kiln_ipow_signed(kiln_i64 base, kiln_i64 e) {
    if (e < 0) return base == 1 ? 1 : base == -1 ? (((kiln_u64)e & 1u) ? -1 : 1) : 0;
    return (kiln_i64)kiln_ipow((kiln_u64)base, (kiln_u64)e);
}
KILN_DEV int kiln_popc64(kiln_u64 x) {
#ifdef __CUDACC__
    return __popcll((unsigned long long)x);
#else
    return __builtin_popcountll(x);
#endif
}
/* Leading zeros of the low `bits` bits of x. */
KILN_DEV int kiln_clz(kiln_u64 x, int bits) {
    if (x == 0) return bits;
#ifdef __CUDACC__
    return __clzll((long long)x) - (64 - bits);
#else
    return __builtin_clzll(x) - (64 - bits);
#endif
}
