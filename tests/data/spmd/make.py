# SPDX-License-Identifier: Apache-2.0
"""Writes the JAX-made SPMD artifacts that tests/mpi/test_mpi.c runs on MPI ranks: for 2 and
4 devices, jax.export's portable artifact of a shard_map program (rows of x on a mesh of
the devices: a layer, psum of its column sums, an all_gather), its inputs and JAX's
results on XLA's CPU. Run with the pinned JAX (tests/requirements-jax.txt):

    tests/.venv-jax/bin/python tests/data/spmd/make.py tests/data/spmd
"""
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import export  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402


def main(out):
    jax.config.update("jax_platforms", "cpu")
    rng = np.random.default_rng(7)
    for n in (2, 4):
        mesh = jax.make_mesh((n,), ("x",))

        def f(x, w):
            def body(xs, w):
                y = jnp.tanh(xs @ w)
                total = jax.lax.psum(jnp.sum(y, axis=0), "x")
                return y * total, jax.lax.psum(jax.lax.all_gather(xs, "x", tiled=True).sum(), "x")
            return jax.shard_map(body, mesh=mesh, in_specs=(P("x"), P()),
                                 out_specs=(P("x"), P()))(x, w)

        x = rng.standard_normal((4 * n, 5)).astype(np.float32)
        w = rng.standard_normal((5, 3)).astype(np.float32)
        shard = [NamedSharding(mesh, P("x")), NamedSharding(mesh, P())]
        specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s) for a, s in zip((x, w), shard)]
        exported = export.export(jax.jit(f))(*specs)
        with open(os.path.join(out, f"rows{n}.mlir.bc"), "wb") as fh:
            fh.write(exported.mlir_module_serialized)
        results = jax.jit(f)(*[jax.device_put(a, s) for a, s in zip((x, w), shard)])
        np.save(os.path.join(out, f"rows{n}.in0.npy"), x)
        np.save(os.path.join(out, f"rows{n}.in1.npy"), w)
        for i, r in enumerate(results):
            np.save(os.path.join(out, f"rows{n}.want{i}.npy"), np.asarray(r))
    print(f"jax {jax.__version__}: SPMD artifacts for 2 and 4 devices in {out}")


if __name__ == "__main__":
    main(sys.argv[1])
