# SPDX-License-Identifier: Apache-2.0
"""time_to_load peers of kiln-bench: whole processes that load a library, compile cos of
f32[10] and run it once (checking the value), timed by hyperfine (median of many runs,
after warm-up runs) in one invocation, so that all of them see the same machine:
- kiln: kiln-load-child (load libkiln, ctx, lower + compile + call; impl
  "kiln-hyperfine", shown beside kiln-bench's own spawn-to-exit figure, not a peer);
- jax: import jax, jax.jit(jnp.cos) of f32[10], block_until_ready;
- torch-eager: import torch, torch.cos; torch-compile: the same through torch.compile
  (inductor's caches empty, as on a first run);
- numpy: import numpy, numpy.cos.
One JSON record per command (suite time_to_load, case "one-op process", metric "wall").
Usage: load_peer.py --kiln-child PATH [--quick] [--python PATH]"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--kiln-child", required=True, help="build/bench/kiln-load-child")
ap.add_argument("--python", default=sys.executable, help="the peers' interpreter")
ap.add_argument("--quick", action="store_true")
args = ap.parse_args()

if not shutil.which("hyperfine"):
    print("load: hyperfine is not installed (scripts/bench_env.sh installs it)", file=sys.stderr)
    sys.exit(0)

CHECK = "assert abs(float(y[0]) - 0.5403023) < 1e-6, y"
PROGRAMS = {
    "jax": "import jax, jax.numpy as jnp; y = jax.jit(jnp.cos)(jnp.ones(10, jnp.float32))"
           ".block_until_ready(); " + CHECK,
    "torch-eager": "import torch; y = torch.cos(torch.ones(10)); " + CHECK,
    "torch-compile": "import torch; y = torch.compile(torch.cos)(torch.ones(10)); " + CHECK,
    "numpy": "import numpy; y = numpy.cos(numpy.ones(10, numpy.float32)); " + CHECK,
}
runs = 5 if args.quick else 30
slow_runs = 3 if args.quick else 5  # torch.compile's first compile takes seconds

tmp = tempfile.mkdtemp()
env = dict(os.environ, JAX_PLATFORMS="cpu")
commands = [("kiln-hyperfine", [args.kiln_child], runs)]
for impl, prog in PROGRAMS.items():
    commands.append((impl, [args.python, "-c", prog], slow_runs if impl == "torch-compile"
                     else runs))
for impl, argv, n in commands:
    out = os.path.join(tmp, impl + ".json")
    cmd = " ".join("'" + a.replace("'", "'\\''") + "'" for a in argv)
    if impl == "torch-compile":  # an empty inductor cache for every run, as on a first run
        cmd = f"TORCHINDUCTOR_CACHE_DIR=$(mktemp -d -p {tmp}) {cmd}"
    res = subprocess.run(["hyperfine", "--warmup", "2", "--runs", str(n), "--export-json", out,
                          "--style", "none", cmd], env=env, capture_output=True, text=True)
    if res.returncode != 0:
        print(f"load: {impl}: hyperfine failed: {res.stderr.strip()[-400:]}", file=sys.stderr)
        continue
    r = json.load(open(out))["results"][0]
    times = sorted(r["times"])
    k = len(times)
    print(json.dumps({"suite": "time_to_load", "case": "one-op process", "impl": impl,
                      "metric": "wall", "median": r["median"] * 1e3,
                      "p10": times[k // 10] * 1e3, "p90": times[(9 * k) // 10] * 1e3,
                      "unit": "ms", "reps": k, "threads": 1,
                      "note": "hyperfine: " + (PROGRAMS.get(impl) or "kiln-load-child")}),
          flush=True)
shutil.rmtree(tmp, ignore_errors=True)
