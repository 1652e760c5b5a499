/* SPDX-License-Identifier: Apache-2.0 */
/* stablehlo.fft on the CPU: FFT, IFFT, RFFT and IRFFT over the last one to three
 * dimensions, of any lengths. The values are computed in double complex (complex<f32> and
 * f32 rounded once at the end), one line of a dimension at a time: a power-of-two length
 * by iterative radix-2, a short other one as a direct sum over a table of roots, a longer
 * one by Bluestein's chirp-z (a power-of-two convolution), so that every length costs
 * O(n log n) but the short ones. The inverse is the conjugate of the forward transform of
 * the conjugate, divided by n along each dimension. RFFT transforms (x, 0) and keeps the
 * last dimension's first N/2 + 1 values; IRFFT inverts the leading dimensions, then
 * completes each last line by conjugate symmetry and keeps the real parts (the imaginary
 * parts of the zero and Nyquist terms are ignored, as numpy's and XLA's are). */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "backends/cpu/eval/eval.h"
#include "base/alloc.h"

typedef double _Complex cplx;

static inline cplx complex_of(double re, double im) {
    double parts[2] = {re, im};
    cplx z;
    memcpy(&z, parts, sizeof z);
    return z;
}

static const double PI = 3.14159265358979323846;

/* e^(-2 pi i k / n) for 0 <= k < n. */
static cplx root(int64_t k, int64_t n) {
    double a = 2.0 * PI * ((double)k / (double)n);
    return complex_of(cos(a), -sin(a));
}

/* Below this many elements a length that is not a power of two is summed directly. */
#define DIRECT_MAX 32

/* Scratch for one length: the line, its roots, and Bluestein's buffers. */
typedef struct plan {
    int64_t n, m;   /* the length; Bluestein's power-of-two size (0: not used) */
    cplx *line;     /* n */
    cplx *roots;    /* n (direct), n / 2 (radix-2), m / 2 (Bluestein) */
    cplx *chirp;    /* Bluestein: n values e^(-pi i k^2 / n) */
    cplx *kernel;   /* Bluestein: the transformed conjugate chirp, m */
    cplx *work;     /* Bluestein: m; direct: n */
    void *block;
    size_t bytes;
} plan;

static bool is_pow2(int64_t n) { return (n & (n - 1)) == 0; }

/* In place, x of power-of-two length n, with roots[k] = e^(-2 pi i k / n) for k < n/2. */
static void radix2(cplx *x, int64_t n, const cplx *roots) {
    for (int64_t i = 1, j = 0; i < n; i++) {
        int64_t bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            cplx t = x[i];
            x[i] = x[j];
            x[j] = t;
        }
    }
    for (int64_t len = 2; len <= n; len <<= 1) {
        int64_t half = len >> 1, step = n / len;
        for (int64_t s = 0; s < n; s += len)
            for (int64_t k = 0; k < half; k++) {
                cplx w = roots[k * step], u = x[s + k], v = x[s + k + half] * w;
                x[s + k] = u + v;
                x[s + k + half] = u - v;
            }
    }
}

static kiln_status plan_make(kiln_ctx *cx, int64_t n, plan *p) {
    memset(p, 0, sizeof *p);
    p->n = n;
    bool pow2 = is_pow2(n), direct = !pow2 && n <= DIRECT_MAX;
    int64_t m = 0; /* Bluestein's convolution size: a power of two >= 2n - 1 */
    if (!pow2 && !direct) {
        m = 1;
        while (m < 2 * n - 1)
            m <<= 1;
    }
    p->m = m;
    int64_t n_roots = pow2 ? n / 2 : direct ? n : m / 2;
    int64_t total = n + n_roots + (m ? n + 2 * m : direct ? n : 0);
    p->bytes = (size_t)total * sizeof(cplx);
    p->block = kiln__alloc(cx, p->bytes > 0 ? p->bytes : sizeof(cplx), _Alignof(cplx), "fft");
    if (!p->block) return KILN_RESOURCE_EXHAUSTED;
    cplx *at = p->block;
    p->line = at, at += n;
    p->roots = at, at += n_roots;
    int64_t root_n = pow2 ? n : direct ? n : m;
    for (int64_t k = 0; k < n_roots; k++)
        p->roots[k] = root(k, root_n);
    if (direct) p->work = at;
    if (m) {
        p->chirp = at, at += n;
        p->kernel = at, at += m;
        p->work = at;
        /* chirp k = e^(-pi i k^2 / n), k^2 taken modulo 2n (as k^2 = (k-1)^2 + 2k - 1) so
         * that the angle stays small and exact */
        for (int64_t k = 0, k2 = 0; k < n; k++) {
            if (k) k2 = (k2 + 2 * k - 1) % (2 * n);
            double a = PI * ((double)k2 / (double)n);
            p->chirp[k] = complex_of(cos(a), -sin(a));
        }
        /* The kernel: conj(chirp) at 0..n-1 and, wrapped, at m-n+1..m-1; transformed. */
        memset(p->kernel, 0, (size_t)m * sizeof(cplx));
        for (int64_t k = 0; k < n; k++) {
            p->kernel[k] = conj(p->chirp[k]);
            if (k) p->kernel[m - k] = conj(p->chirp[k]);
        }
        radix2(p->kernel, m, p->roots);
    }
    return KILN_OK;
}

static void plan_free(kiln_ctx *cx, plan *p) {
    if (p->block) kiln__free(cx, p->block, p->bytes > 0 ? p->bytes : sizeof(cplx));
}

/* The forward transform of p->line, in place. */
static void forward(plan *p) {
    int64_t n = p->n;
    cplx *x = p->line;
    if (n == 1) return;
    if (is_pow2(n)) {
        radix2(x, n, p->roots);
    } else if (!p->m) {
        for (int64_t k = 0; k < n; k++) {
            cplx acc = 0;
            for (int64_t j = 0; j < n; j++)
                acc += x[j] * p->roots[(j * k) % n];
            p->work[k] = acc;
        }
        memcpy(x, p->work, (size_t)n * sizeof(cplx));
    } else {
        /* X_k = chirp_k sum_j (x_j chirp_j) conj(chirp_(k-j)): a convolution of size m */
        int64_t m = p->m;
        cplx *w = p->work;
        for (int64_t j = 0; j < n; j++)
            w[j] = x[j] * p->chirp[j];
        memset(w + n, 0, (size_t)(m - n) * sizeof(cplx));
        radix2(w, m, p->roots);
        for (int64_t j = 0; j < m; j++)
            w[j] = conj(w[j] * p->kernel[j]); /* conjugated: the inverse as a forward */
        radix2(w, m, p->roots);
        double scale = 1.0 / (double)m;
        for (int64_t k = 0; k < n; k++)
            x[k] = conj(w[k]) * scale * p->chirp[k];
    }
}

/* The transform of p->line, forward or inverse (conj, forward, conj, / n). */
static void transform(plan *p, bool inverse) {
    int64_t n = p->n;
    if (!inverse) {
        forward(p);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        p->line[i] = conj(p->line[i]);
    forward(p);
    double scale = 1.0 / (double)n;
    for (int64_t i = 0; i < n; i++)
        p->line[i] = conj(p->line[i]) * scale;
}

/* Every line along dimension `axis` of the row-major array x of `rank` dims. */
static kiln_status along(kiln_ctx *cx, cplx *x, const int64_t *dims, int32_t rank, int32_t axis,
                         bool inverse) {
    int64_t n = dims[axis], inner = 1, outer = 1;
    for (int32_t d = axis + 1; d < rank; d++)
        inner *= dims[d];
    for (int32_t d = 0; d < axis; d++)
        outer *= dims[d];
    plan p;
    kiln_status s = plan_make(cx, n, &p);
    if (s != KILN_OK) return s;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            cplx *base = x + o * n * inner + i;
            for (int64_t k = 0; k < n; k++)
                p.line[k] = base[k * inner];
            transform(&p, inverse);
            for (int64_t k = 0; k < n; k++)
                base[k * inner] = p.line[k];
        }
    plan_free(cx, &p);
    return KILN_OK;
}

/* IRFFT's last dimension: each line of h = n/2 + 1 values completed to n by conjugate
 * symmetry, inverted, its real parts written to r (f32 or f64). */
static kiln_status real_lines(kiln_ctx *cx, const cplx *x, int64_t lines, int64_t n, void *r,
                              kiln_dtype rd) {
    int64_t h = n / 2 + 1;
    plan p;
    kiln_status s = plan_make(cx, n, &p);
    if (s != KILN_OK) return s;
    for (int64_t l = 0; l < lines; l++) {
        const cplx *in = x + l * h;
        for (int64_t k = 0; k < h; k++)
            p.line[k] = in[k];
        for (int64_t k = h; k < n; k++)
            p.line[k] = conj(in[n - k]);
        transform(&p, true);
        for (int64_t k = 0; k < n; k++) {
            if (rd == KILN_F32)
                ((float *)r)[l * n + k] = (float)creal(p.line[k]);
            else
                ((double *)r)[l * n + k] = creal(p.line[k]);
        }
    }
    plan_free(cx, &p);
    return KILN_OK;
}

KILN__EVAL(FFT) {
    (void)n_operands, (void)n_results;
    const kiln_tensor *xt = operands[0];
    kiln_tensor *rt = results[0];
    kiln_fft_type type = attrs->u.fft.type;
    const kiln_dims *len = &attrs->u.fft.length;
    const kiln_shape *xs = kiln_tensor_shape(xt);
    kiln_dtype xd = kiln_tensor_dtype(xt), rd = kiln_tensor_dtype(rt);
    int64_t xn = kiln_tensor_numel(xt), rn = kiln_tensor_numel(rt);
    if (rn == 0) return KILN_OK;
    int32_t rank = xs->rank, first = rank - len->count;
    /* The work array: the operand as double complex values (RFFT: (x, 0)). */
    size_t bytes = (size_t)xn * sizeof(cplx);
    cplx *w = kiln__alloc(cx, bytes, _Alignof(cplx), "fft");
    if (!w) return KILN_RESOURCE_EXHAUSTED;
    const void *xv = kiln__in(xt);
    for (int64_t i = 0; i < xn; i++) {
        switch (xd) {
        case KILN_F32: w[i] = complex_of(((const float *)xv)[i], 0); break;
        case KILN_F64: w[i] = complex_of(((const double *)xv)[i], 0); break;
        case KILN_C64:
            w[i] = complex_of(((const float *)xv)[2 * i], ((const float *)xv)[2 * i + 1]);
            break;
        default:
            w[i] = complex_of(((const double *)xv)[2 * i], ((const double *)xv)[2 * i + 1]);
            break;
        }
    }
    bool inverse = type == KILN_FFT_INVERSE || type == KILN_FFT_INVERSE_REAL;
    /* IRFFT: the last dimension is done by real_lines; the others as complex. */
    int32_t last = type == KILN_FFT_INVERSE_REAL ? rank - 1 : rank;
    kiln_status s = KILN_OK;
    for (int32_t a = first; a < last && s == KILN_OK; a++)
        s = along(cx, w, xs->dims, rank, a, inverse);
    void *rv = kiln__out(rt);
    if (s == KILN_OK && type == KILN_FFT_INVERSE_REAL) {
        int64_t n = len->v[len->count - 1];
        s = real_lines(cx, w, rn / n, n, rv, rd);
    } else if (s == KILN_OK) {
        /* RFFT keeps the first N/2 + 1 of each last line; the others keep every value. */
        int64_t n = xs->dims[rank - 1], keep = type == KILN_FFT_REAL ? n / 2 + 1 : n;
        for (int64_t l = 0, o = 0; l < xn / n; l++)
            for (int64_t k = 0; k < keep; k++, o++) {
                cplx v = w[l * n + k];
                if (rd == KILN_C64) {
                    ((float *)rv)[2 * o] = (float)creal(v);
                    ((float *)rv)[2 * o + 1] = (float)cimag(v);
                } else {
                    ((double *)rv)[2 * o] = creal(v);
                    ((double *)rv)[2 * o + 1] = cimag(v);
                }
            }
    }
    kiln__free(cx, w, bytes);
    return s;
}
