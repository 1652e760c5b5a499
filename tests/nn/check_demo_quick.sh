#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The demo shortened (2 epochs, a 90% bar): it must exit 0, report the compiled and eager
# step times, reload identical predictions, and print the training step as StableHLO.
set -u
demo="$1"
weights="$2"
out=$("$demo" --quick --eager-steps 2 --print-ir --out "$weights" 2>&1)
rc=$?
echo "$out" | sed -n '1,/module @train_step/p'
[ "$rc" -eq 0 ] || { echo "check_demo_quick: exit status $rc" >&2; exit 1; }
for want in "reached 90%" "compiled" "eager" "test predictions identical" \
            "module @train_step" "stablehlo.convolution" "kiln.path = \"state.params.conv1.w\""; do
    case "$out" in
    *"$want"*) ;;
    *) echo "check_demo_quick: the output lacks '$want'" >&2; exit 1 ;;
    esac
done
echo "check_demo_quick: ok"
