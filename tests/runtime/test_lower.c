/* SPDX-License-Identifier: Apache-2.0 */
#include "test_util.h"

static kiln_status identity(kiln_ctx *cx, kiln_tensor *const *in, kiln_tensor **out, void *user) {
    (void)cx, (void)user;
    out[0] = in[0];
    return KILN_OK;
}

Test(lower, options_are_checked) {
    kiln_ctx *cx = test_ctx();
    kiln_region fn = {identity, NULL};
    kiln_arg_spec a = {.dtype = KILN_F32, .shape = KILN_SHAPE(2)};
    kiln_lower_options o = kiln_lower_options_default();
    o.struct_size = 4;
    kiln_module *m = NULL;
    cr_assert_eq(kiln_lower(cx, &fn, &a, 1, 1, &o, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "struct_size");
    o = kiln_lower_options_default();
    o.donate_all = true;
    cr_assert_eq(kiln_lower(cx, &fn, &a, 1, 1, &o, &m), KILN_OK);
    kiln_module_info info;
    kiln_module_info_get(cx, m, &info);
    cr_assert_eq(info.preserved[0], 0);
    cr_assert_not(info.donated[0]); /* preserved arguments are not donated by donate_all */
    kiln_module_release(m);
    kiln_ctx_release(cx);
}
