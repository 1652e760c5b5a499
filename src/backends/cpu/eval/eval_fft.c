/* SPDX-License-Identifier: Apache-2.0 */
/* stablehlo.fft on the CPU: FFT, IFFT, RFFT and IRFFT over the last one to three
 * dimensions, of any lengths (lib/fft.h: mixed radix, Bluestein beyond). The values are
 * computed in double (complex<f32> and f32 rounded once at the end), one dimension after
 * the other, its lines split across kiln's threads (a line's bits do not depend on which
 * thread runs it). The inverse divides by n along each dimension. RFFT transforms (x, 0)
 * and keeps the last dimension's first N/2 + 1 values; IRFFT inverts the leading
 * dimensions, then completes each last line by conjugate symmetry and keeps the real
 * parts (the imaginary parts of the zero and Nyquist terms are ignored, as numpy's and
 * XLA's are). */
#include <string.h>

#include "backends/cpu/eval/eval.h"
#include "backends/cpu/lib/fft.h"
#include "base/alloc.h"
#include "base/threads.h"

/* Below this many values a dimension's lines run on the calling thread. */
#define PARALLEL_MIN 16384

/* The lines of one dimension: `lines` of n values, line l at ((l / inner) n inner +
 * l % inner) with stride inner, in the interleaved work array x; IRFFT's last dimension
 * writes n real values per line to r instead. */
typedef struct lines_job {
    const kiln__fft_plan *plan;
    double *x;
    int64_t n, inner, lines, chunks;
    bool inverse;
    /* IRFFT's last dimension: the result (f32 or f64), each line's h = n/2 + 1 inputs */
    void *real_out;
    kiln_dtype real_dtype;
    double *scratch; /* chunks x per_chunk doubles */
    size_t per_chunk;
} lines_job;

static void real_line(const lines_job *j, int64_t l, double *line, double *scratch) {
    int64_t n = j->n, h = n / 2 + 1;
    const double *in = j->x + 2 * l * h;
    memcpy(line, in, (size_t)(2 * h) * sizeof *line);
    for (int64_t k = h; k < n; k++) /* X_k = conj(X_(n-k)) */
        line[2 * k] = in[2 * (n - k)], line[2 * k + 1] = -in[2 * (n - k) + 1];
    kiln__fft_line(j->plan, line, scratch, true);
    for (int64_t k = 0; k < n; k++) {
        if (j->real_dtype == KILN_F32)
            ((float *)j->real_out)[l * n + k] = (float)line[2 * k];
        else
            ((double *)j->real_out)[l * n + k] = line[2 * k];
    }
}

/* Strided lines are copied in and out TILE at a time (neighbouring columns), so that each
 * row of the array is read in runs rather than one value per cache line. */
enum { TILE = 8 };

static void run_lines(void *user, int64_t begin, int64_t end) {
    const lines_job *j = user;
    int64_t n = j->n, inner = j->inner;
    for (int64_t c = begin; c < end; c++) {
        double *lines = j->scratch + (size_t)c * j->per_chunk, *scratch = lines + 2 * n * TILE;
        int64_t first = c * j->lines / j->chunks, last = (c + 1) * j->lines / j->chunks;
        for (int64_t l = first; l < last;) {
            if (j->real_out) {
                real_line(j, l++, lines, scratch);
                continue;
            }
            double *base = j->x + 2 * ((l / inner) * n * inner + l % inner);
            if (inner == 1) {
                kiln__fft_line(j->plan, base, scratch, j->inverse);
                l++;
                continue;
            }
            /* g neighbouring columns of one block: l % inner .. + g - 1 */
            int64_t g = inner - l % inner;
            if (g > TILE) g = TILE;
            if (g > last - l) g = last - l;
            for (int64_t k = 0; k < n; k++)
                for (int64_t t = 0; t < g; t++) {
                    lines[2 * (t * n + k)] = base[2 * (k * inner + t)];
                    lines[2 * (t * n + k) + 1] = base[2 * (k * inner + t) + 1];
                }
            for (int64_t t = 0; t < g; t++)
                kiln__fft_line(j->plan, lines + 2 * t * n, scratch, j->inverse);
            for (int64_t k = 0; k < n; k++)
                for (int64_t t = 0; t < g; t++) {
                    base[2 * (k * inner + t)] = lines[2 * (t * n + k)];
                    base[2 * (k * inner + t) + 1] = lines[2 * (t * n + k) + 1];
                }
            l += g;
        }
    }
}

/* Runs job's lines (plan, x, n, inner, lines, inverse and real_* set) on kiln's threads. */
static kiln_status run(kiln_ctx *cx, lines_job *j) {
    j->plan = kiln__fft_plan_make(cx, j->n);
    if (!j->plan) return KILN_RESOURCE_EXHAUSTED;
    bool wide = (double)j->n * (double)j->lines >= PARALLEL_MIN;
    j->chunks = wide ? kiln__threads_count() : 1;
    if (j->chunks > j->lines) j->chunks = j->lines;
    j->per_chunk = 2 * (size_t)j->n * TILE + kiln__fft_scratch_doubles(j->plan);
    size_t bytes = (size_t)j->chunks * j->per_chunk * sizeof(double);
    kiln_status s = KILN_RESOURCE_EXHAUSTED;
    if ((j->scratch = kiln__alloc(cx, bytes, _Alignof(double), "fft"))) {
        kiln__parallel_for(j->chunks, 1, run_lines, j);
        kiln__free(cx, j->scratch, bytes);
        s = KILN_OK;
    }
    kiln__fft_plan_free(cx, (kiln__fft_plan *)j->plan);
    return s;
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
    /* The work array: the operand as interleaved doubles (RFFT: (x, 0)). */
    size_t bytes = (size_t)xn * 2 * sizeof(double);
    double *w = kiln__alloc(cx, bytes, _Alignof(double), "fft");
    if (!w) return KILN_RESOURCE_EXHAUSTED;
    const void *xv = kiln__in(xt);
    switch (xd) {
    case KILN_F32:
        for (int64_t i = 0; i < xn; i++)
            w[2 * i] = ((const float *)xv)[i], w[2 * i + 1] = 0;
        break;
    case KILN_F64:
        for (int64_t i = 0; i < xn; i++)
            w[2 * i] = ((const double *)xv)[i], w[2 * i + 1] = 0;
        break;
    case KILN_C64:
        for (int64_t i = 0; i < 2 * xn; i++)
            w[i] = ((const float *)xv)[i];
        break;
    default: memcpy(w, xv, bytes); break;
    }
    bool inverse = type == KILN_FFT_INVERSE || type == KILN_FFT_INVERSE_REAL;
    /* IRFFT: the last dimension is real lines; the others complex. */
    int32_t last = type == KILN_FFT_INVERSE_REAL ? rank - 1 : rank;
    kiln_status s = KILN_OK;
    for (int32_t a = first; a < last && s == KILN_OK; a++) {
        int64_t inner = 1;
        for (int32_t d = a + 1; d < rank; d++)
            inner *= xs->dims[d];
        lines_job j = {.x = w, .n = xs->dims[a], .inner = inner, .inverse = inverse};
        j.lines = xn / j.n;
        s = run(cx, &j);
    }
    void *rv = kiln__out(rt);
    if (s == KILN_OK && type == KILN_FFT_INVERSE_REAL) {
        lines_job j = {.x = w, .n = len->v[len->count - 1], .inner = 1, .inverse = true,
                       .real_out = rv, .real_dtype = rd};
        j.lines = rn / j.n;
        s = run(cx, &j);
    } else if (s == KILN_OK) {
        /* RFFT keeps the first N/2 + 1 of each last line; the others keep every value. */
        int64_t n = xs->dims[rank - 1], keep = type == KILN_FFT_REAL ? n / 2 + 1 : n;
        for (int64_t l = 0, o = 0; l < xn / n; l++)
            for (int64_t k = 0; k < 2 * keep; k++, o++) {
                double v = w[2 * l * n + k];
                if (rd == KILN_C64)
                    ((float *)rv)[o] = (float)v;
                else
                    ((double *)rv)[o] = v;
            }
    }
    kiln__free(cx, w, bytes);
    return s;
}
