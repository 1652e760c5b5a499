# SPDX-License-Identifier: Apache-2.0
"""JAX on kiln (the PJRT plugin) against JAX on XLA's CPU, side by side in one process.

For each case: the compile time of the first jax.jit call without its tracing (both
backends share the tracing and lowering, so `jitted.lower(...)` is done once and
`lowered.compile()` is timed, a fresh compile each time), and the steady per-call time of
the compiled function through JAX's dispatch (`f(*args).block_until_ready()`), both as
medians. Prints a table and writes bench/results/jax_plugin.json.

usage: JAX_PLATFORMS=cpu,kiln python bench/jax_plugin_bench.py [--quick]
(the plugin on the path: `pip install ./python/jax_kiln`, or PYTHONPATH=python/jax_kiln
with KILN_PJRT_LIBRARY=build/libkiln_pjrt.so)
"""
import json
import os
import statistics
import sys
import time

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

QUICK = "--quick" in sys.argv
CPU = jax.devices("cpu")[0]
KILN = jax.devices("kiln")[0]
rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def c64(*shape):
    return (f32(*shape) + 1j * f32(*shape)).astype(np.complex64)


POOLS = (True, True, False, True, False, True, False, True)


def vgg11(x, params):
    h = x
    for w, pool in zip(params["convs"], POOLS):
        h = jax.nn.relu(lax.conv_general_dilated(h, w, (1, 1), "SAME"))
        if pool:
            h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    h = h.reshape(h.shape[0], -1)
    for w in params["dense"][:-1]:
        h = jax.nn.relu(h @ w)
    return h @ params["dense"][-1]


def vgg11_params(spatial):
    chans = [(3, 64, True), (64, 128, True), (128, 256, False), (256, 256, True),
             (256, 512, False), (512, 512, True), (512, 512, False), (512, 512, True)]
    convs = [f32(o, i, 3, 3) * np.float32(np.sqrt(2 / (9 * i))) for i, o, _ in chans]
    flat = 512 * (spatial // 32) ** 2
    dense = [f32(flat, 512) * 0.02, f32(512, 512) * 0.04, f32(512, 10) * 0.04]
    return {"convs": convs, "dense": dense}


def emlx(acc, y):
    for i in range(10):
        acc = i * acc + y
    return acc


def cases():
    vp = vgg11_params(32)
    return [
        # name, function, args, static (closed-over) params or None, comptime?, steady?
        ("2D sum", lambda x: jnp.sum(x, axis=1), (f32(1000, 1000),), True, True),
        ("Basic cos", jnp.cos, (f32(1_000_000),), True, True),
        ("Basic grad cos", jax.grad(lambda x: jnp.sum(jnp.cos(x))), (f32(1_000_000),), True, True),
        ("elementwise exp(-x²)·sin(x)+0.5x 1e6",
         lambda x: jnp.exp(-x * x) * jnp.sin(x) + 0.5 * x, (f32(1_000_000),), False, True),
        ("EMLX acc = i·acc + y ×10 f32[10,10]", emlx, (f32(10, 10), f32(10, 10)), False, True),
        # JAX's dispatch with next to no work: what a small call costs before any kernel
        ("x + 1 f32[1] (dispatch floor)", lambda x: x + 1, (f32(1),), False, True),
        ("VGG11 forward 8x3x32x32", lambda x, p: vgg11(x, p), (f32(8, 3, 32, 32), vp), True, True),
        ("fft c64[256,1024] (rows)", jnp.fft.fft, (c64(256, 1024),), False, True),
        ("fft c64[64,1000] (radices 4, 2, 5)", jnp.fft.fft, (c64(64, 1000),), False, True),
        ("rfft f32[256,1024]", jnp.fft.rfft, (f32(256, 1024),), False, True),
        ("fft2 c64[512,512]", jnp.fft.fft2, (c64(512, 512),), False, True),
    ]


def wide(a):
    """a in float64, or complex128 for complex values (their difference counts both parts)."""
    return np.asarray(a, np.complex128 if np.iscomplexobj(a) else np.float64)


def compile_time(jitted, dargs, repeats):
    """Median time of a fresh backend compile: each repeat lowers anew (a Lowered compiles
    once and keeps its executable) with JAX's caches cleared, and times compile() alone."""
    times = []
    for _ in range(repeats):
        jax.clear_caches()
        lowered = jitted.lower(*dargs)
        t = time.perf_counter()
        lowered.compile()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    records = []
    print(f"{'case':44} {'compile XLA':>12} {'compile kiln':>13} {'ratio':>7}   "
          f"{'call XLA':>10} {'call kiln':>10} {'ratio':>7}")
    for name, fn, args, comptime, steady in cases():
        row = {"case": name}
        jitted = jax.jit(fn)
        for label, dev in (("xla", CPU), ("kiln", KILN)):
            dargs = jax.tree_util.tree_map(lambda a: jax.device_put(a, dev), args)
            lowered = jitted.lower(*dargs)
            if comptime:
                row[f"compile_{label}_s"] = compile_time(jitted, dargs, 3 if QUICK else 7)
            compiled = lowered.compile()
            out = compiled(*dargs)
            jax.block_until_ready(out)
            reps = 5 if QUICK else 30
            if name.startswith("EMLX") or "dispatch" in name:
                reps *= 20
            row[f"call_{label}_s"] = median_time(
                lambda: jax.block_until_ready(compiled(*dargs)), reps)
            row[f"out_{label}"] = out
        got = [wide(a) for a in jax.tree_util.tree_leaves(row.pop("out_kiln"))]
        want = [wide(a) for a in jax.tree_util.tree_leaves(row.pop("out_xla"))]
        scale = max(float(np.max(np.abs(w))) for w in want) or 1.0
        row["max_rel_diff"] = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want)) / scale
        ct = (f"{row['compile_xla_s'] * 1e3:10.2f}ms {row['compile_kiln_s'] * 1e3:11.2f}ms "
              f"{row['compile_xla_s'] / row['compile_kiln_s']:6.1f}x" if comptime else
              f"{'':12} {'':13} {'':7}")
        print(f"{name:44} {ct}   {row['call_xla_s'] * 1e6:8.1f}us {row['call_kiln_s'] * 1e6:8.1f}us "
              f"{row['call_xla_s'] / row['call_kiln_s']:6.2f}x  (diff {row['max_rel_diff']:.1e})")
        records.append(row)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "jax_plugin.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"jax": jax.__version__, "threads": os.environ.get("KILN_NUM_THREADS"),
                   "records": records}, f, indent=1)
    print(f"ratios are XLA time / kiln time (above 1: kiln is faster); wrote {out}")


if __name__ == "__main__":
    main()
