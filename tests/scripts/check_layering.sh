#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks the layering that src/LAYERS states: a folder under src/ includes only its
# own headers, the public headers, and those of the layers it may use. (The build enforces
# the same by compiling each layer with only those folders on its include path; this check
# also names the offending line's file, and catches a layer missing from the table.)
set -eu
root="$1"
table="$root/src/LAYERS"
[ -f "$table" ] || { echo "layering: $table is missing" >&2; exit 1; }
status=0
allowed() { # layer -> "itself and the layers it may use", or UNKNOWN
    line=$(grep -E "^$1:" "$table" || true)
    [ -z "$line" ] && { echo UNKNOWN; return; }
    echo "$1${line#*:}"
}
# The layer a file or include path belongs to: the longest of its folders that src/LAYERS
# lists (backends/cpu/eval/x.h is in backends/cpu/eval), else its first folder (kiln/ for
# the public headers, or an unknown folder).
layer_of() {
    d=$(dirname "$1")
    while [ "$d" != . ]; do
        if grep -qE "^$d:" "$table"; then
            echo "$d"
            return
        fi
        d=$(dirname "$d")
    done
    echo "${1%%/*}"
}
for f in $(cd "$root/src" && find . -name '*.[ch]' -o -name '*.inc' | sed 's|^\./||' | sort); do
    dir=$(dirname "$f")
    layer=$dir # a file is in the layer of its own folder
    ok=$(allowed "$layer")
    if [ "$ok" = UNKNOWN ]; then
        echo "layering: src/$dir is not a layer of src/LAYERS" >&2
        status=1
        continue
    fi
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$root/src/$f"); do
        [ "${inc#*/}" = "$inc" ] && continue # same-folder include
        target=$(layer_of "$inc")
        [ "$target" = kiln ] && continue # public header
        case " $ok " in
        *" $target "*) ;;
        *) echo "layering: src/$f includes \"$inc\" ($layer may use: $ok)" >&2
           status=1 ;;
        esac
    done
done
[ $status -eq 0 ] && echo "layering: ok"
exit $status
