# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of kiln's benchmark peers: argument parsing, the repetition policy, the
JSON record format of bench/results/latest.json ({suite, case, impl, metric, median, p10,
p90, unit, reps, threads}) and the result checks.

Checks: kiln-bench writes each case's inputs and kiln's result to bench/results/check
(<stem>.in<i>.npy, <stem>.out.npy). A peer computes from those same inputs (so shapes,
dtypes, layouts and values are kiln's) and compares its result once per case: a record with
metric "check", the largest absolute difference over the largest magnitude of kiln's
result, and "ok" (within the case's tolerance). bench/report.py leaves a peer whose check
failed, or that has none, out of the "best peer" of that case.

Repetition policy (the C side's): warm up, then repeat until a time budget is spent, within
[min_reps, max_reps] -- fast cases get many repetitions, big ones few. --quick shrinks the
budget and the case list so that a whole peer run stays within seconds."""

import argparse
import json
import os
import re
import sys
import time

SCALE = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}


HERE = os.path.dirname(os.path.abspath(__file__))
CHECK_DIR = os.path.join(HERE, "..", "results", "check")


def parse_args(description, extra=None):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--check-dir", default=CHECK_DIR,
                    help="kiln-bench's inputs and results (default bench/results/check)")
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


def pin_threads(n, affinity=False):
    """Set the thread-count variables of OpenMP / OpenBLAS / MKL; must run before the
    library (numpy, torch) is imported to take effect for its BLAS. affinity: also restrict
    the process to its first n CPUs (XLA sizes its thread pools by the CPUs the process may
    run on, and offers no other limit that holds)."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    if affinity and hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, cpus[:max(1, n)])


def jax_vgg_forward(x, *ws):
    """kiln-bench's VGG in JAX (jax_peer.py's cases and vgg_train_step.py's step): NCHW input,
    OIHW kernels, dense weights [in, out]; the depth follows from the number of weights."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    n_convs = (len(ws) - 6) // 2
    stages = VGG_STAGES[{8: 11, 10: 13, 13: 16, 16: 19}[n_convs]]
    h, k = x, 0
    for n in stages:
        for _ in range(n):
            h = lax.conv_general_dilated(h, ws[k], (1, 1), ((1, 1), (1, 1)),
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
            h = jax.nn.relu(h + ws[k + 1][None, :, None, None])
            k += 2
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    h = h.reshape(h.shape[0], -1)
    for j in range(3):
        h = h @ ws[k] + ws[k + 1]
        k += 2
        if j < 2:
            h = jax.nn.relu(h)
    return h


def rss_peak_reset():
    """Resets the process's peak resident set (VmHWM) to its resident set now, as
    kiln-bench's train cases do before their timed steps; False where the kernel cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def rss_peak_mib():
    """VmHWM in MiB, or -1."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return -1.0


class Runner:
    def __init__(self, args, impl):
        self.args = args
        self.impl = impl
        self.budget = 0.05 if args.quick else 0.5  # seconds of timed repetitions per case
        self.max_reps = 201 if args.quick else 2001
        self.min_reps = 3 if args.quick else 5

    def inputs(self, suite, case):
        """The case's inputs as kiln-bench wrote them (numpy arrays), or None when the case is
        filtered out (--filter) or its inputs are absent (said on stderr)."""
        if not self.wanted(suite, case):
            return None
        return load_inputs(self.args.check_dir, suite, case)

    def check(self, suite, case, got, impl=None, tol=None):
        """Compares a result (anything np.asarray takes) with kiln's and prints a check
        record; returns whether it passed (None: kiln's result is not there)."""
        if not self.wanted(suite, case):
            return None
        import numpy as np
        path = os.path.join(self.args.check_dir, case_stem(suite, case) + ".out.npy")
        if not os.path.exists(path):
            print(f"{impl or self.impl}: {suite} {case}: no kiln result at {path}; not checked",
                  file=sys.stderr)
            return None
        want = np.load(path)
        got = np.asarray(got)
        if tol is None:
            tol = 1e-10 if want.dtype == np.float64 else TOLERANCE.get(suite, 1e-4)
        if got.shape != want.shape:
            err, note = float("inf"), f"shape {list(got.shape)}, kiln's {list(want.shape)}"
        else:
            wide = np.complex128 if np.iscomplexobj(want) else np.float64
            w64, g64 = want.astype(wide), got.astype(wide)
            scale = max(float(np.max(np.abs(w64))) if w64.size else 0.0, 1e-30)
            err = float(np.max(np.abs(g64 - w64))) / scale if w64.size else 0.0
            if not np.isfinite(err):
                err = float("inf")
            note = f"max |peer - kiln| / max |kiln| = {err:.3g} (tolerance {tol:g})"
        ok = err <= tol
        rec = {"suite": suite, "case": case, "impl": impl or self.impl, "metric": "check",
               "median": err, "p10": err, "p90": err, "unit": "rel", "reps": 1,
               "threads": self.args.threads, "ok": ok, "note": note}
        print(json.dumps(rec), flush=True)
        if not ok:
            print(f"{impl or self.impl}: {suite} {case}: result differs from kiln's: {note}",
                  file=sys.stderr)
        return ok

    def wanted(self, suite, case):
        f = self.args.filter
        return not f or f.lower() in f"{suite} {case}".lower()

    def emit(self, suite, case, times, unit, metric="time", impl=None, cpu=None, note=None):
        """Prints a record of times (seconds). cpu: the process's CPU seconds per second of
        the timed calls (about 1 on one thread, up to the thread count on more), which shows
        whether a thread limit held."""
        times = sorted(times)
        n = len(times)
        s = SCALE[unit]
        rec = {"suite": suite, "case": case, "impl": impl or self.impl, "metric": metric,
               "median": times[n // 2] * s, "p10": times[n // 10] * s,
               "p90": times[(9 * n) // 10] * s, "unit": unit, "reps": n,
               "threads": self.args.threads}
        if cpu is not None:
            rec["cpu_per_wall"] = round(cpu, 3)
        if note:
            rec["note"] = note
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
            cpu0 = time.process_time()
            while len(times) < max_reps and (len(times) < self.min_reps or spent < self.budget):
                t0 = time.perf_counter()
                fn()
                if sync:
                    sync()
                dt = time.perf_counter() - t0
                times.append(dt)
                spent += dt
            cpu = (time.process_time() - cpu0) / spent if spent > 0 else None
            self.emit(suite, case, times, unit, metric, impl, cpu=cpu)
        except Exception as e:  # a peer that cannot run a case says so and goes on
            print(f"{impl or self.impl}: {suite} {case}: {type(e).__name__}: {e}", file=sys.stderr)


# The shared case list (names as registered in bench/kiln_bench.c).
EMLX_DOT = [10, 100, 1000]
ELEMENTWISE = [("cos", "1e6"), ("cos", "1e7"), ("expsin", "1e6"), ("expsin", "1e7")]
REDUCE_SHAPE = (4096, 4096)
REDUCE_SMALL_SHAPE = (256, 1024)  # rows that fit the caches
GEMM = [64, 256, 1024]
VGG = [(1, 3, 224, 224), (8, 3, 32, 32), (16, 3, 224, 224)]
VGG_DEEPER = [13, 16, 19]  # forward at 1x3x224x224
# Convolutions per stage of each VGG (torchvision's configurations A, B, D, E).
VGG_STAGES = {11: [1, 1, 2, 2, 2], 13: [2, 2, 2, 2, 2], 16: [2, 2, 3, 3, 3], 19: [2, 2, 4, 4, 4]}


def quick_filter(quick, items, small):
    return [i for i in items if i in small] if quick else items


def call_cases(quick):
    """(suite, case, function key, unit) of every call case of kiln-bench; --quick keeps the
    small ones. Keys: emlx_step, emlx_matmul, emlx_dot, cos, expsin, sum_all, sum_rows,
    sum_cols, gemm, cgemm, fft, trsm, cholesky, vgg11, vgg13, vgg16, vgg19 (each peer maps
    them to its functions)."""
    out = [("emlx", "scalar f32[10,10]", "emlx_step", "us"),
           ("emlx", "matmul f32[10,10]", "emlx_matmul", "us")]
    out += [("emlx", f"dot f32[{n},{n}]", "emlx_dot", "us" if n < 1000 else "ms")
            for n in quick_filter(quick, EMLX_DOT, [10, 100])]
    out += [("elementwise", f"{op} {size}", op, "ms")
            for op, size in quick_filter(quick, ELEMENTWISE, [("cos", "1e6"), ("expsin", "1e6")])]
    shape = "%dx%d" % REDUCE_SHAPE
    out += [("reduction", f"sum {axes} {shape}", f"sum_{axes}", "ms")
            for axes in ("all", "rows", "cols")]
    out += [("reduction", "sum rows %dx%d" % REDUCE_SMALL_SHAPE, "sum_rows", "us")]
    out += [("loop", "heat 1000 steps f32[4096]", "heat", "ms")]
    out += [("gemm", f"f32 {n}", "gemm", "ms") for n in quick_filter(quick, GEMM, [64, 256])]
    if not quick:
        out += [("linalg", "cgemm complex<f32> 512", "cgemm", "ms"),
                ("linalg", "fft complex<f32> 2^20", "fft", "ms"),
                ("linalg", "triangular_solve f32 1024", "trsm", "ms"),
                ("linalg", "cholesky f32 1024", "cholesky", "ms")]
    out += [("vgg", "VGG11 %dx%dx%dx%d" % s, "vgg11", "ms") for s in quick_filter(quick, VGG, [])]
    out += [("vgg", f"VGG{d} 1x3x224x224", f"vgg{d}", "ms")
            for d in quick_filter(quick, VGG_DEEPER, [])]
    return out


# The EMLX functions, written with operators alone, so that numpy arrays, JAX arrays and
# torch tensors all take them (Python's int scalars are weak: f32 stays f32).
def emlx_step(x, y):
    """The EMLX benchmark: acc = x; for i in 1..10: acc = i * acc + y."""
    acc = x
    for i in range(1, 11):
        acc = i * acc + y
    return acc


def emlx_matmul(x, y):
    """Its matrix variant: acc = x; for i in 1..10: acc = i * (acc @ y) + y."""
    acc = x
    for i in range(1, 11):
        acc = i * (acc @ y) + y
    return acc


def emlx_dot(x, y):
    """EMLX's dot benchmark: acc = x; 10 times: acc = x @ acc + y."""
    acc = x
    for _ in range(10):
        acc = x @ acc + y
    return acc


# Relative tolerances of the checks per suite (f32; f64 results: 1e-10): summation orders
# and oneDNN's / XLA's convolution algorithms differ from kiln's, wrong results differ by
# far more.
TOLERANCE = {"vgg": 2e-3, "reduction": 1e-4, "gemm": 1e-4, "emlx": 1e-4, "elementwise": 1e-5,
             "linalg": 1e-4}


def case_stem(suite, case):
    """kiln-bench's file stem of a case (case_stem in bench/harness.c)."""
    return re.sub(r"[^a-z0-9]+", "_", f"{suite} {case}".lower()).strip("_")


def load_inputs(check_dir, suite, case):
    """The inputs kiln-bench wrote for a case, in argument order, or None."""
    import numpy as np
    stem = os.path.join(check_dir, case_stem(suite, case))
    out = []
    while os.path.exists(f"{stem}.in{len(out)}.npy"):
        out.append(np.load(f"{stem}.in{len(out)}.npy"))
    if not out:
        print(f"peers: {suite} {case}: no inputs in {check_dir} (run build/bench/kiln-bench "
              "first)", file=sys.stderr)
        return None
    return out


HEAT_STEPS = 1000


def heat_step(u, concatenate):
    """One step of the 1-D heat equation, in kiln-bench's order of operations:
    u + 0.1 ((l - 2c) + r) on the interior, the two ends kept."""
    c = u[1:-1]
    lap = (u[:-2] - 2 * c) + u[2:]
    return concatenate([u[:1], c + 0.1 * lap, u[-1:]])
