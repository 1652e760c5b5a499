/* SPDX-License-Identifier: Apache-2.0 */
/* Tree descriptors (kiln/tree.h), for the library's own use: a checked walk over the
 * leaves and statics of a descriptor, and reading and writing static scalars. */
#ifndef KILN_RUNTIME_TREE_INTERNAL_H
#define KILN_RUNTIME_TREE_INTERNAL_H

#include <stdbool.h>

#include "kiln/jit.h"
#include "kiln/tree.h"

/* One leaf or static scalar met by kiln__tree_walk. */
typedef struct kiln__tree_item {
    kiln_tree_kind kind; /* KILN_TREE_TENSOR or a static kind */
    size_t offset;       /* from the start of the root struct */
    size_t size;         /* bytes of the member (element) */
    int32_t index;       /* leaf index for tensors, static index for statics */
    const char *path;    /* "layers[1].w"; valid during the callback only; "" without paths */
} kiln__tree_item;

/* Returns true to go on, false to stop the walk. */
typedef bool (*kiln__tree_visit_fn)(void *user, const kiln__tree_item *item);

/* Checks def. On failure writes a message ("<type>: field 2 'w': ...") into err (size >
 * 0) and returns false. Counts leaves and statics when out pointers are not NULL. */
bool kiln__tree_validate(const kiln_tree_def *def, int32_t *out_leaves, int32_t *out_statics,
                         char *err, size_t err_size);

/* Visits every leaf and static of a valid descriptor (check first) in flatten order,
 * building paths when `paths` is true. Returns false when the callback stopped it. */
bool kiln__tree_walk(const kiln_tree_def *def, bool paths, kiln__tree_visit_fn visit, void *user);

/* Reads / writes a static scalar of `kind` and `size` at p (any alignment). */
kiln_tree_static kiln__tree_static_read(kiln_tree_kind kind, size_t size, const void *p);
void kiln__tree_static_write(const kiln_tree_static *value, size_t size, void *p);

/* True when the static values are the same (bitwise for floats). */
bool kiln__tree_static_equal(const kiln_tree_static *a, const kiln_tree_static *b);

/* Writes the value as text ("3", "true", "0.5"). */
void kiln__tree_static_format(const kiln_tree_static *value, char *buf, size_t size);

/* True when `path` is `prefix` or lies under it ("params" covers "params.w" and
 * "params[0]"). */
bool kiln__tree_path_has_prefix(const char *path, const char *prefix);

/* A function of structs as a region over leaves (what the transformations of tree
 * functions trace): unflattens the leaves it receives (with the input's statics) into
 * in_buf, calls fn, and flattens what fn wrote into out_buf, recording its statics in
 * out_statics. The caller sizes the buffers (in_def->size, out_def->size). */
typedef struct kiln__tree_call {
    kiln_jit_fn fn;
    void *user;
    const kiln_tree_def *in_def, *out_def;
    const kiln_tree_static *statics; /* of the input */
    int32_t n_in, n_statics, n_out, n_out_statics;
    kiln_tree_static *out_statics; /* written by the trace */
    void *in_buf, *out_buf;
} kiln__tree_call;

/* *t for fn over in_def -> out_def, its leaf and static counts filled in (the buffers and
 * the statics are the caller's to set). */
void kiln__tree_call_init(kiln__tree_call *t, kiln_jit_fn fn, void *user,
                          const kiln_tree_def *in_def, const kiln_tree_def *out_def);

/* Makes the one scratch block of a call over structs and flattens `in` into it: n_ptr
 * pointer slots first (the first t->n_in of them in's leaves), then in's statics
 * (t->statics) and room for the output's (t->out_statics), t->in_buf and t->out_buf, and
 * n_ints int32s (*ints). Returns the flatten's status; *mem is NULL (RESOURCE_EXHAUSTED
 * recorded) when the block cannot be had, else the caller frees it with
 * kiln__free(cx, *mem, *bytes) whatever the status. */
kiln_status kiln__tree_call_scratch(kiln_ctx *cx, const char *name, kiln__tree_call *t,
                                    const void *in, size_t n_ptr, size_t n_ints, char **mem,
                                    size_t *bytes, int32_t **ints);

/* The arguments every API over a function of structs takes: fn, in_def, in and out_def
 * must not be NULL (INVALID_ARGUMENT naming the first that is), and both descriptors must
 * be valid (kiln_tree_check). */
kiln_status kiln__tree_fn_args(kiln_ctx *cx, const char *name, kiln_jit_fn fn,
                               const kiln_tree_def *in_def, const void *in,
                               const kiln_tree_def *out_def);
/* The first checks of a transform over a function of structs: a context (else
 * INVALID_ARGUMENT) with no error recorded, kiln__tree_fn_args, and its output struct out
 * not NULL. */
kiln_status kiln__tree_fn_begin(kiln_ctx *cx, const char *name, kiln_jit_fn fn,
                                const kiln_tree_def *in_def, const void *in,
                                const kiln_tree_def *out_def, const void *out);

/* Checks that each of the n leaf path prefixes (named `what` in messages: "wrt_paths")
 * is not NULL and matches some leaf of def; INVALID_ARGUMENT naming it otherwise. */
kiln_status kiln__tree_check_prefixes(kiln_ctx *cx, const char *fn, const char *what,
                                      const kiln_tree_def *def, const char *const *prefixes,
                                      int32_t n);

/* The kiln_region_fn of a kiln__tree_call (user). */
kiln_status kiln__tree_call_region(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out,
                                   void *user);

#endif
