/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/custom_call.h: C functions that programs call by name.
 *
 * A StableHLO program calls code outside itself with `stablehlo.custom_call @target(...)`
 * (JAX's LAPACK routines, host callbacks, a library's kernels). kiln reads, prints and
 * keeps every custom_call whole; it runs one when a C function is registered under its
 * target, in the CPU backend and the interpreter, eager or compiled. Compiling a program
 * whose custom_call has no function is UNIMPLEMENTED, naming the target and where it is.
 *
 * The function gets the call's operands and results as host buffers of the types the
 * program declares (results made for it, to be written whole), and reads the call's
 * attributes by name, typed, as XLA's FFI hands them to its handlers: for api_version 4 the
 * entries of the dictionary `mhlo.backend_config = {...}`, and in every version the call's
 * own attributes (`{k = 2 : i64}` after the operands); `kiln_custom_call_backend_config`
 * gives a string backend_config as written.
 *
 *     static kiln_status scale(kiln_ctx *cx, const kiln_custom_call_frame *call, void *user) {
 *         double k;
 *         if (kiln_custom_call_attr_f64(cx, call, "k", &k) != KILN_OK) return kiln_ctx_status(cx);
 *         const float *x = call->operands[0].data;
 *         float *y = call->results[0].data;
 *         for (size_t i = 0; i < call->results[0].nbytes / sizeof *y; i++)
 *             y[i] = (float)(k * x[i]);
 *         return KILN_OK;
 *     }
 *     kiln_custom_call_register(cx, "my.scale", scale, NULL);
 *     // %y = stablehlo.custom_call @my.scale(%x) {api_version = 4 : i32,
 *     //        mhlo.backend_config = {k = 2.0 : f32}} : (tensor<4xf32>) -> tensor<4xf32>
 *
 * The function runs on the thread that calls the program, possibly on several threads at
 * once (one executable called from several threads), so it must be thread-safe; it must
 * not keep the buffers past its return. A call with has_side_effect = true is never
 * removed, merged or evaluated at compile time; one without may be removed when its
 * results are unused, and runs once per use of the op otherwise. The registry is the
 * process's, shared by every ctx; registering and unregistering are thread-safe.
 */
#ifndef KILN_CUSTOM_CALL_H
#define KILN_CUSTOM_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/ctx.h"
#include "kiln/dtype.h"
#include "kiln/export.h"
#include "kiln/shape.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One operand or result: row-major elements of dtype and shape at data (nbytes of them). A
 * !stablehlo.token is an empty i1 buffer. */
typedef struct kiln_custom_call_buffer {
    kiln_dtype dtype;
    kiln_shape shape;
    void *data; /* operands: to be read only */
    size_t nbytes;
} kiln_custom_call_buffer;

struct kiln__custom_call_site; /* the op's attributes, for the accessors below */

typedef struct kiln_custom_call_frame {
    const char *target; /* the name it was called by */
    int32_t n_operands, n_results;
    const kiln_custom_call_buffer *operands;
    const kiln_custom_call_buffer *results;
    int32_t api_version; /* the call's (1 when left out) */
    const struct kiln__custom_call_site *site;
} kiln_custom_call_frame;

/* A registered function: KILN_OK once it has written every result; an error status
 * otherwise, best with a message in cx (kiln_ctx_set_error), which the caller of the
 * program gets (prefixed with the target). */
typedef kiln_status (*kiln_custom_call_fn)(kiln_ctx *cx, const kiln_custom_call_frame *call,
                                           void *user);

/* Registers fn under target (copied; any non-empty name) with `user` handed to each call.
 * Registering the same fn and user again is KILN_OK; another function under a registered
 * target is ALREADY_EXISTS (unregister it first). INVALID_ARGUMENT for a NULL or empty
 * target or a NULL fn; RESOURCE_EXHAUSTED. */
KILN_API kiln_status kiln_custom_call_register(kiln_ctx *cx, const char *target,
                                               kiln_custom_call_fn fn, void *user);

/* Removes target's function; NOT_FOUND when none is registered. Executables compiled with
 * it then fail when they reach the call (UNIMPLEMENTED, naming the target). */
KILN_API kiln_status kiln_custom_call_unregister(kiln_ctx *cx, const char *target);

/* Whether a function is registered under target. */
KILN_API bool kiln_custom_call_is_registered(const char *target);

/* Calls target's function on operands from C, eagerly (the function runs now) or, inside
 * kiln_lower or kiln_jit, recorded as a stablehlo.custom_call of api_version 4 (the function
 * runs when the executable does; it must be registered by kiln_compile then). Its n_results
 * results have the given dtypes and shapes (into results[i], references the caller
 * releases). backend_config, when not NULL, is an MLIR attribute dictionary that the
 * function reads with the accessors below ("{k = 2.5 : f32, mode = \"fast\"}");
 * has_side_effect keeps the call though its results are unused. INVALID_ARGUMENT naming
 * the argument (a NULL or empty target, NULL arrays, a backend_config that is not a
 * dictionary, a bad shape); UNIMPLEMENTED for an eager call of a target with no function;
 * what the function returns. */
KILN_API kiln_status kiln_custom_call(kiln_ctx *cx, const char *target,
                                      kiln_tensor *const *operands, int32_t n_operands,
                                      const kiln_dtype *result_dtypes,
                                      const kiln_shape *result_shapes, int32_t n_results,
                                      const char *backend_config, bool has_side_effect,
                                      kiln_tensor **results);

/* The call's attribute `name`, typed: an integer (`3 : i64`, any integer type, or a
 * boolean as 0/1), a float (`2.5 : f32`, or an integer), a boolean (`true`, or an integer
 * 0 or 1), a string (its text unescaped into buf, at most cap bytes with the NUL; *len, when
 * not NULL, gets the whole length). The dictionary mhlo.backend_config is searched first,
 * then the call's own attributes. NOT_FOUND when the call has no such attribute,
 * INVALID_ARGUMENT when it is of another kind (naming the target, the attribute and what
 * it holds), OUT_OF_RANGE for a string longer than cap - 1 (buf then holds its start). */
KILN_API kiln_status kiln_custom_call_attr_i64(kiln_ctx *cx, const kiln_custom_call_frame *call,
                                               const char *name, int64_t *out);
KILN_API kiln_status kiln_custom_call_attr_f64(kiln_ctx *cx, const kiln_custom_call_frame *call,
                                               const char *name, double *out);
KILN_API kiln_status kiln_custom_call_attr_bool(kiln_ctx *cx, const kiln_custom_call_frame *call,
                                                const char *name, bool *out);
KILN_API kiln_status kiln_custom_call_attr_string(kiln_ctx *cx, const kiln_custom_call_frame *call,
                                                  const char *name, char *buf, size_t cap,
                                                  size_t *len);

/* A string backend_config (api_version 1 to 3) as written, unescaped into buf like
 * kiln_custom_call_attr_string; "" when the call has none or a dictionary. */
KILN_API kiln_status kiln_custom_call_backend_config(kiln_ctx *cx,
                                                     const kiln_custom_call_frame *call, char *buf,
                                                     size_t cap, size_t *len);

#ifdef __cplusplus
}
#endif

#endif
