#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Prints the Python of the pinned JAX venv (tests/.venv-jax, made by scripts/jax_env.sh on
# first use), for the tests that need JAX. When JAX cannot be installed it says so on
# stderr and exits 77, which the callers pass on and CTest reports as skipped.
# usage: py=$(jax_python.sh SOURCE_DIR LOG) || exit $?
set -eu
src=$1
log=$2
if ! sh "$src/scripts/jax_env.sh" >"$log" 2>&1; then
    echo "SKIPPED: JAX could not be installed from PyPI (scripts/jax_env.sh):" >&2
    tail -5 "$log" >&2
    exit 77
fi
echo "$src/tests/.venv-jax/bin/python"
