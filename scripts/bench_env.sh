#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Sets up what `make bench` alone needs: the benchmark peers (JAX, PyTorch, ONNX Runtime,
# numpy, matplotlib for the chart) in a virtual environment, bench/.venv, from the pinned
# bench/requirements.txt (made once, and again whenever that file changes), and Debian's
# hyperfine for the time_to_load peers. Building, testing and the demo never need these.
#
# The venv's interpreter: $BENCH_PYTHON if set, else python3.11, else python3 (on the
# project's machines the pyenv CPython 3.11 on PATH, for which PyPI's torch==2.13.0 CPU build
# is at hand; Debian's /usr/bin/python3 stays as it is).
set -eu
cd "$(dirname "$0")/.."
VENV=bench/.venv
REQ=bench/requirements.txt

base=${BENCH_PYTHON:-$(command -v python3.11 || command -v python3 || true)}
if [ -z "$base" ]; then
    echo "bench_env: no python3 found (set BENCH_PYTHON)" >&2
    exit 1
fi
sh scripts/venv.sh "$VENV" "$REQ" "$base" bench_env

# hyperfine (Debian) times whole processes for time_to_load; without it those peers are
# reported missing.
if ! command -v hyperfine >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends hyperfine ||
            (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y \
                --no-install-recommends hyperfine) ||
            echo "bench_env: hyperfine not installed; time_to_load peers will be missing" >&2
    else
        echo "bench_env: hyperfine missing (as root: apt-get install hyperfine);" \
            "time_to_load peers will be missing" >&2
    fi
fi
