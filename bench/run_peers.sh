#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs kiln-bench's peers (numpy, JAX, PyTorch eager / torch.compile / torch.jit.script, ONNX
# Runtime) with 1 thread and with all threads, then the time_to_load processes, each under a
# time limit, and merges their JSON records into bench/results/peers.json with the peers'
# versions. The peers run in bench/.venv (scripts/bench_env.sh makes it) and read kiln-bench's
# inputs from bench/results/check. A peer that is not installed is listed as missing; one
# that fails or runs out of time keeps the records it printed. Never fails the build.
# Usage: bench/run_peers.sh [--quick]   (env: PYTHON, PEER_TIMEOUT seconds per peer run)
set -u
cd "$(dirname "$0")"
QUICK=""
[ "${1:-}" = "--quick" ] && QUICK="--quick"
PY=${PYTHON:-.venv/bin/python}
if [ -n "$QUICK" ]; then LIMIT=${PEER_TIMEOUT:-120}; else LIMIT=${PEER_TIMEOUT:-1800}; fi
ALL=$(nproc)
mkdir -p results
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/records"
: >"$tmp/missing"
: >"$tmp/commands"

run() { # name, command...
    name=$1
    shift
    echo "$*" >>"$tmp/commands"
    start=$(date +%s)
    PYTHONUNBUFFERED=1 timeout "$LIMIT" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    cat "$tmp/out" >>"$tmp/records"
    echo "peers: $name: $(grep -c '^{' "$tmp/out") records in $(($(date +%s) - start)) s (rc $rc)" >&2
    grep -i "differs\|error\|failed" "$tmp/err" | grep -v "^ " | head -5 | sed 's/^/  /' >&2
    [ $rc -eq 0 ] || tail -5 "$tmp/err" | sed 's/^/  /' >&2
    [ $rc -eq 124 ] && echo "$name: ran past ${LIMIT} s; partial" >>"$tmp/missing"
    return 0
}

have() { # module, peer name
    if [ -x "$PY" ] && "$PY" -c "import $1" 2>/dev/null; then return 0; fi
    echo "$2: not installed in $PY (make bench-env)" >>"$tmp/missing"
    return 1
}

have_numpy=0 have_jax=0 have_torch=0 have_ort=0
have numpy numpy && have_numpy=1
have jax jax && have_jax=1
have torch torch && have_torch=1
have onnxruntime ort && have_ort=1
for t in 1 "$ALL"; do
    [ $have_numpy = 1 ] && run "numpy threads=$t" $PY peers/numpy_peer.py --threads "$t" $QUICK
    [ $have_jax = 1 ] && run "jax threads=$t" $PY peers/jax_peer.py --threads "$t" $QUICK
    [ $have_torch = 1 ] && run "torch threads=$t" $PY peers/torch_peer.py --threads "$t" $QUICK
    [ $have_ort = 1 ] && run "ort threads=$t" $PY peers/ort_peer.py --threads "$t" $QUICK
done
if [ -x "$PY" ] && [ -x ../build/bench/kiln-bench ]; then
    run "time_to_load" $PY peers/load_peer.py --kiln-child ../build/bench/kiln-load-child $QUICK
fi
# The digits CNN's training step (full runs): kiln-demo's compiled step against PyTorch and
# JAX (peers/digits_step.py, each in a process of its own for its peak resident set) at 1
# and all threads -> results/digits_step.txt (kiln-bench's case train/digits CNN 32x1x8x8
# has kiln's peak resident set).
if [ -z "$QUICK" ] && [ -x "$PY" ] && [ -x ../build/examples/kiln-demo ]; then
    for t in 1 "$ALL"; do
        echo "threads $t:"
        KILN_NUM_THREADS=$t timeout "$LIMIT" ../build/examples/kiln-demo --epochs 4 \
            --eager-steps 1 --min-accuracy 0 --out "$tmp/digits.safetensors" 2>&1 |
            grep "time per training step" | sed 's/^/  kiln: /'
        for impl in torch-eager torch-compile jax; do
            timeout "$LIMIT" $PY peers/digits_step.py --threads "$t" --only "$impl" \
                2>/dev/null | sed 's/^/  /'
        done
    done | tee results/digits_step.txt >&2
fi
# The VGG11 training step at 16x3x224x224 (full runs): kiln's figures are kiln-bench's case
# train/VGG11 16x3x224x224 (bench/results/latest.json); the peers' (PyTorch eager,
# torch.compile, JAX; each in a process of its own, for its peak resident set) go to
# results/vgg_train_step.txt. Several seconds a step: minutes per thread count.
if [ -z "$QUICK" ] && [ -x "$PY" ]; then
    for t in 1 "$ALL"; do
        echo "threads $t:"
        for impl in torch-eager torch-compile jax; do
            timeout "$LIMIT" $PY peers/vgg_train_step.py --threads "$t" --only "$impl" \
                2>/dev/null | sed 's/^/  /'
        done
    done | tee results/vgg_train_step.txt >&2
fi

MERGE_PY=$PY
[ -x "$MERGE_PY" ] || MERGE_PY=/usr/bin/python3
$MERGE_PY - "$tmp" <<'PYEOF'
import json, sys
d = sys.argv[1]
recs = []
for line in open(f"{d}/records"):
    line = line.strip()
    if line.startswith("{"):
        try:
            recs.append(json.loads(line))
        except ValueError:
            pass
versions = {}
for mod in ("numpy", "jax", "jaxlib", "torch", "onnxruntime", "onnx"):
    try:
        versions[mod] = __import__(mod).__version__
    except Exception:
        pass
versions["python"] = sys.version.split()[0]
out = {"records": recs, "versions": versions,
       "missing": [l.strip() for l in open(f"{d}/missing") if l.strip()],
       "commands": [l.strip() for l in open(f"{d}/commands") if l.strip()]}
json.dump(out, open("results/peers.json", "w"), indent=1)
print(f"peers: {len(recs)} records -> bench/results/peers.json", file=sys.stderr)
PYEOF
exit 0
