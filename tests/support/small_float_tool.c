/* SPDX-License-Identifier: Apache-2.0 */
/* Writes kiln's small float conversions for tests/scripts/small_float_check.py to compare
 * with ml_dtypes: per type, the f32 bits each code decodes to, then the code of each f32
 * read from the input (hex bits, one per line).
 * usage: kiln_small_float_tool VALUES.txt */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/dtype.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s VALUES.txt\n", argv[0]);
        return 2;
    }
    FILE *in = fopen(argv[1], "r");
    if (!in) {
        perror(argv[1]);
        return 1;
    }
    float *values = NULL;
    size_t n = 0, cap = 0;
    unsigned bits;
    while (fscanf(in, "%x", &bits) == 1) {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            float *grown = realloc(values, cap * sizeof *values);
            if (!grown) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            values = grown;
        }
        uint32_t b = bits;
        memcpy(&values[n++], &b, 4);
    }
    fclose(in);
    for (int d = KILN_F8E4M3FN; d <= KILN_F4E2M1FN; d++) {
        kiln_dtype t = (kiln_dtype)d;
        printf("type %s\n", kiln_dtype_name(t));
        unsigned codes = 1u << kiln_dtype_bits(t);
        for (unsigned c = 0; c < codes; c++) {
            float f = kiln_small_float_decode(t, (uint8_t)c);
            uint32_t u;
            memcpy(&u, &f, 4);
            printf("%08" PRIx32 "\n", u);
        }
        for (size_t i = 0; i < n; i++)
            printf("%02x\n", kiln_small_float_encode(t, values[i]));
    }
    free(values);
    return 0;
}
