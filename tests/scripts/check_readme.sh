#!/bin/sh
# Extracts the C example from README.md, builds it against the built library and runs it.
set -eu
readme="$1"; cc="$2"; lib="$3"; include="$4"; work="$5"; sanitize="$6"
rm -rf "$work"; mkdir -p "$work"
awk '/^```c$/ {on=1; next} /^```$/ {on=0} on' "$readme" > "$work/example.c"
test -s "$work/example.c" || { echo "readme: no C example found" >&2; exit 1; }
flags=""
case "$sanitize" in ON|on|1|TRUE|true) flags="-fsanitize=address,undefined" ;; esac
"$cc" -std=c17 -Wall -Wextra -Werror $flags -I"$include" "$work/example.c" "$lib" $(pkg-config --libs openblas) $(pkg-config --libs sleef 2>/dev/null || true) -lm -o "$work/example"
cd "$work" && ./example
test -f "$work/y.npy"
echo "readme: example ok ($(wc -l < "$work/example.c") lines)"
