# SPDX-License-Identifier: Apache-2.0
"""numpy peer of kiln-bench: the same suites and case names, one JSON record per line on
stdout (see common.py), computed from kiln-bench's inputs and checked against its results.
Threads: OMP/OPENBLAS_NUM_THREADS are set before numpy is imported (numpy's elementwise ops
and reductions are single-threaded; its matmul is OpenBLAS).
Usage: numpy_peer.py [--threads N|all] [--quick] [--filter SUBSTRING] [--check-dir DIR]"""

import json
import os
import sys
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__.splitlines()[0])
common.pin_threads(args.threads)

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402

r = common.Runner(args, "numpy")


def expsin(v):  # exp(-x*x) * sin(x) + 0.5 * x, as numpy users write it
    return np.exp(-v * v) * np.sin(v) + 0.5 * v


def heat(u):  # a Python loop of vectorized steps, as numpy users write a simulation
    for _ in range(common.HEAT_STEPS):
        u = common.heat_step(u, np.concatenate)
    return u


FUNCS = {"heat": heat, "emlx_step": common.emlx_step, "emlx_matmul": common.emlx_matmul,
         "emlx_dot": common.emlx_dot, "cos": np.cos, "expsin": expsin,
         "sum_all": lambda m: m.sum(), "sum_rows": lambda m: m.sum(axis=1),
         "sum_cols": lambda m: m.sum(axis=0), "gemm": np.matmul, "cgemm": np.matmul,
         "fft": np.fft.fft, "cholesky": np.linalg.cholesky}  # no VGG in numpy
# scipy's LAPACK wrappers (what scipy users call), without the finiteness check kiln does
# not make either
SCIPY = {"trsm": lambda a, b: scipy.linalg.solve_triangular(a, b, lower=True,
                                                             check_finite=False),
         "cholesky": lambda a: scipy.linalg.cholesky(a, lower=True, check_finite=False)}


def case(suite, name, fn, unit):
    """Times fn on the case's inputs and checks its result once."""
    xs = r.inputs(suite, name)
    if xs is None:
        return
    r.check(suite, name, fn(*xs))
    r.time(suite, name, lambda: fn(*xs), unit)
    if suite == "elementwise" and r.wanted(suite, name):
        peak_mem(suite, name, fn, xs)


def peak_mem(suite, name, fn, xs):
    """The most bytes numpy held during one call beyond its inputs (numpy reports its data
    allocations to tracemalloc), as kiln-bench's peak_mem of the eager chain."""
    tracemalloc.start()
    fn(*xs)
    peak = tracemalloc.get_traced_memory()[1] / (1024.0 * 1024.0)
    tracemalloc.stop()
    print(json.dumps({"suite": suite, "case": name, "impl": "numpy", "metric": "peak_mem",
                      "median": peak, "p10": peak, "p90": peak, "unit": "MiB", "reps": 1,
                      "threads": args.threads, "note": "tracemalloc peak during one call"}),
          flush=True)


for suite, name, key, unit in common.call_cases(args.quick):
    if key in FUNCS:
        case(suite, name, FUNCS[key], unit)
    if key in SCIPY:
        xs = r.inputs(suite, name)
        if xs is not None:
            r.check(suite, name, SCIPY[key](*xs), impl="scipy")
            r.time(suite, name, lambda: SCIPY[key](*xs), unit, impl="scipy")
