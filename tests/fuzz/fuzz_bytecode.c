/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target for the portable-artifact reader (MLIR bytecode of VHLO): any bytes after the
 * bytecode magic must parse or fail cleanly with a message, never crash, hang, read out of
 * bounds, leak or allocate more than the input justifies. The magic is forced onto every
 * input, so mutations exercise the bytecode reader rather than the text parser. A module
 * that parses must print. Built as a libFuzzer target with clang (-DKILN_FUZZ=ON;
 * `make fuzz`), and run by tests/fuzz/fuzz_driver.c on StableHLO's artifacts and the
 * seeds of tests/fuzz/corpus/bytecode in every build. */
#include <kiln/kiln.h>
#include <kiln/parse.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    char *copy = malloc(size);
    if (!copy) return 0;
    memcpy(copy, data, size);
    memcpy(copy, "ML\xefR", 4);
    kiln_ctx *cx;
    if (kiln_ctx_create(NULL, &cx) != KILN_OK) {
        free(copy);
        return 0;
    }
    kiln_module *m = NULL;
    if (kiln_module_parse(cx, copy, size, NULL, &m) == KILN_OK) {
        char *text = kiln_module_to_string(cx, m);
        if (!text) abort();
        kiln_string_free(cx, text);
        kiln_module_release(m);
    } else if (kiln_ctx_error_message(cx)[0] == '\0') {
        abort(); /* a failed parse says why */
    }
    kiln_ctx_release(cx);
    free(copy);
    return 0;
}
