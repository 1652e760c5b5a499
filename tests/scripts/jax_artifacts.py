"""Portable artifacts made by JAX, checked against JAX's own results on XLA's CPU.

  jax_artifacts.py make DIR    writes, for each case, DIR/<case>.mlir.bc (jax.export's
                               serialized module, the artifact jaxlib also hands a PJRT
                               plugin), DIR/<case>.jax (Exported.serialize(), the file a
                               user saves), its text with JAX's locations <case>.txt, its
                               inputs <case>.in<i>.npy and JAX's results
                               <case>.want<i>.npy
  jax_artifacts.py check DIR   compares DIR/<case>.mlir.bc.out/out<i>.npy and
                               DIR/<case>.jax.out/out<i>.npy (kiln run's results) with them:
                               bitwise for integers, rtol 1e-5 / atol 1e-6 for floats
"""
import os
import sys

import numpy as np


def cases():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def i32(*values):
        return np.array(values, np.int32)

    return {
        "expsin": (lambda x: jnp.exp(-x * x) * jnp.sin(x) + 0.5 * x, [f32(4, 5)]),
        "matmul_relu": (lambda x, w, b: jax.nn.relu(x @ w + b), [f32(3, 4), f32(4, 5), f32(5)]),
        "softmax": (lambda x: jax.nn.softmax(x, axis=-1), [f32(2, 6)]),
        "reductions": (lambda x: (x.sum(0), x.max(1), jnp.argmax(x, axis=1)), [f32(3, 7)]),
        "fori_loop": (lambda x: jax.lax.fori_loop(0, 5, lambda i, a: a * 1.5 + i, x), [f32(4)]),
        "cond": (lambda p, x: jax.lax.cond(p > 0, jnp.sin, jnp.cos, x), [np.float32(0.5), f32(3)]),
        "sort": (lambda x: jnp.sort(x, axis=-1), [f32(3, 8)]),
        "conv": (lambda x, k: jax.lax.conv_general_dilated(x, k, (1, 1), "SAME"),
                 [f32(1, 2, 6, 6), f32(3, 2, 3, 3)]),
        "gather": (lambda x, i: x[i], [f32(5, 3), i32(4, 0, 2)]),
        "scatter_add": (lambda x, i, u: x.at[i].add(u), [f32(5, 3), i32(1, 3), f32(2, 3)]),
        "cumsum": (lambda x: jnp.cumsum(x, axis=0), [f32(6, 2)]),
        "grad_tanh": (jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2)), [f32(4, 3)]),
        "int_ops": (lambda a, b: (a // b, a % b, a << 2), [i32(7, -9, 13, 4), i32(2, 4, -5, 3)]),
        "mlp_step": (jax.jit(jax.grad(lambda w, x: jnp.mean((jnp.tanh(x @ w) - 1.0) ** 2))),
                     [f32(4, 2), f32(8, 4)]),
        # Donation travels as tf.aliasing_output on the argument.
        "donated_update": (jax.jit(lambda w, g: (w - 0.1 * g, g), donate_argnums=(0,)),
                           [f32(3, 3), f32(3, 3)]),
    }


def make(out):
    import jax
    from jax import export

    jax.config.update("jax_platforms", "cpu")
    for name, (fn, args) in cases().items():
        exported = export.export(jax.jit(fn))(*args)
        with open(os.path.join(out, name + ".mlir.bc"), "wb") as f:
            f.write(exported.mlir_module_serialized)
        with open(os.path.join(out, name + ".jax"), "wb") as f:
            f.write(exported.serialize())
        with open(os.path.join(out, name + ".txt"), "w") as f:  # its text, locations kept
            f.write(exported.mlir_module())
        results = jax.jit(fn)(*args)
        results = results if isinstance(results, tuple) else (results,)
        for i, a in enumerate(args):
            np.save(os.path.join(out, f"{name}.in{i}.npy"), np.asarray(a))
        for i, r in enumerate(results):
            np.save(os.path.join(out, f"{name}.want{i}.npy"), np.asarray(r))
    print(f"jax {jax.__version__}: {len(cases())} artifacts in {out}")


def compare(name, got_dir, want_dir):
    """Problems of one run's results, as lines."""
    problems, i = [], 0
    while os.path.exists(os.path.join(want_dir, f"{name}.want{i}.npy")):
        want = np.load(os.path.join(want_dir, f"{name}.want{i}.npy"))
        got_path = os.path.join(got_dir, f"out{i}.npy")
        if not os.path.exists(got_path):
            problems.append(f"result {i} missing")
        else:
            got = np.load(got_path)
            if got.dtype != want.dtype or got.shape != want.shape:
                ok = False
            elif want.dtype.kind in "iub":
                ok = np.array_equal(got, want)
            else:
                ok = np.allclose(got, want, rtol=1e-5, atol=1e-6)
            if not ok:
                problems.append(f"result {i} differs: kiln {got.dtype}{list(got.shape)} "
                                f"{got.ravel()[:6]}, jax {want.dtype}{list(want.shape)} "
                                f"{want.ravel()[:6]}")
        i += 1
    if i == 0:
        problems.append("no expected results")
    return problems


def check(out):
    runs = sorted(d for d in os.listdir(out) if d.endswith(".out"))
    bad = 0
    for run in runs:
        name = run.split(".")[0]
        problems = compare(name, os.path.join(out, run), out)
        for p in problems:
            print(f"{run[:-4]}: {p}")
        bad += bool(problems)
    print(f"jax artifacts: {len(runs) - bad} of {len(runs)} runs match JAX")
    return 1 if bad or not runs else 0


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2]))
