/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/status.h: status codes.
 *
 * kiln_status uses the canonical error space 0..16 shared by absl::Status, gRPC, PJRT and
 * IREE, so a kiln status maps one to one onto theirs. Calls that can fail return a
 * kiln_status; the human-readable message is kept in the ctx (kiln_ctx_error_message).
 *
 *     kiln_status s = kiln_npy_save(cx, "x.npy", x);
 *     if (s != KILN_OK)
 *         fprintf(stderr, "%s: %s\n", kiln_status_name(s), kiln_ctx_error_message(cx));
 */
#ifndef KILN_STATUS_H
#define KILN_STATUS_H

#include "kiln/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_status {
    KILN_OK = 0,
    KILN_CANCELLED = 1,
    KILN_UNKNOWN = 2,
    KILN_INVALID_ARGUMENT = 3,
    KILN_DEADLINE_EXCEEDED = 4,
    KILN_NOT_FOUND = 5,
    KILN_ALREADY_EXISTS = 6,
    KILN_PERMISSION_DENIED = 7,
    KILN_RESOURCE_EXHAUSTED = 8,
    KILN_FAILED_PRECONDITION = 9,
    KILN_ABORTED = 10,
    KILN_OUT_OF_RANGE = 11,
    KILN_UNIMPLEMENTED = 12,
    KILN_INTERNAL = 13,
    KILN_UNAVAILABLE = 14,
    KILN_DATA_LOSS = 15,
    KILN_UNAUTHENTICATED = 16,
} kiln_status;

/* The canonical upper-case name of a status ("OK", "INVALID_ARGUMENT", ...), or
 * "UNKNOWN_STATUS" for a value outside 0..16. Returns a static string. Thread-safe. */
KILN_API const char *kiln_status_name(kiln_status status);

#ifdef __cplusplus
}
#endif

#endif
