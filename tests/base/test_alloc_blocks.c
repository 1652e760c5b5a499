/* SPDX-License-Identifier: Apache-2.0 */
/* The default allocator starts large blocks on a 2 MiB boundary, so that the huge-page advice
 * given to large results covers them whole; smaller blocks keep the alignment asked for. */
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "test_util.h"

static void *alloc_default(size_t size, size_t alignment) {
    const kiln_allocator *a = kiln_allocator_default();
    void *p = a->alloc(a->user, size, alignment);
    cr_assert_not_null(p, "%zu bytes", size);
    return p;
}

static void free_default(void *p, size_t size) {
    const kiln_allocator *a = kiln_allocator_default();
    a->free(a->user, p, size);
}

Test(alloc_blocks, large_blocks_start_on_a_huge_page) {
    const size_t sizes[] = {KILN_HUGE_BLOCK, KILN_HUGE_BLOCK + 1, 5 * KILN_HUGE_BLOCK + 4096};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        unsigned char *p = alloc_default(sizes[k], 64);
        cr_expect_eq((uintptr_t)p % KILN_HUGE_PAGE, 0, "%zu bytes at %p", sizes[k], (void *)p);
        /* The whole block is usable (AddressSanitizer checks the bounds). */
        p[0] = 1;
        p[sizes[k] - 1] = 2;
        free_default(p, sizes[k]);
    }
}

Test(alloc_blocks, smaller_blocks_keep_the_alignment_asked_for) {
    const size_t aligns[] = {1, 8, 64, 4096};
    for (size_t k = 0; k < sizeof aligns / sizeof aligns[0]; k++) {
        const size_t size = KILN_HUGE_BLOCK - 1;
        unsigned char *p = alloc_default(size, aligns[k]);
        cr_expect_eq((uintptr_t)p % aligns[k], 0);
        cr_expect_eq((uintptr_t)p % sizeof(void *), 0);
        memset(p, 3, size);
        free_default(p, size);
        p = alloc_default(24, aligns[k]);
        cr_expect_eq((uintptr_t)p % aligns[k], 0);
        free_default(p, 24);
    }
}

Test(alloc_blocks, tensors_of_a_default_ctx_get_large_blocks_aligned) {
    kiln_ctx *cx = test_ctx();
    kiln_tensor *big = kiln_zeros(cx, KILN_F32, KILN_SHAPE((int64_t)(KILN_HUGE_BLOCK / 4)));
    kiln_tensor *small = kiln_zeros(cx, KILN_F32, KILN_SHAPE(1000));
    cr_assert_not_null(big, "%s", kiln_ctx_error_message(cx));
    cr_assert_not_null(small);
    cr_expect_eq((uintptr_t)kiln_tensor_data(big) % KILN_HUGE_PAGE, 0);
    cr_expect_eq((uintptr_t)kiln_tensor_data(small) % KILN_DATA_ALIGNMENT, 0);
    cr_expect_eq(((const float *)kiln_tensor_data(big))[KILN_HUGE_BLOCK / 4 - 1], 0.0f);
    kiln_tensor_release(big);
    kiln_tensor_release(small);
    kiln_ctx_release(cx);
}
