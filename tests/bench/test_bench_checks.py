# SPDX-License-Identifier: Apache-2.0
"""The benchmark's result checks, end to end: kiln-bench writes a case's inputs and result,
the peers' common.py finds them under the same file stem and judges a right, a wrong and a
misshapen result, and report.py never takes a peer whose check failed as the best peer of a
case, nor compares metrics that do not correspond. Runs with Debian's python3 and numpy
(no benchmark peer needed).
Usage: test_bench_checks.py KILN_BENCH SOURCE_DIR WORKDIR"""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import types

kiln_bench, source, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
sys.path.insert(0, os.path.join(source, "bench", "peers"))
sys.path.insert(0, os.path.join(source, "bench"))
import common  # noqa: E402
import numpy as np  # noqa: E402
import report  # noqa: E402

failures = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


# kiln-bench writes the inputs and kiln's result of "comptime 2D sum" (sum of f64[2,10]).
check_dir = os.path.join(work, "check")
res = subprocess.run([kiln_bench, "--quick", "--filter", "comptime/2D sum", "--json",
                      os.path.join(work, "latest.json"), "--check-dir", check_dir],
                     capture_output=True, text=True)
expect(res.returncode == 0, f"kiln-bench ran (rc {res.returncode}): {res.stderr[-300:]}")
stem = common.case_stem("comptime", "2D sum")
expect(stem == "comptime_2d_sum", f"stem {stem}")
expect(common.case_stem("emlx", "scalar f32[10,10]") == "emlx_scalar_f32_10_10",
       "stems squeeze runs of other characters into one '_'")
xs = common.load_inputs(check_dir, "comptime", "2D sum")
expect(xs is not None and len(xs) == 1 and xs[0].shape == (2, 10) and xs[0].dtype == np.float64,
       "the peers find kiln-bench's input under the same stem")
want = np.load(os.path.join(check_dir, stem + ".out.npy"))
expect(abs(float(want) - float(np.sum(xs[0]))) < 1e-12, "kiln's result is the sum of its input")

args = types.SimpleNamespace(check_dir=check_dir, threads=1, filter=None, quick=True)
r = common.Runner(args, "testpeer")


def run_check(got):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        ok = r.check("comptime", "2D sum", got)
    recs = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]
    return ok, recs, err.getvalue()


ok, recs, _ = run_check(np.sum(xs[0]))
expect(ok is True and recs and recs[0]["metric"] == "check" and recs[0]["ok"] is True,
       "a right result passes and prints a check record")
ok, recs, err = run_check(np.sum(xs[0]) + 1e-3)
expect(ok is False and recs[0]["ok"] is False and "differs" in err,
       "a wrong result fails, loudly")
ok, recs, _ = run_check(np.zeros(3))
expect(ok is False and "shape" in recs[0]["note"], "a misshapen result fails, naming the shapes")
err = io.StringIO()
with contextlib.redirect_stderr(err):
    missing = common.load_inputs(check_dir, "comptime", "no such case")
expect(missing is None and "run build/bench/kiln-bench first" in err.getvalue(),
       "missing inputs say what to run")

# report.py: a fast peer with a failed check is never the best; metrics map one to one.
kiln = [{"suite": "comptime", "case": "2D sum", "impl": "kiln", "metric": "total",
         "median": 3.0, "unit": "us", "threads": 1},
        {"suite": "emlx", "case": "x", "impl": "kiln", "metric": "call", "median": 1.0,
         "unit": "us", "threads": 1},
        {"suite": "emlx", "case": "x", "impl": "kiln", "metric": "first_call", "median": 2.0,
         "unit": "us", "threads": 1},
        {"suite": "emlx", "case": "x", "impl": "kiln", "metric": "peak_mem", "median": 2.0,
         "unit": "MiB", "threads": 1}]
peers = [{"suite": "comptime", "case": "2D sum", "impl": "fastwrong", "metric": "compile",
          "median": 1.0, "unit": "ns", "threads": 1},
         {"suite": "comptime", "case": "2D sum", "impl": "fastwrong", "metric": "check",
          "median": 1.0, "unit": "rel", "threads": 1, "ok": False},
         {"suite": "comptime", "case": "2D sum", "impl": "jax", "metric": "compile",
          "median": 30.0, "unit": "ms", "threads": 1},
         {"suite": "comptime", "case": "2D sum", "impl": "jax", "metric": "check",
          "median": 0.0, "unit": "rel", "threads": 1, "ok": True},
         {"suite": "emlx", "case": "x", "impl": "jax", "metric": "time", "median": 40.0,
          "unit": "us", "threads": 1},
         {"suite": "emlx", "case": "x", "impl": "jax", "metric": "first_call", "median": 4.0,
          "unit": "ms", "threads": 1}]
rows, _, _ = report.match([k for k in kiln if report.is_kiln(k)], peers)
best = {(b[0]["suite"], b[0]["metric"]): b for b in report.best_rows(rows)}
b = best.get(("comptime", "total"))
expect(b is not None and b[1]["impl"] == "jax" and b[5] == ["fastwrong"],
       "the best compile-time peer is the checked one; the failed one is named as left out")
expect(b is not None and abs(b[2] - 1e-4) < 1e-12 and abs(b[4] - 1e-4) < 1e-12,
       "kiln / best and kiln / jax are time ratios")
call = best.get(("emlx", "call"))
first = best.get(("emlx", "first_call"))
expect(call is not None and call[1]["metric"] == "time" and abs(call[2] - 0.025) < 1e-12,
       "a steady call is compared with the peer's steady calls only")
expect(first is not None and first[1]["metric"] == "first_call",
       "a first call is compared with the peer's first call")
expect(("emlx", "peak_mem") not in best, "metrics without a peer metric are not compared")
states = {(k["metric"], p["impl"]): st for k, p, _, st in rows}
expect(states.get(("call", "jax")) == "unchecked", "a peer without a check is marked unchecked")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
