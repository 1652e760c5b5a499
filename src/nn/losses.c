/* SPDX-License-Identifier: Apache-2.0 */
/* Losses and metrics. */
#include "nn_internal.h"

/* logits [N, K] float; labels [N] integer. */
static bool check_logits_labels(kiln_ctx *cx, const char *fn, kiln_tensor *logits,
                                kiln_tensor *labels) {
    char s1[96], s2[96];
    if (!kiln__nn_arg(cx, fn, "logits", logits) || !kiln__nn_arg(cx, fn, "labels", labels))
        return false;
    if (!kiln_dtype_is_float(kiln_tensor_dtype(logits)) || kiln_tensor_rank(logits) != 2) {
        kiln__nn_fail(cx, fn, "logits is %s%s; expected a float [N, K]",
                      kiln_dtype_name(kiln_tensor_dtype(logits)),
                      kiln__nn_shape_str(logits, s1, sizeof s1));
        return false;
    }
    if (!kiln_dtype_is_integer(kiln_tensor_dtype(labels)) || kiln_tensor_rank(labels) != 1 ||
        kiln_tensor_dim(labels, 0) != kiln_tensor_dim(logits, 0)) {
        kiln__nn_fail(
            cx, fn, "labels is %s%s; expected an integer [%lld] (logits is %s)",
            kiln_dtype_name(kiln_tensor_dtype(labels)), kiln__nn_shape_str(labels, s1, sizeof s1),
            (long long)kiln_tensor_dim(logits, 0), kiln__nn_shape_str(logits, s2, sizeof s2));
        return false;
    }
    return true;
}

/* -mean_n sum_k targets * log_softmax(logits). */
static kiln_tensor *xent(kiln_ctx *cx, kiln_tensor *logits, kiln_tensor *targets) {
    kiln_tensor *logp = kiln_log_softmax(cx, logits, -1);
    kiln_tensor *per_row = kiln_sum(cx, kiln_multiply(cx, targets, logp), KILN_DIMS(-1), false);
    return kiln_negate(cx, kiln_mean(cx, per_row, KILN_DIMS_NONE, false));
}

kiln_tensor *kiln_nn_softmax_cross_entropy(kiln_ctx *cx, kiln_tensor *logits, kiln_tensor *labels) {
    static const char fn[] = "kiln_nn_softmax_cross_entropy";
    if (!cx || !check_logits_labels(cx, fn, logits, labels)) return NULL;
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *oh =
        kiln_one_hot(cx, labels, kiln_tensor_dim(logits, 1), kiln_tensor_dtype(logits));
    return kiln__nn_end(cx, xent(cx, logits, oh));
}

/* Checks that `x` (named `what`) has the dtype and shape of `ref` (named `ref_what`, in the
 * possessive: "logits'"), recording INVALID_ARGUMENT naming fn when it has not. */
static bool same_type(kiln_ctx *cx, const char *fn, const char *what, const kiln_tensor *x,
                      const char *ref_what, const kiln_tensor *ref) {
    if (kiln_tensor_dtype(x) == kiln_tensor_dtype(ref) &&
        kiln_shape_equal(kiln_tensor_shape(x), kiln_tensor_shape(ref)))
        return true;
    char s1[96], s2[96];
    kiln__nn_fail(cx, fn, "%s is %s%s; expected %s %s%s", what,
                  kiln_dtype_name(kiln_tensor_dtype(x)), kiln__nn_shape_str(x, s1, sizeof s1),
                  ref_what, kiln_dtype_name(kiln_tensor_dtype(ref)),
                  kiln__nn_shape_str(ref, s2, sizeof s2));
    return false;
}

kiln_tensor *kiln_nn_softmax_cross_entropy_onehot(kiln_ctx *cx, kiln_tensor *logits,
                                                  kiln_tensor *targets) {
    static const char fn[] = "kiln_nn_softmax_cross_entropy_onehot";
    if (!cx || !kiln__nn_arg(cx, fn, "logits", logits) || !kiln__nn_arg(cx, fn, "targets", targets))
        return NULL;
    char s1[96];
    if (!kiln_dtype_is_float(kiln_tensor_dtype(logits)) || kiln_tensor_rank(logits) != 2)
        return kiln__nn_fail(cx, fn, "logits is %s%s; expected a float [N, K]",
                             kiln_dtype_name(kiln_tensor_dtype(logits)),
                             kiln__nn_shape_str(logits, s1, sizeof s1));
    if (!same_type(cx, fn, "targets", targets, "logits'", logits) || !kiln__nn_begin(cx))
        return NULL;
    return kiln__nn_end(cx, xent(cx, logits, targets));
}

kiln_tensor *kiln_nn_mse(kiln_ctx *cx, kiln_tensor *pred, kiln_tensor *target) {
    static const char fn[] = "kiln_nn_mse";
    if (!cx || !kiln__nn_arg(cx, fn, "pred", pred) || !kiln__nn_arg(cx, fn, "target", target))
        return NULL;
    if (!kiln_dtype_is_float(kiln_tensor_dtype(pred)))
        return kiln__nn_fail(cx, fn, "pred has dtype %s; expected a float dtype",
                             kiln_dtype_name(kiln_tensor_dtype(pred)));
    if (!same_type(cx, fn, "target", target, "pred's", pred) || !kiln__nn_begin(cx)) return NULL;
    kiln_tensor *d = kiln_subtract(cx, pred, target);
    return kiln__nn_end(cx, kiln_mean(cx, kiln_multiply(cx, d, d), KILN_DIMS_NONE, false));
}

kiln_tensor *kiln_nn_accuracy(kiln_ctx *cx, kiln_tensor *logits, kiln_tensor *labels) {
    static const char fn[] = "kiln_nn_accuracy";
    if (!cx || !check_logits_labels(cx, fn, logits, labels)) return NULL;
    if (kiln_tensor_dim(logits, 0) == 0 || kiln_tensor_dim(logits, 1) == 0)
        return kiln__nn_fail(cx, fn, "logits has no rows or no classes");
    if (!kiln__nn_begin(cx)) return NULL;
    kiln_tensor *pred = kiln_argmax(cx, logits, 1, false);
    kiln_tensor *hit =
        kiln_compare(cx, pred, kiln_convert(cx, labels, KILN_I64), KILN_CMP_EQ, KILN_CMP_DEFAULT);
    return kiln__nn_end(cx, kiln_mean(cx, kiln_convert(cx, hit, KILN_F32), KILN_DIMS_NONE, false));
}
