/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/version.h: the library version.
 *
 *     printf("kiln %s\n", kiln_version_string());
 */
#ifndef KILN_VERSION_H
#define KILN_VERSION_H

#include "kiln/export.h"

#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 1
#define KILN_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the library actually linked (static string). */
KILN_API const char *kiln_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
