#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages that building, testing and the demo need, where missing. As
# root it runs apt-get; otherwise it prints the exact command to run and fails.
# Works on Debian 12 and 13 (the clang runtime's package name carries clang's version).
#
# Build: compiler, CMake, pkg-config. Libraries: OpenBLAS and its OpenMP flavour
# (contractions that share kiln's thread pool), oneDNN (convolutions), zlib and cJSON
# (data formats), SLEEF (vectorized exp, log, sin, cos, ...). Tests: Criterion; Debian's
# /usr/bin/python3 with python3-numpy for the interoperability checks (the tests name that
# interpreter; the pyenv python3 on PATH is never used). Demo data: the digits set shipped by
# python3-sklearn (read from its file, without Python). Fuzzing (`make fuzz`, also run
# briefly by `make test`): clang and its runtime libraries. Several processes: Open MPI (the
# MPI communicator, libkiln_mpi, and `mpirun` for its tests).
#
# Not here: the benchmark peers (JAX, PyTorch, ONNX Runtime, ...), which `make bench`
# installs into bench/.venv from bench/requirements.txt (scripts/bench_env.sh), and
# clang-format, which `make format` installs when it is missing (DEPS_EXTRA below).
set -eu

PACKAGES="build-essential cmake pkg-config libopenblas-dev libopenblas-openmp-dev zlib1g-dev
libcjson-dev libsleef-dev libdnnl-dev libcriterion-dev python3 python3-numpy python3-sklearn
clang libopenmpi-dev openmpi-bin ${DEPS_EXTRA:-}"

# clang's major version: the installed clang's, else the one Debian's clang package names
# (14 on Debian 12, 19 on Debian 13), else by release.
clang_major() {
    if command -v clang >/dev/null 2>&1; then
        clang --version | sed -n 's/.*clang version \([0-9][0-9]*\)\..*/\1/p' | head -n 1
        return
    fi
    v=$(apt-cache depends clang 2>/dev/null | sed -n 's/.*Depends: clang-\([0-9][0-9]*\)$/\1/p' |
        head -n 1)
    if [ -n "$v" ]; then echo "$v"; return; fi
    case "$(cut -d. -f1 /etc/debian_version 2>/dev/null)" in
        12) echo 14 ;;
        13) echo 19 ;;
        *) echo "" ;;
    esac
}

missing_of() {
    out=""
    for p in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            out="$out $p"
        fi
    done
    echo "$out"
}

install() { # packages...
    cmd="apt-get install -y --no-install-recommends $*"
    if [ "$(id -u)" -ne 0 ]; then
        echo "deps: missing Debian packages: $*" >&2
        echo "deps: run as root:  apt-get update && $cmd" >&2
        exit 1
    fi
    echo "deps: installing $*"
    export DEBIAN_FRONTEND=noninteractive
    [ -n "${DEPS_UPDATED:-}" ] || apt-get update -qq
    DEPS_UPDATED=1
    $cmd
}

# shellcheck disable=SC2086 # word splitting of the package list is intended
missing=$(missing_of $PACKAGES)
[ -z "$missing" ] || install $missing

# The sanitizer and libFuzzer runtimes of the clang just installed.
major=$(clang_major)
if [ -z "$major" ]; then
    echo "deps: cannot tell clang's version; install clang's libclang-rt-N-dev by hand" >&2
    exit 1
fi
missing=$(missing_of "libclang-rt-$major-dev")
[ -z "$missing" ] || install $missing
echo "deps: all Debian packages present"
