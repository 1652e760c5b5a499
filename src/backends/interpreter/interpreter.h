/* SPDX-License-Identifier: Apache-2.0 */
/* The interpreter backend (interpreter.c): the evaluator alone, op by op. */
#ifndef KILN_BACKENDS_INTERPRETER_H
#define KILN_BACKENDS_INTERPRETER_H

#include "backend/backend.h"

const kiln__backend *kiln__interpreter_backend(void);

#endif
