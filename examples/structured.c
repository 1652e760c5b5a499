/* SPDX-License-Identifier: Apache-2.0 */
/* Structured arguments and the jit cache: a linear model's training state is a C struct of
 * tensors, described once with KILN_TREE_DEF; a training step over it is lowered (and its
 * StableHLO printed), then compiled and called through a kiln_jit that donates the state,
 * so each step's results reuse the previous state's buffers. Log lines at info level (every
 * compile, with the reason for it) are printed with the rest. */
#include <kiln/kiln.h>
#include <stdio.h>

/* ---- the structs and their descriptors -------------------------------------------------- */

typedef struct dense {
    kiln_tensor *w; /* [features] */
    kiln_tensor *b; /* [] */
} dense;

typedef struct state {
    dense params;
    dense velocity; /* momentum */
} state;

typedef struct hyper {
    double lr;
    int steps; /* unrolled in the traced function: a static, part of the cache key */
} hyper;

typedef struct step_in {
    state st;
    kiln_tensor *x; /* [batch, features] */
    kiln_tensor *y; /* [batch] */
    hyper h;
} step_in;

typedef struct step_out {
    state st;
    kiln_tensor *loss; /* [] */
} step_out;

KILN_TREE_DEF(dense, KILN_FIELD(dense, w), KILN_FIELD(dense, b));
KILN_TREE_DEF(state, KILN_SUBTREE(state, params, dense), KILN_SUBTREE(state, velocity, dense));
KILN_TREE_DEF(hyper, KILN_STATIC(hyper, lr), KILN_STATIC(hyper, steps));
KILN_TREE_DEF(step_in, KILN_SUBTREE(step_in, st, state), KILN_FIELD(step_in, x),
              KILN_FIELD(step_in, y), KILN_SUBTREE(step_in, h, hyper));
KILN_TREE_DEF(step_out, KILN_SUBTREE(step_out, st, state), KILN_FIELD(step_out, loss));

/* ---- the function ----------------------------------------------------------------------- */

/* The sum of a vector: a StableHLO reduce with the builtin add region. */
static kiln_tensor *total(kiln_ctx *cx, kiln_tensor *v) {
    kiln_tensor *zero = kiln_scalar_like(cx, v, 0), *r = NULL;
    kiln_reduce(cx, &v, &zero, 1, KILN_DIMS(0), kiln_region_add(), &r);
    return r;
}

/* h.steps steps of SGD with momentum on the mean squared error of x @ w + b against y. */
static kiln_status train_step(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    (void)user;
    const step_in *in = in_;
    step_out *out = out_;
    state st = in->st;
    kiln_tensor *loss = NULL;
    double n = (double)kiln_tensor_dim(in->x, 0);
    for (int i = 0; i < in->h.steps; i++) {
        kiln_tensor *err = kiln_subtract(
            cx, kiln_add(cx, kiln_matmul(cx, in->x, st.params.w), st.params.b), in->y);
        loss = kiln_multiply(cx, kiln_matmul(cx, err, err), kiln_scalar_like(cx, err, 1 / n));
        kiln_tensor *scale = kiln_scalar_like(cx, err, 2 / n);
        dense grad = {kiln_multiply(cx, scale, kiln_matmul(cx, err, in->x)),
                      kiln_multiply(cx, scale, total(cx, err))};
        kiln_tensor *mu = kiln_scalar_like(cx, err, 0.5), *lr = kiln_scalar_like(cx, err, in->h.lr);
        st.velocity.w = kiln_add(cx, kiln_multiply(cx, mu, st.velocity.w), grad.w);
        st.velocity.b = kiln_add(cx, kiln_multiply(cx, mu, st.velocity.b), grad.b);
        st.params.w = kiln_subtract(cx, st.params.w, kiln_multiply(cx, lr, st.velocity.w));
        st.params.b = kiln_subtract(cx, st.params.b, kiln_multiply(cx, lr, st.velocity.b));
    }
    out->st = st;
    out->loss = loss;
    return kiln_ctx_status(cx);
}

/* ---- the program ------------------------------------------------------------------------ */

static int fail(kiln_ctx *cx) {
    fprintf(stderr, "error: %s: %s\n", kiln_status_name(kiln_ctx_status(cx)),
            kiln_ctx_error_message(cx));
    kiln_ctx_release(cx);
    return 1;
}

static void print_info(const kiln_module_info *info) {
    printf("module info: %d arguments, %d results, %d ops\n", (int)info->n_args,
           (int)info->n_results, (int)info->n_ops);
    for (int i = 0; i < info->n_args; i++) {
        char path[KILN_TREE_PATH_MAX];
        kiln_tree_leaf_path(&kiln_tree_def_step_in, i, path, sizeof path);
        printf("  arg %d %-16s %s\n", i, path, info->donated[i] ? "donated" : "");
    }
    for (int r = 0; r < info->n_results; r++) {
        char path[KILN_TREE_PATH_MAX];
        kiln_tree_leaf_path(&kiln_tree_def_step_out, r, path, sizeof path);
        printf("  result %d %-16s", r, path);
        if (info->preserved[r] >= 0) printf(" returns arg %d unchanged", (int)info->preserved[r]);
        if (info->aliases[r] >= 0) printf(" may reuse arg %d's buffer", (int)info->aliases[r]);
        printf("\n");
    }
}

static void print_log(void *user, kiln_log_level level, const char *message) {
    (void)user, (void)level;
    printf("  [log] %s\n", message);
}

int main(void) {
    kiln_ctx_options co = kiln_ctx_options_default();
    co.log_fn = print_log;
    co.log_level = KILN_LOG_INFO;
    kiln_ctx *cx;
    if (kiln_ctx_create(&co, &cx) != KILN_OK) return 1;

    /* Data: y = x @ [2, -1, 0.5] + 0.3 for 64 random rows. */
    enum { BATCH = 64, FEATURES = 3 };
    kiln_key key = kiln_key_from_seed(7);
    kiln_tensor *x = kiln_random_normal(cx, key, KILN_F32, KILN_SHAPE(BATCH, FEATURES));
    kiln_tensor *w_true = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(FEATURES),
                                                (float[]){2, -1, 0.5f}, FEATURES * sizeof(float));
    kiln_tensor *y = kiln_add(cx, kiln_matmul(cx, x, w_true), kiln_scalar(cx, 0.3, KILN_F32));
    step_in in = {.st = {.params = {kiln_zeros(cx, KILN_F32, KILN_SHAPE(FEATURES)),
                                    kiln_zeros(cx, KILN_F32, KILN_SHAPE_SCALAR)},
                         .velocity = {kiln_zeros(cx, KILN_F32, KILN_SHAPE(FEATURES)),
                                      kiln_zeros(cx, KILN_F32, KILN_SHAPE_SCALAR)}},
                  .x = x,
                  .y = y,
                  .h = {.lr = 0.05, .steps = 2}};
    if (kiln_ctx_status(cx) != KILN_OK) return fail(cx);

    /* The leaves, in flatten order, with their paths. */
    kiln_tensor *leaves[6];
    kiln_tree_static statics[2];
    if (kiln_tree_flatten(cx, &kiln_tree_def_step_in, &in, leaves, 6, statics, 2) != KILN_OK)
        return fail(cx);
    printf("step_in: %d leaves, %d statics\n", (int)kiln_tree_leaf_count(&kiln_tree_def_step_in),
           (int)kiln_tree_static_count(&kiln_tree_def_step_in));
    for (int i = 0; i < 6; i++) {
        char path[KILN_TREE_PATH_MAX], shape[64];
        kiln_tree_leaf_path(&kiln_tree_def_step_in, i, path, sizeof path);
        kiln_shape_format(kiln_tensor_shape(leaves[i]), shape, sizeof shape);
        printf("  leaf %d %-18s %s%s\n", i, path, kiln_dtype_name(kiln_tensor_dtype(leaves[i])),
               shape);
    }
    printf("  static h.lr = %g, h.steps = %lld\n\n", statics[0].value.f,
           (long long)statics[1].value.i);

    /* A jit that donates the training state: every leaf under "st". */
    kiln_jit_options o = kiln_jit_options_default();
    o.name = "train_step";
    o.donate_paths = (const char *[]){"st"};
    o.n_donate_paths = 1;
    kiln_jit *f;
    if (kiln_jit_create_tree(cx, train_step, NULL, &kiln_tree_def_step_in, &kiln_tree_def_step_out,
                             &o, &f) != KILN_OK)
        return fail(cx);

    /* Lowered: the StableHLO module and its calling convention. */
    kiln_module *m;
    if (kiln_jit_lower(cx, f, &in, &m) != KILN_OK) return fail(cx);
    kiln_module_info info;
    if (kiln_module_print(cx, m, stdout) != KILN_OK ||
        kiln_module_info_get(cx, m, &info) != KILN_OK)
        return fail(cx);
    print_info(&info);
    kiln_module_release(m);

    /* Compiled and called: the first call compiles, the next ones hit the cache. Donated
     * inputs are dead after a call, so the results carry the state forward. */
    printf("\ntraining:\n");
    for (int epoch = 0; epoch < 8; epoch++) {
        step_out out;
        if (kiln_jit_call(cx, f, &in, &out) != KILN_OK) return fail(cx);
        printf("  call %d: loss %.6f\n", epoch, kiln_tensor_item(cx, out.loss, 0));
        in.st = out.st;
    }
    /* A new static value is a new specialization (the log line says why). */
    in.h.steps = 4;
    step_out out;
    if (kiln_jit_call(cx, f, &in, &out) != KILN_OK) return fail(cx);
    printf("  with 4 steps per call: loss %.6f\n", kiln_tensor_item(cx, out.loss, 0));
    float w[FEATURES], b;
    if (kiln_tensor_to_host(cx, out.st.params.w, w, sizeof w) != KILN_OK ||
        kiln_tensor_to_host(cx, out.st.params.b, &b, sizeof b) != KILN_OK)
        return fail(cx);
    printf("  w = [%.3f, %.3f, %.3f], b = %.3f (true: [2, -1, 0.5], 0.3)\n", w[0], w[1], w[2], b);

    /* The executable of the last call: which results reused donated buffers. */
    kiln_exe *exe = kiln_jit_last_exe(f);
    kiln_exe_info xi;
    if (!exe || kiln_exe_info_get(cx, exe, &xi) != KILN_OK) return fail(cx);
    printf("\nexecutable: %d ops, %zu arena bytes in %d buffers; results reusing a donated "
           "buffer:",
           (int)xi.n_ops, xi.arena_bytes, (int)xi.n_buffers);
    for (int r = 0; r < xi.n_results; r++)
        if (xi.aliases[r] >= 0) printf(" %d<-arg %d", r, (int)xi.aliases[r]);
    printf("\n");
    kiln_exe_release(exe);

    kiln_jit_stats s;
    kiln_jit_stats_get(cx, f, &s);
    printf("cache: %lld hits, %lld misses, %lld compiles (%.3f ms), %d entries\n",
           (long long)s.hits, (long long)s.misses, (long long)s.compiles,
           (double)s.compile_ns / 1e6, (int)s.entries);
    kiln_jit_release(f);

    /* Using a donated tensor is an error that names it. */
    kiln_tensor_item(cx, in.x, 0); /* x was not donated: fine */
    kiln_tensor_item(cx, leaves[0], 0);
    printf("reading the first (donated) st.params.w: %s\n", kiln_ctx_error_message(cx));
    kiln_ctx_clear_error(cx);
    kiln_ctx_release(cx);
    return 0;
}
