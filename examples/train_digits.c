/* SPDX-License-Identifier: Apache-2.0 */
/* `make demo`: trains a small CNN on the handwritten digits that Debian's python3-sklearn
 * ships, with the whole training step (forward, backward, Adam update) as one jitted
 * function whose parameters and optimizer state are donated and updated in place. Then it
 * compares the compiled step with the same step run eagerly, saves the weights as
 * safetensors, reloads them and checks the predictions agree.
 *
 * Data-parallel: under mpirun, --data-parallel trains one replica per rank, each on its
 * shard of every batch, the gradients all-reduced (kiln_nn_data_parallel_grads); --shards R
 * is the same training in one process, R shards per batch in sequence, and ends with the
 * same weights, bit for bit, as R ranks:
 *
 *   mpirun -np 2 kiln-demo --data-parallel --out a.safetensors
 *   kiln-demo --shards 2 --out b.safetensors        # cmp a.safetensors b.safetensors
 *
 *   kiln-demo [--epochs N] [--seed S] [--batch B] [--lr LR] [--quick] [--print-ir]
 *             [--data PATH] [--out PATH] [--min-accuracy A] [--eager-steps N]
 *             [--data-parallel] [--shards R]
 *
 * Exit status: 0 when the test accuracy reaches --min-accuracy (0.97; --quick: 2 epochs
 * and 0.90), 1 when it does not or something fails, 2 for bad options or missing data. */
#define _POSIX_C_SOURCE 200809L
#include <kiln/kiln.h>
#ifdef KILN_DEMO_MPI
#include <kiln/mpi.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the training state and the step, as trees ---------------------------------------- */

typedef struct train_state {
    kiln_nn_cnn params;
    kiln_nn_cnn mu, nu; /* Adam's moments */
    kiln_tensor *step;
} train_state;

typedef struct step_in {
    train_state state;
    kiln_tensor *images, *labels;
    kiln_tensor *lr; /* this step's learning rate (f32, rank 0): the schedule needs no recompile */
} step_in;

typedef struct step_out {
    train_state state;
    kiln_tensor *loss, *accuracy;
} step_out;

typedef struct loss_in {
    kiln_nn_cnn params;
    kiln_tensor *images, *labels;
} loss_in;

typedef struct loss_out {
    kiln_tensor *loss, *accuracy; /* the value, then an auxiliary result */
} loss_out;

typedef struct eval_out {
    kiln_tensor *accuracy, *predictions;
} eval_out;

KILN_TREE_DEF(train_state, KILN_SUBTREE(train_state, params, kiln_nn_cnn),
              KILN_SUBTREE(train_state, mu, kiln_nn_cnn),
              KILN_SUBTREE(train_state, nu, kiln_nn_cnn), KILN_FIELD(train_state, step));
KILN_TREE_DEF(step_in, KILN_SUBTREE(step_in, state, train_state), KILN_FIELD(step_in, images),
              KILN_FIELD(step_in, labels), KILN_FIELD(step_in, lr));
KILN_TREE_DEF(step_out, KILN_SUBTREE(step_out, state, train_state), KILN_FIELD(step_out, loss),
              KILN_FIELD(step_out, accuracy));
KILN_TREE_DEF(loss_in, KILN_SUBTREE(loss_in, params, kiln_nn_cnn), KILN_FIELD(loss_in, images),
              KILN_FIELD(loss_in, labels));
KILN_TREE_DEF(loss_out, KILN_FIELD(loss_out, loss), KILN_FIELD(loss_out, accuracy));
KILN_TREE_DEF(eval_out, KILN_FIELD(eval_out, accuracy), KILN_FIELD(eval_out, predictions));

static kiln_status loss_fn(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    (void)user;
    const loss_in *in = in_;
    loss_out *out = out_;
    kiln_tensor *logits = kiln_nn_cnn_forward(cx, &in->params, in->images);
    out->loss = kiln_nn_softmax_cross_entropy(cx, logits, in->labels);
    out->accuracy = kiln_nn_accuracy(cx, logits, in->labels);
    return kiln_ctx_status(cx);
}

/* The batch as kiln_nn_data_parallel_grads splits it. */
typedef struct shard {
    kiln_tensor *images, *labels;
} shard;
KILN_TREE_DEF(shard, KILN_FIELD(shard, images), KILN_FIELD(shard, labels));

/* The gradients of the loss on one shard, with the loss and accuracy as aux. */
static kiln_status shard_grads(kiln_ctx *cx, const void *params, const void *shard_,
                               void *out_grads, void *out_aux, void *user) {
    (void)user;
    const shard *sh = shard_;
    loss_in li = {*(const kiln_nn_cnn *)params, sh->images, sh->labels};
    loss_in grads;
    memset(&grads, 0, sizeof grads);
    kiln_grad_options go = kiln_grad_options_default();
    go.wrt_paths = (const char *[]){"params"};
    go.n_wrt_paths = 1;
    go.has_aux = true;
    go.name = "loss";
    if (kiln_value_and_grad_tree(cx, loss_fn, NULL, &kiln_tree_def_loss_in, &li,
                                 &kiln_tree_def_loss_out, out_aux, &go, &grads) != KILN_OK)
        return kiln_ctx_status(cx);
    *(kiln_nn_cnn *)out_grads = grads.params;
    return KILN_OK;
}

typedef struct step_config {
    kiln_nn_optimizer opt;
    kiln_nn_data_parallel dp; /* shards per batch here; replicas: the ctx's communicator */
} step_config;

/* One training step; `user` is the step_config. Runs eagerly on concrete tensors, or
 * traced by kiln_jit into one executable. The gradients are the mean over the batch's
 * shards and the replicas (one shard of one replica by default: plain training). */
static kiln_status train_step(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    const step_in *in = in_;
    const step_config *config = user;
    kiln_nn_optimizer opt_with_lr = config->opt;
    opt_with_lr.learning_rate_tensor = in->lr;
    const kiln_nn_optimizer *opt = &opt_with_lr;
    step_out *out = out_;
    shard batch = {in->images, in->labels};
    loss_out lo = {0};
    kiln_nn_cnn grads;
    if (kiln_nn_data_parallel_grads(cx, &config->dp, shard_grads, NULL, &kiln_tree_def_kiln_nn_cnn,
                                    &in->state.params, &kiln_tree_def_shard, &batch,
                                    &kiln_tree_def_loss_out, &grads, &lo) != KILN_OK)
        return kiln_ctx_status(cx);
    kiln_nn_optimizer_update(cx, opt, &kiln_tree_def_kiln_nn_cnn, &in->state.params, &grads,
                             in->state.step, &in->state.mu, &in->state.nu, &out->state.params,
                             &out->state.step, &out->state.mu, &out->state.nu);
    out->loss = lo.loss;
    out->accuracy = lo.accuracy;
    return kiln_ctx_status(cx);
}

static kiln_status eval_fn(kiln_ctx *cx, const void *in_, void *out_, void *user) {
    (void)user;
    const loss_in *in = in_;
    eval_out *out = out_;
    kiln_tensor *logits = kiln_nn_cnn_forward(cx, &in->params, in->images);
    out->accuracy = kiln_nn_accuracy(cx, logits, in->labels);
    out->predictions = kiln_argmax(cx, logits, 1, false);
    return kiln_ctx_status(cx);
}

/* ---- helpers ------------------------------------------------------------------------- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Takes (or drops) a reference to every leaf of a train_state, so that it outlives the
 * scope of one step. */
static void state_refs(kiln_ctx *cx, train_state *s, bool retain) {
    kiln_tensor *leaves[64];
    int32_t n = kiln_tree_leaf_count(&kiln_tree_def_train_state);
    if (n > 64 || kiln_tree_flatten(cx, &kiln_tree_def_train_state, s, leaves, n, NULL, 0)) return;
    for (int32_t i = 0; i < n; i++)
        retain ? (void)kiln_tensor_retain(leaves[i]) : kiln_tensor_release(leaves[i]);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of n samples (sorts them): robust to the odd slow step on a shared machine. */
static double median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int fail(kiln_ctx *cx, const char *what) {
    fprintf(stderr, "kiln-demo: %s: %s: %s\n", what, kiln_status_name(kiln_ctx_status(cx)),
            kiln_ctx_error_message(cx));
    kiln_ctx_release(cx);
    return 1;
}

static void progress(bool tty, int epoch, int epochs, int done, int total, double loss, double acc,
                     double steps_per_s, bool final) {
    if (!tty && !final) return;
    const int width = 24;
    char bar[32];
    int fill = total ? done * width / total : width;
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    printf("%sepoch %2d/%d [%s] %3d/%d  loss %.4f  acc %5.1f%%  %6.0f steps/s", tty ? "\r" : "",
           epoch, epochs, bar, done, total, loss, 100 * acc, steps_per_s);
    if (!final) fflush(stdout);
}

typedef struct options {
    int epochs, batch, eager_steps, shards;
    uint64_t seed;
    double lr, min_accuracy;
    bool print_ir, quick, data_parallel;
    const char *data, *out;
} options;

static const char usage_text[] =
    "usage: kiln-demo [--epochs N] [--seed S] [--batch B] [--lr LR] [--quick] [--print-ir]\n"
    "                 [--data PATH] [--out PATH] [--min-accuracy A] [--eager-steps N]\n"
    "                 [--data-parallel] [--shards R]\n"
    "  --quick          2 epochs, a 90% bar and 3 eager steps (for tests)\n"
    "  --print-ir       print the StableHLO of the training step\n"
    "  --data PATH      the digits CSV (default: where python3-sklearn installs it)\n"
    "  --out PATH       where to save the weights (safetensors)\n"
    "  --data-parallel  one replica per MPI rank (run under mpirun), each on its shard\n"
    "                   of every batch; rank 0 prints and saves\n"
    "  --shards R       R shards per batch in sequence, in this process: the same weights\n"
    "                   as R ranks of --data-parallel\n";

static int usage(const char *msg) {
    fprintf(stderr, "kiln-demo: %s\n%s", msg, usage_text);
    return 2;
}

static int parse_options(int argc, char **argv, options *o) {
    *o = (options){.epochs = 12,
                   .batch = 32,
                   .shards = 1,
                   .eager_steps = 20,
                   .seed = 0,
                   .lr = 3e-3,
                   .min_accuracy = 0.97,
                   .out = "kiln_digits_cnn.safetensors"};
    bool epochs_set = false, min_set = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--quick")) {
            o->quick = true;
            continue;
        }
        if (!strcmp(a, "--print-ir")) {
            o->print_ir = true;
            continue;
        }
        if (!strcmp(a, "--data-parallel")) {
            o->data_parallel = true;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return -1;
        }
        if (!v) return usage("an option is missing its value");
        i++;
        if (!strcmp(a, "--epochs")) {
            o->epochs = (int)strtol(v, &end, 10);
            epochs_set = true;
            if (*end || o->epochs < 1 || o->epochs > 1000) return usage("--epochs: 1..1000");
        } else if (!strcmp(a, "--batch")) {
            o->batch = (int)strtol(v, &end, 10);
            if (*end || o->batch < 1 || o->batch > 1024) return usage("--batch: 1..1024");
        } else if (!strcmp(a, "--shards")) {
            o->shards = (int)strtol(v, &end, 10);
            if (*end || o->shards < 1 || o->shards > 64) return usage("--shards: 1..64");
        } else if (!strcmp(a, "--eager-steps")) {
            o->eager_steps = (int)strtol(v, &end, 10);
            if (*end || o->eager_steps < 0 || o->eager_steps > 10000)
                return usage("--eager-steps: 0..10000");
        } else if (!strcmp(a, "--seed")) {
            o->seed = strtoull(v, &end, 10);
            if (*end) return usage("--seed: a non-negative integer");
        } else if (!strcmp(a, "--lr")) {
            o->lr = strtod(v, &end);
            if (*end || !(o->lr > 0 && o->lr < 10)) return usage("--lr: a number in (0, 10)");
        } else if (!strcmp(a, "--min-accuracy")) {
            o->min_accuracy = strtod(v, &end);
            min_set = true;
            if (*end || !(o->min_accuracy >= 0 && o->min_accuracy <= 1))
                return usage("--min-accuracy: a number in [0, 1]");
        } else if (!strcmp(a, "--data")) {
            o->data = v;
        } else if (!strcmp(a, "--out")) {
            o->out = v;
        } else {
            return usage("unknown option");
        }
    }
    if (o->batch % o->shards) return usage("--shards must divide --batch");
    if (o->data_parallel && o->shards > 1)
        return usage("--data-parallel takes its shards from the ranks; --shards is the "
                     "single-process run");
    if (o->quick) {
        if (!epochs_set) o->epochs = 2;
        if (!min_set) o->min_accuracy = 0.90;
        if (o->eager_steps > 3) o->eager_steps = 3;
    }
    return 0;
}

/* A batch of rows `idx[first .. first + n)` of images and labels (eager gathers). */
static void take_batch(kiln_ctx *cx, kiln_tensor *images, kiln_tensor *labels, const int32_t *idx,
                       int n, kiln_tensor **out_x, kiln_tensor **out_y) {
    kiln_tensor *ix = kiln_tensor_from_host(cx, KILN_I32, KILN_SHAPE(n), idx, (size_t)n * 4);
    *out_x = kiln_take(cx, images, ix, 0);
    *out_y = kiln_take(cx, labels, ix, 0);
}

int main(int argc, char **argv) {
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc == -1) return 0; /* --help */
    if (rc) return rc;
    setvbuf(stdout, NULL, _IOLBF, 0);
    bool tty = isatty(STDOUT_FILENO);
    double t_start = now();

    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 1;
    /* Data-parallel: this process is replica `rank` of `replicas`, bound to the MPI
     * communicator (the ctx keeps it; MPI ends with the ctx). */
    int rank = 0, replicas = 1;
    if (o.data_parallel) {
#ifdef KILN_DEMO_MPI
        kiln_comm *comm = NULL;
        if (kiln_comm_create_mpi(cx, NULL, MPI_COMM_NULL, &comm) != KILN_OK ||
            kiln_ctx_set_comm(cx, comm, kiln_comm_self(comm)) != KILN_OK)
            return fail(cx, "joining the MPI ranks");
        rank = kiln_comm_self(comm);
        replicas = kiln_comm_num_replicas(comm);
        kiln_comm_release(comm);
        if (o.batch % replicas) {
            fprintf(stderr, "kiln-demo: --batch %d does not split into %d ranks\n", o.batch,
                    replicas);
            kiln_ctx_release(cx);
            return 2;
        }
        if (rank != 0 && !freopen("/dev/null", "w", stdout)) return 1; /* rank 0 reports */
        printf("data-parallel: %d ranks, each training on %d of every %d examples\n", replicas,
               o.batch / replicas, o.batch);
#else
        fprintf(stderr, "kiln-demo: --data-parallel: this kiln-demo was built without MPI "
                        "(install libopenmpi-dev and rebuild)\n");
        kiln_ctx_release(cx);
        return 2;
#endif
    } else if (o.shards > 1) {
        printf("shards: %d per batch of %d, in sequence (the single-process run of "
               "--data-parallel on %d ranks)\n",
               o.shards, o.batch, o.shards);
    }
    int shard_rows = o.batch / replicas;
    kiln_nn_digits data;
    if (kiln_nn_digits_load(cx, o.data, o.seed, 0.2, &data) != KILN_OK) {
        fprintf(stderr, "kiln-demo: %s\n", kiln_ctx_error_message(cx));
        kiln_ctx_release(cx);
        return 2;
    }
    printf("digits: %lld training and %lld test images (8x8), split by seed %llu\n",
           (long long)data.n_train, (long long)data.n_test, (unsigned long long)o.seed);

    /* Model and optimizer state; their tensors are retained across the steps' scopes. */
    kiln_nn_cnn_config cfg = kiln_nn_cnn_config_digits();
    step_config config = {.opt = kiln_nn_adam(o.lr), .dp = kiln_nn_data_parallel_default()};
    config.dp.n_shards = o.shards;
    const kiln_nn_optimizer opt = config.opt;
    train_state st;
    memset(&st, 0, sizeof st);
    kiln_nn_cnn_create(cx, &cfg, kiln_key_from_seed(o.seed), &st.params);
    kiln_nn_optimizer_init(cx, &opt, &kiln_tree_def_kiln_nn_cnn, &st.params, &st.step, &st.mu,
                           &st.nu);
    if (kiln_ctx_status(cx) != KILN_OK) return fail(cx, "building the model");
    state_refs(cx, &st, true);
    printf("model: conv3x3(1->%lld) relu maxpool conv3x3(->%lld) relu dense(->%lld) relu "
           "dense(->10); Adam, lr %g with cosine decay, batch %d\n",
           (long long)cfg.channels1, (long long)cfg.channels2, (long long)cfg.hidden, o.lr,
           o.batch);

    kiln_jit_options jo = kiln_jit_options_default();
    jo.name = "train_step";
    jo.donate_paths = (const char *[]){"state"};
    jo.n_donate_paths = 1;
    kiln_jit *step_jit = NULL, *eval_jit = NULL;
    kiln_jit_create_tree(cx, train_step, &config, &kiln_tree_def_step_in, &kiln_tree_def_step_out,
                         &jo, &step_jit);
    kiln_jit_options eo = kiln_jit_options_default();
    eo.name = "evaluate";
    kiln_jit_create_tree(cx, eval_fn, NULL, &kiln_tree_def_loss_in, &kiln_tree_def_eval_out, &eo,
                         &eval_jit);
    if (kiln_ctx_status(cx) != KILN_OK) return fail(cx, "creating the jitted functions");

    int n_train = (int)data.n_train, per_epoch = n_train / o.batch;
    if (per_epoch < 1) {
        fprintf(stderr, "kiln-demo: --batch %d is larger than the training set\n", o.batch);
        kiln_ctx_release(cx);
        return 2;
    }
    int32_t *order = malloc((size_t)n_train * sizeof *order);
    if (!order) return 1;
    double test_acc = 0;
    int total_steps = o.epochs * per_epoch, timed_steps = 0;
    double *step_times = malloc((size_t)total_steps * sizeof *step_times);
    if (!step_times) return 1;
    for (int epoch = 1; epoch <= o.epochs; epoch++) {
        /* A fresh shuffle per epoch, from the seed and the epoch number. */
        kiln_key ek = kiln_key_fold_in(kiln_key_from_seed(o.seed), (uint32_t)epoch);
        for (int i = 0; i < n_train; i++)
            order[i] = i;
        for (int i = n_train - 1; i > 0; i--) {
            uint32_t ctr[4] = {(uint32_t)i, 0, 0, 0}, bits[4];
            kiln_philox4x32_10(ctr, ek.words, bits);
            int j = (int)(bits[0] % (uint32_t)(i + 1));
            int32_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        double loss_sum = 0, acc_sum = 0, t_epoch = now();
        for (int b = 0; b < per_epoch; b++) {
            kiln_scope_begin(cx);
            step_in in;
            step_out out;
            in.state = st;
            take_batch(cx, data.train_images, data.train_labels,
                       order + b * o.batch + rank * shard_rows, shard_rows, &in.images, &in.labels);
            /* Cosine decay of the learning rate over the whole run. */
            double progress_frac = (double)((epoch - 1) * per_epoch + b) / total_steps;
            in.lr = kiln_scalar(cx, o.lr * 0.5 * (1 + cos(3.141592653589793 * progress_frac)),
                                KILN_F32);
            double t0 = now();
            kiln_jit_call(cx, step_jit, &in, &out);
            double loss = kiln_tensor_item(cx, out.loss, 0),
                   acc = kiln_tensor_item(cx, out.accuracy, 0);
            double dt = now() - t0;
            if (kiln_ctx_status(cx) != KILN_OK) {
                free(order);
                return fail(cx, "training step");
            }
            /* The first call traces and compiles; the rest are the steady state. */
            if (epoch > 1 || b > 0) step_times[timed_steps++] = dt;
            state_refs(cx, &st, false); /* donated: the old buffers now belong to out */
            st = out.state;
            state_refs(cx, &st, true);
            kiln_scope_end(cx);
            loss_sum += loss;
            acc_sum += acc;
            double elapsed = now() - t_epoch;
            progress(tty, epoch, o.epochs, b + 1, per_epoch, loss_sum / (b + 1), acc_sum / (b + 1),
                     (b + 1) / (elapsed > 0 ? elapsed : 1e-9), false);
        }
        double elapsed = now() - t_epoch;
        progress(tty, epoch, o.epochs, per_epoch, per_epoch, loss_sum / per_epoch,
                 acc_sum / per_epoch, per_epoch / (elapsed > 0 ? elapsed : 1e-9), true);
        kiln_scope_begin(cx);
        loss_in ein = {st.params, data.test_images, data.test_labels};
        eval_out eout;
        kiln_jit_call(cx, eval_jit, &ein, &eout);
        test_acc = kiln_tensor_item(cx, eout.accuracy, 0);
        kiln_scope_end(cx);
        if (kiln_ctx_status(cx) != KILN_OK) {
            free(order);
            return fail(cx, "evaluation");
        }
        printf("  test acc %5.1f%%\n", 100 * test_acc);
        /* Every replica holds the same bits (a hash compared across the ranks). */
        if (replicas > 1 &&
            kiln_nn_check_replicated(cx, &kiln_tree_def_train_state, &st) != KILN_OK) {
            free(order);
            return fail(cx, "checking the replicas");
        }
    }
    if (replicas > 1)
        printf("the %d replicas' parameters and optimizer state are identical\n", replicas);
    double t_train = now() - t_start;
    printf("trained %d epochs in %.2f s: test accuracy %.2f%% (%s %.0f%%)\n", o.epochs, t_train,
           100 * test_acc, test_acc >= o.min_accuracy ? "reached" : "BELOW", 100 * o.min_accuracy);

    /* The same step, eagerly: every call traces, differentiates and runs op by op. */
    double compiled_ms = 1e3 * median(step_times, timed_steps);
    free(step_times);
    if (o.eager_steps > 0) {
        kiln_scope_begin(cx);
        step_in in;
        step_out out;
        in.state = st;
        take_batch(cx, data.train_images, data.train_labels, order + rank * shard_rows, shard_rows,
                   &in.images, &in.labels);
        in.lr = kiln_scalar(cx, o.lr, KILN_F32);
        double eager_times[10000];
        for (int i = 0; i < o.eager_steps && kiln_ctx_status(cx) == KILN_OK; i++) {
            double t0 = now();
            kiln_scope_begin(cx);
            train_step(cx, &in, &out, &config);
            kiln_tensor_item(cx, out.loss, 0);
            kiln_scope_end(cx);
            eager_times[i] = now() - t0;
        }
        double eager_ms = 1e3 * median(eager_times, o.eager_steps);
        kiln_scope_end(cx);
        if (kiln_ctx_status(cx) != KILN_OK) {
            free(order);
            return fail(cx, "eager step");
        }
        printf("time per training step (batch %d, median): compiled %.3f ms, eager %.3f ms "
               "(compiled is %.1fx faster)\n",
               o.batch, compiled_ms, eager_ms, compiled_ms > 0 ? eager_ms / compiled_ms : 0);
    }
    free(order);

    /* Weights on disk (rank 0's: every replica's are the same), and back. */
    int64_t n_test = data.n_test, same = n_test;
    if (rank != 0) goto done;
    const char *meta[] = {"model", "kiln_nn_cnn digits"};
    if (kiln_nn_save(cx, o.out, &kiln_tree_def_kiln_nn_cnn, &st.params, meta, 1) != KILN_OK)
        return fail(cx, "saving the weights");
    kiln_scope_begin(cx);
    kiln_nn_cnn loaded;
    kiln_nn_load(cx, o.out, &kiln_tree_def_kiln_nn_cnn, &st.params, &loaded);
    loss_in a = {st.params, data.test_images, data.test_labels};
    loss_in b = {loaded, data.test_images, data.test_labels};
    eval_out ea, eb;
    kiln_jit_call(cx, eval_jit, &a, &ea);
    kiln_jit_call(cx, eval_jit, &b, &eb);
    if (kiln_ctx_status(cx) != KILN_OK) return fail(cx, "reloading the weights");
    same = 0;
    const int64_t *pa = kiln_tensor_data(ea.predictions), *pb = kiln_tensor_data(eb.predictions);
    for (int64_t i = 0; i < n_test; i++)
        same += pa[i] == pb[i];
    kiln_scope_end(cx);
    printf("saved the weights to %s; reloaded: %lld/%lld test predictions identical\n", o.out,
           (long long)same, (long long)n_test);

    if (o.print_ir) {
        kiln_scope_begin(cx);
        step_in in;
        in.state = st;
        in.images = kiln_zeros(cx, KILN_F32, KILN_SHAPE(o.batch, 1, 8, 8));
        in.labels = kiln_zeros(cx, KILN_I32, KILN_SHAPE(o.batch));
        in.lr = kiln_scalar(cx, o.lr, KILN_F32);
        kiln_module *m = NULL;
        kiln_jit_lower(cx, step_jit, &in, &m);
        printf("\nStableHLO of the training step:\n");
        kiln_module_print(cx, m, stdout);
        kiln_module_release(m);
        kiln_scope_end(cx);
        if (kiln_ctx_status(cx) != KILN_OK) return fail(cx, "printing the training step");
    }
done:
    printf("total %.2f s\n", now() - t_start);
    kiln_jit_release(step_jit);
    kiln_jit_release(eval_jit);
    state_refs(cx, &st, false);
    kiln_ctx_release(cx);
    if (same != n_test) return 1;
    return test_acc >= o.min_accuracy ? 0 : 1;
}
