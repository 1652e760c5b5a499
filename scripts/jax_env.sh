#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Makes tests/.venv-jax from the pinned tests/requirements-jax.txt (once, and again when
# that file changes), for the tests that check kiln against JAX-made portable artifacts.
# The interpreter: $JAX_PYTHON if set, else python3.11, else python3. Exits non-zero, saying
# why, when the packages cannot be installed (no network to PyPI, say).
set -eu
cd "$(dirname "$0")/.."
VENV=tests/.venv-jax
REQ=tests/requirements-jax.txt
base=${JAX_PYTHON:-$(command -v python3.11 || command -v python3 || true)}
if [ -z "$base" ]; then
    echo "jax_env: no python3 found (set JAX_PYTHON)" >&2
    exit 1
fi
exec sh scripts/venv.sh "$VENV" "$REQ" "$base" jax_env
