/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/nn.h: neural-network layers, initializers, losses, optimizers, models, weights on
 * disk and the digits data set, built on kiln's public API alone.
 *
 * Layers are functions over tensors: called with concrete tensors they run eagerly, called
 * inside a trace (kiln_lower, kiln_jit, kiln_value_and_grad_tree) they record StableHLO ops,
 * so the same model code is evaluated op by op, compiled, and differentiated. Parameters,
 * optimizer state and model state are plain C structs described by tree descriptors
 * (kiln/tree.h), so a whole training step (forward, backward, optimizer update) is one
 * jitted function whose parameter and state inputs are donated and updated in place:
 *
 *     kiln_nn_cnn params;                               // conv, conv, dense, dense
 *     kiln_nn_cnn_config cfg = kiln_nn_cnn_config_digits();
 *     kiln_nn_cnn_create(cx, &cfg, kiln_key_from_seed(0), &params);
 *     kiln_tensor *logits = kiln_nn_cnn_forward(cx, &params, images);        // eager
 *     kiln_tensor *loss = kiln_nn_softmax_cross_entropy(cx, logits, labels);
 *
 *     // In a training step (see examples/train_digits.c): gradients by
 *     // kiln_value_and_grad_tree, then
 *     kiln_nn_optimizer opt = kiln_nn_adam(1e-3);
 *     kiln_nn_optimizer_update(cx, &opt, &kiln_tree_def_kiln_nn_cnn, &params, &grads,
 *                              step, &mu, &nu, &new_params, &new_step, &new_mu, &new_nu);
 *
 * Conventions (those of kiln/ops.h): functions returning `kiln_tensor *` return a tensor
 * owned by the ctx's innermost scope, or NULL with a sticky error in the ctx; a NULL
 * tensor argument gives NULL without touching an error already recorded (and records
 * INVALID_ARGUMENT naming the argument when there is none). Intermediates are released
 * before a function returns. Errors are INVALID_ARGUMENT with a message naming the
 * function and the argument (`kiln_nn_dense: w has shape [3,4]; expected [5,N] (x [2,5]
 * has last dimension 5)`), or what the underlying builders report (RESOURCE_EXHAUSTED ...).
 * Functions returning kiln_status return the ctx's status. Layouts: images are NCHW,
 * convolution kernels OIHW, dense weights [in, out] (y = x @ w + b, as flax's Dense).
 * Every function has the ctx's thread-safety; the descriptor accessors and the
 * kiln_nn_*_config / optimizer constructors are pure and thread-safe.
 */
#ifndef KILN_NN_H
#define KILN_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/ctx.h"
#include "kiln/export.h"
#include "kiln/ops.h"
#include "kiln/random.h"
#include "kiln/tensor.h"
#include "kiln/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- layers ---------------------------------------------------------------------------- */

/* x @ w + b: x [..., in], w [in, out], b [out] or NULL (no bias); result [..., out].
 * Operands share one float dtype. */
KILN_API kiln_tensor *kiln_nn_dense(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *w, kiln_tensor *b);

/* Geometry of a 2-D convolution. Zero-filled means stride 1, no padding, dilation 1, one
 * group; each pair is (height, width). */
typedef struct kiln_nn_conv2d_params {
    int64_t stride[2];   /* 0 means 1 */
    int64_t padding[2];  /* zeros added before and after each spatial dimension, >= 0 */
    int64_t dilation[2]; /* kernel dilation; 0 means 1 */
    int64_t groups;      /* feature groups; 0 means 1; divides C_in and C_out */
} kiln_nn_conv2d_params;

/* Cross-correlation of x [N, C_in, H, W] with w [C_out, C_in / groups, KH, KW], plus b
 * [C_out] (or NULL) per output channel: result [N, C_out, H', W'] with
 * H' = floor((H + 2 * padding - dilation * (KH - 1) - 1) / stride) + 1 (likewise W'), as
 * torch.nn.functional.conv2d. `params` may be NULL (all defaults). Errors also for a
 * negative padding, a group count that does not divide the channels, and a kernel larger
 * than the padded input. */
KILN_API kiln_tensor *kiln_nn_conv2d(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *w, kiln_tensor *b,
                                     const kiln_nn_conv2d_params *params);

/* Geometry of a 2-D pooling window over the last two dimensions of [N, C, H, W]. */
typedef struct kiln_nn_pool2d_params {
    int64_t window[2];  /* >= 1 */
    int64_t stride[2];  /* 0 means the window size (non-overlapping windows) */
    int64_t padding[2]; /* before and after, >= 0 and less than the window */
    /* avg_pool2d: divide by the full window size (padding counted as zeros, PyTorch's
     * default) instead of by the number of input elements in the window. */
    bool count_include_pad;
} kiln_nn_pool2d_params;

/* Pooling takes a float x [N, C, H, W]. */
/* The maximum of each window (padding never wins: it is -infinity), as
 * torch.nn.functional.max_pool2d with ceil_mode off. A StableHLO reduce_window. */
KILN_API kiln_tensor *kiln_nn_max_pool2d(kiln_ctx *cx, kiln_tensor *x,
                                         const kiln_nn_pool2d_params *params);

/* The mean of each window; see count_include_pad. */
KILN_API kiln_tensor *kiln_nn_avg_pool2d(kiln_ctx *cx, kiln_tensor *x,
                                         const kiln_nn_pool2d_params *params);

/* Activations, elementwise on float tensors:
 * relu max(x, 0); silu x * sigmoid(x); tanh; sigmoid 1 / (1 + exp(-x)).
 * gelu: with `approximate`, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (the tanh form
 * of Hendrycks and Gimpel, jax.nn.gelu's default); without, x * Phi(x) = 0.5 x (1 +
 * erf(x / sqrt 2)) with erf evaluated from kiln ops by Abramowitz and Stegun 7.1.26
 * (absolute error below 1.5e-7 in erf, so within f32 rounding of the exact gelu for
 * |x| < 10, and differentiable through the same ops). */
KILN_API kiln_tensor *kiln_nn_relu(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_nn_gelu(kiln_ctx *cx, kiln_tensor *x, bool approximate);
KILN_API kiln_tensor *kiln_nn_silu(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_nn_tanh(kiln_ctx *cx, kiln_tensor *x);
KILN_API kiln_tensor *kiln_nn_sigmoid(kiln_ctx *cx, kiln_tensor *x);

/* Numerically stable softmax and log-softmax along `axis` (negative counts from the end). */
KILN_API kiln_tensor *kiln_nn_softmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis);
KILN_API kiln_tensor *kiln_nn_log_softmax(kiln_ctx *cx, kiln_tensor *x, int64_t axis);

/* Normalizes over the last dimension: (x - mean) / sqrt(var + eps) * gamma + beta, with the
 * biased variance (as torch.nn.LayerNorm). gamma and beta have shape [D] (x's last
 * dimension) or are NULL (1 and 0). eps > 0. */
KILN_API kiln_tensor *kiln_nn_layer_norm(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *gamma,
                                         kiln_tensor *beta, double eps);

/* Batch normalization over the feature dimension 1 of x [N, C] or [N, C, H, W].
 * Training (`training` true): normalizes with the batch's mean and biased variance over
 * every dimension but 1, and writes the updated running statistics, as torch.nn.BatchNorm2d:
 * new_mean = (1 - momentum) * running_mean + momentum * mean, new_var likewise with the
 * unbiased batch variance (the biased one when a channel has a single element), into
 * *out_running_mean and *out_running_var (new tensors, owned by the scope; either
 * pointer may be NULL to skip it). Inference: normalizes with running_mean and
 * running_var and writes nothing. gamma, beta, running_mean and running_var have shape
 * [C] (gamma/beta may be NULL: 1 and 0). 0 <= momentum <= 1 (PyTorch's default is 0.1),
 * eps > 0 (1e-5). On error the outputs are set to NULL. */
KILN_API kiln_tensor *kiln_nn_batch_norm(kiln_ctx *cx, kiln_tensor *x, kiln_tensor *gamma,
                                         kiln_tensor *beta, kiln_tensor *running_mean,
                                         kiln_tensor *running_var, bool training, double momentum,
                                         double eps, kiln_tensor **out_running_mean,
                                         kiln_tensor **out_running_var);

/* A key as a tensor: a ui64[2] StableHLO rng_bit_generator state {key, counter 0} made from
 * a kiln_key. Pass it to a jitted function as an argument (not a captured constant) so
 * each call can draw different bits; the same key always gives the same bits, eagerly and
 * compiled. */
KILN_API kiln_tensor *kiln_nn_key_tensor(kiln_ctx *cx, kiln_key key);

/* Inverted dropout: each element is kept with probability 1 - rate and scaled by
 * 1 / (1 - rate), or set to 0. The mask comes from kiln_rng_bit_generator (Philox) on
 * `key` (a state from kiln_nn_key_tensor, or a previous *out_next_key), so it is the
 * same eagerly and compiled. *out_next_key (may be NULL) receives the advanced state for
 * the next dropout (a new tensor owned by the scope; NULL on error). 0 <= rate < 1; rate 0
 * returns a new tensor with x's values, and a copy of key as the next key. */
KILN_API kiln_tensor *kiln_nn_dropout(kiln_ctx *cx, kiln_tensor *x, double rate, kiln_tensor *key,
                                      kiln_tensor **out_next_key);

/* [N, d1, d2, ...] -> [N, d1 * d2 * ...]; rank >= 1 (rank 1 gives [N, 1]). */
KILN_API kiln_tensor *kiln_nn_flatten(kiln_ctx *cx, kiln_tensor *x);

/* Rows of table [V, D] at the integer `ids` (any shape): result ids.shape + [D]. Ids out
 * of range are clamped (as StableHLO gather does). */
KILN_API kiln_tensor *kiln_nn_embedding(kiln_ctx *cx, kiln_tensor *table, kiln_tensor *ids);

/* ---- losses and metrics ---------------------------------------------------------------- */

/* The mean over the batch of -log_softmax(logits)[label]: logits [N, K] (float), labels
 * [N] of an integer dtype with values in 0..K-1 (others contribute 0, as the one-hot row
 * is then all zeros). Rank-0 result of logits' dtype. */
KILN_API kiln_tensor *kiln_nn_softmax_cross_entropy(kiln_ctx *cx, kiln_tensor *logits,
                                                    kiln_tensor *labels);

/* The same with target distributions: mean over N of -sum_k targets[n,k] *
 * log_softmax(logits)[n,k]; targets has logits' shape and dtype (one-hot or soft labels). */
KILN_API kiln_tensor *kiln_nn_softmax_cross_entropy_onehot(kiln_ctx *cx, kiln_tensor *logits,
                                                           kiln_tensor *targets);

/* mean((pred - target)^2) over every element; same shape and float dtype. Rank 0 result. */
KILN_API kiln_tensor *kiln_nn_mse(kiln_ctx *cx, kiln_tensor *pred, kiln_tensor *target);

/* The fraction (f32, rank 0) of rows of logits [N, K] whose first maximum is at labels[n]
 * (integer [N]). N > 0. */
KILN_API kiln_tensor *kiln_nn_accuracy(kiln_ctx *cx, kiln_tensor *logits, kiln_tensor *labels);

/* ---- initializers ---------------------------------------------------------------------- */

typedef enum kiln_nn_init_kind {
    KILN_NN_INIT_ZEROS = 1,
    KILN_NN_INIT_NORMAL,         /* N(0, scale^2) */
    KILN_NN_INIT_UNIFORM,        /* U[-scale, scale) */
    KILN_NN_INIT_HE_NORMAL,      /* N(0, 2 / fan_in): Kaiming normal, ReLU gain */
    KILN_NN_INIT_HE_UNIFORM,     /* U[-b, b), b = sqrt(6 / fan_in) */
    KILN_NN_INIT_GLOROT_NORMAL,  /* N(0, 2 / (fan_in + fan_out)): Xavier normal */
    KILN_NN_INIT_GLOROT_UNIFORM, /* U[-b, b), b = sqrt(6 / (fan_in + fan_out)) */
} kiln_nn_init_kind;

/* A new tensor of a float dtype and `shape` drawn from the Philox generator with `key`
 * (kiln_random_normal / kiln_random_uniform: the same key gives the same tensor
 * everywhere). Fans follow the layouts above: rank 1 [n]: fan_in = fan_out = n; rank 2
 * dense [in, out]: fan_in = in, fan_out = out; rank >= 3 kernels [O, I, k...]: fan_in =
 * I * prod(k), fan_out = O * prod(k). `scale` is used by NORMAL (the standard deviation)
 * and UNIFORM (the bound) only; it must be finite and > 0 for them. The normal
 * initializers are not truncated (as PyTorch's kaiming_normal_ / xavier_normal_).
 * Errors: an unknown kind, a non-float dtype, a rank-0 shape or a zero fan for the
 * fan-based kinds. */
KILN_API kiln_tensor *kiln_nn_init(kiln_ctx *cx, kiln_nn_init_kind kind, kiln_key key,
                                   kiln_dtype dtype, kiln_shape shape, double scale);

/* ---- optimizers ------------------------------------------------------------------------
 * Pure functions of (params, grads, state) over any tree descriptor: every tensor leaf of
 * `params` is updated from the leaf at the same path in `grads` (same dtype and shape).
 * The state is a step counter (i32 rank 0) and up to two "slots", structs of the params'
 * type: SGD with momentum uses mu (the momentum buffer), Adam and AdamW use mu and nu
 * (first and second moments); unused slots are NULL. Put them in your own state struct
 * as subtrees of the params' type, so the whole state is one tree (examples/train_digits.c).
 */

typedef enum kiln_nn_optimizer_kind {
    KILN_NN_SGD = 1,
    KILN_NN_ADAM,
    KILN_NN_ADAMW,
} kiln_nn_optimizer_kind;

typedef struct kiln_nn_optimizer {
    kiln_nn_optimizer_kind kind;
    double learning_rate; /* > 0 */
    double momentum;      /* SGD: 0 <= momentum < 1; 0 means plain SGD (no mu slot) */
    bool nesterov;        /* SGD: Nesterov momentum */
    double weight_decay;  /* >= 0: SGD and Adam add wd * p to the gradient (L2); AdamW
                             decays p by lr * wd directly (decoupled) */
    double beta1, beta2;  /* Adam(W): in [0, 1) */
    double eps;           /* Adam(W): > 0 */
    /* Optional: a rank-0 float tensor (concrete or traced) used instead of learning_rate,
     * so that a jitted step can take its learning rate as an argument (schedules) without
     * recompiling. NULL: learning_rate. Borrowed. */
    kiln_tensor *learning_rate_tensor;
} kiln_nn_optimizer;

/* Optimizers with PyTorch's defaults: SGD (momentum 0, no decay), Adam (betas 0.9/0.999,
 * eps 1e-8, no decay), AdamW (betas 0.9/0.999, eps 1e-8, weight decay as given; PyTorch's
 * default is 0.01). Pure; thread-safe. */
KILN_API kiln_nn_optimizer kiln_nn_sgd(double learning_rate, double momentum, double weight_decay);
KILN_API kiln_nn_optimizer kiln_nn_adam(double learning_rate);
KILN_API kiln_nn_optimizer kiln_nn_adamw(double learning_rate, double weight_decay);

/* The initial state for `params`: *out_step = 0 (i32, rank 0) and zeros of each leaf's
 * dtype and shape in the slots the optimizer uses (out_mu for SGD with momentum, Adam,
 * AdamW; out_nu for Adam and AdamW); those slot pointers must then not be NULL, and the
 * others are left alone (they may be NULL). Tensors are owned by the scope. Errors:
 * INVALID_ARGUMENT (a NULL argument, an invalid descriptor, a NULL leaf, a bad optimizer
 * setting naming the field). */
KILN_API kiln_status kiln_nn_optimizer_init(kiln_ctx *cx, const kiln_nn_optimizer *opt,
                                            const kiln_tree_def *params_def, const void *params,
                                            kiln_tensor **out_step, void *out_mu, void *out_nu);

/* One update. With g = grads (+ weight_decay * p for SGD and Adam):
 *  SGD: mu' = momentum * mu + g; d = nesterov ? g + momentum * mu' : mu' (d = g without
 *       momentum); p' = p - lr * d (torch.optim.SGD, dampening 0).
 *  Adam/AdamW: t = step + 1; mu' = b1 mu + (1 - b1) g; nu' = b2 nu + (1 - b2) g^2;
 *       p' = p - lr * (mu' / (1 - b1^t)) / (sqrt(nu' / (1 - b2^t)) + eps), where AdamW
 *       first decays p by (1 - lr * wd) (torch.optim.Adam / AdamW).
 * Writes the new params into out_params (a struct of params_def's type; statics copied
 * from params), *out_step = step + 1, and the new slots into out_mu / out_nu (only those
 * the optimizer uses). Works eagerly and inside a trace. A NULL gradient leaf (as
 * kiln_value_and_grad_tree gives for leaves it does not differentiate) leaves that
 * parameter and its slots unchanged: those output leaves are the input tensors themselves,
 * not new references. The other output tensors are new, owned by the scope. out_* may alias the
 * corresponding inputs. Errors: INVALID_ARGUMENT (a NULL argument or slot the optimizer
 * uses, an invalid descriptor, a bad optimizer setting naming the field, a step that is not a
 * rank-0 integer, a grads/mu/nu leaf whose dtype or shape differs from the parameter's, a gradient
 * for a non-float parameter), RESOURCE_EXHAUSTED; on error the outputs are not written. */
KILN_API kiln_status kiln_nn_optimizer_update(kiln_ctx *cx, const kiln_nn_optimizer *opt,
                                              const kiln_tree_def *params_def, const void *params,
                                              const void *grads, kiln_tensor *step, const void *mu,
                                              const void *nu, void *out_params,
                                              kiln_tensor **out_step, void *out_mu, void *out_nu);

/* ---- data-parallel training ------------------------------------------------------------
 * A batch split into equal shards, one per replica (the processes of the ctx's
 * communicator, kiln/spmd.h: threads of a local one, or MPI ranks, kiln/mpi.h), each
 * computing the gradients of its own shard. The gradients are summed in replica order and
 * multiplied by 1/R, the same float operations on every replica, so parameters updated
 * from them stay the same bits on every replica. One process given n_shards = R computes
 * the R shards one after the other and sums them in the same order: the same bits as R
 * replicas (the single-process mode, and the oracle a distributed run is checked against;
 * tests/nn/test_data_parallel.c, `kiln-demo --data-parallel` and `--shards`).
 *
 *     static kiln_status shard_grads(kiln_ctx *cx, const void *params, const void *shard,
 *                                    void *out_grads, void *out_aux, void *user);
 *     // in the training step, traced in a ctx bound to the communicator:
 *     kiln_nn_data_parallel_grads(cx, NULL, shard_grads, NULL, &kiln_tree_def_kiln_nn_cnn,
 *                                 &params, &kiln_tree_def_batch, &my_shard,
 *                                 &kiln_tree_def_metrics, &grads, &metrics);
 *     kiln_nn_optimizer_update(cx, &opt, &kiln_tree_def_kiln_nn_cnn, &params, &grads, ...);
 */

/* The gradients of one shard: fills out_grads, a struct of the params' type whose tensor
 * leaves are NULL on entry (statics copied from params), with one gradient per parameter
 * of its dtype and shape (NULL: no gradient, for every shard alike), and, when an aux
 * descriptor is given, out_aux (leaves NULL on entry) with float tensors to average the
 * same way (the loss, an accuracy). */
typedef kiln_status (*kiln_nn_shard_grad_fn)(kiln_ctx *cx, const void *params, const void *shard,
                                             void *out_grads, void *out_aux, void *user);

typedef struct kiln_nn_data_parallel {
    size_t struct_size; /* sizeof(kiln_nn_data_parallel) */
    /* The shards this process computes in sequence, >= 1 (default 1): every leaf of the
     * batch holds n_shards equal shards along dimension 0. With replicas too, each
     * replica sums its own shards before the replicas' sums are summed. */
    int32_t n_shards;
} kiln_nn_data_parallel;

/* Options with every field at its default. Pure; thread-safe. */
KILN_API kiln_nn_data_parallel kiln_nn_data_parallel_default(void);

/* The mean over every shard of every replica of fn's gradients (and aux): fn on each of
 * this process's shards of `batch` (a tree of batch_def), the results summed in shard
 * order, then summed across the replicas of the ctx's communicator in replica order (an
 * all_reduce per dtype; none on an unbound ctx), then multiplied by 1 / (replicas x
 * n_shards). Partitions, if any, are not reduced over (each partition is its own
 * data-parallel group). Eager or traced (inside kiln_jit the collectives are part of the
 * step: trace it in the bound ctx). dp NULL: defaults. Writes out_grads (a struct of
 * params_def's type, statics from params) and out_aux (aux_def's type; both or neither of
 * aux_def and out_aux), new tensors owned by the scope; on error neither is written.
 * Errors: INVALID_ARGUMENT (NULL arguments naming them, dp->struct_size, n_shards < 1, a
 * batch leaf whose first dimension n_shards does not divide, a gradient whose dtype or
 * shape is not its parameter's, a gradient NULL for some shards only, a non-float aux
 * leaf), what fn and the collectives report. */
KILN_API kiln_status kiln_nn_data_parallel_grads(kiln_ctx *cx, const kiln_nn_data_parallel *dp,
                                                 kiln_nn_shard_grad_fn fn, void *user,
                                                 const kiln_tree_def *params_def,
                                                 const void *params, const kiln_tree_def *batch_def,
                                                 const void *batch, const kiln_tree_def *aux_def,
                                                 void *out_grads, void *out_aux);

/* The debugging check that every replica holds the same bits in `tree` (e.g. the
 * parameters after a step): a hash of its leaves' dtypes, shapes and bytes, all-gathered
 * over the replicas of the ctx's communicator. Every replica calls it (it is a
 * collective); on an unbound ctx it only checks its arguments. Eager: the leaves must be
 * concrete. Errors: DATA_LOSS on every replica when they differ (naming replica 0's and
 * the first differing replica's hash), INVALID_ARGUMENT (NULL arguments, a traced leaf),
 * what the collective reports. */
KILN_API kiln_status kiln_nn_check_replicated(kiln_ctx *cx, const kiln_tree_def *def,
                                              const void *tree);

/* ---- parameter structs ----------------------------------------------------------------- */

typedef struct kiln_nn_dense_params {
    kiln_tensor *w; /* [in, out] */
    kiln_tensor *b; /* [out] */
} kiln_nn_dense_params;

typedef struct kiln_nn_conv2d_layer {
    kiln_tensor *w; /* [out, in, kh, kw] */
    kiln_tensor *b; /* [out] */
} kiln_nn_conv2d_layer;

typedef struct kiln_nn_batch_norm_params {
    kiln_tensor *scale; /* gamma [C] */
    kiln_tensor *bias;  /* beta [C] */
} kiln_nn_batch_norm_params;

typedef struct kiln_nn_batch_norm_state {
    kiln_tensor *mean; /* running mean [C] */
    kiln_tensor *var;  /* running variance [C] */
} kiln_nn_batch_norm_state;

/* Descriptors, defined in this header (static: one copy per file that uses them), so that
 * your own structs can hold these as KILN_SUBTREE members. C only (the macros need C11). */
#ifndef __cplusplus
KILN_TREE_DEF(kiln_nn_dense_params, KILN_FIELD(kiln_nn_dense_params, w),
              KILN_FIELD(kiln_nn_dense_params, b));
KILN_TREE_DEF(kiln_nn_conv2d_layer, KILN_FIELD(kiln_nn_conv2d_layer, w),
              KILN_FIELD(kiln_nn_conv2d_layer, b));
KILN_TREE_DEF(kiln_nn_batch_norm_params, KILN_FIELD(kiln_nn_batch_norm_params, scale),
              KILN_FIELD(kiln_nn_batch_norm_params, bias));
KILN_TREE_DEF(kiln_nn_batch_norm_state, KILN_FIELD(kiln_nn_batch_norm_state, mean),
              KILN_FIELD(kiln_nn_batch_norm_state, var));
#endif

/* ---- models ----------------------------------------------------------------------------
 * Each model has a params struct, a builder that initializes it from a key (He-normal
 * weights for layers followed by ReLU, Glorot-uniform for the output layer, zero biases;
 * batch-norm scale 1, bias 0, running mean 0, var 1)
 * and a forward function returning logits. Builders write tensors owned by the scope into
 * the caller's struct, and on error (INVALID_ARGUMENT for a bad size or depth, naming it;
 * RESOURCE_EXHAUSTED) leave every tensor member NULL; a NULL config, sizes or out_params
 * (INVALID_ARGUMENT), or a ctx already holding an error (returned at once), leaves the struct
 * untouched. */

/* MLP: dense layers with ReLU between them (none after the last). */
#define KILN_NN_MLP_MAX_LAYERS 8
typedef struct kiln_nn_mlp {
    kiln_nn_dense_params layers[KILN_NN_MLP_MAX_LAYERS]; /* the first n_layers are used */
    int32_t n_layers;                                    /* static */
} kiln_nn_mlp;

/* The descriptor of an MLP with n_layers layers (1..KILN_NN_MLP_MAX_LAYERS): the leaves
 * layers[0].w, layers[0].b, ... of the used layers, and n_layers as a static. Static
 * storage; NULL for a count out of range. Thread-safe. */
KILN_API const kiln_tree_def *kiln_nn_mlp_def(int32_t n_layers);

/* An MLP with layer widths sizes[0] (input) .. sizes[n_sizes - 1] (output), n_sizes in
 * 2..KILN_NN_MLP_MAX_LAYERS + 1, each size >= 1. f32 parameters. */
KILN_API kiln_status kiln_nn_mlp_create(kiln_ctx *cx, const int64_t *sizes, int32_t n_sizes,
                                        kiln_key key, kiln_nn_mlp *out_params);
/* x [N, sizes[0]] -> [N, sizes[n_sizes - 1]]. */
KILN_API kiln_tensor *kiln_nn_mlp_forward(kiln_ctx *cx, const kiln_nn_mlp *params, kiln_tensor *x);

/* The small CNN (for 8x8 digits by default): conv 3x3 (padding 1) -> relu -> 2x2 max-pool
 * -> conv 3x3 (padding 1) -> relu -> flatten -> dense -> relu -> dense. */
typedef struct kiln_nn_cnn_config {
    int64_t in_channels, height, width; /* the input [N, in_channels, height, width];
                                           height and width even, >= 2 */
    int64_t channels1, channels2;       /* the two convolutions' output channels */
    int64_t hidden;                     /* the first dense layer's width */
    int64_t classes;
} kiln_nn_cnn_config;

typedef struct kiln_nn_cnn {
    kiln_nn_conv2d_layer conv1, conv2;
    kiln_nn_dense_params fc1, fc2;
} kiln_nn_cnn;

#ifndef __cplusplus
KILN_TREE_DEF(kiln_nn_cnn, KILN_SUBTREE(kiln_nn_cnn, conv1, kiln_nn_conv2d_layer),
              KILN_SUBTREE(kiln_nn_cnn, conv2, kiln_nn_conv2d_layer),
              KILN_SUBTREE(kiln_nn_cnn, fc1, kiln_nn_dense_params),
              KILN_SUBTREE(kiln_nn_cnn, fc2, kiln_nn_dense_params));
#endif

/* The digits configuration: input [N, 1, 8, 8], 32 and 64 channels, 128 hidden, 10 classes.
 * Pure; thread-safe. */
KILN_API kiln_nn_cnn_config kiln_nn_cnn_config_digits(void);
/* f32 parameters for `config` (every size >= 1). */
KILN_API kiln_status kiln_nn_cnn_create(kiln_ctx *cx, const kiln_nn_cnn_config *config,
                                        kiln_key key, kiln_nn_cnn *out_params);
/* images [N, C, H, W] -> logits [N, classes]. */
KILN_API kiln_tensor *kiln_nn_cnn_forward(kiln_ctx *cx, const kiln_nn_cnn *params,
                                          kiln_tensor *images);

/* VGG (Simonyan and Zisserman; torchvision's configurations A, B, D, E): five stages of
 * 3x3 convolutions (padding 1) with ReLU (and batch norm before each ReLU when
 * batch_norm), each stage ending in a 2x2 max-pool; then flatten and three dense layers
 * (ReLU and, in training with a key, dropout 0.5 between them). There is no adaptive
 * average pool: the first dense layer takes 512 * (height / 32) * (width / 32) inputs, so
 * height and width must be multiples of 32 (224: 25088 inputs, as torchvision's). */
#define KILN_NN_VGG_MAX_CONVS 16
typedef struct kiln_nn_vgg_config {
    int32_t depth; /* 11, 13, 16 or 19 */
    bool batch_norm;
    int64_t in_channels;   /* 3 for RGB images */
    int64_t height, width; /* multiples of 32 */
    int64_t hidden;        /* the classifier's hidden width (4096 in the paper) */
    int64_t classes;       /* 1000 for ImageNet */
    int32_t width_divisor; /* 0 or 1: 64..512 channels; k > 1, a divisor of 64, divides
                              them by k (tests) */
} kiln_nn_vgg_config;

typedef struct kiln_nn_vgg {
    kiln_nn_conv2d_layer convs[KILN_NN_VGG_MAX_CONVS];    /* the first n_convs are used */
    kiln_nn_batch_norm_params bns[KILN_NN_VGG_MAX_CONVS]; /* with batch_norm */
    kiln_nn_dense_params fcs[3];
    int32_t depth;   /* static */
    bool batch_norm; /* static */
} kiln_nn_vgg;

/* Batch-norm running statistics of a VGG with batch_norm (the first n_convs are used). */
typedef struct kiln_nn_vgg_state {
    kiln_nn_batch_norm_state bns[KILN_NN_VGG_MAX_CONVS];
} kiln_nn_vgg_state;

/* The config for depth 11/13/16/19 at [*, 3, 224, 224], 4096 hidden, 1000 classes. Pure;
 * thread-safe; the depth is not checked here (kiln_nn_vgg_create reports a bad one). */
KILN_API kiln_nn_vgg_config kiln_nn_vgg_config_imagenet(int32_t depth, bool batch_norm);
/* The number of convolutions of a VGG of this depth (8, 10, 13, 16), or -1. Pure;
 * thread-safe. */
KILN_API int32_t kiln_nn_vgg_n_convs(int32_t depth);
/* Descriptors of kiln_nn_vgg (leaves convs[i].w/b for the used convolutions, then bns[i]
 * scale/bias with batch_norm, then fcs[0..2]; statics depth and batch_norm) and of
 * kiln_nn_vgg_state (bns[i].mean/var of the used convolutions). Static storage; NULL for a depth
 * other than 11, 13, 16 or 19. Thread-safe. */
KILN_API const kiln_tree_def *kiln_nn_vgg_def(int32_t depth, bool batch_norm);
KILN_API const kiln_tree_def *kiln_nn_vgg_state_def(int32_t depth);

/* Parameters for `config` (f32), and, with batch_norm, the initial running statistics
 * into *out_state (may be NULL without batch_norm; must not be NULL with it). */
KILN_API kiln_status kiln_nn_vgg_create(kiln_ctx *cx, const kiln_nn_vgg_config *config,
                                        kiln_key key, kiln_nn_vgg *out_params,
                                        kiln_nn_vgg_state *out_state);

/* images [N, C, H, W] -> logits [N, classes]. `state` is needed with batch_norm (NULL
 * otherwise). In training mode batch norm uses batch statistics and, when out_state is not
 * NULL, writes the updated running statistics there; dropout_key (may be NULL: no
 * dropout) is a kiln_nn_key_tensor state for the classifier's dropout. In inference mode
 * (training false) running statistics are used, there is no dropout, and out_state and
 * dropout_key are ignored. */
KILN_API kiln_tensor *kiln_nn_vgg_forward(kiln_ctx *cx, const kiln_nn_vgg *params,
                                          const kiln_nn_vgg_state *state, kiln_tensor *images,
                                          bool training, kiln_tensor *dropout_key,
                                          kiln_nn_vgg_state *out_state);

/* ---- weights on disk (safetensors, kiln/safetensors.h) ---------------------------------- */

/* Saves every tensor leaf of `tree` (a struct described by def; eager tensors) to a
 * safetensors file at `path`, named by its tree path ("conv1.w", "layers[0].b"), with
 * n_metadata key/value pairs (metadata_kv = {k0, v0, k1, v1, ...}, may be NULL when
 * n_metadata is 0) plus "kiln.tree" = the descriptor's type name. Errors: INVALID_ARGUMENT
 * for a NULL path, def or tree, or a negative n_metadata or NULL metadata_kv with
 * n_metadata > 0 (a key "kiln.tree" of the caller's is a repeated key); those of
 * kiln_tree_flatten and kiln_safetensors_save; RESOURCE_EXHAUSTED. */
KILN_API kiln_status kiln_nn_save(kiln_ctx *cx, const char *path, const kiln_tree_def *def,
                                  const void *tree, const char *const *metadata_kv,
                                  int32_t n_metadata);

/* Loads a file saved by kiln_nn_save into out_tree (a struct of def's type): every leaf
 * path of `like` (a struct of the same type whose leaves give the expected dtypes and
 * shapes, e.g. freshly built parameters) must be in the file with that dtype and shape;
 * statics are copied from `like`. Tensors are owned by the scope. Extra tensors in the
 * file are ignored. Errors: NOT_FOUND naming the path missing from the file,
 * INVALID_ARGUMENT naming the path whose dtype or shape differs (both shown) or for a NULL
 * argument, the errors of kiln_tree_flatten on `like` and of kiln_safetensors_load,
 * RESOURCE_EXHAUSTED. On error out_tree is not written. */
KILN_API kiln_status kiln_nn_load(kiln_ctx *cx, const char *path, const kiln_tree_def *def,
                                  const void *like, void *out_tree);

/* ---- the digits data set ----------------------------------------------------------------
 * The 1,797 8x8 handwritten digits (UCI optdigits test set) that scikit-learn ships as
 * sklearn/datasets/data/digits.csv.gz: one row per image, 64 pixel values 0..16 then the
 * label. Debian's python3-sklearn installs it under /usr/lib/python3/dist-packages. */

/* The path where Debian's python3-sklearn puts the file. Static string. Thread-safe. */
KILN_API const char *kiln_nn_digits_default_path(void);

typedef struct kiln_nn_digits {
    kiln_tensor *train_images, *train_labels; /* f32 [N, 1, 8, 8] in [0, 1]; i32 [N] */
    kiln_tensor *test_images, *test_labels;
    int64_t n_train, n_test;
} kiln_nn_digits;

/* Reads the gzipped CSV at `path` (NULL: kiln_nn_digits_default_path()) with zlib, scales
 * pixels to [0, 1] (value / 16) and splits the rows into train and test sets by a seeded
 * shuffle (the same seed gives the same split everywhere): round(n * test_fraction) test
 * rows, 0 < test_fraction < 1. Tensors are owned by the scope. Errors: NOT_FOUND when the
 * file is missing, whose message says to install Debian's python3-sklearn (`apt-get
 * install python3-sklearn`, or `make deps`); PERMISSION_DENIED or UNAVAILABLE when it
 * cannot be opened; DATA_LOSS for a file that is not valid gzip, naming the line for a
 * malformed, truncated or out-of-range row, or for too few rows to split;
 * INVALID_ARGUMENT for a NULL out or test_fraction; RESOURCE_EXHAUSTED. On error the
 * tensors of *out are NULL (when out is not NULL and the ctx held no error before). */
KILN_API kiln_status kiln_nn_digits_load(kiln_ctx *cx, const char *path, uint64_t seed,
                                         double test_fraction, kiln_nn_digits *out);

#ifdef __cplusplus
}
#endif

#endif
