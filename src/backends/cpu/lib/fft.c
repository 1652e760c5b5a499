/* SPDX-License-Identifier: Apache-2.0 */
/* The FFT of fft.h. A Stockham FFT (self-sorting: each stage reads one buffer and writes
 * the other, so no bit reversal) over the length's prime factors, radix 4 first; stage s
 * of radix R, after stages whose radices multiply to Ns, takes the R values n/R apart at
 * j = jb Ns + jj, turns the r-th by e^(-2 pi i r jj / (Ns R)), transforms the R, and
 * writes them Ns apart from jb Ns R + jj. Complex products are written out (the parts'
 * formulas, without C's Annex G checks), so every path is plain arithmetic. */
#include "backends/cpu/lib/fft.h"

#include <math.h>
#include <string.h>

#include "base/alloc.h"

typedef struct cval {
    double re, im;
} cval;

static inline cval cmul(cval a, cval b) {
    return (cval){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
static inline cval cadd(cval a, cval b) { return (cval){a.re + b.re, a.im + b.im}; }
static inline cval csub(cval a, cval b) { return (cval){a.re - b.re, a.im - b.im}; }

static const double PI = 3.14159265358979323846;

/* e^(-2 pi i k / n) */
static cval root(int64_t k, int64_t n) {
    double a = 2.0 * PI * ((double)k / (double)n);
    return (cval){cos(a), -sin(a)};
}

enum { MAX_STAGES = 64 };

struct kiln__fft_plan {
    int64_t n;
    int32_t n_stages;
    int32_t radix[MAX_STAGES];
    int64_t twiddle_at[MAX_STAGES]; /* stage s's turns (q - 1) Ns + jj, from `twiddles` */
    int64_t roots_at[MAX_STAGES];   /* a generic radix's R roots, from `twiddles` */
    cval *twiddles;
    /* Bluestein (m > 0): the chirp e^(-pi i k^2 / n), the transformed conjugate chirp of
     * size m, and the plan of size m. */
    int64_t m;
    cval *chirp, *kernel;
    kiln__fft_plan *inner;
    void *block;
    size_t bytes;
};

/* ---- the butterflies ---------------------------------------------------------------------- */

static inline void dft2(cval *v) {
    cval a = v[0], b = v[1];
    v[0] = cadd(a, b), v[1] = csub(a, b);
}

/* X1 = a0 + a1 w + a2 w^2 with w = -1/2 - i sqrt(3)/2. */
static inline void dft3(cval *v) {
    const double s = 0.86602540378443864676;
    cval t1 = cadd(v[1], v[2]), d = csub(v[1], v[2]);
    cval t2 = {v[0].re - 0.5 * t1.re, v[0].im - 0.5 * t1.im};
    cval t3 = {s * d.im, -s * d.re}; /* -i s (a1 - a2) */
    v[0] = cadd(v[0], t1), v[1] = cadd(t2, t3), v[2] = csub(t2, t3);
}

/* X1 = (a0 - a2) - i (a1 - a3), X3 = (a0 - a2) + i (a1 - a3). */
static inline void dft4(cval *v) {
    cval t0 = cadd(v[0], v[2]), t1 = csub(v[0], v[2]), t2 = cadd(v[1], v[3]);
    cval d = csub(v[1], v[3]), t3 = {d.im, -d.re};
    v[0] = cadd(t0, t2), v[2] = csub(t0, t2), v[1] = cadd(t1, t3), v[3] = csub(t1, t3);
}

/* X_k = a0 + sum_q a_q w^(qk), w = e^(-2 pi i / 5): the symmetric pairs (a1, a4), (a2, a3)
 * share the cosines, and their differences the sines. */
static inline void dft5(cval *v) {
    const double c1 = 0.30901699437494742410, c2 = -0.80901699437494742410;
    const double s1 = 0.95105651629515357212, s2 = 0.58778525229247312917;
    cval a = cadd(v[1], v[4]), b = cadd(v[2], v[3]), d = csub(v[1], v[4]), e = csub(v[2], v[3]);
    cval r1 = {v[0].re + c1 * a.re + c2 * b.re, v[0].im + c1 * a.im + c2 * b.im};
    cval r2 = {v[0].re + c2 * a.re + c1 * b.re, v[0].im + c2 * a.im + c1 * b.im};
    /* -i (s1 d + s2 e) and -i (s2 d - s1 e) */
    cval i1 = {s1 * d.im + s2 * e.im, -(s1 * d.re + s2 * e.re)};
    cval i2 = {s2 * d.im - s1 * e.im, -(s2 * d.re - s1 * e.re)};
    v[0] = cadd(v[0], cadd(a, b));
    v[1] = cadd(r1, i1), v[4] = csub(r1, i1);
    v[2] = cadd(r2, i2), v[3] = csub(r2, i2);
}

/* Any radix: the direct sum over its roots. */
static void dft_any(cval *v, int32_t r, const cval *roots) {
    cval out[KILN__FFT_MAX_RADIX];
    for (int32_t k = 0; k < r; k++) {
        cval acc = v[0];
        for (int32_t j = 1; j < r; j++)
            acc = cadd(acc, cmul(v[j], roots[(j * k) % r]));
        out[k] = acc;
    }
    memcpy(v, out, (size_t)r * sizeof *v);
}

/* ---- Stockham ------------------------------------------------------------------------------- */

/* One stage of radix R (2, 3 or 4, written out; any other by dft_any): for each group jb
 * and each jj < ns (the inner loop, contiguous in x and y), the R values stride apart,
 * turned by tw[(q - 1) ns + jj], transformed, and written ns apart. */
static void stage2(const cval *restrict x, cval *restrict y, int64_t stride, int64_t ns,
                   const cval *restrict tw) {
    for (int64_t jb = 0; jb < stride / ns; jb++) {
        const cval *x0 = x + jb * ns, *x1 = x0 + stride;
        cval *y0 = y + jb * ns * 2, *y1 = y0 + ns;
        for (int64_t jj = 0; jj < ns; jj++) {
            cval v[2] = {x0[jj], ns == 1 ? x1[jj] : cmul(x1[jj], tw[jj])};
            dft2(v);
            y0[jj] = v[0], y1[jj] = v[1];
        }
    }
}

static void stage3(const cval *restrict x, cval *restrict y, int64_t stride, int64_t ns,
                   const cval *restrict tw) {
    for (int64_t jb = 0; jb < stride / ns; jb++) {
        const cval *x0 = x + jb * ns, *x1 = x0 + stride, *x2 = x1 + stride;
        cval *y0 = y + jb * ns * 3, *y1 = y0 + ns, *y2 = y1 + ns;
        for (int64_t jj = 0; jj < ns; jj++) {
            cval v[3] = {x0[jj], ns == 1 ? x1[jj] : cmul(x1[jj], tw[jj]),
                         ns == 1 ? x2[jj] : cmul(x2[jj], tw[ns + jj])};
            dft3(v);
            y0[jj] = v[0], y1[jj] = v[1], y2[jj] = v[2];
        }
    }
}

static void stage4(const cval *restrict x, cval *restrict y, int64_t stride, int64_t ns,
                   const cval *restrict tw) {
    for (int64_t jb = 0; jb < stride / ns; jb++) {
        const cval *x0 = x + jb * ns, *x1 = x0 + stride, *x2 = x1 + stride, *x3 = x2 + stride;
        cval *y0 = y + jb * ns * 4, *y1 = y0 + ns, *y2 = y1 + ns, *y3 = y2 + ns;
        for (int64_t jj = 0; jj < ns; jj++) {
            cval v[4] = {x0[jj], ns == 1 ? x1[jj] : cmul(x1[jj], tw[jj]),
                         ns == 1 ? x2[jj] : cmul(x2[jj], tw[ns + jj]),
                         ns == 1 ? x3[jj] : cmul(x3[jj], tw[2 * ns + jj])};
            dft4(v);
            y0[jj] = v[0], y1[jj] = v[1], y2[jj] = v[2], y3[jj] = v[3];
        }
    }
}

static void stage5(const cval *restrict x, cval *restrict y, int64_t stride, int64_t ns,
                   const cval *restrict tw) {
    for (int64_t jb = 0; jb < stride / ns; jb++) {
        const cval *x0 = x + jb * ns;
        cval *y0 = y + jb * ns * 5;
        for (int64_t jj = 0; jj < ns; jj++) {
            cval v[5];
            v[0] = x0[jj];
            for (int q = 1; q < 5; q++)
                v[q] = ns == 1 ? x0[q * stride + jj]
                               : cmul(x0[q * stride + jj], tw[(q - 1) * ns + jj]);
            dft5(v);
            for (int q = 0; q < 5; q++)
                y0[q * ns + jj] = v[q];
        }
    }
}

static void stage_any(const cval *restrict x, cval *restrict y, int64_t stride, int64_t ns,
                      int32_t r, const cval *restrict tw, const cval *restrict roots) {
    for (int64_t jb = 0; jb < stride / ns; jb++)
        for (int64_t jj = 0; jj < ns; jj++) {
            int64_t j = jb * ns + jj, d = jb * ns * r + jj;
            cval v[KILN__FFT_MAX_RADIX];
            v[0] = x[j];
            for (int32_t q = 1; q < r; q++)
                v[q] = ns == 1 ? x[j + q * stride] : cmul(x[j + q * stride], tw[(q - 1) * ns + jj]);
            dft_any(v, r, roots);
            for (int32_t q = 0; q < r; q++)
                y[d + q * ns] = v[q];
        }
}

/* The forward transform of x (n values) with y as the other buffer: the result is in the
 * buffer returned. */
static cval *stockham(const kiln__fft_plan *p, cval *x, cval *y) {
    int64_t n = p->n, ns = 1;
    for (int32_t s = 0; s < p->n_stages; s++) {
        int32_t r = p->radix[s];
        int64_t stride = n / r;
        const cval *tw = p->twiddles + p->twiddle_at[s];
        switch (r) {
        case 2: stage2(x, y, stride, ns, tw); break;
        case 3: stage3(x, y, stride, ns, tw); break;
        case 4: stage4(x, y, stride, ns, tw); break;
        case 5: stage5(x, y, stride, ns, tw); break;
        default: stage_any(x, y, stride, ns, r, tw, p->twiddles + p->roots_at[s]); break;
        }
        cval *t = x;
        x = y, y = t;
        ns *= r;
    }
    return x;
}

/* ---- plans ----------------------------------------------------------------------------------- */

/* The prime factors of n, 4s first; false when one is above KILN__FFT_MAX_RADIX. */
static bool factor(kiln__fft_plan *p, int64_t n) {
    p->n_stages = 0;
    while (n % 4 == 0)
        p->radix[p->n_stages++] = 4, n /= 4;
    while (n % 2 == 0)
        p->radix[p->n_stages++] = 2, n /= 2;
    for (int64_t f = 3; f * f <= n; f += 2)
        while (n % f == 0) {
            if (f > KILN__FFT_MAX_RADIX) return false;
            p->radix[p->n_stages++] = (int32_t)f, n /= f;
        }
    if (n > 1) {
        if (n > KILN__FFT_MAX_RADIX) return false;
        p->radix[p->n_stages++] = (int32_t)n;
    }
    return true;
}

kiln__fft_plan *kiln__fft_plan_make(kiln_ctx *cx, int64_t n) {
    kiln__fft_plan *p = kiln__alloc(cx, sizeof *p, _Alignof(kiln__fft_plan), "fft plan");
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->n = n;
    if (!factor(p, n)) {
        /* Bluestein: a power-of-two convolution size m >= 2n - 1 */
        p->n_stages = 0;
        p->m = 1;
        while (p->m < 2 * n - 1)
            p->m <<= 1;
    }
    /* the twiddles and roots of every stage, then Bluestein's chirp and kernel */
    int64_t count = 0, ns = 1;
    for (int32_t s = 0; s < p->n_stages; s++) {
        int32_t r = p->radix[s];
        p->twiddle_at[s] = count;
        count += ns * (r - 1);
        p->roots_at[s] = count;
        count += r > 5 ? r : 0;
        ns *= r;
    }
    int64_t chirp_at = count;
    count += p->m ? n + p->m : 0;
    p->bytes = (size_t)(count > 0 ? count : 1) * sizeof(cval);
    if (!(p->block = kiln__alloc(cx, p->bytes, _Alignof(cval), "fft plan"))) {
        kiln__free(cx, p, sizeof *p);
        return NULL;
    }
    p->twiddles = p->block;
    ns = 1;
    for (int32_t s = 0; s < p->n_stages; s++) {
        int32_t r = p->radix[s];
        cval *tw = p->twiddles + p->twiddle_at[s];
        for (int64_t jj = 0; jj < ns; jj++)
            for (int32_t q = 1; q < r; q++)
                tw[(q - 1) * ns + jj] = root(q * jj, ns * r);
        if (r > 5)
            for (int32_t k = 0; k < r; k++)
                p->twiddles[p->roots_at[s] + k] = root(k, r);
        ns *= r;
    }
    if (p->m) {
        p->chirp = p->twiddles + chirp_at;
        p->kernel = p->chirp + n;
        /* k^2 modulo 2n (k^2 = (k-1)^2 + 2k - 1), so that the angle stays small and exact */
        for (int64_t k = 0, k2 = 0; k < n; k++) {
            if (k) k2 = (k2 + 2 * k - 1) % (2 * n);
            double a = PI * ((double)k2 / (double)n);
            p->chirp[k] = (cval){cos(a), -sin(a)};
        }
        /* conj(chirp) at 0..n-1 and, wrapped, at m-n+1..m-1; transformed */
        memset(p->kernel, 0, (size_t)p->m * sizeof(cval));
        for (int64_t k = 0; k < n; k++) {
            cval c = {p->chirp[k].re, -p->chirp[k].im};
            p->kernel[k] = c;
            if (k) p->kernel[p->m - k] = c;
        }
        size_t scratch_bytes = (size_t)p->m * sizeof(cval);
        cval *scratch = kiln__alloc(cx, scratch_bytes, _Alignof(cval), "fft plan");
        p->inner = scratch ? kiln__fft_plan_make(cx, p->m) : NULL;
        if (!p->inner) {
            if (scratch) kiln__free(cx, scratch, scratch_bytes);
            kiln__fft_plan_free(cx, p);
            return NULL;
        }
        cval *r = stockham(p->inner, p->kernel, scratch);
        if (r != p->kernel) memcpy(p->kernel, r, scratch_bytes);
        kiln__free(cx, scratch, scratch_bytes);
    }
    return p;
}

void kiln__fft_plan_free(kiln_ctx *cx, kiln__fft_plan *p) {
    if (!p) return;
    if (p->inner) kiln__fft_plan_free(cx, p->inner);
    if (p->block) kiln__free(cx, p->block, p->bytes);
    kiln__free(cx, p, sizeof *p);
}

size_t kiln__fft_scratch_doubles(const kiln__fft_plan *p) {
    /* Stockham: the other buffer; Bluestein: the convolution and its other buffer */
    return 2 * (size_t)(p->m ? 2 * p->m : p->n);
}

/* ---- one line ------------------------------------------------------------------------------- */

static void forward(const kiln__fft_plan *p, cval *x, cval *scratch) {
    int64_t n = p->n;
    if (!p->m) {
        cval *r = stockham(p, x, scratch);
        if (r != x) memcpy(x, r, (size_t)n * sizeof *x);
        return;
    }
    /* X_k = chirp_k sum_j (x_j chirp_j) conj(chirp_(k-j)): a convolution of size m, by the
     * transform of size m, a product with the kernel, and the inverse transform (the
     * conjugate of the transform of the conjugate) */
    int64_t m = p->m;
    cval *w = scratch, *other = scratch + m;
    for (int64_t j = 0; j < n; j++)
        w[j] = cmul(x[j], p->chirp[j]);
    memset(w + n, 0, (size_t)(m - n) * sizeof *w);
    cval *f = stockham(p->inner, w, other);
    for (int64_t j = 0; j < m; j++) {
        cval v = cmul(f[j], p->kernel[j]);
        f[j] = (cval){v.re, -v.im};
    }
    cval *g = stockham(p->inner, f, f == w ? other : w);
    double scale = 1.0 / (double)m;
    for (int64_t k = 0; k < n; k++)
        x[k] = cmul((cval){g[k].re * scale, -g[k].im * scale}, p->chirp[k]);
}

void kiln__fft_line(const kiln__fft_plan *p, double *line, double *scratch, bool inverse) {
    cval *x = (cval *)(void *)line;
    int64_t n = p->n;
    if (!inverse) {
        forward(p, x, (cval *)(void *)scratch);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        x[i].im = -x[i].im;
    forward(p, x, (cval *)(void *)scratch);
    double scale = 1.0 / (double)n;
    for (int64_t i = 0; i < n; i++)
        x[i] = (cval){x[i].re * scale, -x[i].im * scale};
}
