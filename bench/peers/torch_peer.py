# SPDX-License-Identifier: Apache-2.0
"""PyTorch peer of kiln-bench (PyTorch 2.13, CPU build, from bench/.venv): the same suites
and case names, one JSON record per line on stdout (see common.py), computed from kiln-bench's
inputs and checked against its results. Impls:
- torch-eager: op by op;
- torch-compile: torch.compile (TorchInductor, which generates fused, vectorized C++);
- torch-script: torch.jit.script (for VGG: script + freeze + optimize_for_inference).
comptime: torch.jit.script of a fresh function plus the calls that run the profiling
executor's optimization (2 calls), impl torch-script; and torch.compile's compile time, the
first call of a freshly compiled function (dynamo reset, inductor's caches fresh and empty)
minus a steady call of it, impl torch-compile.
Usage: torch_peer.py [--threads N|all] [--quick] [--filter SUBSTRING] [--check-dir DIR]"""

import atexit
import importlib.util
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__.splitlines()[0])
common.pin_threads(args.threads)

import torch  # noqa: E402
import torch._inductor.config as inductor_config  # noqa: E402
import torch._inductor.utils as inductor_utils  # noqa: E402
import torch.nn as nn  # noqa: E402

torch.set_num_threads(args.threads)
torch.set_grad_enabled(False)
# Compile times are real compiles: no FX graph or AOT-autograd cache across repetitions,
# and fresh_cache() below gives every compile an empty code cache.
inductor_config.fx_graph_cache = False
torch._functorch.config.enable_autograd_cache = False
fresh_cache = getattr(inductor_utils, "fresh_cache", None) or inductor_utils.fresh_inductor_cache
r = common.Runner(args, "torch-eager")
f32 = torch.float32


def cos(x):
    return torch.cos(x)


def expsin(x):
    return torch.exp(-x * x) * torch.sin(x) + 0.5 * x


def sum_all(x):
    return torch.sum(x)


def sum_rows(x):
    return torch.sum(x, 1)


def sum_cols(x):
    return torch.sum(x, 0)


def gemm(a, b):
    return torch.matmul(a, b)


def variants(suite, case, fn, unit, compiled=True, **kw):
    """Times fn eagerly, as torch.jit.script and (compiled) as torch.compile, on the case's
    inputs, checking each once."""
    xs = r.inputs(suite, case)
    if xs is None:
        return
    xs = [torch.from_numpy(x) for x in xs]
    impls = [("torch-eager", fn, 2), ("torch-script", torch.jit.script(fn), 3)]
    if compiled:
        impls.append(("torch-compile", torch.compile(fn), 3))
    for impl, f, warmup in impls:
        try:
            r.check(suite, case, f(*xs).numpy(), impl=impl)
            r.time(suite, case, lambda: f(*xs), unit, impl=impl, warmup=warmup, **kw)
        except Exception as e:  # noqa: BLE001 -- reported, the other impls go on
            print(f"{impl}: {suite} {case}: {type(e).__name__}: {e}", file=sys.stderr)


FUNCS = {"emlx_step": common.emlx_step, "emlx_matmul": common.emlx_matmul,
         "emlx_dot": common.emlx_dot, "cos": cos, "expsin": expsin, "sum_all": sum_all,
         "sum_rows": sum_rows, "sum_cols": sum_cols, "gemm": gemm}  # VGG: below
# torch.compile for the cases the fused code generator is for (EMLX's elementwise steps,
# elementwise chains, reductions); the contractions go to the same BLAS either way.
COMPILED = {"emlx_step", "emlx_matmul", "cos", "expsin", "sum_all", "sum_rows", "sum_cols"}
for suite, name, key, unit in common.call_cases(args.quick):
    if key in FUNCS:
        variants(suite, name, FUNCS[key], unit, compiled=key in COMPILED)


# ---- comptime -----------------------------------------------------------------------------

# torch.jit.script of a fresh function (the compile cache is keyed by function object, so each
# repetition scripts a new one), plus the two calls after which the profiling executor has
# built its optimized plan.
COMPTIME = {
    "2D sum": "def f{i}(x):\n    return torch.sum(x)\n",
    "Basic cos": "def f{i}(x):\n    return torch.cos(x)\n",
    # the gradient of sum(cos x), by torch.autograd.grad inside the scripted function
    "Basic grad cos": ("def f{i}(x):\n    x = x.detach().requires_grad_(True)\n"
                       "    y = torch.sum(torch.cos(x))\n"
                       "    g = torch.autograd.grad([y], [x])\n"
                       "    return g[0]\n"),
}
# torch.compile of the same functions (the gradient by torch.func.grad, which dynamo traces).
COMPTIME_COMPILE = {
    "2D sum": lambda: (lambda x: torch.sum(x)),
    "Basic cos": lambda: (lambda x: torch.cos(x)),
    "Basic grad cos": lambda: torch.func.grad(lambda x: torch.sum(torch.cos(x))),
}


def load_source(name, source):
    """A module of the given source, from a file that stays until the process exits
    (TorchScript reads a function's source from its file)."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    atexit.register(os.unlink, f.name)
    spec = importlib.util.spec_from_file_location(name, f.name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def compile_time(make_fn, inputs, reps):
    """torch.compile's compile time of a fresh function, reps times: its first call (which
    compiles) minus its second (steady) call, each after torch._dynamo.reset() and with an
    empty inductor cache. Returns (times, the last compiled function's result)."""
    times, out = [], None
    for _ in range(reps):
        torch._dynamo.reset()
        with fresh_cache():
            f = torch.compile(make_fn())
            t0 = time.perf_counter()
            f(*inputs)
            t1 = time.perf_counter()
            out = f(*inputs)
            t2 = time.perf_counter()
        times.append(max((t1 - t0) - (t2 - t1), 0.0))
    return times, out


# Compile times are compared on one thread (kiln-bench measures them there).
if args.threads == 1:
    # A process that has compiled before: inductor's one-time start-up is not a compile time.
    compile_time(lambda: (lambda x: torch.tanh(x) * 2.0), [torch.ones(4, 4)], 1)
for case, template in COMPTIME.items():
    if not r.wanted("comptime", case) or args.threads != 1:
        continue
    xs = r.inputs("comptime", case)
    if xs is None:
        continue
    inp = torch.from_numpy(xs[0])
    reps = 5 if args.quick else 21
    mod = load_source(f"kiln_comptime_{len(case)}",
                      "import torch\n" + "".join(template.format(i=i) for i in range(reps + 1)))
    times = []
    try:
        with torch.enable_grad():
            for i in range(reps + 1):
                t0 = time.perf_counter()
                s = torch.jit.script(getattr(mod, f"f{i}"))
                s(inp)
                out = s(inp)
                times.append(time.perf_counter() - t0)
        r.emit("comptime", case, times[1:], "ms", metric="compile", impl="torch-script")
        r.check("comptime", case, out.detach().numpy(), impl="torch-script")
    except Exception as e:  # noqa: BLE001 -- a case this torch cannot script is reported
        print(f"torch-script: comptime {case}: {type(e).__name__}: {e}", file=sys.stderr)
    try:
        with torch.enable_grad():
            times, out = compile_time(COMPTIME_COMPILE[case], [inp], 3 if args.quick else 7)
        r.emit("comptime", case, times, "ms", metric="compile", impl="torch-compile",
               note="first call - steady call of torch.compile(f), fresh caches")
        r.check("comptime", case, out.detach().numpy(), impl="torch-compile")
    except Exception as e:  # noqa: BLE001
        print(f"torch-compile: comptime {case}: {type(e).__name__}: {e}", file=sys.stderr)


VGG_STAGES = common.VGG_STAGES


class VGG(nn.Module):
    """kiln-bench's VGG (torchvision's layers without the adaptive pooling, which is the
    identity at 224x224): conv3x3 + ReLU stages with 2x2 max-pools, flatten, three linear
    layers to 1000 classes; the first takes dense_in = 512 * (H/32) * (W/32) inputs."""

    def __init__(self, depth, dense_in=25088):
        super().__init__()
        layers, c = [], 3
        for width, n in zip([64, 128, 256, 512, 512], VGG_STAGES[depth]):
            for _ in range(n):
                layers += [nn.Conv2d(c, width, 3, padding=1), nn.ReLU(inplace=True)]
                c = width
            layers.append(nn.MaxPool2d(2, 2))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(dense_in, 4096), nn.ReLU(True), nn.Linear(4096, 4096), nn.ReLU(True),
            nn.Linear(4096, 1000))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))

    def load_kiln(self, ws):
        """kiln's weights: (w OIHW, b) per conv, then (w [in, out], b) per dense layer."""
        convs = [m for m in self.features if isinstance(m, nn.Conv2d)]
        dense = [m for m in self.classifier if isinstance(m, nn.Linear)]
        k = 0
        for m in convs:
            m.weight.copy_(torch.from_numpy(ws[k])), m.bias.copy_(torch.from_numpy(ws[k + 1]))
            k += 2
        for m in dense:
            m.weight.copy_(torch.from_numpy(ws[k]).t()), m.bias.copy_(torch.from_numpy(ws[k + 1]))
            k += 2
        return self


# comptime VGG11..19 at f32[16,3,224,224]: torch.jit.script of the model (TorchScript caches
# a compiled module type per Python class, so every repetition gives the model a fresh
# subclass); and torch.compile of it (first call - steady call).
for depth in [11] if args.quick else VGG_STAGES:
    case = f"VGG{depth}"
    if not r.wanted("comptime", case) or args.threads != 1:
        continue
    reps = 2 if args.quick else 11
    net = VGG(depth).eval()
    times = []
    for i in range(reps + 1):
        net.__class__ = type(f"VGG{depth}_{i}", (VGG,), {})
        t0 = time.perf_counter()
        torch.jit.script(net)
        times.append(time.perf_counter() - t0)
    r.emit("comptime", case, times[1:], "ms", metric="compile", impl="torch-script",
           note="torch.jit.script of the model")
    net.__class__ = VGG
    x = torch.rand(16, 3, 224, 224)
    try:
        times, _ = compile_time(lambda net=net: net, [x], 1 if args.quick or depth > 11 else 2)
        r.emit("comptime", case, times, "ms", metric="compile", impl="torch-compile",
               note="first call - steady call of torch.compile(model), fresh caches")
    except Exception as e:  # noqa: BLE001
        print(f"torch-compile: comptime {case}: {type(e).__name__}: {e}", file=sys.stderr)
    del net, x


# comptime "VGG11 train step": what kiln's case lowers and compiles: VGG11's forward at
# f32[16,3,224,224] on 22 explicit weights, loss sum(logits^2)/16, the gradient of every
# weight, SGD (w - 0.01 g). torch-script: scripting a freshly defined function using
# torch.autograd.grad (scripting only, as for the forward cases); torch-compile: the step with
# torch.func.grad, first call - steady call.
def vgg11_forward(x, ws):
    h, k = x, 0
    for n in VGG_STAGES[11]:
        for _ in range(n):
            h = torch.relu(torch.conv2d(h, ws[k], ws[k + 1], [1, 1], [1, 1]))
            k += 2
        h = torch.max_pool2d(h, [2, 2], [2, 2])
    h = torch.flatten(h, 1)
    for j in range(3):
        h = h @ ws[k] + ws[k + 1]
        k += 2
        if j < 2:
            h = torch.relu(h)
    return h


def vgg11_train_step(x, ws):
    def loss(ws):
        logits = vgg11_forward(x, ws)
        return torch.sum(logits * logits) / x.shape[0]
    g = torch.func.grad(loss)(ws)
    return [w - 0.01 * gw for w, gw in zip(ws, g)]


def vgg11_train_source(i):
    lines = [f"def step{i}(x: torch.Tensor, ws: List[torch.Tensor]) -> List[torch.Tensor]:",
             "    ws = [w.detach().requires_grad_(True) for w in ws]",
             "    h = x"]
    k = 0
    for v in [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]:
        if v == "M":
            lines.append("    h = torch.max_pool2d(h, [2, 2], [2, 2])")
        else:
            lines.append(f"    h = torch.relu(torch.conv2d(h, ws[{k}], ws[{k + 1}], [1, 1], [1, 1]))")
            k += 2
    lines.append("    h = torch.flatten(h, 1)")
    for j in range(3):
        act = "torch.relu(" if j < 2 else "("
        lines.append(f"    h = {act}torch.matmul(h, ws[{k}]) + ws[{k + 1}])")
        k += 2
    lines += ["    loss = torch.sum(h * h) / 16.0",
              "    g = torch.autograd.grad([loss], ws)",
              "    out: List[torch.Tensor] = []",
              "    for w, gw in zip(ws, g):",
              "        assert gw is not None",
              "        out.append(w.detach() - 0.01 * gw)",
              "    return out", ""]
    return "\n".join(lines)


if r.wanted("comptime", "VGG11 train step") and args.threads == 1:
    reps = 2 if args.quick else 11
    mod = load_source("kiln_comptime_vgg_train", "import torch\nfrom typing import List\n" +
                      "".join(vgg11_train_source(i) for i in range(reps + 1)))
    times = []
    try:
        for i in range(reps + 1):
            t0 = time.perf_counter()
            torch.jit.script(getattr(mod, f"step{i}"))
            times.append(time.perf_counter() - t0)
        r.emit("comptime", "VGG11 train step", times[1:], "ms", metric="compile",
               impl="torch-script", note="torch.jit.script of the step")
    except Exception as e:  # noqa: BLE001 -- reported, not fatal
        print(f"torch-script: comptime VGG11 train step: {type(e).__name__}: {e}",
              file=sys.stderr)
    if not args.quick:
        specs = [(64, 3, 3, 3), (64,), (128, 64, 3, 3), (128,), (256, 128, 3, 3), (256,),
                 (256, 256, 3, 3), (256,), (512, 256, 3, 3), (512,), (512, 512, 3, 3), (512,),
                 (512, 512, 3, 3), (512,), (512, 512, 3, 3), (512,), (25088, 4096), (4096,),
                 (4096, 4096), (4096,), (4096, 1000), (1000,)]
        ws = [torch.rand(*s) * 0.01 for s in specs]
        try:
            with torch.enable_grad():
                times, _ = compile_time(lambda: vgg11_train_step,
                                        [torch.rand(16, 3, 224, 224), ws], 1)
            r.emit("comptime", "VGG11 train step", times, "ms", metric="compile",
                   impl="torch-compile",
                   note="first call - steady call of torch.compile(step), fresh caches")
        except Exception as e:  # noqa: BLE001
            print(f"torch-compile: comptime VGG11 train step: {type(e).__name__}: {e}",
                  file=sys.stderr)
        del ws


# ---- VGG forward, executed --------------------------------------------------------------------

for suite, case, key, unit in common.call_cases(args.quick):
    if not key.startswith("vgg"):
        continue
    xs = r.inputs(suite, case)
    if xs is None:
        continue
    model = VGG(int(key[3:]), dense_in=xs[-6].shape[0]).eval().load_kiln(xs[1:])
    inp = torch.from_numpy(xs[0])
    impls = [("torch-eager", model, 2),
             ("torch-script",
              torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(model))), 3),
             ("torch-compile", torch.compile(model), 3)]
    for impl, f, warmup in impls:
        try:
            r.check(suite, case, f(inp).numpy(), impl=impl)
            r.time(suite, case, lambda: f(inp), unit, impl=impl, warmup=warmup, max_reps=21)
        except Exception as e:  # noqa: BLE001
            print(f"{impl}: {suite} {case}: {type(e).__name__}: {e}", file=sys.stderr)
    del model, impls, xs
