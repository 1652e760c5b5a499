#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The checks that need a GPU, in one run, for a machine lent with one (an H200 here):
# build with every core, run the CUDA checks (tests/backend/test_cuda_codegen.c: the
# generated kernels compiled for the device and run on it against the CPU evaluator, which
# CPU-only machines skip, saying so; and everything else they check), and
# write the logs and what the device is to $OUT (default ./cuda-check). Meant to finish in a
# few minutes so that a rerun fits in the device time.
#   scripts/cuda-device-check.sh [BUILD_DIR]
set -u
build=${1:-build-cuda}
out=${OUT:-cuda-check}
mkdir -p "$out"
start=$(date +%s)
{
    echo "date: $(date -u)"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    ls /usr/local/cuda/bin/nvcc 2>/dev/null && /usr/local/cuda/bin/nvcc --version | tail -2
} > "$out/device.txt" 2>&1
jobs=$(nproc)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release > "$out/configure.log" 2>&1 &&
    cmake --build "$build" -j "$jobs" --target test_backend > "$out/build.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "cuda-device-check: the build failed (see $out/build.log)" >&2
    exit "$rc"
fi
"$build/tests/test_backend" --filter 'cuda_codegen/*' --verbose > "$out/tests.log" 2>&1
rc=$?
grep -E "PASS|FAIL|SKIP|match the evaluator|registers" "$out/tests.log" | head -40
echo "cuda-device-check: tests rc=$rc in $(( $(date +%s) - start )) s; logs in $out"
exit "$rc"
