/* SPDX-License-Identifier: Apache-2.0 */
/* kiln/export.h: the KILN_API marker for the public symbols of libkiln.
 *
 * libkiln is built with hidden visibility; only functions declared with KILN_API are
 * exported from the shared library. Users never need to define anything: the same header
 * works for the shared and the static library. */
#ifndef KILN_EXPORT_H
#define KILN_EXPORT_H

#if defined(_WIN32)
#define KILN_API
#elif defined(__GNUC__) || defined(__clang__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KILN_PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))
#define KILN_NODISCARD __attribute__((warn_unused_result))
#else
#define KILN_PRINTF_LIKE(fmt, args)
#define KILN_NODISCARD
#endif

#endif
