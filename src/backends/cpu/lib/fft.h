/* SPDX-License-Identifier: Apache-2.0 */
/* One-dimensional complex FFTs of any length, in double precision: a plan per length
 * (made once per op, read-only after, shared by threads) and a transform of one line at a
 * time, with scratch the caller gives each thread. Lengths whose prime factors are at most
 * KILN__FFT_MAX_RADIX run as a mixed-radix Stockham FFT (radices 4, 2, 3, 5 written out,
 * the other primes as direct sums); the others by Bluestein's chirp-z, as a convolution
 * of a power-of-two size. Values are interleaved (re, im) doubles. */
#ifndef KILN_BACKENDS_CPU_LIB_FFT_H
#define KILN_BACKENDS_CPU_LIB_FFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/ctx.h"

#define KILN__FFT_MAX_RADIX 61

typedef struct kiln__fft_plan kiln__fft_plan;

/* A plan for length n >= 1, or NULL (RESOURCE_EXHAUSTED recorded in cx). */
kiln__fft_plan *kiln__fft_plan_make(kiln_ctx *cx, int64_t n);
void kiln__fft_plan_free(kiln_ctx *cx, kiln__fft_plan *p);

/* The doubles of scratch one kiln__fft_line call needs. */
size_t kiln__fft_scratch_doubles(const kiln__fft_plan *p);

/* Transforms the plan's n values at `line` in place: forward (sum_j x_j e^(-2 pi i jk/n))
 * or inverse (the conjugate transform divided by n). The same bits whatever the thread. */
void kiln__fft_line(const kiln__fft_plan *p, double *line, double *scratch, bool inverse);

#endif
