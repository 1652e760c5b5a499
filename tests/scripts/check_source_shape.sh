#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks the shape of the sources under src/ that docs/ARCHITECTURE.md promises: no file over
# 1,500 lines; generic kernels written as ordinary C (template bodies, *.inc), so that
# backslash-continued lines stay few (under 200 in all, each part of a short macro that is
# not a kernel); and an SPDX licence line in the first lines of every source file.
set -eu
root="$1"
status=0
cd "$root"
files=$(git ls-files 'src/*.c' 'src/*.h' 'src/*.inc' 'src/*.def' 'src/*.cu' 2>/dev/null ||
        find src -name '*.[ch]' -o -name '*.inc' -o -name '*.def' -o -name '*.cu')
for f in $files; do
    [ -f "$f" ] || continue
    n=$(wc -l < "$f")
    if [ "$n" -gt 1500 ]; then
        echo "source shape: $f has $n lines (at most 1,500: split it by job)" >&2
        status=1
    fi
    if ! head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0'; then
        echo "source shape: $f has no SPDX-License-Identifier line in its first 3 lines" >&2
        status=1
    fi
done
# shellcheck disable=SC2086
continued=$(cat $files | grep -c '\\$' || true)
if [ "$continued" -ge 200 ]; then
    echo "source shape: $continued backslash-continued lines in src/ (fewer than 200: write" \
         "generic kernels as template bodies, not macros); the most:" >&2
    # shellcheck disable=SC2086
    grep -c '\\$' $files | sort -t: -k2 -n -r | head -5 >&2
    status=1
fi
[ $status -eq 0 ] && echo "source shape: ok ($continued backslash-continued lines)"
exit $status
