#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# kiln's small float conversions against ml_dtypes (pinned with JAX in tests/.venv-jax),
# bit for bit (tests/scripts/small_float_check.py). Skipped, visibly (exit 77), when the
# venv cannot be made.
# usage: small_float_check.sh KILN_SMALL_FLOAT_TOOL SOURCE_DIR WORK_DIR
set -eu
tool=$1
src=$2
work=$3
py=$(sh "$src/tests/scripts/jax_python.sh" "$src" "$work.env.log") || exit $?
exec "$py" "$src/tests/scripts/small_float_check.py" "$tool" "$work"
