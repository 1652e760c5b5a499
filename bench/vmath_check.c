/* SPDX-License-Identifier: Apache-2.0 */
/* vmath-check: runs the f32 sin and cos kernels of src/backends/cpu/lib/vmath.c over every
 * float (all 2^32 bit patterns, or every STEP-th one) and compares each result with libm's
 * double function of the same input: the error in ulps of the float result (against the
 * double value, so 0.5 is a correct rounding), how many results are not the double value
 * rounded to float (the correctly rounded float in practice), and whether every instruction
 * set the CPU has gives the same bits. Not a test (minutes of CPU); the test suite samples
 * the same comparisons (tests/ops/test_vmath.c).
 *
 * usage: vmath-check [--fn sin|cos] [--step STEP] [--isa best|baseline|avx2|avx512]
 *                    [--compare-isas]
 * Exit status 0 when the largest error is at most 1 ulp and all compared ISAs agree. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/lib/vmath.h"

#define CHUNK 4096

typedef struct stats {
    double max_ulp;
    uint32_t worst_bits;
    uint64_t not_rounded, checked, isa_mismatch, bad_special;
} stats;

static double reference(kiln__vm_fn fn, double x) { return fn == KILN__VM_SIN ? sin(x) : cos(x); }

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The spacing of floats around y (for |y| at or above FLT_MAX: that of the largest
 * binade). */
static double ulp_at(double y) {
    int e;
    frexp(fabs(y), &e);
    if (e - 1 < -126) e = -125;
    if (e - 1 > 127) e = 128;
    return ldexp(1.0, e - 1 - 23);
}

/* Compares one result with the reference; updates s. */
static void judge(stats *s, uint32_t xb, float got, double want) {
    float want_f = (float)want;
    s->checked++;
    if (isnan(want) || isinf(want_f) || isinf(got)) {
        bool ok = isnan(want) ? isnan(got) : bits_of(got) == bits_of(want_f);
        if (!ok) s->bad_special++;
        if (!ok && s->bad_special <= 5)
            fprintf(stderr, "  x = %a (0x%08" PRIx32 "): got %a, want %a\n", (double)float_of(xb),
                    xb, (double)got, want);
        return;
    }
    if (bits_of(got) != bits_of(want_f)) s->not_rounded++;
    double err = fabs((double)got - want) / ulp_at(want);
    if (err > s->max_ulp) {
        s->max_ulp = err;
        s->worst_bits = xb;
    }
}

static void merge(stats *into, const stats *from) {
    if (from->max_ulp > into->max_ulp) {
        into->max_ulp = from->max_ulp;
        into->worst_bits = from->worst_bits;
    }
    into->not_rounded += from->not_rounded;
    into->checked += from->checked;
    into->isa_mismatch += from->isa_mismatch;
    into->bad_special += from->bad_special;
}

static int parse_isa(const char *s) {
    if (!strcmp(s, "best")) return KILN__VM_BEST;
    if (!strcmp(s, "baseline")) return KILN__VM_BASELINE;
    if (!strcmp(s, "avx2")) return KILN__VM_AVX2;
    if (!strcmp(s, "avx512")) return KILN__VM_AVX512;
    return -2;
}

/* Checks the inputs start, start+step, ... of one chunk. */
static void check_chunk(kiln__vm_fn fn, kiln__vm_kernel k, kiln__vm_kernel const *others,
                        int n_others, uint64_t first, uint64_t step, stats *s) {
    float x[CHUNK] = {0}, r[CHUNK], o[CHUNK];
    int n = 0;
    for (uint64_t b = first; b <= UINT32_MAX && n < CHUNK; b += step)
        x[n++] = float_of((uint32_t)b);
    k(x, r, n);
    for (int i = 0; i < n; i++)
        judge(s, bits_of(x[i]), r[i], reference(fn, (double)x[i]));
    for (int j = 0; j < n_others; j++) {
        others[j](x, o, n);
        for (int i = 0; i < n; i++)
            if (bits_of(o[i]) != bits_of(r[i])) s->isa_mismatch++;
    }
}

static bool run(kiln__vm_fn fn, int isa, uint64_t step, bool compare) {
    static const char *names[] = {"sin", "cos"};
    kiln__vm_kernel k = kiln__vm_get(fn, (kiln__vm_isa)isa);
    if (!k) {
        fprintf(stderr, "vmath-check: this CPU lacks the instruction set asked for\n");
        return false;
    }
    kiln__vm_kernel others[KILN__VM_N_ISA];
    int n_others = 0;
    for (int i = 0; compare && i < KILN__VM_N_ISA; i++) {
        kiln__vm_kernel o = kiln__vm_get(fn, (kiln__vm_isa)i);
        if (o && o != k) others[n_others++] = o;
    }
    uint64_t per_chunk = (uint64_t)CHUNK * step;
    int64_t n_chunks = (int64_t)((((uint64_t)1 << 32) + per_chunk - 1) / per_chunk);
    stats total = {0};
#pragma omp parallel
    {
        stats mine = {0};
#pragma omp for schedule(dynamic, 64)
        for (int64_t c = 0; c < n_chunks; c++)
            check_chunk(fn, k, others, n_others, (uint64_t)c * per_chunk, step, &mine);
#pragma omp critical
        merge(&total, &mine);
    }
    float wx = float_of(total.worst_bits);
    float wr;
    k(&wx, &wr, 1);
    printf("%s: %" PRIu64 " inputs, max error %.6f ulp at x = %a (got %a, libm %a); "
           "%" PRIu64 " not correctly rounded (%.2e); %" PRIu64 " wrong NaN/inf; "
           "%d other ISAs compared, %" PRIu64 " bitwise differences\n",
           names[fn], total.checked, total.max_ulp, (double)wx, (double)wr,
           reference(fn, (double)wx), total.not_rounded,
           (double)total.not_rounded / (double)total.checked, total.bad_special, n_others,
           total.isa_mismatch);
    return total.max_ulp <= 1.0 && total.bad_special == 0 && total.isa_mismatch == 0;
}

int main(int argc, char **argv) {
    int fn = -1, isa = KILN__VM_BEST;
    uint64_t step = 1;
    bool compare = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fn") && i + 1 < argc) {
            const char *f = argv[++i];
            fn = !strcmp(f, "sin") ? 0 : !strcmp(f, "cos") ? 1 : -2;
        } else if (!strcmp(argv[i], "--step") && i + 1 < argc) {
            step = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--isa") && i + 1 < argc) {
            isa = parse_isa(argv[++i]);
        } else if (!strcmp(argv[i], "--compare-isas")) {
            compare = true;
        } else {
            fn = -2;
            break;
        }
    }
    if (fn == -2 || isa == -2 || step == 0) {
        fprintf(stderr, "usage: vmath-check [--fn sin|cos] [--step STEP] "
                        "[--isa best|baseline|avx2|avx512] [--compare-isas]\n");
        return 2;
    }
    bool ok = true;
    for (int f = 0; f < KILN__VM_N_FN; f++)
        if (fn < 0 || fn == f) ok = run((kiln__vm_fn)f, isa, step, compare) && ok;
    return ok ? 0 : 1;
}
