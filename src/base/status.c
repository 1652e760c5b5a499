/* SPDX-License-Identifier: Apache-2.0 */
#include "kiln/status.h"
#include "kiln/version.h"

#define KILN_STRINGIFY2(x) #x
#define KILN_STRINGIFY(x) KILN_STRINGIFY2(x)

const char *kiln_status_name(kiln_status status) {
    static const char *const names[] = {
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    };
    _Static_assert(sizeof names / sizeof names[0] == KILN_UNAUTHENTICATED + 1,
                   "one name per canonical code");
    if ((int)status < 0 || (int)status > KILN_UNAUTHENTICATED) return "UNKNOWN_STATUS";
    return names[status];
}

const char *kiln_version_string(void) {
    return KILN_STRINGIFY(KILN_VERSION_MAJOR) "." KILN_STRINGIFY(
        KILN_VERSION_MINOR) "." KILN_STRINGIFY(KILN_VERSION_PATCH);
}
