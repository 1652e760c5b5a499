# SPDX-License-Identifier: Apache-2.0
"""JAX on kiln through the PJRT plugin, against JAX on XLA's CPU in the same process.

Each case is a function as JAX users write it, run under jax.jit on a kiln device and on
a CPU device with the same inputs; results must agree (exactly for integers, booleans and
data movement; within a tolerance for floats). Then: donation (the donated array is
deleted afterwards, the result is right), a few training steps of a small CNN (losses
close to XLA's), jax.vmap, jax.random, and errors (a function kiln cannot run raises a
Python exception naming what is missing, without crashing the process).

Prints one line per case and a summary; exits 1 when a case fails.
usage: JAX_PLATFORMS=cpu,kiln python jax_plugin.py
       JAX_PLATFORMS=cpu,kiln JAX_ENABLE_X64=1 python jax_plugin.py --x64   (64-bit types)
"""
import sys
import time
import traceback

import ml_dtypes
import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

CPU = jax.devices("cpu")[0]
KILN = jax.devices("kiln")[0]
rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def on(device, tree):
    return jax.tree_util.tree_map(lambda a: jax.device_put(a, device), tree)


def close(name, got, want, rtol, atol):
    got = jax.tree_util.tree_leaves(got)
    want = jax.tree_util.tree_leaves(want)
    if len(got) != len(want):
        return f"{len(got)} results, XLA gives {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"result {i} is {g.dtype}{list(g.shape)}, XLA gives {w.dtype}{list(w.shape)}"
        # floats and complex, ml_dtypes' small floats too (float8_*, float4_*)
        if np.issubdtype(w.dtype, np.inexact) or w.dtype.name.startswith("float"):
            wide = np.complex128 if np.iscomplexobj(w) else np.float64
            if not np.allclose(g.astype(wide), w.astype(wide), rtol=rtol, atol=atol,
                               equal_nan=True):
                err = np.max(np.abs(g.astype(wide) - w.astype(wide)))
                return f"result {i} differs from XLA's by up to {err:.3g}"
        elif not np.array_equal(g, w):
            return f"result {i} differs from XLA's"
    return None


def cases():
    x23, y23, v8 = f32(2, 3), f32(2, 3), f32(8)
    ints = rng.integers(-50, 50, (4, 5)).astype(np.int32)
    u8 = rng.integers(0, 255, (6,)).astype(np.uint8)
    w1, b1, w2, b2 = f32(6, 16) * 0.3, f32(16) * 0.1, f32(16, 3) * 0.3, f32(3) * 0.1
    xb, yb = f32(8, 6), rng.integers(0, 3, 8)

    def mlp_loss(params, x, y):
        (w1, b1), (w2, b2) = params
        h = jnp.tanh(x @ w1 + b1)
        logits = h @ w2 + b2
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))

    yield "elementwise f32", lambda a, b: (jnp.exp(-a * a) * jnp.sin(b) + jnp.tanh(a) /
                                           (1 + b * b), jnp.sqrt(jnp.abs(a)),
                                           jnp.log1p(jnp.abs(b)), jnp.maximum(a, b)), (x23, y23)
    yield "elementwise f64-free ints", lambda a: (a * 3 - 7, a // 4, a % 5, jnp.abs(a),
                                                  a << 2, a >> 1, a & 12, a ^ 5), (ints,)
    yield "uint8 and bool", lambda a: (a + 3, a > 100, jnp.logical_not(a > 50)), (u8,)
    yield "i8 i16 u16 u32", lambda a: (a.astype(jnp.int8) * 3, a.astype(jnp.int16) - 300,
                                       a.astype(jnp.uint16) * 7, a.astype(jnp.uint32) << 9,
                                       jnp.float32(2) ** a.astype(jnp.int16).astype(jnp.float32)), (ints,)
    yield "f16 and bf16", lambda a: (a.astype(jnp.float16) * 2, a.astype(jnp.bfloat16) + 1), (x23,)
    yield "comparisons and where", lambda a, b: jnp.where(a > b, a, b * 2), (x23, y23)
    yield "reductions", lambda a: (a.sum(), a.max(0), a.min(1), a.mean(), jnp.argmax(a, 1),
                                   jnp.prod(a, 0), jnp.any(a > 1)), (f32(5, 7),)
    # erf and top_k reach kiln as stablehlo.composite ops, run through their decomposition
    yield "erf, gelu and top_k", lambda a: (jax.scipy.special.erf(a), jax.nn.gelu(a),
                                            lax.top_k(a, 3)), (v8,)
    yield "softmax and logsumexp", lambda a: (jax.nn.softmax(a), jax.nn.logsumexp(a, 1)), (f32(4, 9),)
    yield "cumsum and sort", lambda a: (jnp.cumsum(a), jnp.sort(a), jnp.argsort(a)), (v8,)
    yield "reshape transpose concat", lambda a, b: (a.T, a.reshape(3, 2),
                                                    jnp.concatenate([a, b], 0), a[:, ::-1],
                                                    a[1:, 1:]), (x23, y23)
    yield "indexing", lambda a, i: (a[i], a[:, i % 3], jnp.take(a, i, axis=0)), (
        f32(5, 3), np.array([4, 0, 2], np.int32))
    yield "scatter .at[]", lambda a, i: (a.at[i].set(9.0), a.at[i].add(1.0),
                                         a.at[0, 1].multiply(3.0)), (f32(5, 3), np.array([1, 3], np.int32))
    yield "dot and einsum", lambda a, b, c: (a @ b, jnp.einsum("ij,jk->ik", a, b),
                                             jnp.einsum("bij,bjk->bik", c, c)), (
        f32(3, 4), f32(4, 5), f32(2, 4, 4))
    yield "convolution", lambda x, k: lax.conv_general_dilated(x, k, (1, 1), "SAME"), (
        f32(2, 3, 8, 8), f32(4, 3, 3, 3))
    yield "strided conv nhwc", lambda x, k: lax.conv_general_dilated(
        x, k, (2, 2), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")), (f32(1, 9, 9, 2), f32(3, 3, 2, 4))
    yield "max pool", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2),
                                                  "VALID"), (f32(1, 2, 6, 6),)
    yield "while_loop", lambda a: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.1),
                                                 (0, a)), (v8,)
    yield "fori_loop", lambda a: lax.fori_loop(0, 7, lambda i, s: s + jnp.sin(s) * i, a), (v8,)
    yield "scan", lambda a: lax.scan(lambda c, x: (c + x, c * x), 0.0, a), (v8,)
    yield "cond", lambda p, a: lax.cond(p > 0, lambda z: jnp.sin(z), lambda z: jnp.cos(z) * 2, a), (
        np.float32(-1.0), v8)
    yield "switch", lambda i, a: lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], a), (np.int32(2), v8)
    yield "grad of an MLP loss", jax.grad(mlp_loss), ((((w1, b1), (w2, b2))), xb, yb)
    yield "value_and_grad", jax.value_and_grad(lambda w: jnp.sum(jnp.tanh(xb @ w) ** 2)), (w1,)
    yield "vmap", jax.vmap(lambda a, b: jnp.dot(a, b) * jnp.sum(a)), (f32(5, 4), f32(5, 4))
    yield "vmap of grad", jax.vmap(jax.grad(lambda a: jnp.sum(jnp.sin(a) * a))), (f32(3, 4),)
    c1 = (f32(6) + 1j * f32(6)).astype(np.complex64)
    c2 = (f32(6) + 1j * f32(6)).astype(np.complex64)
    yield "complex64 arithmetic and data movement", lambda a, b: (
        a + b, a * b, -(a - b), a == b, jnp.concatenate([a, b]).reshape(2, 6).T,
        jnp.real(a) * jnp.imag(b), lax.complex(jnp.imag(a), jnp.real(b)), a / b,
        jnp.sum(a.reshape(2, 3), 1), jnp.mean(a * b)), (c1, c2)
    m1 = (f32(3, 4) + 1j * f32(3, 4)).astype(np.complex64)
    m2 = (f32(4, 2) + 1j * f32(4, 2)).astype(np.complex64)
    yield "complex64 functions and products", lambda a, p, q: (
        jnp.exp(a), jnp.log(a), jnp.sqrt(a), jnp.tanh(a), jnp.sin(a), jnp.cos(a), jnp.abs(a),
        jnp.sign(a), jnp.expm1(a), jnp.log1p(a), a ** 3, a ** 0.5, lax.rsqrt(a), p @ q,
        jnp.einsum("ij,jk->ik", p, q.conj()), jnp.tan(a)), (c1, m1, m2)
    sig = f32(3, 12)
    yield "jnp.fft", lambda r, z: (
        jnp.fft.fft(z), jnp.fft.ifft(z), jnp.fft.rfft(r), jnp.fft.irfft(jnp.fft.rfft(r), 12),
        jnp.fft.fft2(z.reshape(2, 3)), jnp.fft.rfftn(r), jnp.fft.fft(r[:, :7], axis=1)), (sig, c1)
    spd = f32(2, 4, 4)
    spd = spd @ spd.transpose(0, 2, 1) + 4 * np.eye(4, dtype=np.float32)
    yield "cholesky and triangular_solve", lambda a, b: (
        jnp.linalg.cholesky(a), jax.scipy.linalg.solve_triangular(
            jnp.linalg.cholesky(a), b, lower=True),
        lax.linalg.triangular_solve(a, b, left_side=True, lower=False, transpose_a=True)), (
        spd, f32(2, 4, 3))
    # the narrow types: computed wide, rounded (wrapped) once; bytes as ml_dtypes lays them
    # out. (popcnt of a negative int4 is left out: XLA counts the sign-extended byte, the
    # spec and kiln the type's four bits.)
    i4 = np.array([1, -2, 3, 7, -8, 0], dtype=ml_dtypes.int4)
    u4 = np.array([1, 2, 5, 15, 0, 9], dtype=ml_dtypes.uint4)
    e4 = np.array([0.5, 1.5, -3, 20, 0.0625, 448], dtype=ml_dtypes.float8_e4m3fn)
    e5 = f32(4, 4).astype(ml_dtypes.float8_e5m2)
    f4 = np.array([0.5, 1, 6, -4, 1.5, 0], dtype=ml_dtypes.float4_e2m1fn)
    yield "int4, uint4, float8 and float4", lambda a, b, c, m, d: (
        a + a, a * 3, b * 3, b >> 1, c * c + 1, c.astype(jnp.float32), jnp.maximum(c, 1),
        jnp.dot(m, m, preferred_element_type=jnp.float32), d.astype(jnp.float32) * 2,
        d + d, (a.astype(jnp.int32) + 9).astype(ml_dtypes.int4)), (i4, u4, e4, e5, f4)
    rp = f32(4, 4) * 1e3
    yield "reduce_precision", lambda x: (
        jax.lax.reduce_precision(x, 5, 10), jax.lax.reduce_precision(x, 4, 3),
        jax.lax.reduce_precision(x * 1e-6, 5, 0),
        jax.grad(lambda y: jnp.sum(jax.lax.reduce_precision(y, 8, 7) * 1.0001))(x)), (rp,)
    yield "jax.random", lambda k: (jax.random.normal(k, (3, 4)), jax.random.uniform(k, (5,)),
                                   jax.random.randint(k, (4,), 0, 10)), (jax.random.key_data(
        jax.random.PRNGKey(42)),)


def x64_cases():
    """With JAX_ENABLE_X64: the 64-bit types."""
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    i = rng.integers(-1000, 1000, (6,)).astype(np.int64)
    u = rng.integers(0, 2**40, (6,)).astype(np.uint64)
    yield "f64 elementwise", lambda x: (jnp.exp(x) * jnp.sin(x) - jnp.log1p(x * x),
                                        jnp.tanh(x) ** 3), (a,)
    yield "f64 reductions and dot", lambda x, y: (x.sum(0), x.max(), x @ y,
                                                  jnp.cumsum(x, 1)), (a, b)
    yield "i64 and u64", lambda p, q: (p * 3 - 7, p // 9, p % 13, q * 5, q >> 3,
                                       q.astype(jnp.float64)), (i, u)
    yield "f64 grad", jax.grad(lambda x: jnp.sum(jnp.sin(x) ** 2)), (a,)
    z = a + 1j * rng.standard_normal((3, 4))
    yield "complex128 arithmetic and data movement", lambda p, q: (
        p * q - p, p != q, jnp.flip(p, 1)[:, 1:3]), (z, z[::-1])


def random_case(key_data):
    key = jax.random.wrap_key_data(key_data)
    return jax.random.normal(key, (3, 4)), jax.random.bernoulli(key, 0.3, (6,))


def run_case(name, fn, args, rtol=2e-5, atol=2e-5):
    f = jax.jit(fn)
    want = f(*on(CPU, args))
    got = f(*on(KILN, args))
    for leaf in jax.tree_util.tree_leaves(got):
        if leaf.devices() != {KILN}:
            return f"a result is on {leaf.devices()}, not kiln"
    return close(name, got, want, rtol=rtol, atol=atol)


def donation():
    f = jax.jit(lambda a, b: a * 2 + b, donate_argnums=0)
    a = jax.device_put(np.arange(6, dtype=np.float32), KILN)
    b = jax.device_put(np.ones(6, np.float32), KILN)
    r = f(a, b)
    if not a.is_deleted():
        return "the donated argument is not deleted afterwards"
    if b.is_deleted():
        return "an argument not donated was deleted"
    if not np.array_equal(np.asarray(r), np.arange(6) * 2 + 1):
        return "wrong result"
    try:
        np.asarray(a)
        return "reading the donated array did not raise"
    except Exception:
        pass
    return None


def cnn_training():
    def init(k):
        k1, k2, k3 = jax.random.split(k, 3)
        return {"c1": jax.random.normal(k1, (8, 1, 3, 3)) * 0.3,
                "c2": jax.random.normal(k2, (8, 8, 3, 3)) * 0.1,
                "w": jax.random.normal(k3, (8 * 7 * 7, 10)) * 0.05}

    def forward(p, x):
        h = jax.nn.relu(lax.conv_general_dilated(x, p["c1"], (1, 1), "SAME"))
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        h = jax.nn.relu(lax.conv_general_dilated(h, p["c2"], (1, 1), "SAME"))
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return h.reshape(h.shape[0], -1) @ p["w"]

    def loss(p, x, y):
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(forward(p, x)) * jax.nn.one_hot(y, 10), -1))

    @jax.jit
    def step(p, x, y):
        l, g = jax.value_and_grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), l

    x = f32(16, 1, 28, 28)
    y = rng.integers(0, 10, 16)
    params = jax.device_get(init(jax.random.PRNGKey(0)))
    losses = {}
    for name, dev in (("xla", CPU), ("kiln", KILN)):
        p = on(dev, params)
        xd, yd = on(dev, (x, y))
        ls = []
        for _ in range(5):
            p, l = step(p, xd, yd)
            ls.append(float(l))
        losses[name] = ls
    if not losses["kiln"][-1] < losses["kiln"][0]:
        return f"the loss does not fall: {losses['kiln']}"
    if not np.allclose(losses["kiln"], losses["xla"], rtol=1e-3, atol=1e-4):
        return f"losses {losses['kiln']} differ from XLA's {losses['xla']}"
    return None


def placement():
    """A program runs on the device its inputs are on; several devices at once is refused."""
    devices = jax.devices("kiln")
    if len(devices) < 2:
        return "one kiln device (KILN_CPU_DEVICES=2 gives two)"
    x = jax.device_put(np.arange(4, dtype=np.float32), devices[1])
    y = jax.jit(lambda a: a * 2 + 1)(x)
    if y.devices() != {devices[1]}:
        return f"the result is on {y.devices()}, not kiln:1"
    if not np.array_equal(np.asarray(y), np.arange(4) * 2 + 1):
        return "wrong result on kiln:1"
    z = jax.device_put(y, devices[0])
    if z.devices() != {devices[0]} or not np.array_equal(np.asarray(z), np.asarray(y)):
        return "copying to kiln:0 failed"
    try:
        jax.pmap(lambda a: a + 1, devices=devices[:2])(np.ones((2, 3), np.float32))
        return "pmap over two devices did not raise"
    except Exception as e:
        if "one device" not in str(e):
            return f"the pmap error does not say why: {e}"
    return None


def errors():
    # an op kiln reads but does not run on complex yet: refused at compile, op and type named
    try:
        jax.jit(jnp.sort)(jax.device_put(np.ones(3, np.complex64), KILN)).block_until_ready()
        return "sort of complex64 did not raise"
    except Exception as e:
        if "sort on complex<f32>" not in str(e):
            return f"the complex64 error does not name the op and the type: {e}"
    # an op kiln lacks (eigh has no lowering for a platform JAX does not know)
    try:
        jax.jit(lambda a: jnp.linalg.eigh(a @ a.T)[0])(
            jax.device_put(f32(3, 3), KILN)).block_until_ready()
        return "eigh did not raise"
    except Exception as e:
        if "kiln" not in str(e) and "unknown op" not in str(e) and "unsupported" not in str(e):
            return f"the eigh error does not say what is missing: {e}"
    # kiln still works afterwards
    if float(jax.jit(lambda a: a + 1)(jax.device_put(np.float32(1), KILN))) != 2.0:
        return "kiln did not recover"
    return None


def introspection():
    """What users ask of a compiled function: cost_analysis() (flops as XLA counts them),
    as_text() (the optimized program, which the framework converts to HLO) and
    memory_analysis()."""
    x, w = f32(8, 3, 16, 16), f32(4, 3, 3, 3)

    def fn(x, w):
        h = lax.conv_general_dilated(x, w, (1, 1), "SAME")
        return jnp.tanh(h.reshape(8, -1) @ h.reshape(8, -1).T)

    compiled = {dev.platform: jax.jit(fn).lower(*on(dev, (x, w))).compile() for dev in (CPU, KILN)}
    want, got = compiled["cpu"].cost_analysis(), compiled["kiln"].cost_analysis()
    if isinstance(want, list):  # older jax: one dict per program
        want, got = want[0], got[0]
    # XLA's conventions: 2 flops per multiply-accumulate, only the convolution taps that
    # read input (not padding) counted; tanh is a transcendental
    for key in ("flops", "transcendentals"):
        if got.get(key) != want.get(key):
            return f"cost_analysis {key} {got.get(key)}; XLA says {want.get(key)}"
    if not got.get("bytes accessed", 0) >= 4 * (x.size + w.size + 64):
        return f"cost_analysis bytes accessed {got.get('bytes accessed')} is too small"
    text = compiled["kiln"].as_text()
    if not text or "HloModule" not in text or "convolution" not in text or "dot" not in text:
        return f"as_text() does not show the program: {text!r:.300}"
    mem = compiled["kiln"].memory_analysis()
    if mem.argument_size_in_bytes != 4 * (x.size + w.size) or mem.output_size_in_bytes != 4 * 64:
        return f"memory_analysis says arguments {mem.argument_size_in_bytes}, outputs {mem.output_size_in_bytes}"
    return None


def main():
    failures = 0
    total = 0
    if "--x64" in sys.argv:
        for name, fn, args in x64_cases():
            total += 1
            try:
                problem = run_case(name, fn, args, rtol=1e-12, atol=1e-12)
            except Exception as e:
                problem = f"raised {type(e).__name__}: {str(e).splitlines()[0][:300]}"
            print(f"{'ok  ' if problem is None else 'FAIL'} {name}" + ("" if problem is None else f": {problem}"))
            failures += problem is not None
        print(f"jax_plugin --x64: {total - failures} of {total} cases match JAX on XLA's CPU")
        return 1 if failures else 0
    for name, fn, args in cases():
        total += 1
        try:
            if name == "jax.random":
                fn = random_case
            problem = run_case(name, fn, args)
        except Exception as e:
            problem = f"raised {type(e).__name__}: {str(e).splitlines()[0][:300]}"
        print(f"{'ok  ' if problem is None else 'FAIL'} {name}" + ("" if problem is None else f": {problem}"))
        failures += problem is not None
    for name, check in (("donate_argnums", donation), ("CNN training steps", cnn_training),
                        ("placement on kiln:1", placement), ("errors", errors),
                        ("cost_analysis, as_text, memory_analysis", introspection)):
        total += 1
        try:
            problem = check()
        except Exception as e:
            traceback.print_exc()
            problem = f"raised {type(e).__name__}: {str(e).splitlines()[0][:300]}"
        print(f"{'ok  ' if problem is None else 'FAIL'} {name}" + ("" if problem is None else f": {problem}"))
        failures += problem is not None
    print(f"jax_plugin: {total - failures} of {total} cases match JAX on XLA's CPU")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
