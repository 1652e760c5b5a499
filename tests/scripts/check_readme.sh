#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Extracts the C example from README.md, builds it against the built library and runs it.
set -eu
readme="$1"; cc="$2"; lib="$3"; include="$4"; work="$5"; sanitize="$6"; pc="$7"
# A static link needs the libraries kiln.pc lists as private (BLAS, oneDNN, OpenMP, ...).
private=$(sed -n 's/^Libs.private: //p' "$pc")
rm -rf "$work"; mkdir -p "$work"
awk '/^```c$/ {on=1; next} /^```$/ {on=0} on' "$readme" > "$work/example.c"
test -s "$work/example.c" || { echo "readme: no C example found" >&2; exit 1; }
flags=""
case "$sanitize" in ON|on|1|TRUE|true) flags="-fsanitize=address,undefined" ;; esac
"$cc" -std=c17 -Wall -Wextra -Werror $flags -I"$include" "$work/example.c" "$lib" $private -o "$work/example"
cd "$work" && ./example
test -f "$work/y.npy"
echo "readme: example ok ($(wc -l < "$work/example.c") lines)"
