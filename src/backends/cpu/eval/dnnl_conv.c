/* SPDX-License-Identifier: Apache-2.0 */
/* convolution through oneDNN (C API), for what it does exactly and fast: f32 operands and
 * result, 1 to 3 spatial dimensions, input (lhs) dilation only as an input gradient (below),
 * no batch or feature groups, padding >= 0, at least DNNL_MIN_MACS multiply-adds, and an optimized
 * implementation (not oneDNN's reference loops). Any dimension numbers: the tensors are described
 * to oneDNN by their strides, so NHWC or HWIO data is read in place. A convolution that is a
 * kernel's gradient (autodiff's rule: the cotangent as a kernel larger than the result) runs as
 * oneDNN's weight gradient of the forward convolution (is_kernel_gradient); one with input dilation
 * (the input's gradient of a strided convolution, or any transposed convolution) as its input
 * gradient (has_input_dilation); the input's gradient at stride 1 is a forward convolution already.
 *
 * oneDNN picks its own (blocked) layouts for the fastest kernel; the operands are reordered
 * into them and the result back, each call, except weights unchanged since an earlier call:
 * their reordered copy is kept (packed_weights.h). The input stays in its own layout when an
 * optimized direct kernel reads it so (oneDNN has one for few input channels in NCHW, a
 * network's first layer: 2-4x faster than its blocked kernel after a reorder there).
 * Primitives (the convolution and the reorders) are built once per geometry and kept in a
 * process-wide cache guarded by a mutex; oneDNN's primitives may run on several threads at
 * once, and each call brings its own stream. Compiling (prepare_op) only queues a geometry
 * for a builder thread of the process (oneDNN's JIT takes about a millisecond per
 * primitive: a VGG's compile would wait for all of them); a call that reaches a geometry
 * still queued builds it itself, one being built it waits for; primitives are created one at
 * a time (oneDNN's globals race otherwise), without the cache's mutex, so calls of ready
 * geometries never wait for a build. The builder stops at exit, before oneDNN's own
 * destructors run, and a fork waits for builds in progress. The reordered operands and the
 * scratchpad live in a workspace per calling thread, kept between calls: fresh buffers of this size
 * cost a page fault per 4 KiB on every call (VGG11 at 224x224 moves ~75 MB of activations and
 * weights per call). The layout changes that are plain transposes (NCHW <-> NHWC, OIHW -> O-blocked
 * weights) run as kiln__transpose_f32 (VGG11 at 224x224 on one thread: ~12 ms per call, oneDNN's
 * reorders ~15 ms). */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise advice values */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/eval/eval.h"
#include "backends/cpu/eval/eval_linalg.h"
#include "backends/cpu/lib/dense_f32.h"
#include "base/alloc.h"
#include "base/threads.h"

static atomic_bool forced_off, any_size, no_workspace;
static atomic_llong kernel_gradients_run, input_gradients_run;

void kiln__dnnl_conv_force_off(bool on) { atomic_store(&forced_off, on); }

void kiln__dnnl_conv_no_workspace(bool on) { atomic_store(&no_workspace, on); }

void kiln__dnnl_conv_any_size(bool on) { atomic_store(&any_size, on); }

int64_t kiln__dnnl_conv_kernel_gradients_run(void) { return atomic_load(&kernel_gradients_run); }

int64_t kiln__dnnl_conv_input_gradients_run(void) { return atomic_load(&input_gradients_run); }

#ifdef KILN_HAVE_DNNL
#include <pthread.h>
#include <sys/mman.h>

#include "backends/cpu/lib/dnnl_api.h"
#include "backends/cpu/lib/packed_weights.h"

/* oneDNN's entry points; only called once entry_get has found them (it returns NULL when
 * oneDNN cannot be opened, and the caller falls back). */
static const kiln__dnnl_api *dnnl(void) { return kiln__dnnl_api_get(); }

/* Below this many multiply-adds, im2col + GEMM (see make_key). */
#define DNNL_MIN_MACS 262144.0
/* Below this many multiply-adds a convolution runs on one thread: waking oneDNN's OpenMP
 * team (passive, kiln__threads_before_openmp) costs more than half the convolution. The
 * digits CNN's training step (convolutions of 0.6-9.4 M) ran at 264 steps/s on 2 threads
 * against 365 on one; with this, 2 threads no longer lose. */
#define DNNL_PAR_MACS 32e6

#define DMAX 6 /* weights with groups: [G, O/G, I, up to 3 spatial] */

/* What a cached primitive computes. The key's three slots are the lhs, the rhs and the
 * result: a forward convolution's src, weights and dst; a weight gradient's src, diff_dst
 * and diff_weights; an input gradient's diff_dst, weights (the rhs un-reversed) and
 * diff_src. */
enum { CONV_FWD, CONV_BWD_W, CONV_BWD_D };

typedef struct conv_key {
    /* nthr: kiln's thread count when the primitive is made, which oneDNN sizes its blocking
     * for; part of the key so that a count changed later gets a primitive of its own (and
     * the thread-count tests compare primitives made for different counts). */
    int32_t S, has_bias, nthr;
    int32_t kind; /* CONV_FWD, or a gradient (CONV_BWD_W, CONV_BWD_D): what the slots hold */
    int64_t G;
    int64_t src_dims[DMAX], src_str[DMAX], wei_dims[DMAX], wei_str[DMAX], dst_dims[DMAX],
        dst_str[DMAX];
    int64_t stride[3], dil[3], pl[3], pr[3];
} conv_key;

/* A layout change that is a batch of plain matrix transposes (kiln__transpose_f32), run
 * instead of oneDNN's reorder. */
typedef struct xpose {
    bool on;
    int64_t batch, rows, cols, group, stride;
} xpose;

/* Where an entry of the cache stands. Fields past the key are written by its builder only
 * while BUILDING, and read by others only once READY (both under cache_lock). */
enum { QUEUED, BUILDING, READY };

typedef struct conv_entry {
    conv_key key;
    int state;                 /* QUEUED, BUILDING or READY (under cache_lock) */
    struct conv_entry *queued; /* the next entry waiting for the builder thread */
    bool ok;                   /* false: oneDNN has no implementation; the caller falls back */
    /* The operands and result in oneDNN's layouts differ from the user's: a layout change,
     * as a transpose (t_*, when on) or else a reorder primitive (r_*, made only then). */
    bool need_src, need_wei, need_dst;
    dnnl_primitive_t conv, r_src, r_wei, r_dst;
    xpose t_src, t_wei, t_dst;
    dnnl_memory_desc_t usr_src, usr_wei, usr_dst, src, wei, dst, bias;
    size_t scratch;
    /* Set (release) once its primitives have all run: later calls run without create_lock
     * (run_entry). */
    atomic_bool warm;
    struct conv_entry *next;
} conv_entry;

#define BUCKETS 256
/* Past this many entries, new geometries get a primitive for the call only. */
#define MAX_ENTRIES 4096

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static conv_entry *cache[BUCKETS];
static int cache_count;
static dnnl_engine_t engine;
static bool engine_failed;
/* Entries becoming READY are announced on `built`; the builder thread waits on `work` for
 * the queue (first in, first built) to fill, and stops at process exit. */
static pthread_cond_t built = PTHREAD_COND_INITIALIZER, work = PTHREAD_COND_INITIALIZER;
static conv_entry *queue_head, *queue_tail;
static pthread_t builder;
static bool builder_running, builder_stop;
static int n_building; /* threads building an entry now (the builder or callers) */
static bool forking;   /* a fork waits for the builds in progress: start no new one */

static uint64_t key_hash(const conv_key *k) {
    const unsigned char *p = (const unsigned char *)k;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof *k; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Row-major strides of a shape. */
static void strides_of(const kiln_shape *s, int64_t *str) {
    int64_t acc = 1;
    for (int32_t d = s->rank - 1; d >= 0; d--) {
        str[d] = acc;
        acc *= s->dims[d] > 0 ? s->dims[d] : 1;
    }
}

/* One slot of the key: oneDNN's dimensions [d0, d1, spatial] of a tensor of shape sh
 * (row-major strides st) and their strides. */
static void key_slot(int64_t *dims, int64_t *str, const kiln_shape *sh, const int64_t *st,
                     int64_t d0, int64_t d1, const kiln_dims *spatial, int32_t S) {
    dims[0] = sh->dims[d0], str[0] = st[d0];
    dims[1] = sh->dims[d1], str[1] = st[d1];
    for (int32_t d = 0; d < S; d++)
        dims[2 + d] = sh->dims[spatial->v[d]], str[2 + d] = st[spatial->v[d]];
}

/* True when the convolution is a kernel's gradient (autodiff's conv_kernel_cotangent): its
 * kernel (the cotangent) has more spatial positions than its result (one per position of
 * the forward kernel), which no forward convolution does. oneDNN runs it as the forward
 * convolution's weight gradient (src = the lhs with batch and feature roles swapped,
 * diff_dst = the rhs, diff_weights = the result; strides and dilations swapped): a direct
 * kernel, where as a forward convolution it is a batch of Cin images of batch-size
 * channels under a kernel as large as the image (VGG11's training step at 16x3x224x224:
 * 5.2 of 9.7 s on one thread). */
static bool is_kernel_gradient(const kiln_conv_params *p, const kiln_shape *ks,
                               const kiln_shape *os, int32_t S) {
    double kernel = 1, result = 1;
    for (int32_t d = 0; d < S; d++) {
        kernel *= (double)ks->dims[p->kernel_spatial_dimensions.v[d]];
        result *= (double)os->dims[p->output_spatial_dimensions.v[d]];
    }
    return kernel > result;
}

/* The window of the oneDNN convolution: its strides and dilations (oneDNN counts a dilation
 * from 0) from the lists given, StableHLO's padding; false for what oneDNN cannot run
 * (an lhs dilation, a negative padding). */
static bool key_window(const kiln_conv_params *p, const kiln_dims *strides,
                       const kiln_dims *dilations, conv_key *k) {
    for (int32_t d = 0; d < k->S; d++) {
        if ((p->lhs_dilation.count ? p->lhs_dilation.v[d] : 1) != 1) return false;
        k->stride[d] = strides->count ? strides->v[d] : 1;
        k->dil[d] = (dilations->count ? dilations->v[d] : 1) - 1;
        k->pl[d] = p->padding_low.count ? p->padding_low.v[d] : 0;
        k->pr[d] = p->padding_high.count ? p->padding_high.v[d] : 0;
        if (k->pl[d] < 0 || k->pr[d] < 0) return false;
    }
    return true;
}

/* make_key's part for a kernel gradient (is_kernel_gradient), whose slots hold the forward
 * convolution's src [N, C, spatial] (the lhs: its feature dimension is N, its batch C),
 * diff_dst [N, O, spatial] (the rhs: kernel input feature N, output feature O) and
 * diff_weights [O, C, spatial] (the result: feature O, batch C). The forward stride is the
 * rhs dilation and the forward dilation the window stride; the padding is the same. */
static bool key_kernel_gradient(const kiln_conv_params *p, conv_key *k) {
    return key_window(p, &p->rhs_dilation, &p->window_strides, k);
}

/* True when the convolution dilates its input (a transposed convolution): autodiff's
 * input gradient of a strided convolution (conv_input_cotangent: the cotangent dilated by
 * the forward stride, the kernel reversed). oneDNN's forward takes no input dilation; its
 * backward-data primitive computes exactly this with the kernel reversed back, at the cost
 * of the forward convolution (im2col + GEMM over the dilated input did 4x the work at
 * stride 2: the gradient of a 16x64x56x56 -> 128 stride-2 convolution took 218 ms, as long
 * as at stride 1). */
static bool has_input_dilation(const kiln_conv_params *p, int32_t S) {
    for (int32_t d = 0; d < S && d < p->lhs_dilation.count; d++)
        if (p->lhs_dilation.v[d] > 1) return true;
    return false;
}

/* make_key's part for an input gradient (has_input_dilation), whose slots hold the forward
 * convolution's diff_dst [N, O, spatial] (the lhs), weights [O, C, spatial] (the rhs:
 * kernel input feature O, output feature C, reversed in space, which the call undoes into
 * a plain copy; the slot keeps the rhs's strides for that) and diff_src [N, C, spatial]
 * (the result). The forward stride is the lhs dilation, the forward dilation the rhs
 * dilation, and the forward padding (K - 1) * d - padding on each side, which must not be
 * negative; the window strides must be 1. */
static bool key_input_gradient(const kiln_conv_params *p, conv_key *k) {
    for (int32_t d = 0; d < k->S; d++) {
        if ((p->window_strides.count ? p->window_strides.v[d] : 1) != 1) return false;
        int64_t K = k->wei_dims[2 + d];
        int64_t rd = p->rhs_dilation.count ? p->rhs_dilation.v[d] : 1;
        k->stride[d] = p->lhs_dilation.count ? p->lhs_dilation.v[d] : 1;
        k->dil[d] = rd - 1;
        k->pl[d] = (K - 1) * rd - (p->padding_low.count ? p->padding_low.v[d] : 0);
        k->pr[d] = (K - 1) * rd - (p->padding_high.count ? p->padding_high.v[d] : 0);
        if (k->pl[d] < 0 || k->pr[d] < 0) return false;
    }
    return true;
}

/* Fills the key, or returns false when oneDNN cannot compute this convolution exactly. */
static bool make_key(const kiln__attrs *a, kiln_dtype lt, const kiln_shape *ls, kiln_dtype rt,
                     const kiln_shape *ks, kiln_dtype ot, const kiln_shape *os, bool has_bias,
                     conv_key *k) {
    const kiln_conv_params *p = &a->u.conv;
    memset(k, 0, sizeof *k);
    if (lt != KILN_F32 || rt != KILN_F32 || ot != KILN_F32) return false;
    int32_t S = ls->rank - 2;
    if (S < 1 || S > 3) return false;
    if (p->batch_group_count > 1) return false;
    int64_t G = p->feature_group_count > 0 ? p->feature_group_count : 1;
    /* oneDNN's grouped kernels pick blockings by thread count that change the order of the
     * sums (f32 [1,3,2] conv [6,1,3], 3 groups, differed in the last bit between 1 and 2
     * threads); im2col + GEMM gives the same bits on every count. */
    if (G > 1) return false;
    /* Tiny convolutions: a oneDNN call costs more than the math, and opens a parallel
     * region whose idle threads then spin (OMP_WAIT_POLICY) for the cores the next ops
     * need; im2col stays on the calling thread below its own threshold. */
    double macs = (double)ks->dims[p->kernel_input_feature_dimension];
    for (int32_t d = 0; d < os->rank; d++)
        macs *= (double)os->dims[d];
    for (int32_t d = 0; d < ls->rank - 2; d++)
        macs *= (double)ks->dims[p->kernel_spatial_dimensions.v[d]];
    if (macs < DNNL_MIN_MACS && !atomic_load_explicit(&any_size, memory_order_relaxed))
        return false;
    for (int32_t d = 0; d < ls->rank; d++)
        if (ls->dims[d] <= 0 || ks->dims[d] <= 0 || os->dims[d] <= 0) return false;
    int64_t lstr[KILN_MAX_RANK], kstr[KILN_MAX_RANK], ostr[KILN_MAX_RANK];
    strides_of(ls, lstr);
    strides_of(ks, kstr);
    strides_of(os, ostr);
    k->S = S, k->G = G, k->has_bias = has_bias;
    k->nthr = macs < DNNL_PAR_MACS ? 1 : kiln__threads_count();
    k->kind = has_bias                           ? CONV_FWD
              : is_kernel_gradient(p, ks, os, S) ? CONV_BWD_W
              : has_input_dilation(p, S)         ? CONV_BWD_D
                                                 : CONV_FWD;
    /* The slots' dimensions [d0, d1, spatial]: a forward convolution's own, or the roles
     * a gradient gives them (key_kernel_gradient, key_input_gradient). */
    const bool w = k->kind == CONV_BWD_W, f = k->kind == CONV_FWD;
    key_slot(k->src_dims, k->src_str, ls, lstr,
             w ? p->input_feature_dimension : p->input_batch_dimension,
             w ? p->input_batch_dimension : p->input_feature_dimension,
             &p->input_spatial_dimensions, S);
    key_slot(k->wei_dims, k->wei_str, ks, kstr,
             f ? p->kernel_output_feature_dimension : p->kernel_input_feature_dimension,
             f ? p->kernel_input_feature_dimension : p->kernel_output_feature_dimension,
             &p->kernel_spatial_dimensions, S);
    key_slot(k->dst_dims, k->dst_str, os, ostr,
             w ? p->output_feature_dimension : p->output_batch_dimension,
             w ? p->output_batch_dimension : p->output_feature_dimension,
             &p->output_spatial_dimensions, S);
    if (k->kind == CONV_BWD_W) return key_kernel_gradient(p, k);
    if (k->kind == CONV_BWD_D) return key_input_gradient(p, k);
    return key_window(p, &p->window_strides, &p->rhs_dilation, k);
}

static void destroy_primitives(conv_entry *e) {
    if (e->conv) dnnl()->dnnl_primitive_destroy(e->conv);
    if (e->r_src) dnnl()->dnnl_primitive_destroy(e->r_src);
    if (e->r_wei) dnnl()->dnnl_primitive_destroy(e->r_wei);
    if (e->r_dst) dnnl()->dnnl_primitive_destroy(e->r_dst);
    e->conv = e->r_src = e->r_wei = e->r_dst = NULL;
}

static void entry_destroy(conv_entry *e) {
    if (!e) return;
    destroy_primitives(e);
    free(e);
}

/* A reorder primitive from a to b, or NULL when the layouts are the same (*ok false when
 * oneDNN cannot reorder). */
static dnnl_primitive_t make_reorder(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b,
                                     bool *ok) {
    if (dnnl()->dnnl_memory_desc_equal(a, b)) return NULL;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t r = NULL;
    if (dnnl()->dnnl_reorder_primitive_desc_create(&pd, a, engine, b, engine, NULL) !=
        dnnl_success) {
        *ok = false;
        return NULL;
    }
    if (dnnl()->dnnl_primitive_create(&r, pd) != dnnl_success) *ok = false;
    dnnl()->dnnl_primitive_desc_destroy(pd);
    return r;
}

/* True when md is the layout `tag` of these 4 dimensions. */
static bool md_is(const dnnl_memory_desc_t *md, const int64_t *dims, dnnl_format_tag_t tag) {
    dnnl_memory_desc_t t;
    dnnl_dims_t d = {dims[0], dims[1], dims[2], dims[3]};
    return dnnl()->dnnl_memory_desc_init_by_tag(&t, 4, d, dnnl_f32, tag) == dnnl_success &&
           dnnl()->dnnl_memory_desc_equal(&t, md);
}

/* The layout changes of 2-d convolutions as transposes: NCHW -> NHWC (the input), OIHW ->
 * O/B HWI Bo for B = 16, 32, 64 (the weights), NHWC -> NCHW and NC/16HW16c -> NCHW (the
 * result). */
static void plan_transposes(conv_entry *e) {
    if (e->key.S != 2) return;
    const int64_t *sd = e->key.src_dims, *dd = e->key.dst_dims, *wd = e->key.wei_dims;
    static const struct {
        dnnl_format_tag_t tag;
        int64_t block;
    } wfmt[] = {{dnnl_Acdb16a, 16}, {dnnl_Acdb32a, 32}, {dnnl_Acdb64a, 64}};
    for (size_t i = 0; e->need_wei && e->key.G == 1 && i < sizeof wfmt / sizeof wfmt[0]; i++) {
        int64_t B = wfmt[i].block, khw = wd[2] * wd[3];
        if (wd[0] % B == 0 && md_is(&e->usr_wei, wd, dnnl_abcd) && md_is(&e->wei, wd, wfmt[i].tag))
            e->t_wei = (xpose){true, wd[0] / B, B, wd[1] * khw, khw, B * wd[1] * khw};
    }
    if (e->need_src && md_is(&e->usr_src, sd, dnnl_abcd) && md_is(&e->src, sd, dnnl_acdb))
        e->t_src = (xpose){true, sd[0], sd[1], sd[2] * sd[3], 1, sd[1] * sd[2] * sd[3]};
    if (e->need_dst && md_is(&e->usr_dst, dd, dnnl_abcd)) {
        int64_t hw = dd[2] * dd[3];
        if (md_is(&e->dst, dd, dnnl_acdb))
            e->t_dst = (xpose){true, dd[0], hw, dd[1], 1, dd[1] * hw};
        else if (dd[1] % 16 == 0 && md_is(&e->dst, dd, dnnl_aBcd16b))
            e->t_dst = (xpose){true, dd[0] * dd[1] / 16, hw, 16, 1, 16 * hw};
    }
}

/* The dense row-major layout of `nd` dimensions (3 to 5). */
static dnnl_format_tag_t plain_tag(int nd) {
    return nd == 3 ? dnnl_abc : nd == 4 ? dnnl_abcd : dnnl_abcde;
}

/* What a convolution descriptor needs besides its input. */
typedef struct conv_geom {
    const dnnl_memory_desc_t *bias, *wei, *dst;
    const dnnl_dim_t *st, *dl, *pl, *pr;
} conv_geom;

/* True for oneDNN's optimized direct kernels: not its reference loops (slower than im2col +
 * GEMM), and, with direct_only, not its own im2col + GEMM either (which it picks for an
 * input in a plain layout, at half the blocked kernels' speed on VGG's layers). */
static bool good_impl(dnnl_primitive_desc_t pd, bool direct_only) {
    const char *impl = NULL;
    if (dnnl()->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
        !impl || strncmp(impl, "ref", 3) == 0)
        return false;
    return !direct_only || strstr(impl, "gemm") == NULL;
}

/* The convolution's primitive descriptor with input layout src, or NULL when oneDNN has no
 * good implementation for it (see good_impl). */
static dnnl_primitive_desc_t make_conv_pd(const conv_geom *g, const dnnl_memory_desc_t *src,
                                          const_dnnl_primitive_attr_t attr, bool direct_only) {
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl()->dnnl_dilated_convolution_forward_desc_init(
            &cd, dnnl_forward_inference, dnnl_convolution_direct, src, g->wei, g->bias, g->dst,
            g->st, g->dl, g->pl, g->pr) != dnnl_success ||
        dnnl()->dnnl_primitive_desc_create(&pd, &cd, attr, engine, NULL) != dnnl_success)
        return NULL;
    if (!good_impl(pd, direct_only)) {
        dnnl()->dnnl_primitive_desc_destroy(pd);
        return NULL;
    }
    return pd;
}

/* For a forward pd on an NCHW input whose result the caller wants channels last (NHWC) but
 * which writes another layout (oneDNN's direct kernel for few input channels, a network's
 * first layer, writes 16-channel blocks): the pd that reads the input transposed to NHWC
 * and writes NHWC in place, when oneDNN has a direct kernel for that; else pd itself. VGG11's
 * first layer at 16x3x224x224: 26 ms + a 67 ms reorder of its 205 MB result against 28 ms
 * + a 2 ms transpose of its 9.6 MB input. */
static dnnl_primitive_desc_t channels_last_pd(dnnl_primitive_desc_t pd, const conv_geom *g,
                                              const conv_entry *e,
                                              const_dnnl_primitive_attr_t attr) {
    const conv_key *k = &e->key;
    const int64_t *sd = k->src_dims, *dd = k->dst_dims;
    if (!pd || k->S != 2 || !md_is(&e->usr_src, sd, dnnl_abcd) ||
        !md_is(&e->usr_dst, dd, dnnl_acdb) ||
        dnnl()->dnnl_memory_desc_equal(
            dnnl()->dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &e->usr_dst))
        return pd;
    dnnl_memory_desc_t nhwc;
    dnnl_dims_t d = {sd[0], sd[1], sd[2], sd[3]};
    if (dnnl()->dnnl_memory_desc_init_by_tag(&nhwc, 4, d, dnnl_f32, dnnl_acdb) != dnnl_success)
        return pd;
    conv_geom in_place = *g;
    in_place.dst = &e->usr_dst;
    dnnl_primitive_desc_t cl = make_conv_pd(&in_place, &nhwc, attr, true);
    if (!cl) return pd;
    dnnl()->dnnl_primitive_desc_destroy(pd);
    return cl;
}

/* A gradient's primitive descriptor, or NULL when oneDNN has no good implementation. The
 * weight gradient (CONV_BWD_W) takes a = src and b = diff_dst in their layouts and writes
 * diff_weights g->dst; the input gradient (CONV_BWD_D) takes a = diff_dst and writes b =
 * diff_src, with the weights g->wei. oneDNN wants the forward convolution's descriptor as
 * a hint. */
static dnnl_primitive_desc_t make_grad_pd(int kind, const conv_geom *g, const dnnl_memory_desc_t *a,
                                          const dnnl_memory_desc_t *b,
                                          const_dnnl_primitive_attr_t attr, bool direct_only) {
    const bool w = kind == CONV_BWD_W;
    const dnnl_memory_desc_t *src = w ? a : b, *wei = w ? g->dst : g->wei, *dst = w ? b : a;
    dnnl_convolution_desc_t fd, bd;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    if (dnnl()->dnnl_dilated_convolution_forward_desc_init(
            &fd, dnnl_forward_training, dnnl_convolution_direct, src, wei, NULL, dst, g->st, g->dl,
            g->pl, g->pr) != dnnl_success ||
        dnnl()->dnnl_primitive_desc_create(&hint, &fd, NULL, engine, NULL) != dnnl_success)
        return NULL;
    dnnl_status_t st =
        w ? dnnl()->dnnl_dilated_convolution_backward_weights_desc_init(
                &bd, dnnl_convolution_direct, src, wei, NULL, dst, g->st, g->dl, g->pl, g->pr)
          : dnnl()->dnnl_dilated_convolution_backward_data_desc_init(
                &bd, dnnl_convolution_direct, src, wei, dst, g->st, g->dl, g->pl, g->pr);
    if (st != dnnl_success ||
        dnnl()->dnnl_primitive_desc_create(&pd, &bd, attr, engine, hint) != dnnl_success)
        pd = NULL;
    dnnl()->dnnl_primitive_desc_destroy(hint);
    if (pd && !good_impl(pd, direct_only)) {
        dnnl()->dnnl_primitive_desc_destroy(pd);
        return NULL;
    }
    return pd;
}

/* Builds the primitives of entry e's geometry into it (engine created), on the calling
 * thread with the thread count the key was made for; e->ok false when oneDNN has no
 * implementation. Under create_lock (entry_fill). */
static void entry_fill_locked(conv_entry *e) {
    const conv_key *k = &e->key;
    kiln__threads_blas_set(k->nthr); /* oneDNN sizes its blocking by the OpenMP count */
    int nd = 2 + k->S, wd = nd + (k->G > 1);
    dnnl_dims_t sd, ss, wdm, ws, dd, ds, st, dl, pl, pr;
    for (int i = 0; i < nd; i++)
        sd[i] = k->src_dims[i], ss[i] = k->src_str[i], dd[i] = k->dst_dims[i],
        ds[i] = k->dst_str[i];
    for (int i = 0; i < wd; i++)
        wdm[i] = k->wei_dims[i], ws[i] = k->wei_str[i];
    for (int i = 0; i < k->S; i++)
        st[i] = k->stride[i], dl[i] = k->dil[i], pl[i] = k->pl[i], pr[i] = k->pr[i];
    dnnl_memory_desc_t any_src, any_wei, any_dst;
    dnnl_dims_t bd = {k->dst_dims[1]};
    bool ok =
        dnnl()->dnnl_memory_desc_init_by_strides(&e->usr_src, nd, sd, dnnl_f32, ss) ==
            dnnl_success &&
        (k->kind == CONV_BWD_D
             ? dnnl()->dnnl_memory_desc_init_by_tag(&e->usr_wei, wd, wdm, dnnl_f32, plain_tag(wd))
             : dnnl()->dnnl_memory_desc_init_by_strides(&e->usr_wei, wd, wdm, dnnl_f32, ws)) ==
            dnnl_success &&
        dnnl()->dnnl_memory_desc_init_by_strides(&e->usr_dst, nd, dd, dnnl_f32, ds) ==
            dnnl_success &&
        dnnl()->dnnl_memory_desc_init_by_tag(&any_src, nd, sd, dnnl_f32, dnnl_format_tag_any) ==
            dnnl_success &&
        dnnl()->dnnl_memory_desc_init_by_tag(&any_wei, wd, wdm, dnnl_f32, dnnl_format_tag_any) ==
            dnnl_success &&
        dnnl()->dnnl_memory_desc_init_by_tag(&any_dst, nd, dd, dnnl_f32, dnnl_format_tag_any) ==
            dnnl_success &&
        dnnl()->dnnl_memory_desc_init_by_tag(&e->bias, 1, bd, dnnl_f32, dnnl_a) == dnnl_success;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    ok = ok && dnnl()->dnnl_primitive_attr_create(&attr) == dnnl_success &&
         dnnl()->dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) ==
             dnnl_success;
    conv_geom g = {k->has_bias ? &e->bias : NULL, &any_wei, &any_dst, st, dl, pl, pr};
    if (k->kind == CONV_BWD_W) {
        /* The wei slot holds diff_dst and the dst slot diff_weights. */
        if (ok) pd = make_grad_pd(k->kind, &g, &e->usr_src, &e->usr_wei, attr, true);
        if (ok && !pd) pd = make_grad_pd(k->kind, &g, &any_src, &any_wei, attr, false);
    } else if (k->kind == CONV_BWD_D) {
        /* The src slot holds diff_dst and the dst slot diff_src. */
        if (ok) pd = make_grad_pd(k->kind, &g, &e->usr_src, &e->usr_dst, attr, true);
        if (ok && !pd) pd = make_grad_pd(k->kind, &g, &any_src, &any_dst, attr, false);
    } else {
        if (ok) pd = channels_last_pd(make_conv_pd(&g, &e->usr_src, attr, true), &g, e, attr);
        if (ok && !pd) pd = make_conv_pd(&g, &any_src, attr, false);
    }
    ok = ok && pd;
    if (ok) {
        static const dnnl_query_t slot_query[3][3] = {
            [CONV_FWD] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md},
            [CONV_BWD_W] = {dnnl_query_src_md, dnnl_query_diff_dst_md, dnnl_query_diff_weights_md},
            [CONV_BWD_D] = {dnnl_query_diff_dst_md, dnnl_query_weights_md, dnnl_query_diff_src_md},
        };
        const dnnl_query_t *q = slot_query[k->kind];
        e->src = *dnnl()->dnnl_primitive_desc_query_md(pd, q[0], 0);
        e->wei = *dnnl()->dnnl_primitive_desc_query_md(pd, q[1], 0);
        e->dst = *dnnl()->dnnl_primitive_desc_query_md(pd, q[2], 0);
        e->scratch = dnnl()->dnnl_memory_desc_get_size(
            dnnl()->dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0));
        ok = dnnl()->dnnl_primitive_create(&e->conv, pd) == dnnl_success;
    }
    /* Reorder primitives only for the layout changes that are not transposes: a call never
     * runs the others, and building one is a JIT compile. */
    if (ok) {
        e->need_src = !dnnl()->dnnl_memory_desc_equal(&e->usr_src, &e->src);
        e->need_wei = !dnnl()->dnnl_memory_desc_equal(&e->usr_wei, &e->wei);
        e->need_dst = !dnnl()->dnnl_memory_desc_equal(&e->dst, &e->usr_dst);
        plan_transposes(e);
        if (!e->t_src.on) e->r_src = make_reorder(&e->usr_src, &e->src, &ok);
        if (!e->t_wei.on) e->r_wei = make_reorder(&e->usr_wei, &e->wei, &ok);
        if (!e->t_dst.on) e->r_dst = make_reorder(&e->dst, &e->usr_dst, &ok);
    }
    if (pd) dnnl()->dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl()->dnnl_primitive_attr_destroy(attr);
    if (!ok) destroy_primitives(e);
    e->ok = ok;
}

/* One primitive creation at a time in the process (the builder's and callers'): two at
 * once race in oneDNN's lazily made globals (ThreadSanitizer shows it), and the cache's
 * lock is not held meanwhile, so calls of ready geometries never wait for a build. An
 * entry's first run takes it too (run_entry). */
static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;

static void entry_fill(conv_entry *e) {
    pthread_mutex_lock(&create_lock);
    entry_fill_locked(e);
    pthread_mutex_unlock(&create_lock);
}

/* Under cache_lock: the cached entry of key k (hash h), or NULL. */
static conv_entry *find(const conv_key *k, uint64_t h) {
    for (conv_entry *e = cache[h]; e; e = e->next)
        if (memcmp(&e->key, k, sizeof *k) == 0) return e;
    return NULL;
}

/* Under cache_lock: a new entry of key k in the cache (NULL when out of memory or the
 * cache is full). */
static conv_entry *insert(const conv_key *k, uint64_t h, int state) {
    if (cache_count >= MAX_ENTRIES) return NULL;
    conv_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->key = *k;
    e->state = state;
    e->next = cache[h];
    cache[h] = e;
    cache_count++;
    return e;
}

/* Under cache_lock: makes the engine the first time. False when there is none. */
static bool have_engine(void) {
    if (!engine && !engine_failed &&
        (!kiln__dnnl_api_get() || dnnl()->dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success))
        engine_failed = true;
    return engine != NULL;
}

/* Under cache_lock, which it drops while building (counted, so that a fork waits): builds
 * e and announces it. */
static void build_unlocked(conv_entry *e) {
    while (forking)
        pthread_cond_wait(&built, &cache_lock);
    n_building++;
    pthread_mutex_unlock(&cache_lock);
    entry_fill(e);
    pthread_mutex_lock(&cache_lock);
    n_building--;
    e->state = READY;
    pthread_cond_broadcast(&built);
}

/* Under cache_lock: builds e (BUILDING, taken by the caller) when there is an engine, and
 * announces it. */
static void build_taken(conv_entry *e) {
    if (have_engine()) { /* the first time: opens oneDNN (a few ms), on the builder mostly */
        build_unlocked(e);
        return;
    }
    e->state = READY;
    pthread_cond_broadcast(&built);
}

static void unqueue(conv_entry *e) {
    conv_entry **at = &queue_head, *prev = NULL;
    while (*at && *at != e) {
        prev = *at;
        at = &(*at)->queued;
    }
    if (!*at) return;
    *at = e->queued;
    if (queue_tail == e) queue_tail = prev;
    e->queued = NULL;
}

/* The builder thread: builds queued entries, oldest first, until the process exits. */
static void *builder_main(void *unused) {
    (void)unused;
    pthread_mutex_lock(&cache_lock);
    while (!builder_stop) {
        conv_entry *e = queue_head;
        if (!e) {
            pthread_cond_wait(&work, &cache_lock);
            continue;
        }
        unqueue(e);
        e->state = BUILDING;
        build_taken(e);
    }
    pthread_mutex_unlock(&cache_lock);
    return NULL;
}

/* At exit, before oneDNN's own destructors: the builder finishes the entry it is building
 * and stops. */
static void builder_join(void) {
    pthread_mutex_lock(&cache_lock);
    bool running = builder_running;
    builder_stop = true;
    pthread_cond_signal(&work);
    pthread_mutex_unlock(&cache_lock);
    if (running) pthread_join(builder, NULL);
}

/* fork: a child gets only the forking thread, so no thread may be inside oneDNN's
 * primitive creation when it forks (its first-time static initialisers would stay locked
 * in the child forever). The fork waits for builds in progress (the cache's lock, held
 * across the fork, keeps new ones from starting); the child starts a builder of its own
 * when it queues something, and builds what is still queued when it needs it. */
static void fork_prepare(void) {
    pthread_mutex_lock(&cache_lock);
    forking = true;
    while (n_building > 0)
        pthread_cond_wait(&built, &cache_lock);
    pthread_mutex_lock(&create_lock); /* and for an entry's first run in progress */
}
static void fork_parent(void) {
    pthread_mutex_unlock(&create_lock);
    forking = false;
    pthread_cond_broadcast(&built);
    pthread_mutex_unlock(&cache_lock);
}
static void fork_child(void) {
    pthread_mutex_unlock(&create_lock);
    forking = false;
    builder_running = false;
    /* The parent's waiters (its builder on `work`) do not exist here. */
    pthread_cond_init(&work, NULL);
    pthread_cond_init(&built, NULL);
    pthread_mutex_unlock(&cache_lock);
}

/* Under cache_lock: queues e for the builder, starting it the first time. False when no
 * thread can be made (the entry is then built by its first caller). */
static bool enqueue(conv_entry *e) {
    if (!builder_running && !builder_stop) {
        static bool hooks;
        if (!hooks) {
            hooks = atexit(builder_join) == 0 &&
                    pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
            if (!hooks) return false;
        }
        builder_running = pthread_create(&builder, NULL, builder_main, NULL) == 0;
    }
    if (!builder_running) return false;
    e->queued = NULL;
    if (queue_tail)
        queue_tail->queued = e;
    else
        queue_head = e;
    queue_tail = e;
    pthread_cond_signal(&work);
    return true;
}

/* The ready entry of a geometry: built now by the caller when missing or still queued,
 * waited for when the builder (or another caller) is on it. *transient: the caller owns
 * it (the cache is full). NULL: out of memory or no engine. */
static conv_entry *entry_get(const conv_key *k, bool *transient) {
    *transient = false;
    uint64_t h = key_hash(k) % BUCKETS;
    pthread_mutex_lock(&cache_lock);
    conv_entry *e = NULL;
    if (have_engine()) {
        e = find(k, h);
        if (!e && (e = insert(k, h, BUILDING))) {
            build_taken(e);
        } else if (!e) { /* cache full (or no memory for an entry): one for this call */
            e = calloc(1, sizeof *e);
            if (e) {
                e->key = *k;
                *transient = true;
                build_unlocked(e);
            }
        } else if (e->state == QUEUED) {
            unqueue(e);
            e->state = BUILDING;
            build_taken(e);
        }
        while (e && e->state != READY)
            pthread_cond_wait(&built, &cache_lock);
    }
    pthread_mutex_unlock(&cache_lock);
    kiln__threads_sync_blas(); /* building may have set another count on this thread */
    return e;
}

/* oneDNN splits a weight gradient's sums over the batch between its threads when that
 * balances better, and adds the partial sums in an order that follows the thread count
 * (the gradient of 64 output channels over a 4x64x28x28 input differed in the last bits
 * between 1 and 3 threads). kiln's results do not depend on the thread count, so a weight
 * gradient runs as pieces of BWD_W_PIECE output channels, each a one-thread primitive
 * (whose order of sums depends on the shape alone), spread over kiln's pool. */
#define BWD_W_PIECE 64

/* The key of a piece of `oc` output channels of weight gradient k. */
static conv_key piece_key(const conv_key *k, int64_t oc) {
    conv_key c = *k;
    c.nthr = 1;
    c.wei_dims[1] = oc; /* diff_dst's channels */
    c.dst_dims[0] = oc; /* diff_weights' output channels */
    return c;
}

/* Weight gradient k's pieces: their count, and the keys of all but the last (*full) and of
 * the last (*last; the same when the channels divide evenly). */
static int64_t piece_keys(const conv_key *k, conv_key *full, conv_key *last) {
    int64_t O = k->dst_dims[0], n = (O + BWD_W_PIECE - 1) / BWD_W_PIECE;
    *full = piece_key(k, O < BWD_W_PIECE ? O : BWD_W_PIECE);
    *last = piece_key(k, O - (n - 1) * BWD_W_PIECE);
    return n;
}

/* Queues key k for the builder thread (or builds it now when the thread cannot start):
 * compiling does not wait for oneDNN (opening it, the first time, and its JIT), and the
 * first call waits only for the primitives it reaches before they are made (or makes them
 * itself when the builder has not started on them). */
static void prepare_key(const conv_key *k) {
    uint64_t h = key_hash(k) % BUCKETS;
    pthread_mutex_lock(&cache_lock);
    if (!engine_failed && !find(k, h)) {
        conv_entry *e = insert(k, h, QUEUED);
        if (e && !enqueue(e)) {
            e->state = BUILDING;
            build_taken(e);
        }
    }
    pthread_mutex_unlock(&cache_lock);
}

kiln_status kiln__dnnl_conv_prepare(kiln_ctx *cx, const kiln__attrs *a, const kiln__type *lhs,
                                    const kiln__type *rhs, const kiln__type *out, bool bias) {
    conv_key k;
    (void)cx;
    if (!make_key(a, lhs->dtype, &lhs->shape, rhs->dtype, &rhs->shape, out->dtype, &out->shape,
                  bias, &k))
        return KILN_OK;
    if (k.kind != CONV_BWD_W) {
        prepare_key(&k);
        return KILN_OK;
    }
    /* a weight gradient runs as pieces: their primitives (at most two sizes) */
    conv_key full, last;
    piece_keys(&k, &full, &last);
    prepare_key(&full);
    prepare_key(&last);
    return KILN_OK;
}

/* ---- the calling thread's workspace ------------------------------------------------------ */

/* Workspaces above this size are kept only when the convolution's own operands and result
 * are as large (a thread then keeps no more than one call of it already uses); larger ones
 * the call allocates. VGG11 at 1x3x224x224 needs at most 12.3 MiB, batches of 4 fit; at
 * 16x3x224x224 its first layer needs 196 MiB (its result reordered from oneDNN's blocks),
 * which a fresh allocation per call page-faults in at every call (150k faults a training
 * step, 7.6-7.9 s a step against 7.3 s kept). */
#define WS_MAX_KEPT ((size_t)64 << 20)
/* Large workspaces ask for transparent huge pages (fewer TLB misses in the reorders). */
#define WS_HUGE ((size_t)2 << 20)

/* One per thread that calls convolutions (oneDNN's worker threads never call in); `busy`
 * guards against a nested call on the same thread. The key frees the buffer when the thread
 * exits; the main thread's stays reachable through its TLS until the process ends. */
typedef struct workspace {
    void *p;
    size_t cap;
    bool busy;
} workspace;

static _Thread_local workspace tls_ws;
static pthread_key_t ws_key;
static bool ws_key_ok;
static pthread_once_t ws_once = PTHREAD_ONCE_INIT;

static void ws_key_make(void) { ws_key_ok = pthread_key_create(&ws_key, free) == 0; }

/* The thread's workspace of at least `bytes` (grown when smaller), marked busy; NULL when
 * busy, larger than both WS_MAX_KEPT and `operands` (the bytes of the call's operands and
 * result), or out of memory. */
static void *ws_claim(size_t bytes, size_t operands) {
    workspace *w = &tls_ws;
    pthread_once(&ws_once, ws_key_make);
    if (w->busy || (bytes > WS_MAX_KEPT && bytes > operands) || !ws_key_ok ||
        atomic_load_explicit(&no_workspace, memory_order_relaxed))
        return NULL;
    if (w->cap < bytes) {
        size_t align = bytes >= WS_HUGE ? WS_HUGE : 4096;
        size_t cap = (bytes + align - 1) / align * align;
        void *p = NULL;
        if (posix_memalign(&p, align, cap) != 0) return NULL;
#ifdef MADV_HUGEPAGE
        if (cap >= WS_HUGE) (void)madvise(p, cap, MADV_HUGEPAGE);
#endif
        if (pthread_setspecific(ws_key, p) != 0) {
            free(p);
            return NULL;
        }
        free(w->p);
        w->p = p, w->cap = cap;
    }
    w->busy = true;
    return w->p;
}

static void ws_release(void) { tls_ws.busy = false; }

/* ---- running a convolution ---------------------------------------------------------------- */

/* Where a call's reordered operands and scratchpad go: offsets into one block of memory,
 * the thread's workspace or (when that is busy or too large) a block of the call's own. */
typedef struct layout {
    size_t src, wei, dst, scratch, rev, total;
} layout;

static size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

static layout layout_of(const conv_entry *e) {
    layout l = {0};
    size_t at = 0;
    /* Page-aligned parts, so that no two share a cache line or a page's first touch. */
    if (e->need_src) l.src = at, at += round_up(dnnl()->dnnl_memory_desc_get_size(&e->src), 4096);
    if (e->need_wei) l.wei = at, at += round_up(dnnl()->dnnl_memory_desc_get_size(&e->wei), 4096);
    if (e->need_dst) l.dst = at, at += round_up(dnnl()->dnnl_memory_desc_get_size(&e->dst), 4096);
    if (e->scratch) l.scratch = at, at += round_up(e->scratch, 4096);
    if (e->key.kind == CONV_BWD_D)
        l.rev = at, at += round_up(dnnl()->dnnl_memory_desc_get_size(&e->usr_wei), 4096);
    l.total = at;
    return l;
}

typedef struct mems {
    dnnl_memory_t m[8];
    int n;
} mems;

static dnnl_memory_t mem_make(mems *ms, const dnnl_memory_desc_t *md, void *data) {
    dnnl_memory_t m = NULL;
    if (dnnl()->dnnl_memory_create(&m, md, engine, data) != dnnl_success) return NULL;
    ms->m[ms->n++] = m;
    return m;
}

static bool exec(dnnl_primitive_t p, dnnl_stream_t s, dnnl_memory_t from, dnnl_memory_t to) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return dnnl()->dnnl_primitive_execute(p, s, 2, args) == dnnl_success;
}

/* The weights of a call, for pack_weights: in the layout usr_wei describes. */
typedef struct wei_job {
    const conv_entry *e;
    const float *from;
} wei_job;

/* An input gradient's weights: the rhs (its strides in the key's wei slot) reversed in
 * every spatial dimension, written densely as [O, C, spatial] (usr_wei). */
static void unreverse_weights(const conv_key *k, const float *from, float *to) {
    int64_t n[5] = {1, 1, 1, 1, 1}, st[5] = {0, 0, 0, 0, 0};
    for (int d = 0; d < 2 + k->S; d++)
        n[d] = k->wei_dims[d], st[d] = k->wei_str[d];
    int64_t at = 0;
    for (int64_t o = 0; o < n[0]; o++)
        for (int64_t c = 0; c < n[1]; c++)
            for (int64_t a = 0; a < n[2]; a++)
                for (int64_t b = 0; b < n[3]; b++)
                    for (int64_t z = 0; z < n[4]; z++)
                        to[at++] = from[o * st[0] + c * st[1] + (n[2] - 1 - a) * st[2] +
                                        (n[3] - 1 - b) * st[3] + (n[4] - 1 - z) * st[4]];
}

/* Writes the call's weights in the primitive's layout to dst (a kiln__pack_fn). */
static bool pack_weights(void *user, void *dst) {
    const wei_job *j = user;
    const conv_entry *e = j->e;
    if (e->t_wei.on) {
        const xpose *t = &e->t_wei;
        kiln__transpose_f32(j->from, dst, t->batch, t->rows, t->cols, t->group, t->stride,
                            t->stride);
        return true;
    }
    mems ms = {0};
    dnnl_stream_t stream = NULL;
    dnnl_memory_t from = mem_make(&ms, &e->usr_wei, (void *)j->from);
    dnnl_memory_t to = from ? mem_make(&ms, &e->wei, dst) : NULL;
    bool ok =
        to &&
        dnnl()->dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success &&
        exec(e->r_wei, stream, from, to) && dnnl()->dnnl_stream_wait(stream) == dnnl_success;
    if (stream) dnnl()->dnnl_stream_destroy(stream);
    for (int i = 0; i < ms.n; i++)
        dnnl()->dnnl_memory_destroy(ms.m[i]);
    return ok;
}

/* Where a call reads and writes: the user's operands and result (views of tensors: a weight
 * gradient's pieces start inside them), and the rhs tensor itself when its packed copy may
 * be kept (packed_weights.h: a forward convolution whose entry lives as long as the
 * process), else NULL. */
typedef struct conv_ptrs {
    const float *src, *wei, *bias;
    float *dst;
    const kiln_tensor *keep_packed;
} conv_ptrs;

/* Runs the reorders and the convolution with the reordered operands and the scratchpad at
 * `l` in `base`; true when every primitive ran. The weights come packed from the cache
 * when they are unchanged since an earlier call and at_->keep_packed says they may. */
static bool run_in(const conv_entry *e, const layout *l, unsigned char *base,
                   const conv_ptrs *at_) {
    mems ms = {0};
    dnnl_stream_t stream = NULL;
    const float *wei_from = at_->wei;
    if (e->key.kind == CONV_BWD_D) {
        float *rev = (float *)(void *)(base + l->rev);
        unreverse_weights(&e->key, wei_from, rev);
        wei_from = rev;
    }
    dnnl_memory_t usrc = mem_make(&ms, &e->usr_src, (void *)at_->src);
    dnnl_memory_t uwei = mem_make(&ms, &e->usr_wei, (void *)wei_from);
    dnnl_memory_t udst = mem_make(&ms, &e->usr_dst, at_->dst);
    dnnl_memory_t src = usrc, wei = uwei, dst = udst, bmem = NULL, smem = NULL;
    bool ok =
        usrc && uwei && udst &&
        dnnl()->dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success;
    if (ok && e->t_src.on) {
        const xpose *t = &e->t_src;
        kiln__transpose_f32(at_->src, (float *)(void *)(base + l->src), t->batch, t->rows, t->cols,
                            t->group, t->stride, t->stride);
        ok = (src = mem_make(&ms, &e->src, base + l->src)) != NULL;
    } else if (ok && e->r_src) {
        ok = (src = mem_make(&ms, &e->src, base + l->src)) && exec(e->r_src, stream, usrc, src);
    }
    kiln__packed *held = NULL;
    if (ok && e->need_wei) {
        wei_job job = {e, wei_from};
        /* Only a forward convolution's rhs is a weight tensor worth keeping packed. */
        const void *packed =
            at_->keep_packed && e->key.kind == CONV_FWD
                ? kiln__packed_get(e, at_->keep_packed, dnnl()->dnnl_memory_desc_get_size(&e->wei),
                                   pack_weights, &job, &held)
                : NULL;
        void *at = packed ? (void *)packed : base + l->wei;
        ok = (packed || pack_weights(&job, at)) && (wei = mem_make(&ms, &e->wei, at)) != NULL;
    }
    if (ok && e->need_dst) ok = (dst = mem_make(&ms, &e->dst, base + l->dst)) != NULL;
    if (ok && at_->bias) ok = (bmem = mem_make(&ms, &e->bias, (void *)at_->bias)) != NULL;
    if (ok && e->scratch) {
        dnnl_memory_desc_t smd;
        dnnl_dims_t sdim = {(dnnl_dim_t)e->scratch};
        ok = dnnl()->dnnl_memory_desc_init_by_tag(&smd, 1, sdim, dnnl_u8, dnnl_a) == dnnl_success &&
             (smem = mem_make(&ms, &smd, base + l->scratch));
    }
    if (ok) {
        dnnl_exec_arg_t args[5] = {
            {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
        if (e->key.kind == CONV_BWD_W) {
            args[1] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, wei};
            args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS, dst};
        } else if (e->key.kind == CONV_BWD_D) {
            args[0] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, src};
            args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, dst};
        }
        int n = 3;
        if (bmem) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, bmem};
        if (smem) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, smem};
        ok = dnnl()->dnnl_primitive_execute(e->conv, stream, n, args) == dnnl_success;
    }
    if (ok && e->r_dst) ok = exec(e->r_dst, stream, dst, udst);
    if (ok) ok = dnnl()->dnnl_stream_wait(stream) == dnnl_success;
    if (ok && e->t_dst.on) {
        const xpose *t = &e->t_dst;
        kiln__transpose_f32((const float *)(const void *)(base + l->dst), at_->dst, t->batch,
                            t->rows, t->cols, t->group, t->stride, t->stride);
    }
    if (stream) dnnl()->dnnl_stream_destroy(stream);
    for (int i = 0; i < ms.n; i++)
        dnnl()->dnnl_memory_destroy(ms.m[i]);
    kiln__packed_release(held);
    return ok;
}

/* run_in, under create_lock the first time: oneDNN's first execution in the process makes a
 * global lazily (ThreadSanitizer saw one thread's first execution pthread_mutex_init a
 * global recursive mutex of libdnnl's while another thread's locked it; the pattern of the
 * ITT notification library oneDNN bundles), and an entry's primitives run for the first
 * time may make state of their own. A call that sees e->warm (acquire) comes after all of
 * that and takes no lock. */
static bool run_entry(conv_entry *e, const layout *l, unsigned char *base, const conv_ptrs *at_) {
    if (!atomic_load_explicit(&e->warm, memory_order_acquire)) {
        pthread_mutex_lock(&create_lock);
        if (!atomic_load_explicit(&e->warm, memory_order_relaxed)) {
            bool ok = run_in(e, l, base, at_);
            if (ok) atomic_store_explicit(&e->warm, true, memory_order_release);
            pthread_mutex_unlock(&create_lock);
            return ok;
        }
        pthread_mutex_unlock(&create_lock);
    }
    return run_in(e, l, base, at_);
}

/* Runs the entry at `at_` with the primitive's thread count; `operands`: the bytes of the
 * convolution's operands and result (ws_claim keeps a workspace that large). Without a
 * ctx (a worker of a weight gradient's pieces) only the thread's workspace serves, and a
 * failure is reported by the status alone; with one, a call of its own allocates from the
 * ctx when the workspace cannot serve, and errors are recorded in it. */
static kiln_status run_at(kiln_ctx *cx, conv_entry *e, const conv_ptrs *at_, size_t operands) {
    kiln__threads_blas_set(e->key.nthr); /* the team the primitive was made for */
    layout l = layout_of(e);
    void *own = NULL, *base = NULL;
    if (l.total > 0) {
        base = ws_claim(l.total, operands);
        if (!base) {
            own = cx ? kiln__alloc(cx, l.total, KILN_DATA_ALIGNMENT, "convolution") : NULL;
            if (!own) return KILN_RESOURCE_EXHAUSTED;
            base = own;
        }
    }
    bool ok = run_entry(e, &l, base, at_);
    if (own)
        kiln__free(cx, own, l.total);
    else if (base)
        ws_release();
    if (!ok)
        return cx ? kiln_ctx_set_error(cx, KILN_INTERNAL,
                                       "convolution: a oneDNN primitive failed to run")
                  : KILN_INTERNAL;
    return KILN_OK;
}

/* ---- weight gradients in pieces of output channels ---------------------------------------- */

typedef struct pieces_job {
    conv_entry *full, *last; /* BWD_W_PIECE channels, and the last piece's */
    const conv_key *k;
    conv_ptrs at;
    size_t operands;
    int64_t n;
    kiln_status *status; /* per piece; KILN_UNKNOWN until run */
} pieces_job;

static conv_ptrs piece_at(const pieces_job *j, int64_t p) {
    conv_ptrs a = j->at;
    a.wei += p * BWD_W_PIECE * j->k->wei_str[1];
    a.dst += p * BWD_W_PIECE * j->k->dst_str[0];
    return a;
}

static void run_pieces(void *user, int64_t begin, int64_t end) {
    pieces_job *j = user;
    for (int64_t p = begin; p < end; p++) {
        conv_ptrs a = piece_at(j, p);
        j->status[p] = run_at(NULL, p + 1 < j->n ? j->full : j->last, &a, j->operands);
    }
}

/* Gets (or builds) the entry of key k for a call; NULL when oneDNN has none. *transient:
 * the caller owns it (the cache was full). */
static conv_entry *entry_for_call(const conv_key *k, bool *transient) {
    conv_entry *e = entry_get(k, transient);
    if (e && !e->ok) {
        if (*transient) entry_destroy(e);
        return NULL;
    }
    return e;
}

/* The weight gradient k at `at`; false when oneDNN has no primitive for a piece (the caller
 * falls back), else the outcome in *status. The pieces run on kiln's pool; one piece, a
 * piece a worker could not run (its workspace too small or out of memory), or every piece
 * when there is no memory to note their outcomes runs on the calling thread with the ctx's
 * allocator. */
static bool run_kernel_gradient(kiln_ctx *cx, const conv_key *k, const conv_ptrs *at,
                                size_t operands, kiln_status *status) {
    conv_key kf, kl;
    int64_t n = piece_keys(k, &kf, &kl);
    bool tf = false, tl = false;
    conv_entry *full = entry_for_call(&kf, &tf);
    conv_entry *last = full && memcmp(&kf, &kl, sizeof kf) ? entry_for_call(&kl, &tl) : full;
    bool taken = full && last;
    if (taken) {
        kiln_status small[16];
        kiln_status *st = n == 1 ? NULL : n <= 16 ? small : malloc(sizeof *st * (size_t)n);
        pieces_job j = {full, last, k, *at, operands, n, st};
        if (st) {
            for (int64_t p = 0; p < n; p++)
                st[p] = KILN_UNKNOWN;
            kiln__parallel_for(n, 1, run_pieces, &j);
        }
        *status = KILN_OK;
        for (int64_t p = 0; p < n && *status == KILN_OK; p++) {
            if (st && st[p] == KILN_OK) continue;
            conv_ptrs a = piece_at(&j, p);
            *status = run_at(cx, p + 1 < n ? full : last, &a, operands);
        }
        kiln__threads_sync_blas(); /* the pieces ran with one OpenMP thread */
        if (st != small) free(st);
    }
    if (last != full && tl) entry_destroy(last);
    if (tf) entry_destroy(full);
    return taken;
}

bool kiln__dnnl_conv(kiln_ctx *cx, const kiln__attrs *a, const kiln_tensor *lhs,
                     const kiln_tensor *rhs, const kiln_tensor *bias, kiln_tensor *out,
                     kiln_status *status) {
    conv_key k;
    if (atomic_load_explicit(&forced_off, memory_order_relaxed)) return false;
    if (!make_key(a, kiln_tensor_dtype(lhs), kiln_tensor_shape(lhs), kiln_tensor_dtype(rhs),
                  kiln_tensor_shape(rhs), kiln_tensor_dtype(out), kiln_tensor_shape(out),
                  bias != NULL, &k))
        return false;
    conv_ptrs at = {kiln__in(lhs), kiln__in(rhs), bias ? kiln__in(bias) : NULL, kiln__out(out),
                    NULL};
    size_t operands = kiln_tensor_nbytes(lhs) + kiln_tensor_nbytes(rhs) + kiln_tensor_nbytes(out);
    if (k.kind == CONV_BWD_W) {
        if (!run_kernel_gradient(cx, &k, &at, operands, status)) return false;
        atomic_fetch_add_explicit(&kernel_gradients_run, 1, memory_order_relaxed);
        return true;
    }
    bool transient;
    conv_entry *e = entry_for_call(&k, &transient);
    if (!e) return false; /* the fallback reports running out of memory if it does */
    if (!transient) at.keep_packed = rhs;
    *status = run_at(cx, e, &at, operands);
    if (k.kind == CONV_BWD_D)
        atomic_fetch_add_explicit(&input_gradients_run, 1, memory_order_relaxed);
    if (transient) entry_destroy(e);
    return true;
}

bool kiln__dnnl_conv_available(void) { return kiln__dnnl_api_get() != NULL; }

#else

bool kiln__dnnl_conv_available(void) { return false; }

kiln_status kiln__dnnl_conv_prepare(kiln_ctx *cx, const kiln__attrs *a, const kiln__type *lhs,
                                    const kiln__type *rhs, const kiln__type *out, bool bias) {
    (void)cx, (void)a, (void)lhs, (void)rhs, (void)out, (void)bias;
    return KILN_OK;
}

bool kiln__dnnl_conv(kiln_ctx *cx, const kiln__attrs *a, const kiln_tensor *lhs,
                     const kiln_tensor *rhs, const kiln_tensor *bias, kiln_tensor *out,
                     kiln_status *status) {
    (void)cx, (void)a, (void)lhs, (void)rhs, (void)bias, (void)out, (void)status;
    return false;
}

#endif
