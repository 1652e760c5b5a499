/* SPDX-License-Identifier: Apache-2.0 */
/* The jit cache's view of a function's arguments: where the leaves and statics of its input
 * and output live (the layout), and the signature of one call (the key). */
#ifndef KILN_RUNTIME_JIT_KEY_H
#define KILN_RUNTIME_JIT_KEY_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/jit.h"
#include "kiln/tree.h"

/* A leaf or static scalar of the input or output struct. */
typedef struct kiln__jit_slot {
    kiln_tree_kind kind;
    size_t offset; /* in the struct (list mode: the array of tensor pointers) */
    size_t size;
    char *path; /* "params.w", an arg_names entry, or NULL */
    /* A list-mode argument passed as it is (static_argnums): concrete when traced, its
     * value part of the key. */
    bool is_static;
} kiln__jit_slot;

/* The most bytes a static tensor argument holds (its value is part of the key). */
#define KILN__JIT_STATIC_MAX_BYTES 4096

typedef struct kiln__jit_layout {
    size_t in_size, out_size; /* bytes of the input and output structs */
    int32_t n_in, n_out;      /* tensor leaves */
    int32_t n_in_statics, n_out_statics;
    int32_t n_static_leaves; /* in_leaves with is_static */
    kiln__jit_slot *in_leaves, *out_leaves, *in_statics, *out_statics;
} kiln__jit_layout;

/* Layouts for list mode (arrays of n_in and n_out tensors) and for tree mode. Allocated
 * through `a`; errors are recorded in cx. */
kiln_status kiln__jit_layout_list(kiln_ctx *cx, const kiln_allocator *a, int32_t n_in,
                                  int32_t n_out, const char *const *arg_names,
                                  const bool *is_static, kiln__jit_layout *out);
kiln_status kiln__jit_layout_tree(kiln_ctx *cx, const char *api, const kiln_allocator *a,
                                  const kiln_tree_def *in_def, const kiln_tree_def *out_def,
                                  kiln__jit_layout *out);
void kiln__jit_layout_free(const kiln_allocator *a, kiln__jit_layout *l);

/* "arg 1 'y'" (or "arg 1" without a name) for input leaf i. */
void kiln__jit_arg_name(const kiln__jit_layout *l, int32_t i, char *buf, size_t size);

/* A call's signature: the device compiled for, each input leaf's dtype and shape, each
 * input static's value, as words; compared exactly, found by hash. */
typedef struct kiln__jit_key {
    uint64_t *words; /* NULL: no key */
    size_t n;
    uint64_t hash;
} kiln__jit_key;

/* Builds the key of a call whose input struct is `in` with leaves `args` (concrete). */
kiln_status kiln__jit_key_build(kiln_ctx *cx, const kiln_allocator *a, const kiln__jit_layout *l,
                                kiln_device device, const void *in, kiln_tensor *const *args,
                                kiln__jit_key *out);
bool kiln__jit_key_equal(const kiln__jit_key *x, const kiln__jit_key *y);
/* Copies src into dst (reusing dst's words when the length matches). On allocation
 * failure dst becomes empty (words NULL). */
void kiln__jit_key_assign(const kiln_allocator *a, kiln__jit_key *dst, const kiln__jit_key *src);
void kiln__jit_key_free(const kiln_allocator *a, kiln__jit_key *k);

/* Why `now` missed, compared with `before` (NULL: "first call"): the first difference,
 * naming the leaf ("arg 1 'y': shape [10,10] -> [20,10]", "static 'cfg.n': 3 -> 4"), and
 * how many more there are. Returns how far apart they are: the number of differences, a
 * leaf's dtype and shape counted apart (0: equal; -1 without `before`). */
int kiln__jit_key_explain(const kiln__jit_layout *l, const kiln__jit_key *before,
                          const kiln__jit_key *now, char *buf, size_t size);

#endif
