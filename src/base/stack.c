/* SPDX-License-Identifier: Apache-2.0 */
/* The calling thread's stack bounds (stack.h), cached per thread. */
#define _GNU_SOURCE /* pthread_getattr_np */
#include "base/stack.h"

#include <pthread.h>
#include <stdint.h>

static _Thread_local uintptr_t stack_lo, stack_hi; /* usable range; 0 until known */
static _Thread_local bool stack_unknown;

bool kiln__stack_low(size_t reserve) {
    if (!stack_hi && !stack_unknown) {
        pthread_attr_t a;
        void *addr = NULL;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
            if (pthread_attr_getstack(&a, &addr, &size) != 0) addr = NULL;
            pthread_attr_destroy(&a);
        }
        if (addr && size) {
            stack_lo = (uintptr_t)addr;
            stack_hi = stack_lo + size;
        } else {
            stack_unknown = true;
        }
    }
    /* The frame's own address: a local's may live elsewhere (sanitizers' fake stacks). */
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    if (stack_unknown || sp < stack_lo || sp >= stack_hi) return false;
    return sp - stack_lo < reserve;
}
