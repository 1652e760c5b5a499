"""Shared pieces of kiln's benchmark peers: argument parsing, the repetition policy and the
JSON record format of bench/results/latest.json ({suite, case, impl, metric, median, p10,
p90, unit, reps, threads}).

Repetition policy (the C side's): warm up, then repeat until a time budget is spent, within
[min_reps, max_reps] -- fast cases get many repetitions, big ones few. --quick shrinks the
budget and the case list so that a whole peer run stays within seconds."""

import argparse
import json
import os
import sys
import time

SCALE = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}


def parse_args(description, extra=None):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--threads", default="1",
                    help="threads for the library's own pool: a number or 'all' (default 1)")
    ap.add_argument("--quick", action="store_true",
                    help="small budget and the small cases only (make bench-quick)")
    ap.add_argument("--filter", default=None,
                    help="run only the cases whose 'suite case' contains this (case-insensitive)")
    if extra:
        extra(ap)
    args = ap.parse_args()
    args.threads = os.cpu_count() if args.threads == "all" else int(args.threads)
    return args


def pin_threads(n):
    """Set the thread-count variables of OpenMP / OpenBLAS / MKL; must run before the
    library (numpy, torch) is imported to take effect for its BLAS."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)


class Runner:
    def __init__(self, args, impl):
        self.args = args
        self.impl = impl
        self.budget = 0.05 if args.quick else 0.5  # seconds of timed repetitions per case
        self.max_reps = 201 if args.quick else 2001
        self.min_reps = 3 if args.quick else 5

    def wanted(self, suite, case):
        f = self.args.filter
        return not f or f.lower() in f"{suite} {case}".lower()

    def emit(self, suite, case, times, unit, metric="time", impl=None):
        times = sorted(times)
        n = len(times)
        s = SCALE[unit]
        rec = {"suite": suite, "case": case, "impl": impl or self.impl, "metric": metric,
               "median": times[n // 2] * s, "p10": times[n // 10] * s,
               "p90": times[(9 * n) // 10] * s, "unit": unit, "reps": n,
               "threads": self.args.threads}
        print(json.dumps(rec), flush=True)

    def time(self, suite, case, fn, unit, metric="time", impl=None, warmup=2, max_reps=None,
             sync=None):
        """Time fn() (one repetition per call) and print its record."""
        if not self.wanted(suite, case):
            return
        try:
            for _ in range(warmup):
                fn()
            times = []
            max_reps = min(max_reps or self.max_reps, self.max_reps)
            spent = 0.0
            while len(times) < max_reps and (len(times) < self.min_reps or spent < self.budget):
                t0 = time.perf_counter()
                fn()
                if sync:
                    sync()
                dt = time.perf_counter() - t0
                times.append(dt)
                spent += dt
            self.emit(suite, case, times, unit, metric, impl)
        except Exception as e:  # a peer that cannot run a case says so and goes on
            print(f"{impl or self.impl}: {suite} {case}: {type(e).__name__}: {e}", file=sys.stderr)


# The shared case list (names as registered in bench/kiln_bench.c).
EMLX_DOT = [10, 100, 1000]
ELEMENTWISE = [("cos", "1e6"), ("cos", "1e7"), ("expsin", "1e6"), ("expsin", "1e7")]
REDUCE_SHAPE = (4096, 4096)
GEMM = [64, 256, 1024]
VGG = [(1, 3, 224, 224), (8, 3, 32, 32)]


def quick_filter(quick, items, small):
    return [i for i in items if i in small] if quick else items
