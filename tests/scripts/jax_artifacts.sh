#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs JAX-made portable artifacts (jax.export's .mlir.bc and Exported.serialize()'s file)
# with `kiln run` and compares the results with JAX's on
# XLA's CPU (tests/scripts/jax_artifacts.py). JAX comes from PyPI into tests/.venv-jax
# (scripts/jax_env.sh); when it cannot be installed the test says so and exits 77, which
# CTest reports as skipped, never as passed.
# usage: jax_artifacts.sh KILN_CLI SOURCE_DIR WORK_DIR
set -eu
kiln=$1
src=$2
work=$3
py=$(sh "$src/tests/scripts/jax_python.sh" "$src" "$work.env.log") || exit $?
rm -rf "$work"
mkdir -p "$work"
"$py" "$src/tests/scripts/jax_artifacts.py" make "$work"
status=0
for artifact in "$work"/*.mlir.bc "$work"/*.jax; do
    file=$(basename "$artifact")
    name=${file%%.*}
    mkdir -p "$work/$file.out"
    set --
    i=0
    while [ -f "$work/$name.in$i.npy" ]; do
        set -- "$@" --input "$work/$name.in$i.npy"
        i=$((i + 1))
    done
    if ! "$kiln" run "$artifact" "$@" --output-dir "$work/$file.out" >"$work/$file.log" 2>&1; then
        echo "$file: kiln run failed:"
        cat "$work/$file.log"
        status=1
    fi
done
# The artifact and JAX's text of it (with locations) give the same module.
for text in "$work"/*.txt; do
    name=$(basename "$text" .txt)
    "$kiln" print "$text" >"$work/$name.from_text" 2>&1 || echo "$name: kiln print of its text failed" >>"$work/$name.from_text"
    "$kiln" print "$work/$name.mlir.bc" >"$work/$name.from_bc" 2>&1
    if ! cmp -s "$work/$name.from_text" "$work/$name.from_bc"; then
        echo "$name: the artifact and its text give different modules:"
        diff "$work/$name.from_text" "$work/$name.from_bc" | head -20
        status=1
    fi
done
"$py" "$src/tests/scripts/jax_artifacts.py" check "$work" || status=1
exit $status
