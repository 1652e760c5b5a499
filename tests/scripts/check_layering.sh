#!/bin/sh
# Checks DESIGN.md section 2: a folder under src/ includes only its own headers, the
# public headers, and those of the layers it may use.
set -eu
root="$1"
status=0
allowed() {
    case "$1" in
    base) echo "base" ;;
    core) echo "base core" ;;
    ops) echo "base core ops" ;;
    ir) echo "base core ops ir" ;;
    passes) echo "base core ops ir passes" ;;
    autodiff) echo "base core ops ir autodiff" ;;
    backend) echo "base core ops ir backend" ;;
    backends) echo "base core ops ir backend backends" ;;
    runtime) echo "base core ops ir passes autodiff backend backends runtime" ;;
    io) echo "base core io" ;;
    nn) echo "" ;; # public headers only
    *) echo "UNKNOWN" ;;
    esac
}
for dir in "$root"/src/*/; do
    layer=$(basename "$dir")
    ok=$(allowed "$layer")
    if [ "$ok" = UNKNOWN ]; then
        echo "layering: src/$layer is not a layer of DESIGN.md section 2" >&2
        status=1
        continue
    fi
    for f in $(find "$dir" -name '*.[ch]'); do
        for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
            target=${inc%%/*}
            [ "$target" = "$inc" ] && continue # same-folder include
            [ "$target" = kiln ] && continue   # public header
            case " $ok " in
            *" $target "*) ;;
            *) echo "layering: ${f#$root/} includes \"$inc\" ($layer may use: ${ok:-public headers only})" >&2
               status=1 ;;
            esac
        done
    done
done
[ $status -eq 0 ] && echo "layering: ok"
exit $status
