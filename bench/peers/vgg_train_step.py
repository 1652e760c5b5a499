# SPDX-License-Identifier: Apache-2.0
"""The VGG11 training step of kiln-bench's case train/VGG11 16x3x224x224 in PyTorch (eager
and torch.compile) and JAX (jax.jit, parameters and momentum donated): forward at
f32[16,3,224,224], mean softmax cross-entropy over 1000 classes, backward, SGD with
momentum 0.9 and learning rate 0.01 (torch.optim.SGD's update). Timed as kiln-bench times
its step: the median of steady steps after a warm-up (the first step compiles). Each also
reports the process's peak resident set while it steps (VmHWM, reset before the timed
steps through /proc/self/clear_refs), as kiln-bench's peak_rss does. Random weights and
data of the same shapes: timing only.

usage: vgg_train_step.py --threads N [--steps S] [--only torch-eager|torch-compile|jax]"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--steps", type=int, default=3)
ap.add_argument("--only", default=None)
args = ap.parse_args()
# As jax_peer.py: the process may run on its first N CPUs only (XLA sizes its thread pools
# by them and has no other limit that holds), OpenMP / BLAS counts N, Eigen single-threaded
# on one.
common.pin_threads(args.threads, affinity=True)
if args.threads == 1:
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"

BATCH, CLASSES = 16, 1000


def timed(step, sync):
    sync(step())  # the first step compiles
    sync(step())
    have = common.rss_peak_reset()
    ts = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        sync(step())
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts[-1], common.rss_peak_mib() if have else -1.0


def report(impl, r):
    med, lo, hi, rss = r
    print(f"{impl}: threads {args.threads}: {med:.3f} s (min {lo:.3f}, max {hi:.3f}, "
          f"{args.steps} steps); peak RSS {rss:.0f} MiB", flush=True)


def torch_steps():
    if args.only and not args.only.startswith("torch"):
        return
    import torch
    from torch import nn
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    def vgg11():
        layers, c = [], 3
        for width, n in zip([64, 128, 256, 512, 512], common.VGG_STAGES[11]):
            for _ in range(n):
                layers += [nn.Conv2d(c, width, 3, padding=1), nn.ReLU(inplace=True)]
                c = width
            layers.append(nn.MaxPool2d(2, 2))
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(25088, 4096), nn.ReLU(True),
                             nn.Linear(4096, 4096), nn.ReLU(True), nn.Linear(4096, CLASSES))

    x = torch.rand(BATCH, 3, 224, 224) * 2 - 1
    y = torch.randint(0, CLASSES, (BATCH,))
    for impl in ("torch-eager", "torch-compile"):
        if args.only and args.only != impl:
            continue
        model = vgg11()
        net = model if impl == "torch-eager" else torch.compile(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            return loss
        report(impl, timed(step, lambda r: r.item()))
        del model, net, opt


def jax_steps():
    if args.only and args.only != "jax":
        return
    import jax
    import jax.numpy as jnp

    def loss(p, x, y):
        logits = common.jax_vgg_forward(x, *p)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))

    def step(p, m, x, y):
        lv, g = jax.value_and_grad(loss)(p, x, y)
        m = [0.9 * a + b for a, b in zip(m, g)]
        p = [a - 0.01 * b for a, b in zip(p, m)]
        return p, m, lv

    jstep = jax.jit(step, donate_argnums=(0, 1))
    key = jax.random.PRNGKey(0)
    shapes, c = [], 3
    for width, n in zip([64, 128, 256, 512, 512], common.VGG_STAGES[11]):
        for _ in range(n):
            shapes += [(width, c, 3, 3), (width,)]
            c = width
    shapes += [(25088, 4096), (4096,), (4096, 4096), (4096,), (4096, CLASSES), (CLASSES,)]
    keys = jax.random.split(key, len(shapes) + 2)
    p = [jax.random.uniform(k, s, jnp.float32, -0.05, 0.05) for k, s in zip(keys, shapes)]
    state = [p, [jnp.zeros_like(a) for a in p]]
    x = jax.random.uniform(keys[-2], (BATCH, 3, 224, 224), jnp.float32, -1, 1)
    y = jax.random.randint(keys[-1], (BATCH,), 0, CLASSES)

    def one():
        state[0], state[1], lv = jstep(state[0], state[1], x, y)
        return lv
    report("jax", timed(one, jax.block_until_ready))


for fn in (torch_steps, jax_steps):
    try:
        fn()
    except ImportError as e:
        print(f"{fn.__name__}: not installed ({e})", file=sys.stderr)
