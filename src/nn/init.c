/* SPDX-License-Identifier: Apache-2.0 */
/* Initializers over the Philox generator. */
#include <math.h>

#include "nn_internal.h"

kiln_tensor *kiln_nn_init(kiln_ctx *cx, kiln_nn_init_kind kind, kiln_key key, kiln_dtype dtype,
                          kiln_shape shape, double scale) {
    static const char fn[] = "kiln_nn_init";
    if (!cx || kiln_ctx_status(cx) != KILN_OK) return NULL;
    if (!kiln_dtype_is_float(dtype))
        return kiln__nn_fail(cx, fn, "dtype %s is not a float dtype",
                             kiln_dtype_is_valid(dtype) ? kiln_dtype_name(dtype) : "(invalid)");
    if (!kiln_shape_is_valid(&shape)) return kiln__nn_fail(cx, fn, "shape is invalid");
    double fan_in = 0, fan_out = 0;
    if (shape.rank == 1) {
        fan_in = fan_out = (double)shape.dims[0];
    } else if (shape.rank == 2) {
        fan_in = (double)shape.dims[0];
        fan_out = (double)shape.dims[1];
    } else if (shape.rank >= 3) {
        double receptive = 1;
        for (int32_t i = 2; i < shape.rank; i++)
            receptive *= (double)shape.dims[i];
        fan_in = (double)shape.dims[1] * receptive;
        fan_out = (double)shape.dims[0] * receptive;
    }
    bool fan_based = kind == KILN_NN_INIT_HE_NORMAL || kind == KILN_NN_INIT_HE_UNIFORM ||
                     kind == KILN_NN_INIT_GLOROT_NORMAL || kind == KILN_NN_INIT_GLOROT_UNIFORM;
    char s[96];
    if (fan_based && (shape.rank == 0 || fan_in <= 0 || fan_out <= 0)) {
        kiln_shape_format(&shape, s, sizeof s);
        return kiln__nn_fail(cx, fn, "shape %s has a zero fan (fan_in %g, fan_out %g)", s, fan_in,
                             fan_out);
    }
    if ((kind == KILN_NN_INIT_NORMAL || kind == KILN_NN_INIT_UNIFORM) &&
        !(scale > 0 && isfinite(scale)))
        return kiln__nn_fail(cx, fn, "scale = %g; expected a finite value > 0", scale);
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *r = NULL;
    switch (kind) {
    case KILN_NN_INIT_ZEROS: r = kiln_zeros(cx, dtype, shape); break;
    case KILN_NN_INIT_NORMAL:
        r = kiln_multiply(cx, kiln_random_normal(cx, key, dtype, shape),
                          kiln_scalar(cx, scale, dtype));
        break;
    case KILN_NN_INIT_UNIFORM: r = kiln_random_uniform(cx, key, dtype, shape, -scale, scale); break;
    case KILN_NN_INIT_HE_NORMAL:
        r = kiln_multiply(cx, kiln_random_normal(cx, key, dtype, shape),
                          kiln_scalar(cx, sqrt(2.0 / fan_in), dtype));
        break;
    case KILN_NN_INIT_HE_UNIFORM: {
        double b = sqrt(6.0 / fan_in);
        r = kiln_random_uniform(cx, key, dtype, shape, -b, b);
        break;
    }
    case KILN_NN_INIT_GLOROT_NORMAL:
        r = kiln_multiply(cx, kiln_random_normal(cx, key, dtype, shape),
                          kiln_scalar(cx, sqrt(2.0 / (fan_in + fan_out)), dtype));
        break;
    case KILN_NN_INIT_GLOROT_UNIFORM: {
        double b = sqrt(6.0 / (fan_in + fan_out));
        r = kiln_random_uniform(cx, key, dtype, shape, -b, b);
        break;
    }
    default: kiln__nn_fail(cx, fn, "kind %d is not a kiln_nn_init_kind", (int)kind); break;
    }
    return kiln__nn_end(cx, r);
}
