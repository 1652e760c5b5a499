#!/usr/bin/python3
"""numpy peer of kiln-bench: the same suites and case names, one JSON record per line on
stdout (see common.py). Threads: OMP/OPENBLAS_NUM_THREADS are set before numpy is imported
(numpy's elementwise ops and reductions are single-threaded; its matmul is OpenBLAS).
Usage: numpy_peer.py [--threads N|all] [--quick] [--filter SUBSTRING]"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__.splitlines()[0])
common.pin_threads(args.threads)

import numpy as np  # noqa: E402

r = common.Runner(args, "numpy")
f32 = np.float32


def emlx_step(x, y):
    # The EMLX benchmark's function: acc = x; for i in 1..10: acc = i * acc + y.
    acc = x
    for i in range(1, 11):
        acc = f32(i) * acc + y
    return acc


def emlx_matmul(x, y):
    # The matrix variant: acc = x; for i in 1..10: acc = i * (acc @ y) + y.
    acc = x
    for i in range(1, 11):
        acc = f32(i) * (acc @ y) + y
    return acc


def emlx_dot(x, y):
    # EMLX's dot benchmark: acc = x; 10 times: acc = dot(x, acc) + y.
    acc = x
    for _ in range(10):
        acc = x @ acc + y
    return acc


x = np.arange(100, dtype=f32).reshape(10, 10) / f32(100)  # as kiln-bench: iota / n^2
r.time("emlx", "scalar f32[10,10]", lambda: emlx_step(x, x), "us")
r.time("emlx", "matmul f32[10,10]", lambda: emlx_matmul(x, x), "us")
for n in common.quick_filter(args.quick, common.EMLX_DOT, [10, 100]):
    a = (np.arange(n * n, dtype=f32).reshape(n, n) / f32(n * n))
    r.time("emlx", f"dot f32[{n},{n}]", lambda: emlx_dot(a, a), "us" if n < 1000 else "ms")

for op, size in common.quick_filter(args.quick, common.ELEMENTWISE,
                                    [("cos", "1e6"), ("expsin", "1e6")]):
    v = np.linspace(-3, 3, int(float(size)), dtype=f32)
    out = np.empty_like(v)
    if op == "cos":
        fn = lambda: np.cos(v, out=out)  # noqa: E731
    else:  # exp(-x*x) * sin(x) + 0.5 * x, as numpy users write it
        fn = lambda: np.exp(-v * v) * np.sin(v) + f32(0.5) * v  # noqa: E731
    r.time("elementwise", f"{op} {size}", fn, "ms")

m = np.random.default_rng(0).standard_normal(common.REDUCE_SHAPE, dtype=f32)
shape = "%dx%d" % common.REDUCE_SHAPE
r.time("reduction", f"sum all {shape}", lambda: m.sum(), "ms")
r.time("reduction", f"sum rows {shape}", lambda: m.sum(axis=1), "ms")
r.time("reduction", f"sum cols {shape}", lambda: m.sum(axis=0), "ms")

for n in common.quick_filter(args.quick, common.GEMM, [64, 256]):
    a = np.random.default_rng(1).standard_normal((n, n), dtype=f32)
    b = np.random.default_rng(2).standard_normal((n, n), dtype=f32)
    c = np.empty((n, n), dtype=f32)
    r.time("gemm", f"f32 {n}", lambda: np.matmul(a, b, out=c), "ms")
