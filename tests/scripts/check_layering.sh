#!/bin/sh
# Checks DESIGN.md section 2: a folder under src/ includes only its own headers, the
# public headers, and those of the layers it may use. Each backend under src/backends/ is
# a layer of its own; src/backends/ itself holds the registry's table of builtins, the
# only code that names concrete backends. Nothing above src/backend/ may include a
# concrete backend: the runtime and the frontend reach backends through the interface.
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
    backends/cpu) echo "base core ops ir passes backend backends/cpu" ;;
    # The reference backend runs the CPU evaluator's kernels (backends/cpu/eval.h).
    backends/interpreter) echo "base core ops ir backend backends/cpu backends/interpreter" ;;
    backends) echo "base core ops ir backend backends/cpu backends/interpreter backends" ;;
    frontend) echo "base core ops ir backend frontend" ;;
    runtime) echo "base core ops ir passes autodiff backend frontend runtime" ;;
    io) echo "base core io" ;;
    nn) echo "" ;; # public headers only
    *) echo "UNKNOWN" ;;
    esac
}
# The layer a file or include path belongs to: its folder under src/, one level deeper
# under backends/.
layer_of() {
    case "$1" in
    backends/*/*) echo "$1" | cut -d/ -f1-2 ;;
    *) echo "${1%%/*}" ;;
    esac
}
check_file() { # file layer
    f=$1
    layer=$2
    ok=$(allowed "$layer")
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        [ "${inc#*/}" = "$inc" ] && continue # same-folder include
        target=$(layer_of "$inc")
        [ "$target" = kiln ] && continue # public header
        case " $ok " in
        *" $target "*) ;;
        *) echo "layering: ${f#$root/} includes \"$inc\" ($layer may use: ${ok:-public headers only})" >&2
           status=1 ;;
        esac
    done
}
for f in $(cd "$root/src" && find . -name '*.[ch]' | sed 's|^\./||' | sort); do
    dir=$(dirname "$f")
    layer=$(layer_of "$dir/x")
    [ "$dir" = backends ] && layer=backends
    if [ "$(allowed "$layer")" = UNKNOWN ]; then
        echo "layering: src/$dir is not a layer of DESIGN.md section 2" >&2
        status=1
        continue
    fi
    check_file "$root/src/$f" "$layer"
done
[ $status -eq 0 ] && echo "layering: ok"
exit $status
