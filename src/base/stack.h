/* SPDX-License-Identifier: Apache-2.0 */
/* How much stack the calling thread has left: recursive walks over nested programs (the
 * parser, tracing and the transforms traced inside it) check it so that nesting too deep for the
 * thread's stack is an error, never a crash, whatever the stack's size (a musl thread's 128 KiB, a
 * main thread's 8 MiB). */
#ifndef KILN_BASE_STACK_H
#define KILN_BASE_STACK_H

#include <stdbool.h>
#include <stddef.h>

/* True when fewer than `reserve` bytes of the calling thread's stack remain below this
 * frame. False when the stack's bounds cannot be known. Cheap after a thread's first call. */
bool kiln__stack_low(size_t reserve);

/* What kiln keeps free below a nesting level before it goes one deeper: enough for one
 * level's frames and the calls that end it. */
#define KILN__STACK_RESERVE ((size_t)48 << 10)

#endif
