/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/tree.h: structured arguments: C structs of tensors, flattened and unflattened.
 *
 * A tree descriptor (kiln_tree_def) describes a C struct whose members are tensors,
 * nested structs, fixed-length arrays of either, or static scalars (integers, bools,
 * enums, floats: compile-time values that are part of a jit cache key, kiln/jit.h).
 * Declare one per struct type with the macros below; they check member types at compile
 * time, so a descriptor cannot disagree with its struct:
 *
 *     typedef struct { kiln_tensor *w, *b; } dense;
 *     typedef struct { dense layers[2]; kiln_tensor *scale; int n_steps; } mlp;
 *
 *     KILN_TREE_DEF(dense, KILN_FIELD(dense, w), KILN_FIELD(dense, b));
 *     KILN_TREE_DEF(mlp, KILN_SUBTREE_ARRAY(mlp, layers, 2, dense), KILN_FIELD(mlp, scale),
 *                   KILN_STATIC(mlp, n_steps));
 *
 *     mlp net = {...};
 *     kiln_tensor *leaves[5];                     // kiln_tree_leaf_count(&kiln_tree_def_mlp)
 *     kiln_tree_flatten(cx, &kiln_tree_def_mlp, &net, leaves, 5, NULL, 0);
 *     // leaves: layers[0].w, layers[0].b, layers[1].w, layers[1].b, scale
 *     char path[64];
 *     kiln_tree_leaf_path(&kiln_tree_def_mlp, 2, path, sizeof path);    // "layers[1].w"
 *
 * Flattening lists the tensor leaves depth-first in declaration order (array elements in
 * index order); static scalars are listed separately, in the same order. Each leaf and
 * static has a path (`layers[1].w`, `cfg.n`) that names it in error messages, logs and
 * printed modules. Unflattening writes tensors (and optionally statics) back into a struct
 * of the described type; members the descriptor does not name are never touched.
 *
 * KILN_TREE_DEF defines `static const kiln_tree_def kiln_tree_def_<type>` for a struct
 * typedef name `type`; a descriptor used by KILN_SUBTREE must be defined (or declared)
 * first. To share a descriptor between files, declare it in a header with
 * KILN_TREE_DECLARE(type) and define it in one file with KILN_TREE_DEF_EXTERN. The macros
 * need C11 (_Generic, _Static_assert); from C++ fill kiln_tree_field by hand.
 *
 * Leaves are borrowed: flatten and unflatten copy pointers and never retain or release.
 * Descriptors are plain constant data; every function here is thread-safe for distinct
 * ctxs.
 */
#ifndef KILN_TREE_H
#define KILN_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/ctx.h"
#include "kiln/export.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a member (or each element of an array member) holds. 0 is not a kind, so a
 * zero-filled field is rejected. */
typedef enum kiln_tree_kind {
    KILN_TREE_TENSOR = 1,      /* kiln_tensor *: a leaf */
    KILN_TREE_SUBTREE = 2,     /* a nested struct described by `def` */
    KILN_TREE_STATIC_BOOL = 3, /* a _Bool (size 1) */
    KILN_TREE_STATIC_INT = 4,  /* a signed integer of `size` bytes (1, 2, 4, 8) */
    KILN_TREE_STATIC_UINT = 5, /* an unsigned integer or enum of `size` bytes (1, 2, 4, 8) */
    KILN_TREE_STATIC_FLOAT = 6 /* a float (size 4) or double (size 8) */
} kiln_tree_kind;

typedef struct kiln_tree_def kiln_tree_def;

/* One member of a described struct. */
typedef struct kiln_tree_field {
    const char *name;         /* the member's name, one component of a path */
    kiln_tree_kind kind;      /* of the member, or of each element of an array member */
    size_t offset;            /* offsetof(struct, member) */
    size_t size;              /* sizeof one element (of the member itself when count is 0) */
    int32_t count;            /* 0: a single value; n > 0: an array of n elements */
    const kiln_tree_def *def; /* KILN_TREE_SUBTREE: the nested struct's descriptor */
} kiln_tree_field;

struct kiln_tree_def {
    const char *name;              /* the struct type's name, for messages */
    size_t size;                   /* sizeof the struct */
    const kiln_tree_field *fields; /* in declaration order (the order of the leaves) */
    int32_t n_fields;
};

/* A static scalar's value, widened: `i` for STATIC_INT, `u` for STATIC_UINT and
 * STATIC_BOOL (0 or 1), `f` for STATIC_FLOAT. */
typedef struct kiln_tree_static {
    kiln_tree_kind kind;
    union {
        int64_t i;
        uint64_t u;
        double f;
    } value;
} kiln_tree_static;

/* The longest path kiln builds (longer ones are cut short, ending in "..."). */
#define KILN_TREE_PATH_MAX 256
/* The deepest nesting of descriptors (a cycle is an error). */
#define KILN_TREE_MAX_DEPTH 32
/* The most leaves, and the most statics, one descriptor may have. */
#define KILN_TREE_MAX_LEAVES 4096

/* Checks a descriptor: names, kinds, sizes (a tensor member is a pointer, a subtree has
 * its descriptor's size, static sizes are 1/2/4/8, floats 4/8), members inside the
 * struct, nesting at most KILN_TREE_MAX_DEPTH deep (no cycles), at most
 * KILN_TREE_MAX_LEAVES leaves. Errors: INVALID_ARGUMENT naming the type and the field. */
KILN_API kiln_status kiln_tree_check(kiln_ctx *cx, const kiln_tree_def *def);

/* The number of tensor leaves / static scalars of a valid descriptor, or -1 when it is
 * invalid (kiln_tree_check says why). Thread-safe. */
KILN_API int32_t kiln_tree_leaf_count(const kiln_tree_def *def);
KILN_API int32_t kiln_tree_static_count(const kiln_tree_def *def);

/* Writes the path of leaf `index` (flatten order) into buf, like snprintf: truncated to
 * fit and terminated when size > 0. Returns the path's length, or -1 when the descriptor
 * is invalid or index is out of range. kiln_tree_static_path does the same for statics.
 * Thread-safe. */
KILN_API int kiln_tree_leaf_path(const kiln_tree_def *def, int32_t index, char *buf, size_t size);
KILN_API int kiln_tree_static_path(const kiln_tree_def *def, int32_t index, char *buf, size_t size);

/* Lists the tensor leaves of `tree` (a struct described by def) into out_leaves, which
 * has room for exactly n_leaves == kiln_tree_leaf_count(def) pointers (borrowed, not
 * retained), and, when out_statics is not NULL, its static values into out_statics
 * (n_statics == kiln_tree_static_count(def)). Errors: INVALID_ARGUMENT for a NULL
 * argument, an invalid descriptor, a wrong count, or a NULL leaf (the message names its
 * path: `kiln_tree_flatten: mlp leaf 2 'layers[1].w' is NULL`). */
KILN_API kiln_status kiln_tree_flatten(kiln_ctx *cx, const kiln_tree_def *def, const void *tree,
                                       kiln_tensor **out_leaves, int32_t n_leaves,
                                       kiln_tree_static *out_statics, int32_t n_statics);

/* Stores leaves[0..n_leaves-1] (not retained; NULL entries allowed) into the tensor
 * members of out_tree, in flatten order, and, when statics is not NULL, the static values
 * (converted to each member's type) into its static members; with statics NULL those
 * keep their values. Counts must match exactly, as for kiln_tree_flatten. Errors:
 * INVALID_ARGUMENT (NULL argument, invalid descriptor, wrong count, a static of the wrong
 * kind). */
KILN_API kiln_status kiln_tree_unflatten(kiln_ctx *cx, const kiln_tree_def *def,
                                         kiln_tensor *const *leaves, int32_t n_leaves,
                                         const kiln_tree_static *statics, int32_t n_statics,
                                         void *out_tree);

/* ---- declaring descriptors --------------------------------------------------------- */

/* KILN_TREE_DEF(type, fields...): defines kiln_tree_def_<type> (static) from one or more
 * of the field macros below. */
#define KILN_TREE_DEF(type, ...)                                                \
    static const kiln_tree_field kiln__tree_fields_##type[] = {__VA_ARGS__};    \
    static const kiln_tree_def kiln_tree_def_##type KILN__TREE_MAYBE_UNUSED = { \
        .name = #type,                                                          \
        .size = sizeof(type),                                                   \
        .fields = kiln__tree_fields_##type,                                     \
        .n_fields = (int32_t)(sizeof kiln__tree_fields_##type / sizeof(kiln_tree_field))}

/* The same with external linkage, for a descriptor declared by KILN_TREE_DECLARE. */
#define KILN_TREE_DEF_EXTERN(type, ...)                                      \
    static const kiln_tree_field kiln__tree_fields_##type[] = {__VA_ARGS__}; \
    const kiln_tree_def kiln_tree_def_##type = {                             \
        .name = #type,                                                       \
        .size = sizeof(type),                                                \
        .fields = kiln__tree_fields_##type,                                  \
        .n_fields = (int32_t)(sizeof kiln__tree_fields_##type / sizeof(kiln_tree_field))}
#define KILN_TREE_DECLARE(type) extern const kiln_tree_def kiln_tree_def_##type

/* A `kiln_tensor *` member. */
#define KILN_FIELD(type, member)                                                               \
    {                                                                                          \
        .name = #member, .kind = KILN_TREE_TENSOR,                                             \
        .offset = offsetof(type, member) +                                                     \
                  KILN__TREE_CHECK(KILN__TREE_IS_TENSOR(((type *)0)->member),                  \
                                   "KILN_FIELD(" #type ", " #member "): not a kiln_tensor *"), \
        .size = sizeof(kiln_tensor *), .count = 0, .def = NULL                                 \
    }

/* A nested struct member of type `child` (described by kiln_tree_def_<child>). */
#define KILN_SUBTREE(type, member, child)                                                 \
    {                                                                                     \
        .name = #member, .kind = KILN_TREE_SUBTREE,                                       \
        .offset = offsetof(type, member) +                                                \
                  KILN__TREE_CHECK(_Generic(((type *)0)->member, child : 1, default : 0), \
                                   "KILN_SUBTREE(" #type ", " #member ", " #child         \
                                   "): the member's type is not " #child),                \
        .size = sizeof(child), .count = 0, .def = &kiln_tree_def_##child                  \
    }

/* A static scalar member: any integer type, _Bool, an enum, float or double. */
#define KILN_STATIC(type, member)                                                     \
    {                                                                                 \
        .name = #member, .kind = KILN__TREE_STATIC_KIND(((type *)0)->member),         \
        .offset = offsetof(type, member) +                                            \
                  KILN__TREE_CHECK(KILN__TREE_STATIC_KIND(((type *)0)->member) != 0,  \
                                   "KILN_STATIC(" #type ", " #member                  \
                                   "): not an integer, bool, enum, float or double"), \
        .size = sizeof(((type *)0)->member), .count = 0, .def = NULL                  \
    }

/* A member `kiln_tensor *member[n]`. */
#define KILN_ARRAY(type, member, n)                                                  \
    {                                                                                \
        .name = #member, .kind = KILN_TREE_TENSOR,                                   \
        .offset = offsetof(type, member) + KILN__TREE_CHECK_ARRAY(type, member, n) + \
                  KILN__TREE_CHECK(KILN__TREE_IS_TENSOR(((type *)0)->member[0]),     \
                                   "KILN_ARRAY(" #type ", " #member                  \
                                   "): the elements are not kiln_tensor *"),         \
        .size = sizeof(kiln_tensor *), .count = (n), .def = NULL                     \
    }

/* A member `child member[n]`. */
#define KILN_SUBTREE_ARRAY(type, member, n, child)                                              \
    {                                                                                           \
        .name = #member, .kind = KILN_TREE_SUBTREE,                                             \
        .offset = offsetof(type, member) + KILN__TREE_CHECK_ARRAY(type, member, n) +            \
                  KILN__TREE_CHECK(_Generic(((type *)0)->member[0], child : 1, default : 0),    \
                                   "KILN_SUBTREE_ARRAY(" #type ", " #member ", " #n ", " #child \
                                   "): the elements are not " #child),                          \
        .size = sizeof(child), .count = (n), .def = &kiln_tree_def_##child                      \
    }

/* A member `T member[n]` of static scalars (T as for KILN_STATIC). */
#define KILN_STATIC_ARRAY(type, member, n)                                                      \
    {                                                                                           \
        .name = #member, .kind = KILN__TREE_STATIC_KIND(((type *)0)->member[0]),                \
        .offset = offsetof(type, member) + KILN__TREE_CHECK_ARRAY(type, member, n) +            \
                  KILN__TREE_CHECK(KILN__TREE_STATIC_KIND(((type *)0)->member[0]) != 0,         \
                                   "KILN_STATIC_ARRAY(" #type ", " #member                      \
                                   "): the elements are not integers, bools, enums, floats or " \
                                   "doubles"),                                                  \
        .size = sizeof(((type *)0)->member[0]), .count = (n), .def = NULL                       \
    }

/* ---- implementation details of the macros ------------------------------------------ */

/* 0, or a compile error with `msg` when the constant `cond` is false. */
#define KILN__TREE_CHECK(cond, msg) \
    (0 * sizeof(struct {            \
         _Static_assert(cond, msg); \
         int kiln__unused;          \
     }))
#define KILN__TREE_IS_TENSOR(x) _Generic((x), kiln_tensor * : 1, default : 0)
#define KILN__TREE_CHECK_ARRAY(type, member, n)                                   \
    KILN__TREE_CHECK((n) > 0 && sizeof(((type *)0)->member) ==                    \
                                    (size_t)(n) * sizeof(((type *)0)->member[0]), \
                     #type "." #member " is not an array of " #n " elements")
#define KILN__TREE_STATIC_KIND(x)                                                         \
    _Generic((x), _Bool                                                                   \
             : KILN_TREE_STATIC_BOOL, char                                                \
             : ((char)-1 < 0 ? KILN_TREE_STATIC_INT : KILN_TREE_STATIC_UINT), signed char \
             : KILN_TREE_STATIC_INT, unsigned char                                        \
             : KILN_TREE_STATIC_UINT, short                                               \
             : KILN_TREE_STATIC_INT, unsigned short                                       \
             : KILN_TREE_STATIC_UINT, int                                                 \
             : KILN_TREE_STATIC_INT, unsigned int                                         \
             : KILN_TREE_STATIC_UINT, long                                                \
             : KILN_TREE_STATIC_INT, unsigned long                                        \
             : KILN_TREE_STATIC_UINT, long long                                           \
             : KILN_TREE_STATIC_INT, unsigned long long                                   \
             : KILN_TREE_STATIC_UINT, float                                               \
             : KILN_TREE_STATIC_FLOAT, double                                             \
             : KILN_TREE_STATIC_FLOAT, default : 0)
#if defined(__GNUC__) || defined(__clang__)
#define KILN__TREE_MAYBE_UNUSED __attribute__((unused))
#else
#define KILN__TREE_MAYBE_UNUSED
#endif

#ifdef __cplusplus
}
#endif

#endif
