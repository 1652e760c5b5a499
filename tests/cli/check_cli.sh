#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Tests of the kiln command-line tool. Usage: check_cli.sh CASE KILN NPY_TOOL WORKDIR
#   CASE: run_printed | run_jax | print | usage | errors | help | conform_sample
# NPY_TOOL is tests/support/npy_tool.c (writes [2,3] tensors of fixed values:
# f32 -1.5, -0.0, 0.1, 1, 2.5, FLT_MAX).
set -u
case_name=$1 kiln=$2 npy_tool=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect STATUS PATTERN CMD...: runs CMD, checks its exit status and that its output
# (stdout and stderr) matches the grep -E pattern.
expect() {
    want=$1 pattern=$2
    shift 2
    "$@" >"$work/out.txt" 2>&1
    got=$?
    if [ "$got" -ne "$want" ]; then
        fail "$* exited $got, expected $want"; sed 's/^/  | /' "$work/out.txt"
    elif [ -n "$pattern" ] && ! grep -Eq -- "$pattern" "$work/out.txt"; then
        fail "$*: output lacks /$pattern/"; sed 's/^/  | /' "$work/out.txt"
    fi
}

"$npy_tool" write f32 "$work/x.npy" || exit 1
"$npy_tool" write i32 "$work/i.npy" || exit 1

case $case_name in
run_printed)
    mkdir -p "$work/o"
    expect 0 '^out0: f32\[2,3\] = \[-4\.5, -0, 0\.3' \
        "$kiln" run "$here/kiln_printed.mlir" --input "$work/x.npy" --input "$work/x.npy" \
        --output-dir "$work/o"
    grep -q 'inf\]' "$work/out.txt" || fail "2 * FLT_MAX + FLT_MAX should print inf"
    "$npy_tool" read "$work/o/out0.npy" >"$work/read.txt" || fail "out0.npy unreadable"
    grep -q '^f32 \[2,3\]' "$work/read.txt" || fail "out0.npy: $(head -1 "$work/read.txt")"
    grep -qx -- '-4.5' "$work/read.txt" || fail "out0.npy lacks -4.5"
    expect 0 '^out0: f32\[2,3\] = \[-4\.5' \
        "$kiln" run "$here/kiln_printed.mlir" --mode eval --input "$work/x.npy" \
        --input "$work/x.npy"
    ;;
bytecode)
    # A portable artifact (MLIR bytecode of VHLO) is read like text, by every command.
    bc="$here/../fuzz/corpus/bytecode/add_f32.mlir.bc"
    expect 0 'stablehlo\.add %arg0, %arg1 : tensor<4xf32>' "$kiln" print "$bc"
    expect 1 "input 0 .*: kiln_exe_call: args\[0\] has type f32\[2,3\]; expected f32\[4\]" \
        "$kiln" run "$bc" --input "$work/x.npy" --input "$work/x.npy"
    expect 0 '^SKIP add_f32\.mlir\.bc#1: unsupported: the entry function takes 2 arguments' \
        "$kiln" conform "$bc"
    head -c 100 "$bc" >"$work/truncated.mlir.bc"
    expect 1 'truncated\.mlir\.bc: portable artifact: section 1 of 12 bytes runs past the end at byte 91' \
        "$kiln" print "$work/truncated.mlir.bc"
    ;;
run_jax)
    mkdir -p "$work/o"
    expect 0 '^out0: f32\[2,3\] = \[-1\.5, 1, 2\.0999999, 4, 6\.5, 3\.4028235e\+38\]$' \
        "$kiln" run "$here/jax_style.mlir" --input "$work/x.npy" --output-dir "$work/o"
    [ -f "$work/o/out0.npy" ] || fail "no out0.npy"
    [ ! -f "$work/o/out1.npy" ] || fail "one result, but out1.npy was written"
    expect 0 '^out0: f32\[2,3\]' "$kiln" run "$here/jax_style.mlir" --entry main \
        --mode compiled --input "$work/x.npy"
    # JAX test data checks its results with custom_call @check.* ops.
    expect 0 '^checks: 3 of 3 passed$' "$kiln" run "$here/jax_checks.mlir"
    grep -qx 'out0: f32\[2\] = \[2, 4\]' "$work/out.txt" || fail "jax_checks: out0"
    sed 's/4.000000e+00]/4.500000e+00]/' "$here/jax_checks.mlir" >"$work/bad_checks.mlir"
    expect 1 'bad_checks\.mlir:7: expect_close failed: index 1: got 4, expected 4\.5' \
        "$kiln" run "$work/bad_checks.mlir"
    expect 0 '^PASS jax_checks.mlir#1$' "$kiln" conform "$here/jax_checks.mlir"
    expect 1 '^FAIL bad_checks.mlir#1: line 7: expect_close: index 1' \
        "$kiln" conform "$work/bad_checks.mlir"
    ;;
print)
    expect 0 'stablehlo\.multiply' "$kiln" print "$here/kiln_printed.mlir"
    cp "$work/out.txt" "$work/p1.mlir"
    # kiln_printed.mlir is kiln's printer's own output: it reads back to the same text.
    cmp -s "$work/p1.mlir" "$here/kiln_printed.mlir" || { fail "print differs from the fixture";
        diff "$here/kiln_printed.mlir" "$work/p1.mlir" | head -20; }
    # Printing what was printed gives the same text.
    expect 0 '' "$kiln" print "$work/p1.mlir"
    cmp -s "$work/out.txt" "$work/p1.mlir" || { fail "print is not a fixed point";
        diff "$work/p1.mlir" "$work/out.txt" | head -20; }
    expect 0 'dense<"0x' "$kiln" print "$here/jax_style.mlir" --stage parsed
    expect 0 'stablehlo\.add' "$kiln" print "$here/jax_style.mlir" --stage optimized
    # The executable: a fused kernel with its instructions, the memory plan, the cost.
    expect 0 'fused kernels' "$kiln" print "$here/kiln_printed.mlir" --stage fused
    grep -q 'kernel #0' "$work/out.txt" || fail "--stage fused shows no kernel"
    grep -q '^memory plan: arena peak' "$work/out.txt" || fail "--stage fused shows no memory plan"
    grep -q '^kernel cost: [0-9]* flops' "$work/out.txt" || fail "--stage fused shows no cost"
    ;;
usage)
    expect 2 'usage' "$kiln"
    expect 2 "unknown command" "$kiln" frobnicate
    expect 2 'no program' "$kiln" run
    expect 2 '--mode' "$kiln" run "$here/kiln_printed.mlir" --mode fast
    expect 2 'needs a value' "$kiln" run "$here/kiln_printed.mlir" --input
    expect 2 'unknown option' "$kiln" run "$here/kiln_printed.mlir" --bogus
    expect 2 'more than one program' "$kiln" run a.mlir b.mlir
    expect 2 '--stage' "$kiln" print "$here/kiln_printed.mlir" --stage raw
    expect 2 'no program' "$kiln" print
    expect 2 'no test file' "$kiln" conform
    expect 2 '--require-tier' "$kiln" conform "$here" --require-tier core
    expect 2 '--mode' "$kiln" conform "$here" --mode fast
    ;;
errors)
    expect 1 '2 arguments, 1 input given' "$kiln" run "$here/kiln_printed.mlir" \
        --input "$work/x.npy"
    expect 1 '0 inputs given' "$kiln" run "$here/jax_style.mlir"
    # An input of the wrong dtype is named by its position and file.
    expect 1 "input 1 \\($work/i.npy\\).*args\\[1\\]" "$kiln" run "$here/kiln_printed.mlir" \
        --input "$work/x.npy" --input "$work/i.npy"
    expect 1 "input 0 \\($work/missing.npy\\)" "$kiln" run "$here/jax_style.mlir" \
        --input "$work/missing.npy"
    printf 'func.func @main() -> tensor<i64> {\n  %%0 = stablehlo.constant dense<1> : tensor<i64>\n  return %%1 : tensor<i64>\n}\n' >"$work/bad.mlir"
    expect 1 "bad\\.mlir:3:[0-9]+: error" "$kiln" run "$work/bad.mlir"
    expect 1 "bad\\.mlir:3:[0-9]+: error" "$kiln" print "$work/bad.mlir"
    expect 1 "missing\\.mlir" "$kiln" run "$work/missing.mlir"
    expect 1 "missing\\.mlir: cannot open for reading" "$kiln" print "$work/missing.mlir"
    # Only regular files are read: a device would never end, a FIFO never get a writer.
    expect 1 "/dev/zero: not a regular file" "$kiln" print /dev/zero
    expect 1 "/dev/zero: not a regular file" "$kiln" run /dev/zero
    expect 1 "/dev/zero: not a regular file" "$kiln" conform /dev/zero
    mkfifo "$work/fifo.mlir"
    expect 1 "fifo\\.mlir: not a regular file" timeout 10 "$kiln" print "$work/fifo.mlir"
    expect 1 "fifo\\.mlir: not a regular file" timeout 10 "$kiln" conform "$work/fifo.mlir"
    ;;
help)
    expect 0 'run PROGRAM' "$kiln" --help
    expect 0 'conform' "$kiln" --help
    for opt in --input --output-dir --mode --entry; do
        expect 0 "$opt" "$kiln" run --help
    done
    for opt in --stage parsed optimized fused --entry; do
        expect 0 "$opt" "$kiln" print --help
    done
    for opt in --mode --tier-file --require-tier --timeout --no-fork 'PASS' 'FAIL' 'SKIP'; do
        expect 0 "$opt" "$kiln" conform --help
    done
    ;;
conform_sample)
    expect 1 '^1 passed, 2 failed, 1 skipped$' "$kiln" conform "$here/conform_sample.mlir"
    cp "$work/out.txt" "$work/conform.txt"
    grep -qx 'PASS conform_sample.mlir#1' "$work/conform.txt" || fail "chunk 1 should pass"
    grep -Eq '^FAIL conform_sample.mlir#2: line [0-9]+: expect_almost_eq_const: .*index 1' \
        "$work/conform.txt" || fail "chunk 2 should fail at index 1"
    grep -Eq '^SKIP conform_sample.mlir#3: unsupported: ' "$work/conform.txt" ||
        fail "chunk 3 (an unknown op) should be skipped"
    grep -q 'conform_sample.mlir#4' "$work/conform.txt" && fail "chunk 4 has no function"
    line=$(grep -n '%nope' "$here/conform_sample.mlir" | cut -d: -f1)
    grep -Eq "^FAIL conform_sample.mlir#5: parse error: .*conform_sample.mlir:$line:[0-9]+: error" \
        "$work/conform.txt" || fail "chunk 5's parse error should point at line $line"
    expect 1 '^1 passed, 2 failed, 1 skipped$' "$kiln" conform --mode eval --no-fork \
        "$here/conform_sample.mlir"
    # The tier index decides what fails the run.
    printf 'file\tchunk\tline\ttier\tfuncs\tops\tdtypes\tchecks\treasons\n' >"$work/tiers.tsv"
    printf 'conform_sample.mlir\t1\t4\tcore\tpasses\tadd\ti64\t\t\n' >>"$work/tiers.tsv"
    printf 'conform_sample.mlir\t2\t13\textended\tfails\t\tf64\t\t\n' >>"$work/tiers.tsv"
    printf 'conform_sample.mlir\t3\t21\texotic\tunknown_op\t\ti64\t\top!:frobnicate\n' >>"$work/tiers.tsv"
    printf 'conform_sample.mlir\t5\t31\textended\tparse_error\t\ti64\t\t\n' >>"$work/tiers.tsv"
    expect 0 '^core: 1 passed, 0 failed, 0 skipped \(required\)$' "$kiln" conform \
        "$here/conform_sample.mlir" --tier-file "$work/tiers.tsv" --require-tier core
    grep -q "SKIP conform_sample.mlir#3: unsupported: .*unknown op 'stablehlo.frobnicate'" \
        "$work/out.txt" || fail "an exotic case runs, and is skipped when kiln cannot read it"
    # --require-all: a skipped case fails the run too
    expect 1 '^1 passed, 2 failed, 1 skipped$' "$kiln" conform --require-all \
        "$here/conform_sample.mlir"
    printf '%s\n' '// RUN: x' 'func.func @main() {' \
        '  %0 = "stablehlo.frobnicate"() : () -> tensor<i64>' '  func.return' '}' \
        >"$work/skip_only.mlir"
    expect 0 '^0 passed, 0 failed, 1 skipped$' "$kiln" conform "$work/skip_only.mlir"
    expect 1 '^0 passed, 0 failed, 1 skipped$' "$kiln" conform --require-all \
        "$work/skip_only.mlir"
    expect 1 'required tier extended: 2 cases' "$kiln" conform "$here/conform_sample.mlir" \
        --tier-file "$work/tiers.tsv" --require-tier extended
    ;;
*)
    echo "unknown case $case_name"; exit 2 ;;
esac
[ "$fails" -eq 0 ] && echo "cli $case_name: ok"
exit "$fails"
