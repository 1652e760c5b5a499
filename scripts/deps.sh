#!/bin/sh
# Installs the Debian packages kiln needs that are missing. As root it runs apt-get;
# otherwise it prints the exact command to run and fails.
set -eu

# Build: compiler, CMake, pkg-config. Libraries: OpenBLAS and its OpenMP flavour
# (contractions that share kiln's thread pool), oneDNN (convolutions), zlib and cJSON
# (data formats), SLEEF (vectorized exp, log, sin, cos, ...). Tests: Criterion; numpy for
# the interoperability checks. Demo data: the digits set shipped by python3-sklearn (read
# from its file, without Python). Tools: clang-format for `make format`; clang and its
# runtime libraries for the libFuzzer targets (`make fuzz`, also run briefly by `make
# test`). Benchmark peers (`make bench`): PyTorch 1.13 (eager, torch.jit.script),
# matplotlib for the ratio chart, and node/npm for ONNX Runtime (onnxruntime-node,
# installed by `cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci`). npm only where no npm
# is on PATH: NodeSource's nodejs bundles npm and conflicts with Debian's.
PACKAGES="build-essential cmake pkg-config libopenblas-dev libopenblas-openmp-dev zlib1g-dev
libcjson-dev libsleef-dev libdnnl-dev libcriterion-dev python3 python3-numpy python3-sklearn
clang-format clang libclang-rt-14-dev python3-torch python3-matplotlib nodejs"
command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES npm"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "deps: all Debian packages present"
    exit 0
fi

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing Debian packages:$missing" >&2
    echo "deps: run as root:  apt-get update && $cmd" >&2
    exit 1
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd
