/* SPDX-License-Identifier: Apache-2.0 */
/* The StableHLO text printer's pieces shared between its files (and its tests). */
#ifndef KILN_IR_PRINT_H
#define KILN_IR_PRINT_H

#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "kiln/dtype.h"
#include "kiln/shape.h"

/* Room for any float kiln__format_float writes, with its NUL. */
#define KILN__FLOAT_TEXT 40

/* One float element (f16, bf16, f32 or f64, given by its bit pattern) as MLIR prints it,
 * so it reads back to the same bits: "1.000000e+00" (six digits after the point) when
 * that reads back exactly, else the value's natural precision as LLVM's APFloat prints it
 * ("3.14159203", "1.2345678901234567E-5"), else (NaN, infinities, and the rare values
 * whose natural form has no point, like 2997925 in f32) the bit pattern in hex with
 * every digit ("0x7FC00000"). Writes at most KILN__FLOAT_TEXT bytes; returns the length.
 * Any other dtype writes "" and returns 0. Thread-safe. */
size_t kiln__format_float(kiln_dtype dtype, uint64_t bits, char *out);

/* An elements literal: `dense<...>`, without its type. Splat values (every element the
 * same bits) print once (`dense<1>`), no elements as `dense<>`, more than 100 elements
 * (not i1) as a little-endian hex blob (`dense<"0x0000803F...">`), anything else as
 * nested lists (`dense<[[1, 2], [3, 4]]>`). i1 prints as true/false, integers in
 * decimal over their full range. */
void kiln__print_dense(kiln__strbuf *sb, kiln_dtype dtype, const kiln_shape *shape,
                       const void *data);

#endif
