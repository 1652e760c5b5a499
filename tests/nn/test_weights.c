/* SPDX-License-Identifier: Apache-2.0 */
/* Parameter structs as safetensors files, and the digits loader. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>
#include <zlib.h>

#include "nn_test.h"

Test(nn_weights, a_cnn_round_trips_through_safetensors) {
    kiln_ctx *cx = test_ctx();
    kiln_nn_cnn_config c = kiln_nn_cnn_config_digits();
    kiln_nn_cnn p, q;
    kiln_nn_cnn_create(cx, &c, kiln_key_from_seed(9), &p);
    const char *path = test_tmp_path("cnn.safetensors");
    const char *meta[] = {"note", "test"};
    cr_assert_eq(kiln_nn_save(cx, path, &kiln_tree_def_kiln_nn_cnn, &p, meta, 1), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_eq(kiln_nn_load(cx, path, &kiln_tree_def_kiln_nn_cnn, &p, &q), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    kiln_tensor *a[8], *b[8];
    kiln_tree_flatten(cx, &kiln_tree_def_kiln_nn_cnn, &p, a, 8, NULL, 0);
    kiln_tree_flatten(cx, &kiln_tree_def_kiln_nn_cnn, &q, b, 8, NULL, 0);
    for (int i = 0; i < 8; i++) {
        cr_assert_neq(a[i], b[i]);
        cr_assert_eq(kiln_tensor_nbytes(a[i]), kiln_tensor_nbytes(b[i]));
        cr_assert(
            memcmp(kiln_tensor_data(a[i]), kiln_tensor_data(b[i]), kiln_tensor_nbytes(a[i])) == 0);
    }
    /* The file is plain safetensors named by tree paths. */
    kiln_safetensors *st;
    cr_assert_eq(kiln_safetensors_load(cx, path, &st), KILN_OK);
    cr_assert_eq(kiln_safetensors_count(st), 8);
    cr_assert_geq(kiln_safetensors_find(st, "conv2.w"), 0);
    cr_assert_str_eq(kiln_safetensors_metadata(st, "kiln.tree"), "kiln_nn_cnn");
    cr_assert_str_eq(kiln_safetensors_metadata(st, "note"), "test");
    kiln_safetensors_release(st);
    kiln_ctx_release(cx);
}

Test(nn_weights, loading_names_the_missing_or_mismatched_path) {
    kiln_ctx *cx = test_ctx();
    kiln_nn_cnn_config c = kiln_nn_cnn_config_digits();
    kiln_nn_cnn p, q;
    memset(&q, 0, sizeof q);
    kiln_nn_cnn_create(cx, &c, kiln_key_from_seed(10), &p);
    const char *path = test_tmp_path("dense.safetensors");
    /* A file holding only a dense layer: "w" and "b". */
    cr_assert_eq(kiln_nn_save(cx, path, &kiln_tree_def_kiln_nn_dense_params, &p.fc1, NULL, 0),
                 KILN_OK);
    kiln_nn_load(cx, path, &kiln_tree_def_kiln_nn_cnn, &p, &q);
    expect_error(cx, KILN_NOT_FOUND, "has no tensor 'conv1.w' (expected f32[32,1,3,3]");
    cr_assert_null(q.conv1.w, "out_tree is not written on error");
    /* The right names with another shape. */
    const char *path2 = test_tmp_path("cnn_small.safetensors");
    kiln_nn_cnn_config small = c;
    small.channels1 = 8;
    kiln_nn_cnn r;
    kiln_nn_cnn_create(cx, &small, kiln_key_from_seed(11), &r);
    kiln_nn_save(cx, path2, &kiln_tree_def_kiln_nn_cnn, &r, NULL, 0);
    expect_ok(cx);
    kiln_nn_load(cx, path2, &kiln_tree_def_kiln_nn_cnn, &p, &q);
    expect_error(cx, KILN_INVALID_ARGUMENT,
                 "tensor 'conv1.w' is f32[8,1,3,3]; expected f32[32,1,3,3]");
    /* Another dtype. */
    kiln_nn_dense_params d = {kiln_zeros(cx, KILN_F64, KILN_SHAPE(2, 2)),
                              kiln_zeros(cx, KILN_F32, KILN_SHAPE(2))},
                         like = {kiln_zeros(cx, KILN_F32, KILN_SHAPE(2, 2)), d.b}, out;
    kiln_nn_save(cx, path2, &kiln_tree_def_kiln_nn_dense_params, &d, NULL, 0);
    kiln_nn_load(cx, path2, &kiln_tree_def_kiln_nn_dense_params, &like, &out);
    expect_error(cx, KILN_INVALID_ARGUMENT, "tensor 'w' is f64[2,2]; expected f32[2,2]");
    /* No file; a NULL leaf; NULL arguments. */
    kiln_nn_load(cx, test_tmp_path("none.safetensors"), &kiln_tree_def_kiln_nn_cnn, &p, &q);
    cr_assert_eq(kiln_ctx_status(cx), KILN_NOT_FOUND);
    kiln_ctx_clear_error(cx);
    kiln_nn_dense_params holey = {NULL, d.b};
    kiln_nn_save(cx, path2, &kiln_tree_def_kiln_nn_dense_params, &holey, NULL, 0);
    expect_error(cx, KILN_INVALID_ARGUMENT, "'w' is NULL");
    kiln_nn_save(cx, NULL, &kiln_tree_def_kiln_nn_dense_params, &d, NULL, 0);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_nn_save: path is NULL");
    kiln_nn_save(cx, path2, &kiln_tree_def_kiln_nn_dense_params, &d, NULL, 1);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_nn_save: n_metadata = 1");
    kiln_nn_load(cx, path2, &kiln_tree_def_kiln_nn_dense_params, &like, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_nn_load: out_tree is NULL");
    kiln_ctx_release(cx);
}

Test(nn_data, digits_load_and_split_by_seed) {
    kiln_ctx *cx = test_ctx();
    FILE *f = fopen(kiln_nn_digits_default_path(), "rb");
    if (!f) cr_skip_test("python3-sklearn is not installed (make deps installs it)");
    fclose(f);
    kiln_nn_digits a, b, c;
    cr_assert_eq(kiln_nn_digits_load(cx, NULL, 1, 0.2, &a), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_eq(a.n_train + a.n_test, 1797);
    cr_assert_eq(a.n_test, 359);
    cr_assert(kiln_shape_equal(kiln_tensor_shape(a.train_images), &KILN_SHAPE(1438, 1, 8, 8)));
    /* Every label 0..9 appears about 180 times; pixels are in [0, 1] in steps of 1/16. */
    int counts[10] = {0};
    const int32_t *tl = kiln_tensor_data(a.train_labels), *sl = kiln_tensor_data(a.test_labels);
    for (int64_t i = 0; i < a.n_train; i++)
        counts[tl[i]]++;
    for (int64_t i = 0; i < a.n_test; i++)
        counts[sl[i]]++;
    for (int k = 0; k < 10; k++)
        cr_assert(counts[k] > 170 && counts[k] < 190, "label %d: %d", k, counts[k]);
    const float *px = kiln_tensor_data(a.train_images);
    for (int64_t i = 0; i < a.n_train * 64; i++)
        cr_assert(px[i] >= 0 && px[i] <= 1 && px[i] * 16 == floorf(px[i] * 16));
    kiln_nn_digits_load(cx, NULL, 1, 0.2, &b);
    kiln_nn_digits_load(cx, NULL, 2, 0.2, &c);
    expect_ok(cx);
    cr_assert(memcmp(kiln_tensor_data(a.test_labels), kiln_tensor_data(b.test_labels), 359 * 4) ==
              0);
    cr_assert(memcmp(kiln_tensor_data(a.test_images), kiln_tensor_data(c.test_images), 359 * 256) !=
              0);
    kiln_ctx_release(cx);
}

static void write_gz(const char *path, const char *text) {
    gzFile g = gzopen(path, "wb");
    cr_assert_not_null(g);
    gzputs(g, text);
    gzclose(g);
}

Test(nn_data, digits_errors_name_the_package_or_the_line) {
    kiln_ctx *cx = test_ctx();
    kiln_nn_digits d;
    kiln_nn_digits_load(cx, "/nonexistent/digits.csv.gz", 0, 0.2, &d);
    expect_error(cx, KILN_NOT_FOUND, "apt-get install python3-sklearn");
    cr_assert_null(d.train_images);
    char row[400] = "", bad[1300];
    for (int i = 0; i < 64; i++)
        strcat(row, i % 3 ? "16," : "0,");
    strcat(row, "7\n");
    const char *path = test_tmp_path("digits.csv.gz");
    /* A good file of three rows splits 1 + 2 with fraction 0.3. */
    snprintf(bad, sizeof bad, "%s%s%s", row, row, row);
    write_gz(path, bad);
    cr_assert_eq(kiln_nn_digits_load(cx, path, 0, 0.3, &d), KILN_OK, "%s",
                 kiln_ctx_error_message(cx));
    cr_assert_eq(d.n_test, 1);
    cr_assert_eq(kiln_tensor_item(cx, d.train_labels, 1), 7);
    snprintf(bad, sizeof bad, "%s1,2,3\n", row);
    write_gz(path, bad);
    kiln_nn_digits_load(cx, path, 0, 0.3, &d);
    expect_error(cx, KILN_DATA_LOSS, "line 2 has 3 values; expected 65");
    snprintf(bad, sizeof bad, "%s%.*s17,7\n", row, (int)strlen(row) - 4, row);
    write_gz(path, bad);
    kiln_nn_digits_load(cx, path, 0, 0.3, &d);
    expect_error(cx, KILN_DATA_LOSS, "line 2: value 64 is missing or not an integer in 0..16");
    snprintf(bad, sizeof bad, "%s%.*s,12\n", row, (int)strlen(row) - 1, row);
    write_gz(path, bad);
    kiln_nn_digits_load(cx, path, 0, 0.3, &d);
    expect_error(cx, KILN_DATA_LOSS, "line 2 has more than 65 values");
    snprintf(bad, sizeof bad, "%s%.*s12\n", row, (int)strlen(row) - 2, row);
    write_gz(path, bad);
    kiln_nn_digits_load(cx, path, 0, 0.3, &d);
    expect_error(cx, KILN_DATA_LOSS, "value 65 is missing or not an integer in 0..9");
    write_gz(path, row);
    kiln_nn_digits_load(cx, path, 0, 0.3, &d);
    expect_error(cx, KILN_DATA_LOSS, "has 1 rows: too few to split");
    /* A gzip stream cut short: zlib's error, named. */
    snprintf(bad, sizeof bad, "%s%s%s", row, row, row);
    write_gz(path, bad);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    cr_assert_eq(truncate(path, size / 2), 0);
    kiln_nn_digits_load(cx, path, 0, 0.3, &d);
    expect_error(cx, KILN_DATA_LOSS, "is not a valid gzip file");
    kiln_nn_digits_load(cx, path, 0, 1.0, &d);
    expect_error(cx, KILN_INVALID_ARGUMENT, "test_fraction = 1");
    kiln_nn_digits_load(cx, path, 0, 0.5, NULL);
    expect_error(cx, KILN_INVALID_ARGUMENT, "kiln_nn_digits_load: out is NULL");
    kiln_ctx_release(cx);
}
