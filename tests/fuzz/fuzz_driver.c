/* SPDX-License-Identifier: Apache-2.0 */
/* Runs a fuzz target without libFuzzer: every seed input, then a fixed number of
 * deterministic mutations of them (bit flips, byte sets to interesting values,
 * truncations, insertions, header-length tweaks). Deterministic, so a failure reproduces.
 * Usage: fuzz_driver ITERATIONS SEED_FILE... */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t state = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = malloc(1 << 20);
    *size = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s ITERATIONS SEED_FILE...\n", argv[0]);
        return 2;
    }
    long iterations = strtol(argv[1], NULL, 10);
    int seeds = argc - 2;
    unsigned char *seed[64];
    size_t seed_size[64];
    if (seeds > 64) seeds = 64;
    for (int i = 0; i < seeds; i++) {
        seed[i] = read_file(argv[i + 2], &seed_size[i]);
        if (!seed[i]) {
            fprintf(stderr, "cannot read %s\n", argv[i + 2]);
            return 2;
        }
        LLVMFuzzerTestOneInput(seed[i], seed_size[i]);
    }
    static const unsigned char interesting[] = {0,   1,   0x7f, 0x80, 0xff, '(', ')', ',', '\'',
                                                '}', '{', ' ',  '9',  '-',  '<', '>', 'L', '['};
    size_t cap = (1 << 20) + 64;
    unsigned char *buf = malloc(cap);
    for (long it = 0; it < iterations; it++) {
        int s = (int)(next() % (uint64_t)seeds);
        size_t n = seed_size[s];
        memcpy(buf, seed[s], n);
        int edits = 1 + (int)(next() % 4);
        for (int e = 0; e < edits && n > 0; e++) {
            size_t at = (size_t)(next() % n);
            switch (next() % 6) {
            case 0: buf[at] ^= (unsigned char)(1u << (next() % 8)); break;
            case 1: buf[at] = interesting[next() % sizeof interesting]; break;
            case 2: n = at; break; /* truncate */
            case 3:                /* insert a byte */
                if (n + 1 < cap) {
                    memmove(buf + at + 1, buf + at, n - at);
                    buf[at] = interesting[next() % sizeof interesting];
                    n++;
                }
                break;
            case 4: /* delete a byte */
                memmove(buf + at, buf + at + 1, n - at - 1);
                n--;
                break;
            default: /* the header length field */
                if (n > 9) buf[8 + next() % 2] = (unsigned char)next();
                break;
            }
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz: %d seeds, %ld mutated inputs, no crash\n", seeds, iterations);
    free(buf);
    for (int i = 0; i < seeds; i++)
        free(seed[i]);
    return 0;
}
