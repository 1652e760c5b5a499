#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The demo data-parallel on R MPI ranks (mpirun) against the single-process run of R
# shards per batch: both reach the bar, the replicas stay identical, and the saved weights
# are the same file, byte for byte. Usage: check_demo_data_parallel.sh DEMO MPIEXEC R DIR
set -u
demo="$1"
mpiexec="$2"
ranks="$3"
dir="$4"
mkdir -p "$dir"
rm -f "$dir/ranks.safetensors" "$dir/shards.safetensors"
out=$("$mpiexec" --allow-run-as-root --oversubscribe -np "$ranks" "$demo" --quick \
      --eager-steps 1 --data-parallel --out "$dir/ranks.safetensors" 2>&1)
rc=$?
echo "$out" | tr '\r' '\n' | grep -v "^epoch" | tail -8
[ "$rc" -eq 0 ] || { echo "check_demo_data_parallel: mpirun exit status $rc" >&2; exit 1; }
for want in "data-parallel: $ranks ranks" "reached 90%" \
            "the $ranks replicas' parameters and optimizer state are identical"; do
    case "$out" in
    *"$want"*) ;;
    *) echo "check_demo_data_parallel: the output lacks '$want'" >&2; exit 1 ;;
    esac
done
one=$("$demo" --quick --eager-steps 1 --shards "$ranks" --out "$dir/shards.safetensors" 2>&1) || {
    echo "$one" >&2
    echo "check_demo_data_parallel: the run of $ranks shards failed" >&2
    exit 1
}
acc_ranks=$(echo "$out" | grep -o "test accuracy [0-9.]*%")
acc_shards=$(echo "$one" | grep -o "test accuracy [0-9.]*%")
echo "ranks: $acc_ranks; shards in one process: $acc_shards"
[ "$acc_ranks" = "$acc_shards" ] || { echo "check_demo_data_parallel: accuracies differ" >&2; exit 1; }
cmp "$dir/ranks.safetensors" "$dir/shards.safetensors" || {
    echo "check_demo_data_parallel: the weights of $ranks ranks differ from those of $ranks shards" >&2
    exit 1
}
echo "check_demo_data_parallel: $ranks ranks: the same weights as $ranks shards in sequence"
