#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The MPI cases of `make bench` (bench/README.md): kiln's all_reduce on 2 ranks against
# MPI_Allreduce of the same buffers (kiln-mpi-bench), and the digits CNN's training step
# data-parallel on 2 ranks (1 thread each) against the single-process step (1 and 2
# threads), from kiln-demo's own step medians. Figures go to bench/results/mpi.json and
# bench/results/mpi_step.txt. Without MPI (no libkiln_mpi) it says so and does nothing.
# usage: run_mpi.sh BUILD_DIR [--quick]
set -eu
build=$1
quick=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
out="$here/results"
mkdir -p "$out"
if [ ! -x "$build/bench/kiln-mpi-bench" ] || ! command -v mpirun >/dev/null; then
    echo "bench: MPI cases skipped: libkiln_mpi was not built (install libopenmpi-dev: make deps)"
    exit 0
fi
mpi="mpirun --allow-run-as-root --oversubscribe -np 2"
$mpi "$build/bench/kiln-mpi-bench" $quick --json "$out/mpi.json"
epochs=4
[ "$quick" = --quick ] && epochs=2
step() { # the compiled step's median from kiln-demo's report
    grep -o "compiled [0-9.]* ms" | grep -o "[0-9.]*"
}
demo="$build/examples/kiln-demo --epochs $epochs --eager-steps 1 --min-accuracy 0"
tmp=$(mktemp -d)
dp=$(OMP_NUM_THREADS=1 $mpi $demo --data-parallel --out "$tmp/a.st" 2>&1 | step)
one=$(OMP_NUM_THREADS=1 $demo --out "$tmp/b.st" | step)
two=$(OMP_NUM_THREADS=2 $demo --out "$tmp/c.st" | step)
rm -rf "$tmp"
{
    echo "digits CNN training step, batch 32 (kiln-demo's compiled step, median):"
    echo "  data-parallel, 2 ranks x 1 thread (16 examples each): $dp ms"
    echo "  one process, 1 thread:                                $one ms"
    echo "  one process, 2 threads:                               $two ms"
} | tee "$out/mpi_step.txt"
