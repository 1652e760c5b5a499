/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_op_tool: runs one kiln op builder on .npy inputs and writes its results as .npy, for
 * the differential test against numpy (tests/scripts/numpy_diff.py).
 *
 *   kiln_op_tool OP OUT.npy[,OUT2.npy...] [IN.npy ...] [KEY=VALUE ...]
 *   kiln_op_tool --batch FILE [--in-blob IN] [--out-blob OUT]
 *                                 runs FILE's lines, each one such command without the
 *                                 program name (blank lines and lines starting with # are
 *                                 skipped), and prints one line per command on stdout:
 *                                   LINE ok [PLACES]
 *                                   LINE error STATUS_NAME MESSAGE    (a kiln error)
 *                                   LINE usage MESSAGE                (a bad command)
 *                                 then "done N" after the last one. With --in-blob, an
 *                                 input written @OFFSET+LENGTH is the .npy bytes at that
 *                                 place in IN; with --out-blob, an output written @ is
 *                                 appended to OUT as .npy bytes and PLACES lists where
 *                                 (OFFSET+LENGTH, comma-separated per output). So a batch
 *                                 of thousands of cases reads and writes two files.
 *   kiln_op_tool --list           prints the OP names, one per line
 *
 * Arguments with '=' are attributes, the others input files (read with kiln_npy_load).
 * Ops with several results (sort, reduce, reduce_window, scatter) name one output file
 * per result, separated by commas. Attribute values:
 *   lists of integers  comma-separated, possibly empty: dims=0,2  dims=
 *   shapes             the same; an empty list is rank 0 (reshape accepts one -1)
 *   dtypes             StableHLO names: dtype=f32, dtype=ui8, dtype=i1
 *   booleans           0 or 1
 *   compare            direction=EQ|NE|GE|GT|LE|LT type=DEFAULT|FLOAT|TOTALORDER|SIGNED|UNSIGNED
 *   regions            region=add|multiply|maximum|minimum|and|or|replace (reduce,
 *                      reduce_window, scatter), cmp=less|greater|less_equal|greater_equal
 *                      (sort), select=greater_equal|less_equal and scatter=add|...
 *                      (select_and_scatter)
 * The ops and their attributes are in the `ops` table (after the handlers); each row
 * calls the public builder of the same name (kiln_<OP>).
 *
 * Exits 0 on success, 1 on a kiln error (STATUS_NAME: the ctx's message on stderr), 2 on
 * bad usage. In batch mode: 2 if any line was bad usage, else 1 if any failed, else 0.
 */
#include <errno.h>
#include <kiln/kiln.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IN 32
#define MAX_OUT 8
#define MAX_ATTRS 24
#define MAX_TOKENS (2 + MAX_IN + MAX_ATTRS)
#define MESSAGE_SIZE 1024

enum { EXIT_KILN = 1, EXIT_USAGE = 2 };

typedef struct attr {
    const char *key;   /* points into the command's text */
    size_t key_length; /* the key is not terminated: it ends at '=' */
    const char *value;
    bool used;
} attr;

/* One command being run. */
typedef struct job {
    kiln_ctx *cx;
    const char *op;
    kiln_tensor *in[MAX_IN];
    int n_in;
    attr attrs[MAX_ATTRS];
    int n_attrs;
    kiln_tensor *out[MAX_OUT];
    int n_out; /* results the op produced */
    bool bad;  /* a usage error, described in `message` */
    char message[MESSAGE_SIZE];
} job;

typedef kiln_tensor *(*unary_fn)(kiln_ctx *, kiln_tensor *);
typedef kiln_tensor *(*binary_fn)(kiln_ctx *, kiln_tensor *, kiln_tensor *);
typedef kiln_tensor *(*reduce_fn)(kiln_ctx *, kiln_tensor *, kiln_dims, bool);
typedef kiln_tensor *(*axis_fn)(kiln_ctx *, kiln_tensor *, int64_t, bool);
typedef kiln_tensor *(*softmax_fn)(kiln_ctx *, kiln_tensor *, int64_t);
typedef kiln_tensor *(*list_fn)(kiln_ctx *, kiln_tensor *const *, int32_t, int64_t);

typedef struct op_entry op_entry;
typedef void (*handler_fn)(job *j, const op_entry *e);

struct op_entry {
    const char *name;
    handler_fn run;
    int min_in, max_in;
    unary_fn unary; /* the builder, for the generic handlers; one of these is set */
    binary_fn binary;
    reduce_fn reduce;
    axis_fn axis;
    softmax_fn softmax;
    list_fn list;
};

/* ---- messages ------------------------------------------------------------------------ */

static void usage_error(job *j, const char *fmt, ...) KILN_PRINTF_LIKE(2, 3);

static void usage_error(job *j, const char *fmt, ...) {
    if (j->bad) return; /* keep the first */
    j->bad = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->message, sizeof j->message, fmt, ap);
    va_end(ap);
}

/* Records INTERNAL for an op table entry without the function its kind needs. Returns
 * true when `is_missing`. */
static bool missing(job *j, bool is_missing, const char *name) {
    if (!is_missing) return false;
    kiln_ctx_set_error(j->cx, KILN_INTERNAL, "kiln_op_tool: %s has no builder of this kind", name);
    return true;
}

/* ---- attributes ---------------------------------------------------------------------- */

/* The value of attribute `key`, marking it used; NULL when absent. */
static const char *attr_find(job *j, const char *key) {
    size_t n = strlen(key);
    for (int i = 0; i < j->n_attrs; i++) {
        if (j->attrs[i].key_length == n && memcmp(j->attrs[i].key, key, n) == 0) {
            j->attrs[i].used = true;
            return j->attrs[i].value;
        }
    }
    return NULL;
}

static bool parse_int(const char *text, size_t length, int64_t *out) {
    char buf[32];
    if (length == 0 || length >= sizeof buf) return false;
    memcpy(buf, text, length);
    buf[length] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno != 0 || *end != '\0') return false;
    *out = (int64_t)v;
    return true;
}

/* A comma-separated list (possibly empty). `present` says whether the key was given. */
static bool attr_list(job *j, const char *key, bool required, kiln_dims *out, bool *present) {
    out->count = 0;
    const char *v = attr_find(j, key);
    if (present) *present = v != NULL;
    if (!v) {
        if (required) usage_error(j, "%s needs %s=", j->op, key);
        return !required;
    }
    while (*v) {
        const char *comma = strchr(v, ',');
        size_t length = comma ? (size_t)(comma - v) : strlen(v);
        if (out->count == KILN_MAX_RANK) {
            usage_error(j, "%s: %s has more than %d values", j->op, key, KILN_MAX_RANK);
            return false;
        }
        if (!parse_int(v, length, &out->v[out->count])) {
            usage_error(j, "%s: %s=%s is not a list of integers", j->op, key, attr_find(j, key));
            return false;
        }
        out->count++;
        if (!comma) break;
        v = comma + 1;
        if (!*v) {
            usage_error(j, "%s: %s ends with a comma", j->op, key);
            return false;
        }
    }
    return true;
}

static bool attr_dims(job *j, const char *key, bool required, kiln_dims *out) {
    return attr_list(j, key, required, out, NULL);
}

static bool attr_shape(job *j, const char *key, kiln_shape *out) {
    kiln_dims d;
    if (!attr_list(j, key, true, &d, NULL)) return false;
    out->rank = d.count;
    for (int32_t i = 0; i < d.count; i++)
        out->dims[i] = d.v[i];
    return true;
}

static bool attr_int(job *j, const char *key, bool required, int64_t fallback, int64_t *out) {
    *out = fallback;
    const char *v = attr_find(j, key);
    if (!v) {
        if (required) usage_error(j, "%s needs %s=", j->op, key);
        return !required;
    }
    if (!parse_int(v, strlen(v), out)) {
        usage_error(j, "%s: %s=%s is not an integer", j->op, key, v);
        return false;
    }
    return true;
}

static bool attr_bool(job *j, const char *key, bool fallback, bool *out) {
    int64_t v;
    if (!attr_int(j, key, false, fallback ? 1 : 0, &v)) return false;
    if (v != 0 && v != 1) {
        usage_error(j, "%s: %s must be 0 or 1", j->op, key);
        return false;
    }
    *out = v == 1;
    return true;
}

static bool attr_dtype(job *j, const char *key, bool required, kiln_dtype fallback,
                       kiln_dtype *out) {
    *out = fallback;
    const char *v = attr_find(j, key);
    if (!v) {
        if (required) usage_error(j, "%s needs %s=", j->op, key);
        return !required;
    }
    if (!kiln_dtype_parse(v, out)) {
        usage_error(j, "%s: unknown dtype %s=%s", j->op, key, v);
        return false;
    }
    return true;
}

/* The value of `key` among names[0..n-1] (an index), or -1 with a usage error. */
static int attr_choice(job *j, const char *key, bool required, int fallback,
                       const char *const *names, int n) {
    const char *v = attr_find(j, key);
    if (!v) {
        if (required) {
            usage_error(j, "%s needs %s=", j->op, key);
            return -1;
        }
        return fallback;
    }
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0) return i;
    usage_error(j, "%s: unknown %s=%s", j->op, key, v);
    return -1;
}

static const char *const region_names[] = {"add", "multiply", "maximum", "minimum",
                                           "and", "or",       "replace"};
static const char *const cmp_region_names[] = {"less", "greater", "less_equal", "greater_equal"};

/* A builtin region chosen by attribute `key`; NULL (with an error) when unknown/missing. */
static const kiln_region *attr_region(job *j, const char *key, bool comparison) {
    int n = comparison ? 4 : 7;
    int i = attr_choice(j, key, true, 0, comparison ? cmp_region_names : region_names, n);
    if (i < 0) return NULL;
    typedef const kiln_region *(*region_getter)(void);
    static const region_getter plain[] = {
        kiln_region_add, kiln_region_multiply, kiln_region_maximum, kiln_region_minimum,
        kiln_region_and, kiln_region_or,       kiln_region_replace};
    static const region_getter cmp[] = {kiln_region_less, kiln_region_greater,
                                        kiln_region_less_equal, kiln_region_greater_equal};
    region_getter get = comparison ? cmp[i] : plain[i];
    return get();
}

/* ---- handlers -------------------------------------------------------------------------- */

static void set1(job *j, kiln_tensor *t) {
    j->out[0] = t;
    j->n_out = 1;
}

static void run_unary(job *j, const op_entry *e) {
    if (missing(j, e->unary == NULL, e->name)) return;
    set1(j, e->unary(j->cx, j->in[0]));
}

static void run_binary(job *j, const op_entry *e) {
    if (missing(j, e->binary == NULL, e->name)) return;
    set1(j, e->binary(j->cx, j->in[0], j->in[1]));
}

static void run_compare(job *j, const op_entry *e) {
    (void)e;
    static const char *const dirs[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
    static const kiln_compare_direction dir_values[] = {KILN_CMP_EQ, KILN_CMP_NE, KILN_CMP_GE,
                                                        KILN_CMP_GT, KILN_CMP_LE, KILN_CMP_LT};
    static const char *const types[] = {"DEFAULT", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
    static const kiln_compare_type type_values[] = {
        KILN_CMP_DEFAULT, KILN_CMP_FLOAT, KILN_CMP_TOTALORDER, KILN_CMP_SIGNED, KILN_CMP_UNSIGNED};
    int d = attr_choice(j, "direction", true, 0, dirs, 6);
    int t = attr_choice(j, "type", false, 0, types, 5);
    if (d < 0 || t < 0) return;
    set1(j, kiln_compare(j->cx, j->in[0], j->in[1], dir_values[d], type_values[t]));
}

static void run_select(job *j, const op_entry *e) {
    (void)e;
    set1(j, kiln_select(j->cx, j->in[0], j->in[1], j->in[2]));
}

static void run_where(job *j, const op_entry *e) {
    (void)e;
    set1(j, kiln_where(j->cx, j->in[0], j->in[1], j->in[2]));
}

static void run_clamp(job *j, const op_entry *e) {
    (void)e;
    set1(j, kiln_clamp(j->cx, j->in[0], j->in[1], j->in[2]));
}

/* convert, cast, bitcast_convert: dtype=. */
static void run_convert(job *j, const op_entry *e) {
    kiln_dtype dt;
    if (!attr_dtype(j, "dtype", true, KILN_DTYPE_COUNT, &dt)) return;
    if (strcmp(e->name, "bitcast_convert") == 0) {
        set1(j, kiln_bitcast_convert(j->cx, j->in[0], dt));
    } else if (strcmp(e->name, "cast") == 0) {
        set1(j, kiln_cast(j->cx, j->in[0], dt));
    } else {
        set1(j, kiln_convert(j->cx, j->in[0], dt));
    }
}

static void run_broadcast_in_dim(job *j, const op_entry *e) {
    (void)e;
    kiln_shape shape;
    kiln_dims dims;
    if (!attr_shape(j, "shape", &shape) || !attr_dims(j, "dims", true, &dims)) return;
    set1(j, kiln_broadcast_in_dim(j->cx, j->in[0], shape, dims));
}

static void run_broadcast_to(job *j, const op_entry *e) {
    (void)e;
    kiln_shape shape;
    if (!attr_shape(j, "shape", &shape)) return;
    set1(j, kiln_broadcast_to(j->cx, j->in[0], shape));
}

static void run_reshape(job *j, const op_entry *e) {
    (void)e;
    kiln_shape shape;
    if (!attr_shape(j, "shape", &shape)) return;
    set1(j, kiln_reshape(j->cx, j->in[0], shape));
}

static void run_transpose(job *j, const op_entry *e) {
    (void)e;
    kiln_dims perm;
    if (!attr_dims(j, "perm", true, &perm)) return;
    set1(j, kiln_transpose(j->cx, j->in[0], perm));
}

static void run_reverse(job *j, const op_entry *e) {
    (void)e;
    kiln_dims dims;
    if (!attr_dims(j, "dims", true, &dims)) return;
    set1(j, kiln_reverse(j->cx, j->in[0], dims));
}

static void run_slice(job *j, const op_entry *e) {
    (void)e;
    kiln_dims start, limit, strides;
    if (!attr_dims(j, "start", true, &start) || !attr_dims(j, "limit", true, &limit) ||
        !attr_dims(j, "strides", false, &strides))
        return;
    set1(j, kiln_slice(j->cx, j->in[0], start, limit, strides));
}

static void run_dynamic_slice(job *j, const op_entry *e) {
    (void)e;
    kiln_dims sizes;
    if (!attr_dims(j, "sizes", true, &sizes)) return;
    set1(j, kiln_dynamic_slice(j->cx, j->in[0], &j->in[1], sizes));
}

static void run_dynamic_update_slice(job *j, const op_entry *e) {
    (void)e;
    set1(j, kiln_dynamic_update_slice(j->cx, j->in[0], j->in[1], &j->in[2]));
}

static void run_pad(job *j, const op_entry *e) {
    (void)e;
    kiln_dims low, high, interior;
    if (!attr_dims(j, "low", false, &low) || !attr_dims(j, "high", false, &high) ||
        !attr_dims(j, "interior", false, &interior))
        return;
    set1(j, kiln_pad(j->cx, j->in[0], j->in[1], low, high, interior));
}

/* concatenate (dim=), concat and stack (axis=). */
static void run_list(job *j, const op_entry *e) {
    int64_t axis;
    const char *key = strcmp(e->name, "concatenate") == 0 ? "dim" : "axis";
    if (!attr_int(j, key, true, 0, &axis) || missing(j, e->list == NULL, e->name)) return;
    set1(j, e->list(j->cx, j->in, j->n_in, axis));
}

static void run_expand_dims(job *j, const op_entry *e) {
    (void)e;
    int64_t axis;
    if (!attr_int(j, "axis", true, 0, &axis)) return;
    set1(j, kiln_expand_dims(j->cx, j->in[0], axis));
}

static void run_squeeze(job *j, const op_entry *e) {
    (void)e;
    kiln_dims axes;
    if (!attr_dims(j, "axes", false, &axes)) return;
    set1(j, kiln_squeeze(j->cx, j->in[0], axes));
}

static void run_take(job *j, const op_entry *e) {
    (void)e;
    int64_t axis;
    if (!attr_int(j, "axis", true, 0, &axis)) return;
    set1(j, kiln_take(j->cx, j->in[0], j->in[1], axis));
}

static void run_one_hot(job *j, const op_entry *e) {
    (void)e;
    int64_t depth;
    kiln_dtype dt;
    if (!attr_int(j, "depth", true, 0, &depth) || !attr_dtype(j, "dtype", true, KILN_F32, &dt))
        return;
    set1(j, kiln_one_hot(j->cx, j->in[0], depth, dt));
}

static void run_gather(job *j, const op_entry *e) {
    (void)e;
    kiln_gather_params p;
    memset(&p, 0, sizeof p);
    if (!attr_dims(j, "offset_dims", false, &p.offset_dims) ||
        !attr_dims(j, "collapsed_slice_dims", false, &p.collapsed_slice_dims) ||
        !attr_dims(j, "operand_batching_dims", false, &p.operand_batching_dims) ||
        !attr_dims(j, "start_indices_batching_dims", false, &p.start_indices_batching_dims) ||
        !attr_dims(j, "start_index_map", true, &p.start_index_map) ||
        !attr_int(j, "index_vector_dim", true, 0, &p.index_vector_dim) ||
        !attr_dims(j, "slice_sizes", true, &p.slice_sizes) ||
        !attr_bool(j, "sorted", false, &p.indices_are_sorted))
        return;
    set1(j, kiln_gather(j->cx, j->in[0], j->in[1], &p));
}

/* scatter: inputs[0..n-1], indices, updates[0..n-1] (2n+1 files); n results. */
static void run_scatter(job *j, const op_entry *e) {
    (void)e;
    if (j->n_in % 2 == 0) {
        usage_error(j, "scatter takes n inputs, the indices and n updates (an odd count)");
        return;
    }
    int n = (j->n_in - 1) / 2;
    kiln_scatter_params p;
    memset(&p, 0, sizeof p);
    if (!attr_dims(j, "update_window_dims", false, &p.update_window_dims) ||
        !attr_dims(j, "inserted_window_dims", false, &p.inserted_window_dims) ||
        !attr_dims(j, "input_batching_dims", false, &p.input_batching_dims) ||
        !attr_dims(j, "scatter_indices_batching_dims", false, &p.scatter_indices_batching_dims) ||
        !attr_dims(j, "scatter_dims_to_operand_dims", true, &p.scatter_dims_to_operand_dims) ||
        !attr_int(j, "index_vector_dim", true, 0, &p.index_vector_dim) ||
        !attr_bool(j, "sorted", false, &p.indices_are_sorted) ||
        !attr_bool(j, "unique", false, &p.unique_indices))
        return;
    const kiln_region *region = attr_region(j, "region", false);
    if (!region) return;
    if (kiln_scatter(j->cx, j->in, n, j->in[n], &j->in[n + 1], &p, region, j->out) == KILN_OK)
        j->n_out = n;
}

static void run_sort(job *j, const op_entry *e) {
    (void)e;
    int64_t dim;
    bool stable;
    if (!attr_int(j, "dim", true, 0, &dim) || !attr_bool(j, "stable", false, &stable)) return;
    const kiln_region *cmp = attr_region(j, "cmp", true);
    if (!cmp) return;
    if (kiln_sort(j->cx, j->in, j->n_in, dim, stable, cmp, j->out) == KILN_OK) j->n_out = j->n_in;
}

/* reduce: inputs[0..n-1] then inits[0..n-1]. */
static void run_reduce(job *j, const op_entry *e) {
    (void)e;
    if (j->n_in % 2 != 0) {
        usage_error(j, "reduce takes n inputs then n inits (an even count)");
        return;
    }
    int n = j->n_in / 2;
    kiln_dims dims;
    if (!attr_dims(j, "dims", true, &dims)) return;
    const kiln_region *region = attr_region(j, "region", false);
    if (!region) return;
    if (kiln_reduce(j->cx, j->in, &j->in[n], n, dims, region, j->out) == KILN_OK) j->n_out = n;
}

static bool window_params(job *j, kiln_window_params *p) {
    memset(p, 0, sizeof *p);
    return attr_dims(j, "window", true, &p->window_dimensions) &&
           attr_dims(j, "strides", false, &p->window_strides) &&
           attr_dims(j, "base_dil", false, &p->base_dilations) &&
           attr_dims(j, "win_dil", false, &p->window_dilations) &&
           attr_dims(j, "pad_low", false, &p->padding_low) &&
           attr_dims(j, "pad_high", false, &p->padding_high);
}

static void run_reduce_window(job *j, const op_entry *e) {
    (void)e;
    if (j->n_in % 2 != 0) {
        usage_error(j, "reduce_window takes n inputs then n inits (an even count)");
        return;
    }
    int n = j->n_in / 2;
    kiln_window_params p;
    if (!window_params(j, &p)) return;
    const kiln_region *region = attr_region(j, "region", false);
    if (!region) return;
    if (kiln_reduce_window(j->cx, j->in, &j->in[n], n, &p, region, j->out) == KILN_OK) j->n_out = n;
}

/* select_and_scatter: operand, source, init. */
static void run_select_and_scatter(job *j, const op_entry *e) {
    (void)e;
    kiln_window_params p;
    if (!window_params(j, &p)) return;
    const kiln_region *select = attr_region(j, "select", true);
    const kiln_region *scatter = select ? attr_region(j, "scatter", false) : NULL;
    if (!select || !scatter) return;
    set1(j, kiln_select_and_scatter(j->cx, j->in[0], j->in[1], j->in[2], &p, select, scatter));
}

/* sum, mean, prod, max, min, logsumexp: axes= (empty or absent: all), keepdims=. */
static void run_reduction(job *j, const op_entry *e) {
    kiln_dims axes;
    bool keepdims;
    if (!attr_dims(j, "axes", false, &axes) || !attr_bool(j, "keepdims", false, &keepdims) ||
        missing(j, e->reduce == NULL, e->name))
        return;
    set1(j, e->reduce(j->cx, j->in[0], axes, keepdims));
}

/* argmax, argmin: axis=, keepdims=. */
static void run_arg(job *j, const op_entry *e) {
    int64_t axis;
    bool keepdims;
    if (!attr_int(j, "axis", true, 0, &axis) || !attr_bool(j, "keepdims", false, &keepdims) ||
        missing(j, e->axis == NULL, e->name))
        return;
    set1(j, e->axis(j->cx, j->in[0], axis, keepdims));
}

static void run_softmax(job *j, const op_entry *e) {
    int64_t axis;
    if (!attr_int(j, "axis", true, 0, &axis) || missing(j, e->softmax == NULL, e->name)) return;
    set1(j, e->softmax(j->cx, j->in[0], axis));
}

static void run_dot_general(job *j, const op_entry *e) {
    (void)e;
    kiln_dot_params p;
    kiln_dtype dt;
    if (!attr_dims(j, "lhs_batch", false, &p.lhs_batching_dims) ||
        !attr_dims(j, "rhs_batch", false, &p.rhs_batching_dims) ||
        !attr_dims(j, "lhs_contract", false, &p.lhs_contracting_dims) ||
        !attr_dims(j, "rhs_contract", false, &p.rhs_contracting_dims) ||
        !attr_dtype(j, "dtype", false, KILN_DTYPE_COUNT, &dt))
        return;
    set1(j, kiln_dot_general(j->cx, j->in[0], j->in[1], &p, dt));
}

static void run_matmul(job *j, const op_entry *e) {
    (void)e;
    set1(j, kiln_matmul(j->cx, j->in[0], j->in[1]));
}

/* convolution: NCHW input, OIHW kernel, NCHW output (kiln_conv_params_nchw), with
 * spatial= (default: the input's rank - 2), strides=, pad_low=, pad_high=, lhs_dil=,
 * rhs_dil=, groups=, batch_groups=, dtype=. */
static void run_convolution(job *j, const op_entry *e) {
    (void)e;
    int64_t spatial, groups, batch_groups;
    int32_t rank = kiln_tensor_rank(j->in[0]);
    kiln_dims strides, pad_low, pad_high, lhs_dil, rhs_dil;
    kiln_dtype dt;
    if (!attr_int(j, "spatial", false, rank >= 2 ? rank - 2 : 0, &spatial) ||
        !attr_dims(j, "strides", false, &strides) || !attr_dims(j, "pad_low", false, &pad_low) ||
        !attr_dims(j, "pad_high", false, &pad_high) || !attr_dims(j, "lhs_dil", false, &lhs_dil) ||
        !attr_dims(j, "rhs_dil", false, &rhs_dil) || !attr_int(j, "groups", false, 0, &groups) ||
        !attr_int(j, "batch_groups", false, 0, &batch_groups) ||
        !attr_dtype(j, "dtype", false, KILN_DTYPE_COUNT, &dt))
        return;
    if (spatial < 0 || spatial > KILN_MAX_RANK - 2) {
        usage_error(j, "convolution: spatial=%lld is out of range", (long long)spatial);
        return;
    }
    kiln_conv_params p = kiln_conv_params_nchw((int32_t)spatial);
    p.window_strides = strides;
    p.padding_low = pad_low;
    p.padding_high = pad_high;
    p.lhs_dilation = lhs_dil;
    p.rhs_dilation = rhs_dil;
    p.feature_group_count = groups;
    p.batch_group_count = batch_groups;
    set1(j, kiln_convolution(j->cx, j->in[0], j->in[1], &p, dt));
}

/* ---- the op table ------------------------------------------------------------------------ */

#define ENTRY(n, fn, lo, hi) .name = n, .run = fn, .min_in = lo, .max_in = hi
#define UNARY(name) \
    { ENTRY(#name, run_unary, 1, 1), .unary = kiln_##name }
#define BINARY(name) \
    { ENTRY(#name, run_binary, 2, 2), .binary = kiln_##name }
#define REDUCTION(name) \
    { ENTRY(#name, run_reduction, 1, 1), .reduce = kiln_##name }
#define OP(name, lo, hi) \
    { ENTRY(#name, run_##name, lo, hi) }

static const op_entry ops[] = {
    UNARY(abs),
    UNARY(negate),
    UNARY(sign),
    {ENTRY("not", run_unary, 1, 1), .unary = kiln_not}, /* `not` would read as C++'s operator */
    UNARY(floor),
    UNARY(ceil),
    UNARY(round_nearest_afz),
    UNARY(round_nearest_even),
    UNARY(sqrt),
    UNARY(rsqrt),
    UNARY(cbrt),
    UNARY(exponential),
    UNARY(exponential_minus_one),
    UNARY(log),
    UNARY(log_plus_one),
    UNARY(logistic),
    UNARY(sine),
    UNARY(cosine),
    UNARY(tan),
    UNARY(tanh),
    UNARY(is_finite),
    UNARY(popcnt),
    UNARY(count_leading_zeros),
    BINARY(add),
    BINARY(subtract),
    BINARY(multiply),
    BINARY(divide),
    BINARY(remainder),
    BINARY(power),
    BINARY(maximum),
    BINARY(minimum),
    BINARY(atan2),
    BINARY(and),
    BINARY(or),
    BINARY(xor),
    BINARY(shift_left),
    BINARY(shift_right_arithmetic),
    BINARY(shift_right_logical),
    OP(compare, 2, 2),
    OP(select, 3, 3),
    OP(clamp, 3, 3),
    OP(where, 3, 3),
    {ENTRY("convert", run_convert, 1, 1)},
    {ENTRY("cast", run_convert, 1, 1)},
    {ENTRY("bitcast_convert", run_convert, 1, 1)},
    OP(broadcast_in_dim, 1, 1),
    OP(broadcast_to, 1, 1),
    OP(reshape, 1, 1),
    OP(transpose, 1, 1),
    OP(reverse, 1, 1),
    OP(slice, 1, 1),
    OP(dynamic_slice, 1, MAX_IN),
    OP(dynamic_update_slice, 2, MAX_IN),
    OP(pad, 2, 2),
    {ENTRY("concatenate", run_list, 1, MAX_IN), .list = kiln_concatenate},
    {ENTRY("concat", run_list, 1, MAX_IN), .list = kiln_concat},
    {ENTRY("stack", run_list, 1, MAX_IN), .list = kiln_stack},
    OP(expand_dims, 1, 1),
    OP(squeeze, 1, 1),
    OP(gather, 2, 2),
    OP(scatter, 3, MAX_IN),
    OP(sort, 1, MAX_OUT),
    OP(take, 2, 2),
    OP(one_hot, 1, 1),
    OP(reduce, 2, 2 * MAX_OUT),
    OP(reduce_window, 2, 2 * MAX_OUT),
    OP(select_and_scatter, 3, 3),
    REDUCTION(sum),
    REDUCTION(mean),
    REDUCTION(prod),
    REDUCTION(max),
    REDUCTION(min),
    REDUCTION(logsumexp),
    {ENTRY("argmax", run_arg, 1, 1), .axis = kiln_argmax},
    {ENTRY("argmin", run_arg, 1, 1), .axis = kiln_argmin},
    {ENTRY("softmax", run_softmax, 1, 1), .softmax = kiln_softmax},
    {ENTRY("log_softmax", run_softmax, 1, 1), .softmax = kiln_log_softmax},
    OP(dot_general, 2, 2),
    OP(matmul, 2, 2),
    OP(convolution, 2, 2),
};

static const op_entry *find_op(const char *name) {
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(ops[i].name, name) == 0) return &ops[i];
    return NULL;
}

/* ---- running a command ------------------------------------------------------------------ */

/* Batch mode's blobs: inputs named @OFFSET+LENGTH are .npy bytes inside `in` (read whole),
 * and outputs named @ are appended to `out` as .npy bytes, their places reported on the
 * result line. Thousands of small cases then cost two files instead of thousands. */
typedef struct blobs {
    const unsigned char *in;
    size_t in_size;
    FILE *out;
    uint64_t out_size; /* bytes written so far */
} blobs;

/* Splits "a.npy,b.npy" in place into paths[0..]; returns the count or -1. */
static int split_outputs(char *text, char **paths) {
    int n = 0;
    for (char *p = text;;) {
        if (n == MAX_OUT) return -1;
        paths[n++] = p;
        char *comma = strchr(p, ',');
        if (!comma) break;
        *comma = '\0';
        p = comma + 1;
    }
    for (int i = 0; i < n; i++)
        if (!*paths[i]) return -1;
    return n;
}

/* Parses "@OFFSET+LENGTH" against the input blob. */
static bool blob_range(const blobs *io, const char *name, size_t *offset, size_t *length) {
    if (!io || !io->in || name[0] != '@') return false;
    char *end;
    errno = 0;
    unsigned long long off = strtoull(name + 1, &end, 10);
    if (errno != 0 || end == name + 1 || *end != '+') return false;
    const char *len_text = end + 1;
    unsigned long long len = strtoull(len_text, &end, 10);
    if (errno != 0 || end == len_text || *end != '\0') return false;
    if (off > io->in_size || len > io->in_size - off) return false;
    *offset = (size_t)off;
    *length = (size_t)len;
    return true;
}

static kiln_status load_input(kiln_ctx *cx, const blobs *io, const char *name, kiln_tensor **out) {
    if (name[0] != '@') return kiln_npy_load(cx, name, out);
    size_t offset, length;
    if (!blob_range(io, name, &offset, &length))
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "kiln_op_tool: input %s is not @OFFSET+LENGTH inside the "
                                  "input blob",
                                  name);
    return kiln_npy_load_buffer(cx, io->in + offset, length, out);
}

/* Saves t to `name`, or appends it to the output blob when name is "@", adding
 * "OFFSET+LENGTH" to `where` (a comma list). */
static kiln_status save_output(kiln_ctx *cx, blobs *io, const char *name, const kiln_tensor *t,
                               char *where, size_t where_size) {
    if (strcmp(name, "@") != 0) return kiln_npy_save(cx, name, t);
    if (!io || !io->out)
        return kiln_ctx_set_error(cx, KILN_INVALID_ARGUMENT,
                                  "kiln_op_tool: output @ needs --batch with --out-blob");
    void *data = NULL;
    size_t size = 0;
    if (kiln_npy_save_buffer(cx, t, &data, &size) != KILN_OK) return kiln_ctx_status(cx);
    bool written = fwrite(data, 1, size, io->out) == size;
    kiln_buffer_free(cx, data, size);
    if (!written)
        return kiln_ctx_set_error(cx, KILN_DATA_LOSS, "kiln_op_tool: cannot write the output blob");
    size_t used = strlen(where);
    snprintf(where + used, where_size - used, "%s%llu+%llu", used ? "," : "",
             (unsigned long long)io->out_size, (unsigned long long)size);
    io->out_size += size;
    return KILN_OK;
}

/* Runs one command (tokens[0] is OP; the tokens are modified). Returns 0, EXIT_KILN or
 * EXIT_USAGE, with the message (for errors) in `message`: "STATUS_NAME: text" for kiln
 * errors, and for outputs written to the blob their places in `message` on success. The
 * ctx is left without an error. */
static int run_command(kiln_ctx *cx, blobs *io, int n_tokens, char **tokens, char *message,
                       size_t message_size) {
    message[0] = '\0';
    if (n_tokens < 2) {
        snprintf(message, message_size, "expected OP OUT.npy [IN.npy ...] [KEY=VALUE ...]");
        return EXIT_USAGE;
    }
    const op_entry *e = find_op(tokens[0]);
    if (!e) {
        snprintf(message, message_size, "unknown op '%s' (--list names them)", tokens[0]);
        return EXIT_USAGE;
    }
    char *out_paths[MAX_OUT];
    int n_paths = split_outputs(tokens[1], out_paths);
    if (n_paths < 0) {
        snprintf(message, message_size, "%s: bad output list (at most %d paths)", e->name, MAX_OUT);
        return EXIT_USAGE;
    }

    static job j; /* large; one command at a time */
    memset(&j, 0, sizeof j);
    j.cx = cx;
    j.op = e->name;
    const char *in_paths[MAX_IN];
    for (int i = 2; i < n_tokens; i++) {
        char *eq = strchr(tokens[i], '=');
        if (eq) {
            if (j.n_attrs == MAX_ATTRS || eq == tokens[i]) {
                snprintf(message, message_size, "%s: too many or empty attributes", e->name);
                return EXIT_USAGE;
            }
            j.attrs[j.n_attrs++] = (attr){tokens[i], (size_t)(eq - tokens[i]), eq + 1, false};
        } else {
            if (j.n_in == MAX_IN) {
                snprintf(message, message_size, "%s: more than %d inputs", e->name, MAX_IN);
                return EXIT_USAGE;
            }
            in_paths[j.n_in++] = tokens[i];
        }
    }
    if (j.n_in < e->min_in || j.n_in > e->max_in) {
        snprintf(message, message_size, "%s takes %d to %d inputs, not %d", e->name, e->min_in,
                 e->max_in, j.n_in);
        return EXIT_USAGE;
    }

    int code = 0;
    if (kiln_scope_begin(cx) != KILN_OK) {
        snprintf(message, message_size, "%s: %s", kiln_status_name(kiln_ctx_status(cx)),
                 kiln_ctx_error_message(cx));
        kiln_ctx_clear_error(cx);
        return EXIT_KILN;
    }
    bool loaded = true;
    for (int i = 0; i < j.n_in && loaded; i++)
        loaded = load_input(cx, io, in_paths[i], &j.in[i]) == KILN_OK;
    if (loaded) {
        e->run(&j, e);
        for (int i = 0; i < j.n_attrs && !j.bad; i++) {
            if (!j.attrs[i].used)
                usage_error(&j, "%s: unknown attribute '%.*s'", e->name, (int)j.attrs[i].key_length,
                            j.attrs[i].key);
        }
    }
    if (j.bad) {
        snprintf(message, message_size, "%s", j.message);
        code = EXIT_USAGE;
    } else if (kiln_ctx_status(cx) == KILN_OK) {
        bool all = j.n_out > 0;
        for (int i = 0; i < j.n_out; i++)
            all = all && j.out[i] != NULL;
        if (!all) {
            kiln_ctx_set_error(cx, KILN_INTERNAL, "kiln_%s returned no result and no error",
                               e->name);
        } else if (j.n_out != n_paths) {
            snprintf(message, message_size, "%s gives %d results; %d output paths were given",
                     e->name, j.n_out, n_paths);
            code = EXIT_USAGE;
        } else {
            for (int i = 0; i < j.n_out; i++)
                if (save_output(cx, io, out_paths[i], j.out[i], message, message_size) != KILN_OK)
                    break;
        }
    }
    if (code == 0 && kiln_ctx_status(cx) != KILN_OK) {
        snprintf(message, message_size, "%s: %s", kiln_status_name(kiln_ctx_status(cx)),
                 kiln_ctx_error_message(cx));
        code = EXIT_KILN;
    }
    kiln_ctx_clear_error(cx);
    if (kiln_scope_end(cx) != KILN_OK && code == 0) {
        snprintf(message, message_size, "%s: %s", kiln_status_name(kiln_ctx_status(cx)),
                 kiln_ctx_error_message(cx));
        code = EXIT_KILN;
    }
    kiln_ctx_clear_error(cx);
    return code;
}

/* Splits a line in place at blanks. Returns the token count, or -1 when there are too many. */
static int tokenize(char *line, char **tokens) {
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (!*p) return n;
        if (n == MAX_TOKENS) return -1;
        tokens[n++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r')
            p++;
        if (*p) *p++ = '\0';
    }
}

/* Reads a whole file into a new buffer with a NUL after its *out_size bytes (free it), or
 * NULL. */
static char *read_file(const char *path, size_t *out_size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t size = 0, capacity = 1 << 16;
    char *buf = malloc(capacity);
    while (buf) {
        if (capacity - size < 2) {
            char *bigger = capacity <= SIZE_MAX / 2 ? realloc(buf, capacity * 2) : NULL;
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            capacity *= 2;
        }
        size_t got = fread(buf + size, 1, capacity - size - 1, f);
        size += got;
        if (got == 0) break;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[size] = '\0';
        *out_size = size;
    }
    return buf;
}

/* One line of text: newlines in a message become spaces. */
static void flatten(char *text) {
    for (; *text; text++)
        if (*text == '\n' || *text == '\r') *text = ' ';
}

static int run_batch(kiln_ctx *cx, const char *path, blobs *io) {
    size_t text_size;
    char *text = read_file(path, &text_size);
    if (!text) {
        perror(path);
        return EXIT_USAGE;
    }
    int worst = 0;
    long line_no = 0, commands = 0;
    char message[MESSAGE_SIZE];
    for (char *line = text; line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        line_no++;
        char *tokens[MAX_TOKENS];
        int n = tokenize(line, tokens);
        if (n == 0 || tokens[0][0] == '#') {
            line = next;
            continue;
        }
        commands++;
        int code;
        if (n < 0) {
            snprintf(message, sizeof message, "more than %d arguments", MAX_TOKENS);
            code = EXIT_USAGE;
        } else {
            code = run_command(cx, io, n, tokens, message, sizeof message);
        }
        flatten(message);
        if (code == 0) {
            printf("%ld ok%s%s\n", line_no, message[0] ? " " : "", message);
        } else if (code == EXIT_KILN) {
            /* message is "STATUS_NAME: text" */
            char *colon = strstr(message, ": ");
            if (colon) {
                *colon = '\0';
                printf("%ld error %s %s\n", line_no, message, colon + 2);
            } else {
                printf("%ld error UNKNOWN %s\n", line_no, message);
            }
        } else {
            printf("%ld usage %s\n", line_no, message);
        }
        /* Flushed per line (the blob too): if a later command crashes, the driver knows
         * where, and has every result before it. */
        if (io->out) fflush(io->out);
        fflush(stdout);
        if (code > worst) worst = code;
        line = next;
    }
    printf("done %ld\n", commands);
    free(text);
    if (fflush(stdout) != 0) {
        perror("kiln_op_tool: stdout");
        return EXIT_KILN;
    }
    return worst;
}

static int usage(void) {
    fprintf(stderr, "usage: kiln_op_tool OP OUT.npy[,OUT2.npy...] [IN.npy ...] [KEY=VALUE ...]\n"
                    "       kiln_op_tool --batch FILE [--in-blob FILE] [--out-blob FILE]\n"
                    "       kiln_op_tool --list\n");
    return EXIT_USAGE;
}

/* --batch FILE [--in-blob FILE] [--out-blob FILE] */
static int batch_main(kiln_ctx *cx, int argc, char **argv) {
    const char *in_path = NULL, *out_path = NULL;
    for (int i = 3; i < argc; i += 2) {
        if (i + 1 >= argc) return usage();
        if (strcmp(argv[i], "--in-blob") == 0) {
            in_path = argv[i + 1];
        } else if (strcmp(argv[i], "--out-blob") == 0) {
            out_path = argv[i + 1];
        } else {
            return usage();
        }
    }
    blobs io = {NULL, 0, NULL, 0};
    char *in = NULL;
    if (in_path) {
        in = read_file(in_path, &io.in_size);
        if (!in) {
            perror(in_path);
            return EXIT_USAGE;
        }
        io.in = (const unsigned char *)in;
    }
    if (out_path) {
        io.out = fopen(out_path, "wb");
        if (!io.out) {
            perror(out_path);
            free(in);
            return EXIT_USAGE;
        }
    }
    int code = run_batch(cx, argv[2], &io);
    free(in);
    if (io.out && fclose(io.out) != 0) {
        perror(out_path);
        code = EXIT_KILN;
    }
    return code;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage();
    if (strcmp(argv[1], "--list") == 0) {
        if (argc != 2) return usage();
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
            printf("%s\n", ops[i].name);
        return 0;
    }
    bool batch = strcmp(argv[1], "--batch") == 0;
    if (batch && (argc < 3 || argc % 2 == 0)) return usage();
    if (!batch && argc - 1 > MAX_TOKENS) {
        fprintf(stderr, "kiln_op_tool: more than %d arguments\n", MAX_TOKENS);
        return EXIT_USAGE;
    }
    kiln_ctx *cx = NULL;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) {
        fprintf(stderr, "kiln_op_tool: cannot create a kiln ctx\n");
        return EXIT_KILN;
    }
    int code;
    if (batch) {
        code = batch_main(cx, argc, argv);
    } else {
        char message[MESSAGE_SIZE];
        code = run_command(cx, NULL, argc - 1, argv + 1, message, sizeof message);
        if (code != 0) fprintf(stderr, "kiln_op_tool: %s\n", message);
        if (code == EXIT_USAGE) usage();
    }
    kiln_ctx_release(cx);
    return code;
}
