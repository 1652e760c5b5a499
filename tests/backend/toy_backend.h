/* The toy backend of tests/backend/toy_backend.c, and one that reports itself unavailable
 * (as CUDA does on a machine without a GPU). */
#ifndef KILN_TESTS_TOY_BACKEND_H
#define KILN_TESTS_TOY_BACKEND_H

#include "backend/backend.h"

extern const kiln__backend toy_backend;
extern const kiln__backend toy_missing_backend;

#endif
