/* SPDX-License-Identifier: Apache-2.0 */
/* Portable artifacts (MLIR bytecode of VHLO): StableHLO's own artifacts of every version
 * against the text they were made from, and a small artifact built here byte by byte, to
 * reach each error the reader reports: truncation anywhere, mutations, self-references,
 * bad value references, a newer version, an op kiln lacks. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/strbuf.h"
#include "ir/vhlo.h"
#include "test_util.h"

static const char *vhlo_dir(void) { return KILN_CONFORMANCE_DIR "/vhlo"; }

static bool have_vhlo_data(void) {
    DIR *d = opendir(vhlo_dir());
    if (!d) {
        fprintf(stderr, "SKIPPED: %s is missing (the conformance data beside the checkout)\n",
                vhlo_dir());
        return false;
    }
    closedir(d);
    return true;
}

/* ---- StableHLO's artifacts against their text -------------------------------------------- */

/* Why functions were skipped: the parser's messages (position left out), counted. */
#define MAX_REASONS 64
typedef struct tally {
    int matched, text_unsupported, differ, bytecode_failed;
    char reasons[MAX_REASONS][96];
    int counts[MAX_REASONS], n_reasons;
} tally;

static void count_reason(tally *t, const char *message) {
    const char *r = strstr(message, "error: ");
    r = r ? r + 7 : message;
    char reason[96];
    snprintf(reason, sizeof reason, "%s", r);
    for (int i = 0; i < t->n_reasons; i++)
        if (strcmp(t->reasons[i], reason) == 0) {
            t->counts[i]++;
            return;
        }
    if (t->n_reasons == MAX_REASONS) return;
    memcpy(t->reasons[t->n_reasons], reason, sizeof reason);
    t->counts[t->n_reasons++] = 1;
}

/* Every top-level function of the text that kiln parses on its own must come out of the
 * artifact as the same module. */
static const tally *compare_version(kiln_ctx *cx, const char *mlir, const unsigned char *bc,
                                    size_t n) {
    static tally t;
    memset(&t, 0, sizeof t);
    for (const char *p = mlir; (p = strstr(p, "\nfunc.func"));) {
        p++;
        const char *end = strstr(p, "\n}\n");
        if (!end) break;
        end += 2;
        const char *at = strchr(p, '@');
        char name[200];
        int k = 0;
        for (at++; at[k] && at[k] != '(' && k < 199; k++)
            name[k] = at[k];
        name[k] = 0;
        size_t len = (size_t)(end - p);
        char *chunk = malloc(len + 32);
        snprintf(chunk, len + 32, "module {\n%.*s\n}\n", (int)len, p);
        p = end;
        kiln_module *from_text = NULL, *from_bc = NULL;
        if (kiln_module_parse(cx, chunk, strlen(chunk), NULL, &from_text) != KILN_OK) {
            count_reason(&t, kiln_ctx_error_message(cx));
            kiln_ctx_clear_error(cx);
            t.text_unsupported++;
            free(chunk);
            continue;
        }
        free(chunk);
        kiln__bc r;
        cr_assert(kiln__bc_open(&r, cx, bc, n), "%s", r.error);
        kiln__strbuf sb;
        kiln__strbuf_init(&sb, cx);
        bool ok = kiln__vhlo_to_text(&r, &sb, name);
        char *text = kiln__strbuf_take(&sb);
        if (!ok) fprintf(stderr, "  @%s: %s\n", name, r.error);
        kiln__bc_close(&r);
        if (ok && kiln_module_parse(cx, text, strlen(text), NULL, &from_bc) != KILN_OK) {
            fprintf(stderr, "  @%s: %s\n%s", name, kiln_ctx_error_message(cx), text);
            kiln_ctx_clear_error(cx);
            ok = false;
        }
        if (!ok) {
            t.bytecode_failed++;
        } else {
            char *a = kiln_module_to_string(cx, from_text), *b = kiln_module_to_string(cx, from_bc);
            if (strcmp(a, b) == 0) {
                t.matched++;
            } else {
                t.differ++;
                fprintf(stderr, "  @%s differs:\n--- text\n%s--- artifact\n%s", name, a, b);
            }
            kiln_string_free(cx, a);
            kiln_string_free(cx, b);
        }
        kiln__strbuf_free_string(cx, text);
        kiln_module_release(from_text);
        kiln_module_release(from_bc);
    }
    return &t;
}

Test(bytecode, every_stablehlo_version_gives_the_module_its_text_gives) {
    if (!have_vhlo_data()) cr_skip_test("no conformance data");
    DIR *d = opendir(vhlo_dir());
    struct dirent *e;
    int versions = 0, total = 0;
    kiln_ctx *cx = test_ctx();
    while ((e = readdir(d))) {
        const char *prefix = "stablehlo_legalize_to_vhlo.";
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || len < 8 ||
            strcmp(e->d_name + len - 8, ".mlir.bc") != 0)
            continue;
        char bc_path[512], text_path[512];
        snprintf(bc_path, sizeof bc_path, "%s/%s", vhlo_dir(), e->d_name);
        snprintf(text_path, sizeof text_path, "%s/%.*s", vhlo_dir(), (int)(len - 3), e->d_name);
        size_t nb, nt;
        unsigned char *bc = test_read_file(bc_path, &nb), *text = test_read_file(text_path, &nt);
        cr_assert(bc && text, "%s or its text is missing", bc_path);
        const tally *tp = compare_version(cx, (const char *)text, bc, nb);
        tally t = *tp;
        fprintf(stderr,
                "vhlo %-16.*s %3d functions match their text, %3d use what kiln lacks (in text "
                "too)\n",
                (int)(len - strlen(prefix) - 8), e->d_name + strlen(prefix), t.matched,
                t.text_unsupported);
        for (int i = 0; i < t.n_reasons; i++)
            fprintf(stderr, "    %3d x %s\n", t.counts[i], t.reasons[i]);
        cr_assert_eq(t.differ, 0, "%s: %d functions differ from their text", e->d_name, t.differ);
        cr_assert_eq(t.bytecode_failed, 0, "%s: %d functions fail from bytecode", e->d_name,
                     t.bytecode_failed);
        cr_assert_geq(t.matched, 90, "%s: only %d functions matched", e->d_name, t.matched);
        versions++;
        total += t.matched;
        free(bc);
        free(text);
    }
    closedir(d);
    cr_assert_geq(versions, 30, "only %d versions found", versions);
    fprintf(stderr, "vhlo: %d versions, %d functions matched\n", versions, total);
    kiln_ctx_release(cx);
}

Test(bytecode, a_newer_version_and_an_op_kiln_lacks_are_refused_by_name) {
    if (!have_vhlo_data()) cr_skip_test("no conformance data");
    kiln_ctx *cx = test_ctx();
    kiln_module *m = NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/invalid_vhlo_future.mlir.bc", vhlo_dir());
    cr_assert_eq(kiln_module_parse_file(cx, path, NULL, &m), KILN_INVALID_ARGUMENT);
    cr_assert_null(m);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "portable artifact (StableHLO_v2.0.0): newer than this reader (StableHLO 1.20)");
    /* The whole 1.20.0 module holds ops and types kiln lacks: the first is named, with its
     * offset. */
    snprintf(path, sizeof path, "%s/stablehlo_legalize_to_vhlo.1_20_0.mlir.bc", vhlo_dir());
    cr_assert_eq(kiln_module_parse_file(cx, path, NULL, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "unsupported type index_v1 at byte 3581");
    kiln_ctx_release(cx);
}

/* ---- an artifact built here ---------------------------------------------------------------- */

typedef struct buf {
    unsigned char b[4096];
    size_t n;
} buf;

static void byte(buf *o, unsigned v) {
    cr_assert_lt(o->n, sizeof o->b);
    o->b[o->n++] = (unsigned char)v;
}

static void varint(buf *o, uint64_t v) {
    if (v < 128) {
        byte(o, (unsigned)(v << 1 | 1));
        return;
    }
    int n = 2;
    while (n < 9 && v >= (UINT64_C(1) << (7 * n)))
        n++;
    if (n == 9) {
        byte(o, 0);
        for (int i = 0; i < 8; i++)
            byte(o, (unsigned)(v >> (8 * i)) & 0xff);
        return;
    }
    uint64_t e = ((v << 1) | 1) << (n - 1);
    for (int i = 0; i < n; i++)
        byte(o, (unsigned)(e >> (8 * i)) & 0xff);
}

static void svarint(buf *o, int64_t v) { varint(o, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }

static void bytes(buf *o, const buf *in) {
    for (size_t i = 0; i < in->n; i++)
        byte(o, in->b[i]);
}

static void section(buf *o, unsigned id, const buf *data) {
    byte(o, id);
    varint(o, data->n);
    bytes(o, data);
}

/* What the artifact is made of, so that tests can spoil one piece. */
typedef struct recipe {
    int32_t add_operand1;  /* the add's second operand (a value id) */
    bool tensor_of_itself; /* the tensor type's element type is the tensor type */
    uint32_t n_values;     /* the function region's declared value count */
    const char *op;        /* the op between the arguments ("add_v1") */
    const char *producer;
    int complex_dialect; /* 0: tensor<4xf32>; 1, 2: tensor<4xcomplex<f32>>, its complex type
                            vhlo's complex_v1 (1) or the builtin ComplexType (2) */
} recipe;

static recipe normal(void) {
    return (recipe){
        .add_operand1 = 1, .n_values = 3, .op = "add_v1", .producer = "StableHLO_v1.20.0"};
}

/* @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> { return a <op> b } in
 * bytecode version 6. */
static size_t build(const recipe *r, unsigned char *out) {
    enum { S_BUILTIN, S_VHLO, S_MODULE, S_FUNC, S_OP, S_RETURN, S_MAIN, S_PUBLIC, S_COUNT };
    const char *strings[S_COUNT] = {"builtin", "vhlo",      "module", "func_v1",
                                    r->op,     "return_v1", "main",   "public"};
    buf file = {.n = 0}, s = {.n = 0};
    for (const char *m = "ML\xefR"; *m; m++)
        byte(&file, (unsigned char)*m);
    varint(&file, 6);
    for (const char *p = r->producer; *p; p++)
        byte(&file, (unsigned char)*p);
    byte(&file, 0);

    /* Strings: the count, the sizes last first, the bytes. */
    varint(&s, S_COUNT);
    for (int i = S_COUNT; i-- > 0;)
        varint(&s, strlen(strings[i]) + 1);
    for (int i = 0; i < S_COUNT; i++) {
        for (const char *p = strings[i]; *p; p++)
            byte(&s, (unsigned char)*p);
        byte(&s, 0);
    }
    section(&file, 0, &s);

    /* Dialects builtin (0) and vhlo (1); op names module (0), func (1), op (2), return (3). */
    s.n = 0;
    varint(&s, 2);
    varint(&s, S_BUILTIN << 1);
    varint(&s, S_VHLO << 1);
    varint(&s, 4);
    varint(&s, 0), varint(&s, 1), varint(&s, S_MODULE << 1 | 1);
    varint(&s, 1), varint(&s, 3), varint(&s, S_FUNC << 1 | 1), varint(&s, S_OP << 1 | 1),
        varint(&s, S_RETURN << 1 | 1);
    section(&file, 1, &s);

    /* Attributes: 0 unknown location (builtin), 1 "main", 2 "public", 3 [] (vhlo),
     * 4 the function type. Types: 0 f32, 1 tensor<4xf32>, 2 (tensor, tensor) -> tensor,
     * and for a complex recipe 3 complex<f32>, the tensor's element type. */
    buf entries[9];
    int n_attrs = 5, n_types = r->complex_dialect ? 4 : 3;
    for (int i = 0; i < 9; i++)
        entries[i].n = 0;
    varint(&entries[0], 15);
    varint(&entries[1], 14), varint(&entries[1], S_MAIN);
    varint(&entries[2], 14), varint(&entries[2], S_PUBLIC);
    varint(&entries[3], 1), varint(&entries[3], 0);
    varint(&entries[4], 17), varint(&entries[4], 2);
    varint(&entries[5], 4);
    varint(&entries[6], 20), varint(&entries[6], 1), svarint(&entries[6], 4),
        varint(&entries[6], r->tensor_of_itself ? 1 : r->complex_dialect ? 3 : 0);
    varint(&entries[8], r->complex_dialect == 2 ? 9 : 1), varint(&entries[8], 0);
    varint(&entries[7], 8), varint(&entries[7], 2), varint(&entries[7], 1), varint(&entries[7], 1),
        varint(&entries[7], 1), varint(&entries[7], 1);
    s.n = 0;
    varint(&s, (uint64_t)n_attrs);
    varint(&s, (uint64_t)n_types);
    varint(&s, 0), varint(&s, 1), varint(&s, entries[0].n << 1 | 1);
    varint(&s, 1), varint(&s, 4);
    for (int i = 1; i < 5; i++)
        varint(&s, entries[i].n << 1 | 1);
    varint(&s, 1), varint(&s, r->complex_dialect == 1 ? 4 : 3);
    for (int i = 5; i < 8; i++)
        varint(&s, entries[i].n << 1 | 1);
    if (r->complex_dialect == 2) varint(&s, 0), varint(&s, 1);
    if (r->complex_dialect) varint(&s, entries[8].n << 1 | 1);
    section(&file, 3, &s);
    s.n = 0;
    for (int i = 0; i < (r->complex_dialect ? 9 : 8); i++)
        bytes(&s, &entries[i]);
    section(&file, 2, &s);

    /* IR: the module, whose isolated region holds the function, whose isolated region
     * holds the block (two arguments) with the op and the return. */
    buf fbody = {.n = 0}, mbody = {.n = 0};
    varint(&fbody, 1);                                        /* blocks */
    varint(&fbody, r->n_values);                              /* values */
    varint(&fbody, 2 << 1 | 1);                               /* two ops, with arguments */
    varint(&fbody, 2);                                        /* arguments */
    varint(&fbody, 1 << 1), varint(&fbody, 1 << 1);           /* tensor<4xf32>, no location */
    byte(&fbody, 0);                                          /* no use-lists */
    varint(&fbody, 2), byte(&fbody, 0x06), varint(&fbody, 0); /* the op: results, operands */
    varint(&fbody, 1), varint(&fbody, 1);
    varint(&fbody, 2), varint(&fbody, 0), varint(&fbody, (uint64_t)r->add_operand1);
    varint(&fbody, 3), byte(&fbody, 0x04), varint(&fbody, 0); /* return */
    varint(&fbody, 1), varint(&fbody, 2);
    varint(&mbody, 1), varint(&mbody, 0), varint(&mbody, 1 << 1); /* 1 block, 0 values, 1 op */
    varint(&mbody, 1), byte(&mbody, 0x50), varint(&mbody, 0), varint(&mbody, 1); /* func */
    varint(&mbody, 1 << 1 | 1);
    section(&mbody, 4, &fbody);
    s.n = 0;
    varint(&s, 1 << 1);
    varint(&s, 0), byte(&s, 0x50), varint(&s, 0), varint(&s, 0); /* module, properties 0 */
    varint(&s, 1 << 1 | 1);
    section(&s, 4, &mbody);
    section(&file, 4, &s);

    /* Properties: the module's (no name, no visibility), the function's five. */
    s.n = 0;
    varint(&s, 2);
    varint(&s, 2), varint(&s, 0), varint(&s, 0);
    varint(&s, 5), varint(&s, 3), varint(&s, 4), varint(&s, 3), varint(&s, 1), varint(&s, 2);
    section(&file, 8, &s);
    memcpy(out, file.b, file.n);
    return file.n;
}

static kiln_status parse(kiln_ctx *cx, const recipe *r, kiln_module **m) {
    unsigned char data[4096];
    size_t n = build(r, data);
    return kiln_module_parse(cx, (const char *)data, n, NULL, m);
}

Test(bytecode, an_artifact_built_byte_by_byte_runs) {
    kiln_ctx *cx = test_ctx();
    recipe r = normal();
    kiln_module *m = NULL;
    cr_assert_eq(parse(cx, &r, &m), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    kiln_tensor *a = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), (float[]){1, 2, 3, 4}, 16);
    kiln_tensor *b =
        kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(4), (float[]){10, 20, 30, 40}, 16);
    kiln_tensor *out = NULL;
    cr_assert_eq(kiln_exe_call(cx, exe, (kiln_tensor *[]){a, b}, &out), KILN_OK);
    cr_assert_float_eq(kiln_tensor_item(cx, out, 3), 44.0, 0);
    kiln_exe_release(exe);
    kiln_module_release(m);
    /* The same through a file, as `kiln run f.mlir.bc` reads it. */
    unsigned char data[4096];
    size_t n = build(&r, data);
    const char *path = test_tmp_path("built.mlir.bc");
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
    cr_assert_eq(kiln_module_parse_file(cx, path, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    cr_assert(strstr(text, "stablehlo.add %arg0, %arg1 : tensor<4xf32>"), "%s", text);
    kiln_string_free(cx, text);
    kiln_module_release(m);
    kiln_ctx_release(cx);
}

Test(bytecode, complex_types_of_vhlo_and_of_the_builtin_dialect_are_read) {
    kiln_ctx *cx = test_ctx();
    for (int dialect = 1; dialect <= 2; dialect++) {
        recipe r = normal();
        r.complex_dialect = dialect;
        unsigned char data[4096];
        size_t n = build(&r, data);
        kiln__bc bc;
        cr_assert(kiln__bc_open(&bc, cx, data, n), "%s", bc.error);
        kiln__strbuf sb;
        kiln__strbuf_init(&sb, cx);
        cr_assert(kiln__vhlo_to_text(&bc, &sb, NULL), "%s", bc.error);
        kiln__bc_close(&bc);
        char *text = kiln__strbuf_take(&sb);
        cr_assert(strstr(text, "\"stablehlo.add\"(%v1_0, %v1_1) : (tensor<4xcomplex<f32>>, "
                               "tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>"),
                  "%s", text);
        kiln__strbuf_free_string(cx, text);
    }
    kiln_ctx_release(cx);
}

Test(bytecode, every_truncation_is_an_error_with_a_byte_offset) {
    kiln_ctx *cx = test_ctx();
    recipe r = normal();
    unsigned char data[4096];
    size_t n = build(&r, data);
    for (size_t len = 4; len < n; len++) {
        kiln_module *m = NULL;
        cr_assert_eq(kiln_module_parse(cx, (const char *)data, len, NULL, &m),
                     KILN_INVALID_ARGUMENT, "a %zu-byte prefix parsed", len);
        cr_assert_null(m);
        cr_assert(strstr(kiln_ctx_error_message(cx), "portable artifact") &&
                      strstr(kiln_ctx_error_message(cx), "at byte"),
                  "%zu bytes: %s", len, kiln_ctx_error_message(cx));
        kiln_ctx_clear_error(cx);
    }
    kiln_ctx_release(cx);
}

Test(bytecode, broken_references_are_errors_not_crashes) {
    kiln_ctx *cx = test_ctx();
    kiln_module *m = NULL;
    recipe r = normal();
    r.tensor_of_itself = true;
    cr_assert_eq(parse(cx, &r, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "types nest too deeply");
    r = normal();
    r.add_operand1 = 9;
    cr_assert_eq(parse(cx, &r, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "value 9 out of range");
    r = normal();
    r.add_operand1 = 2; /* the op's own result */
    cr_assert_eq(parse(cx, &r, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "value 2 used before it is defined");
    r = normal();
    r.n_values = 2; /* fewer than the region defines */
    cr_assert_eq(parse(cx, &r, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "outside its region");
    r = normal();
    r.n_values = 1000000; /* more than the input could hold */
    cr_assert_eq(parse(cx, &r, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "a region of 1000000 values");
    r = normal();
    r.op = "no_such_op_v1";
    cr_assert_eq(parse(cx, &r, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "unsupported op vhlo.no_such_op_v1 at byte");
    r = normal();
    r.producer = "StableHLO_v1.21.0";
    cr_assert_eq(parse(cx, &r, &m), KILN_INVALID_ARGUMENT);
    expect_error(cx, KILN_INVALID_ARGUMENT, "newer than this reader");
    cr_assert_null(m);
    kiln_ctx_release(cx);
}

Test(bytecode, mutated_artifacts_never_crash) {
    kiln_ctx *cx = test_ctx();
    recipe r = normal();
    unsigned char data[4096], copy[4096];
    size_t n = build(&r, data);
    uint64_t state = 12345;
    int errors = 0;
    for (int round = 0; round < 3000; round++) {
        memcpy(copy, data, n);
        int flips = 1 + round % 4;
        for (int k = 0; k < flips; k++) {
            state = state * 6364136223846793005u + 1442695040888963407u;
            size_t at = 4 + (size_t)(state >> 33) % (n - 4);
            copy[at] ^= (unsigned char)(1u << ((state >> 20) & 7));
        }
        kiln_module *m = NULL;
        kiln_status s = kiln_module_parse(cx, (const char *)copy, n, NULL, &m);
        if (s != KILN_OK) {
            cr_assert(kiln_ctx_error_message(cx)[0], "an error without a message");
            errors++;
        }
        kiln_module_release(m);
        kiln_ctx_clear_error(cx);
    }
    cr_assert_gt(errors, 1000, "only %d of 3000 mutations were refused", errors);
    kiln_ctx_release(cx);
}

/* jax.export's Exported.serialize(): a FlatBuffer whose root table's field 13 holds the
 * artifact. Built here: the root offset, a vtable naming only field 13, the table, the
 * byte vector. */
static size_t wrap_exported(const unsigned char *artifact, size_t n, unsigned char *out) {
    size_t vt = 4, vt_size = 4 + 2 * 14, table = vt + vt_size, vec = table + 8;
    memset(out, 0, vec + 4 + n);
    out[0] = (unsigned char)table;
    out[vt] = (unsigned char)vt_size;
    out[vt + 2] = 8;                          /* the table's size */
    out[vt + 4 + 2 * 13] = 4;                 /* field 13 at table + 4 */
    out[table] = (unsigned char)(table - vt); /* soffset to the vtable */
    out[table + 4] = (unsigned char)(vec - (table + 4));
    out[vec] = (unsigned char)(n & 0xff);
    out[vec + 1] = (unsigned char)(n >> 8);
    memcpy(out + vec + 4, artifact, n);
    return vec + 4 + n;
}

Test(bytecode, the_file_jax_export_serializes_is_read_for_its_artifact) {
    kiln_ctx *cx = test_ctx();
    recipe r = normal();
    unsigned char artifact[4096], file[4200];
    size_t n = build(&r, artifact), size = wrap_exported(artifact, n, file);
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, (const char *)file, size, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    char *text = kiln_module_to_string(cx, m);
    cr_assert(strstr(text, "stablehlo.add %arg0, %arg1"), "%s", text);
    kiln_string_free(cx, text);
    kiln_module_release(m);
    /* A vector running past the end is not taken for one: the bytes are then text, and
     * refused as such. */
    file[4 + 32 + 8] = 0xff;
    file[4 + 32 + 9] = 0xff;
    cr_assert_eq(kiln_module_parse(cx, (const char *)file, size, NULL, &m), KILN_INVALID_ARGUMENT);
    cr_assert_null(m);
    kiln_ctx_clear_error(cx);
    kiln_ctx_release(cx);
}

/* What jax.jit hands a PJRT plugin (written by jaxlib 0.10.2 for `sin(a) * b + 1.0` on
 * f32[2,3]): StableHLO 1.17.0 with Shardy's mesh at the top of the module and
 * sdy.sharding on the arguments, both read past. */
Test(bytecode, a_jax_jit_program_with_shardy_attributes_runs) {
    size_t n;
    unsigned char *bc = test_read_file(KILN_TEST_DATA_DIR "/jax_jit_sin_mul_add.mlirbc", &n);
    cr_assert_not_null(bc);
    kiln_ctx *cx = test_ctx();
    kiln_module *m = NULL;
    cr_assert_eq(kiln_module_parse(cx, (const char *)bc, n, NULL, &m), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_exe *exe = NULL;
    cr_assert_eq(kiln_compile(cx, m, NULL, &exe), KILN_OK, "%s", kiln_ctx_error_message(cx));
    float a[6] = {0, 1, 2, 3, 4, 5};
    kiln_tensor *x = kiln_tensor_from_host(cx, KILN_F32, KILN_SHAPE(2, 3), a, sizeof a), *r;
    cr_assert_eq(kiln_exe_call_n(cx, exe, (kiln_tensor *[]){x, x}, 2, &r, 1), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(((const float *)kiln_tensor_data(r))[i], sinf(a[i]) * a[i] + 1.0f,
                           1e-6f);
    kiln_exe_release(exe);
    kiln_module_release(m);
    kiln_ctx_release(cx);
    free(bc);
}
