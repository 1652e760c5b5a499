# SPDX-License-Identifier: Apache-2.0
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

# Four CPU devices for the SPMD cases (shard_map over a mesh); the others use one.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

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
        **spmd_cases(f32),
    }


def spmd_cases(f32):
    """shard_map programs (Shardy's manual computations) on meshes of the 4 devices: each
    case is (fn, args, the arguments' PartitionSpecs, the mesh)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    line = jax.make_mesh((4,), ("x",))
    grid = jax.make_mesh((2, 2), ("x", "y"))

    def rows(x, w):  # a data-parallel layer: psum of the column sums, all_gather of x
        def body(xs, w):
            y = jnp.tanh(xs @ w)
            return y * jax.lax.psum(jnp.sum(y, axis=0), "x"), jax.lax.psum(
                jax.lax.all_gather(xs, "x", tiled=True).sum(), "x")
        return jax.shard_map(body, mesh=line, in_specs=(P("x"), P()),
                             out_specs=(P("x"), P()))(x, w)

    def blocks(a):  # a 2 x 2 mesh: sum over y, swap along x, reduce-scatter along x
        def body(b):
            s = jax.lax.psum(b, "y")
            t = jax.lax.ppermute(s, "x", perm=[(0, 1), (1, 0)])
            u = jax.lax.psum_scatter(t * 2.0, "x", scatter_dimension=1, tiled=True)
            return t, u
        return jax.shard_map(body, mesh=grid, in_specs=P("x", "y"),
                             out_specs=(P("x", None), P(None, "x")))(a)

    return {
        "shard_map_rows": (rows, [f32(8, 4), f32(4, 3)], [P("x"), P()], line),
        "shard_map_blocks": (blocks, [f32(4, 8)], [P("x", "y")], grid),
    }


def make(out):
    import jax
    from jax import export

    jax.config.update("jax_platforms", "cpu")
    for name, case in cases().items():
        fn, args = case[0], case[1]
        specs = args
        if len(case) == 4:  # sharded arguments, as a user of a mesh passes them
            from jax.sharding import NamedSharding
            mesh = case[3]
            specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=NamedSharding(mesh, p))
                     for a, p in zip(args, case[2])]
            args = [jax.device_put(a, NamedSharding(mesh, p)) for a, p in zip(args, case[2])]
        exported = export.export(jax.jit(fn))(*specs)
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
    print(f"jax {jax.__version__}: {len(cases())} artifacts in {out} "
          f"({len(jax.devices())} devices)")


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
