/* The ctx's fields, for the library's own use. */
#ifndef KILN_BASE_CTX_INTERNAL_H
#define KILN_BASE_CTX_INTERNAL_H

#include "base/scope.h"
#include "kiln/ctx.h"

/* Error messages live in the ctx, so that recording one never allocates. */
#define KILN_ERROR_MESSAGE_MAX 1024

struct kiln_ctx {
    kiln_allocator allocator;
    kiln_log_fn log_fn;
    void *log_user;
    kiln_log_level log_level;
    kiln_device device;

    kiln_status status;
    char message[KILN_ERROR_MESSAGE_MAX];

    /* The active trace (runtime's kiln__trace) while kiln_lower runs a function; NULL when
     * ops run eagerly. */
    void *trace;

    kiln__scope root_scope; /* owns what is made outside any user scope */
    kiln__scope *scope;     /* innermost */
    int scope_depth;
};

/* Records INVALID_ARGUMENT "<fn>: <arg> is NULL" unless an error is already recorded,
 * so that a NULL produced by an earlier failed call does not hide its cause. */
kiln_status kiln__null_argument(kiln_ctx *cx, const char *fn, const char *arg);

#endif
