/* SPDX-License-Identifier: Apache-2.0 */
/* The printer's golden modules (tests/ir/test_print.c), also read back by the parser's
 * round-trip tests (tests/ir/test_parse.c). */
#ifndef KILN_TEST_IR_GOLDENS_H
#define KILN_TEST_IR_GOLDENS_H

extern const char *const golden_emlx;
extern const char *const golden_unary;
extern const char *const golden_binary;
extern const char *const golden_compare_select;
extern const char *const golden_rng;
extern const char *const golden_movement;
extern const char *const golden_indexing;
extern const char *const golden_reductions;
extern const char *const golden_contractions;
extern const char *const golden_control;
extern const char *const golden_handmade;
extern const char *const golden_names;
extern const char *const golden_nested_calls;
extern const char *const golden_collective;
extern const char *const golden_collective_text;
extern const char *const golden_run_parallel;
extern const char *const golden_custom_call;
extern const char *const golden_dynamic;
extern const char *const golden_token;
extern const char *const golden_tuple;

#endif
