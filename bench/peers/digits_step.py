# SPDX-License-Identifier: Apache-2.0
"""The training step of `kiln-demo` (the digits CNN at batch 32: conv 1->32, 2x2 max pool,
conv 32->64, dense 1024->128, dense 128->10, softmax cross-entropy, Adam) in PyTorch (eager
and torch.compile) and JAX (jax.jit), timed as kiln-demo times its compiled step: the
median of steady steps on one batch. Random weights and data of the same shapes (the
results are not compared with kiln's: the step is the same computation, not the same
numbers). kiln's figure is the "time per training step" line of
`KILN_NUM_THREADS=N build/examples/kiln-demo`, or kiln-bench's case "train/digits CNN
32x1x8x8" (the same step on random data, with the peak resident set as reported here).

usage: digits_step.py --threads N [--steps S] [--only torch-eager|torch-compile|jax]"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--steps", type=int, default=300)
ap.add_argument("--only", default=None, help="one implementation (its own process: its peak RSS alone)")
args = ap.parse_args()
# As jax_peer.py: the process may run on its first N CPUs only (XLA sizes its thread pools
# by them and has no other limit that holds), OpenMP / BLAS counts N, Eigen single-threaded
# on one.
common.pin_threads(args.threads, affinity=True)
if args.threads == 1:
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"


def median_ms(step, steps, sync=lambda r: r):
    """The median step in ms, and the process's peak resident set (MiB) during the timed
    steps (as kiln-bench's train cases report it; -1 where it cannot be reset)."""
    for _ in range(20):
        sync(step())
    have = common.rss_peak_reset()
    ts = []
    for _ in range(steps):
        t0 = time.perf_counter()
        sync(step())
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2] * 1e3, common.rss_peak_mib() if have else -1.0


def torch_steps():
    if args.only and not args.only.startswith("torch"):
        return
    import torch
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    class CNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(1, 32, 3, padding=1)
            self.c2 = torch.nn.Conv2d(32, 64, 3, padding=1)
            self.f1 = torch.nn.Linear(1024, 128)
            self.f2 = torch.nn.Linear(128, 10)

        def forward(self, x):
            h = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
            h = torch.relu(self.c2(h))
            return self.f2(torch.relu(self.f1(h.flatten(1))))

    x, y = torch.randn(32, 1, 8, 8), torch.randint(0, 10, (32,))
    for impl in ("torch-eager", "torch-compile"):
        if args.only and args.only != impl:
            continue
        model = CNN()
        net = model if impl == "torch-eager" else torch.compile(model)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            return loss
        ms, rss = median_ms(step, args.steps)
        print(f"{impl}: threads {args.threads}: {ms:.3f} ms; peak RSS {rss:.0f} MiB")


def jax_steps():
    if args.only and args.only != "jax":
        return
    import jax
    import jax.numpy as jnp
    from jax import lax

    def conv(x, w, b):
        y = lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return y + b[None, :, None, None]

    def forward(p, x):
        h = jax.nn.relu(conv(x, p["w1"], p["b1"]))
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        h = jax.nn.relu(conv(h, p["w2"], p["b2"]))
        h = jax.nn.relu(h.reshape(h.shape[0], -1) @ p["f1"] + p["c1"])
        return h @ p["f2"] + p["c2"]

    def loss(p, x, y):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(forward(p, x)), y[:, None], 1))

    def step(p, m, v, t, x, y):
        g = jax.grad(loss)(p, x, y)
        t = t + 1
        m = jax.tree.map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree.map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        p = jax.tree.map(lambda a, b, c: a - 1e-3 * (b / (1 - 0.9 ** t)) /
                         (jnp.sqrt(c / (1 - 0.999 ** t)) + 1e-8), p, m, v)
        return p, m, v, t

    jstep = jax.jit(step, donate_argnums=(0, 1, 2))
    k = jax.random.split(jax.random.PRNGKey(0), 6)
    p = {"w1": jax.random.normal(k[0], (32, 1, 3, 3)) * 0.3, "b1": jnp.zeros(32),
         "w2": jax.random.normal(k[1], (64, 32, 3, 3)) * 0.05, "b2": jnp.zeros(64),
         "f1": jax.random.normal(k[2], (1024, 128)) * 0.03, "c1": jnp.zeros(128),
         "f2": jax.random.normal(k[3], (128, 10)) * 0.1, "c2": jnp.zeros(10)}
    state = [p, jax.tree.map(jnp.zeros_like, p), jax.tree.map(jnp.zeros_like, p), jnp.float32(0)]
    x = jax.random.normal(k[4], (32, 1, 8, 8))
    y = jax.random.randint(k[5], (32,), 0, 10)

    def one():
        state[:] = jstep(*state, x, y)
        return state
    ms, rss = median_ms(one, args.steps, jax.block_until_ready)
    print(f"jax: threads {args.threads}: {ms:.3f} ms; peak RSS {rss:.0f} MiB")


for fn in (torch_steps, jax_steps):
    try:
        fn()
    except ImportError as e:
        print(f"{fn.__name__}: not installed ({e})", file=sys.stderr)
