#!/bin/sh
# Runs kiln-bench's peers (numpy, PyTorch eager/script, ONNX Runtime) with 1 thread and with
# all threads, each under a time limit, and merges their JSON records into
# bench/results/peers.json. A peer that is not installed is listed as missing; one that fails
# or runs out of time keeps the records it printed. Never fails the build.
# Usage: bench/run_peers.sh [--quick]      (env: PYTHON, PEER_TIMEOUT seconds per peer run)
set -u
cd "$(dirname "$0")"
QUICK=""
[ "${1:-}" = "--quick" ] && QUICK="--quick"
PY=${PYTHON:-/usr/bin/python3}
if [ -n "$QUICK" ]; then LIMIT=${PEER_TIMEOUT:-20}; else LIMIT=${PEER_TIMEOUT:-200}; fi
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
    timeout "$LIMIT" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    cat "$tmp/out" >>"$tmp/records"
    echo "peers: $name: $(wc -l <"$tmp/out") records in $(($(date +%s) - start)) s (rc $rc)" >&2
    [ $rc -eq 0 ] || sed 's/^/  /' "$tmp/err" | tail -5 >&2
    [ $rc -eq 124 ] && echo "$name: ran past ${LIMIT} s; partial" >>"$tmp/missing"
    return 0
}

have_numpy=0 have_torch=0 have_ort=0
$PY -c 'import numpy' 2>/dev/null && have_numpy=1 || echo "numpy: not installed (make deps: python3-numpy)" >>"$tmp/missing"
$PY -c 'import torch' 2>/dev/null && have_torch=1 || echo "torch: not installed (make deps: python3-torch)" >>"$tmp/missing"
if command -v node >/dev/null && [ -d node_modules/onnxruntime-node ]; then have_ort=1
else echo "ort: not installed (cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci)" >>"$tmp/missing"; fi

for t in 1 "$ALL"; do
    [ $have_numpy = 1 ] && run "numpy threads=$t" $PY peers/numpy_peer.py --threads "$t" $QUICK
    [ $have_torch = 1 ] && run "torch threads=$t" $PY peers/torch_peer.py --threads "$t" $QUICK --onnx-dir results
    [ $have_ort = 1 ] && [ -z "$QUICK" ] && run "ort threads=$t" node peers/ort_peer.js --threads "$t" --onnx-dir results
done

$PY - "$tmp" <<'PYEOF'
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
out = {"records": recs,
       "missing": [l.strip() for l in open(f"{d}/missing") if l.strip()],
       "commands": [l.strip() for l in open(f"{d}/commands") if l.strip()]}
json.dump(out, open("results/peers.json", "w"), indent=1)
print(f"peers: {len(recs)} records -> bench/results/peers.json", file=sys.stderr)
PYEOF
exit 0
