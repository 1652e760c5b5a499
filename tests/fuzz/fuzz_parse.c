/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target for the StableHLO text parser: any bytes must parse or fail cleanly with a
 * message, never crash, hang, read out of bounds or leak. A module that parses must be
 * usable: its info and checks read, and it prints. Built as a libFuzzer target with clang
 * (-DKILN_FUZZ=ON; `make fuzz`), and run by tests/fuzz/fuzz_driver.c on the conformance
 * files and mutations of them in every build. */
#include <kiln/kiln.h>
#include <kiln/parse.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) return 0;
    kiln_parse_options o = kiln_parse_options_default();
    o.filename = "fuzz.mlir";
    /* Alternate the check dialect on a bit of the input, so both paths are fuzzed. */
    o.allow_checks = size == 0 || (data[0] & 1) == 0;
    kiln_module *m = NULL;
    if (kiln_module_parse(cx, (const char *)data, size, &o, &m) == KILN_OK) {
        kiln_module_info info;
        if (kiln_module_info_get(cx, m, &info) != KILN_OK) abort();
        const kiln_check *checks;
        int32_t n_checks;
        if (kiln_module_checks(cx, m, &checks, &n_checks) != KILN_OK) abort();
        char *text = kiln_module_to_string(cx, m);
        kiln_string_free(cx, text);
        kiln_module_release(m);
    } else if (kiln_ctx_error_message(cx)[0] == '\0')
        abort(); /* a failed parse says why */
    kiln_ctx_release(cx);
    return 0;
}
