# SPDX-License-Identifier: Apache-2.0
"""JAX peer of kiln-bench (XLA's CPU backend): the same suites and case names, one JSON
record per line on stdout (see common.py), computed from kiln-bench's inputs and checked
against its results. Impl "jax".

- Calls: the jax.jit-compiled function, timed to block_until_ready (metric "time"); and the
  first call of an executable just made by jax.jit(f).lower(*args).compile() ("first_call").
- comptime: jax.jit(f).lower(*args).compile() as Reactant's CI measures it, in a process
  that has compiled other functions already, each repetition on a fresh Python function
  after jax.clear_caches(), with the persistent compilation cache off, so that every figure
  is a real trace + lower + XLA compile (metric "compile"; "lower" and "xla_compile" split
  it).
- Threads: XLA sizes its thread pools by the CPUs the process may run on, so the process is
  restricted to its first N CPUs (sched_setaffinity, what taskset does) before jax is
  imported; on 1 thread --xla_cpu_multi_thread_eigen=false is set as well. Records carry
  cpu_per_wall, the CPU seconds per second of the timed calls, which shows that 1 thread
  really is 1.
Usage: jax_peer.py [--threads N|all] [--quick] [--filter SUBSTRING] [--check-dir DIR]"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__.splitlines()[0])
common.pin_threads(args.threads, affinity=True)
if args.threads == 1:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_cpu_multi_thread_eigen=false").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # the comptime cases are f64, as kiln-bench's
jax.config.update("jax_enable_compilation_cache", False)

r = common.Runner(args, "jax")


def block(x):
    return jax.block_until_ready(x)


# ---- the functions, as a JAX user writes them (EMLX's: common.py) -----------------------

def expsin(x):
    return jnp.exp(-x * x) * jnp.sin(x) + 0.5 * x


vgg_forward = common.jax_vgg_forward


VGG_STAGES = common.VGG_STAGES


def vgg_specs(depth, n, hw, dense_in=None):
    """Argument shapes of kiln-bench's VGG: the input, (w, b) per conv, (w, b) per dense."""
    specs, c, h = [(n, 3, hw, hw)], 3, hw
    for width, k in zip([64, 128, 256, 512, 512], VGG_STAGES[depth]):
        for _ in range(k):
            specs += [(width, c, 3, 3), (width,)]
            c = width
        h //= 2
    dims = [dense_in or 512 * h * h, 4096, 4096, 1000]
    for d in range(3):
        specs += [(dims[d], dims[d + 1]), (dims[d + 1],)]
    return [jax.ShapeDtypeStruct(s, jnp.float32) for s in specs]


def vgg_train_step(x, *ws):
    def loss(ws):
        logits = vgg_forward(x, *ws)
        return jnp.sum(logits * logits) / x.shape[0]
    g = jax.grad(loss)(ws)
    return tuple(w - 0.01 * gw for w, gw in zip(ws, g))


# ---- calls -------------------------------------------------------------------------------

def call_case(suite, case, fn, unit, max_reps=None):
    xs = r.inputs(suite, case)
    if xs is None:
        return
    dev = [jax.device_put(x) for x in xs]
    f = jax.jit(fn)
    try:
        r.check(suite, case, np.asarray(block(f(*dev))))
        r.time(suite, case, lambda: block(f(*dev)), unit, max_reps=max_reps, warmup=3)
        # the first call of an executable just compiled (a new function object, no caches)
        jax.clear_caches()
        g = jax.jit(lambda *a: fn(*a))
        exe = g.lower(*dev).compile()
        t0 = time.perf_counter()
        block(exe(*dev))
        r.emit(suite, case, [time.perf_counter() - t0], unit, metric="first_call",
               note="first call of jax.jit(f).lower(*args).compile()")
    except Exception as e:  # noqa: BLE001 -- a case that cannot run is reported, not fatal
        print(f"jax: {suite} {case}: {type(e).__name__}: {e}", file=sys.stderr)


# ---- compile times -----------------------------------------------------------------------

def compile_case(case, make_fn, specs, reps, check_inputs=None):
    """Times trace + lower + XLA compile of a fresh function reps times (one thread only,
    as kiln-bench measures compile times)."""
    if not r.wanted("comptime", case) or args.threads != 1:
        return
    lower_t, comp_t, total_t = [], [], []
    try:
        for i in range(reps + 1):
            jax.clear_caches()
            fn = make_fn()  # a new function object: nothing of an earlier one is reused
            t0 = time.perf_counter()
            lowered = jax.jit(fn).lower(*specs)
            t1 = time.perf_counter()
            exe = lowered.compile()
            t2 = time.perf_counter()
            if i > 0:  # the first repetition warms JAX's own code paths for this case
                lower_t.append(t1 - t0), comp_t.append(t2 - t1), total_t.append(t2 - t0)
        r.emit("comptime", case, total_t, "ms", metric="compile",
               note="jax.jit(f).lower(*args).compile(), caches cleared")
        r.emit("comptime", case, lower_t, "ms", metric="lower", note="trace + lower")
        r.emit("comptime", case, comp_t, "ms", metric="xla_compile", note="Lowered.compile()")
        if check_inputs is not None:
            xs = r.inputs("comptime", case)
            if xs is not None:
                r.check("comptime", case, np.asarray(block(exe(*xs))))
    except Exception as e:  # noqa: BLE001
        print(f"jax: comptime {case}: {type(e).__name__}: {e}", file=sys.stderr)


# A process that has compiled other functions already: warm up jit, lower and compile.
for _ in range(3):
    block(jax.jit(lambda v: jnp.tanh(v) * 2.0)(jnp.ones((4, 4), jnp.float32)))

f64_2x10 = [jax.ShapeDtypeStruct((2, 10), jnp.float64)]
small_reps = 5 if args.quick else 21
compile_case("2D sum", lambda: (lambda x: jnp.sum(x)), f64_2x10, small_reps, True)
compile_case("Basic cos", lambda: (lambda x: jnp.cos(x)), f64_2x10, small_reps, True)
compile_case("Basic grad cos", lambda: jax.grad(lambda x: jnp.sum(jnp.cos(x))), f64_2x10,
             small_reps, True)
for depth in [11] if args.quick else [11, 13, 16, 19]:
    compile_case(f"VGG{depth}", lambda: (lambda *a: vgg_forward(*a)),
                 vgg_specs(depth, 16, 224), 1 if args.quick else 5)
compile_case("VGG11 train step", lambda: (lambda *a: vgg_train_step(*a)),
             vgg_specs(11, 16, 224), 1 if args.quick else 3)

def heat(u):  # lax.fori_loop, as JAX users write a simulation under jax.jit
    return lax.fori_loop(0, common.HEAT_STEPS, lambda i, v: common.heat_step(v, jnp.concatenate), u)


FUNCS = {"heat": heat, "emlx_step": common.emlx_step, "emlx_matmul": common.emlx_matmul,
         "emlx_dot": common.emlx_dot, "cos": jnp.cos, "expsin": expsin,
         "sum_all": lambda m: jnp.sum(m), "sum_rows": lambda m: jnp.sum(m, axis=1),
         "sum_cols": lambda m: jnp.sum(m, axis=0), "gemm": jnp.matmul, "vgg11": vgg_forward,
         "vgg13": vgg_forward, "vgg16": vgg_forward, "vgg19": vgg_forward,
         "cgemm": jnp.matmul, "fft": jnp.fft.fft, "cholesky": jnp.linalg.cholesky,
         "trsm": lambda a, b: jax.scipy.linalg.solve_triangular(a, b, lower=True)}
for suite, name, key, unit in common.call_cases(args.quick):
    call_case(suite, name, FUNCS[key], unit, max_reps=21 if key.startswith("vgg") else None)


def per_example_grads(w1, x, w2):  # kiln-bench's autodiff/per-example grads MLP
    def loss(w1, x, w2):
        h = jnp.tanh(jnp.tanh(x @ w1) @ w2)
        return jnp.sum(h * h)
    return jax.vmap(jax.grad(loss), in_axes=(None, 0, None))(w1, x, w2)


call_case("autodiff", "per-example grads MLP", per_example_grads, "us")
