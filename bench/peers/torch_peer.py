#!/usr/bin/python3
"""PyTorch peer of kiln-bench (Debian's python3-torch, 1.13): the same suites and case names,
one JSON record per line on stdout (see common.py). Impls: torch-eager (op by op) and
torch-script (torch.jit.script; for VGG, script + freeze + optimize_for_inference). comptime:
torch.jit.script of a fresh function plus the calls that run the profiling executor's
optimization (2 calls), impl torch-script. With --onnx-dir it also exports VGG11 (one
file per input shape) and the EMLX, elementwise and reduction functions (at the shapes
kiln-bench uses) to ONNX for ort_peer.js.
Usage: torch_peer.py [--threads N|all] [--quick] [--filter SUBSTRING] [--onnx-dir DIR]"""

import importlib.util
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__.splitlines()[0],
                         lambda ap: ap.add_argument("--onnx-dir", default=None))
common.pin_threads(args.threads)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

torch.set_num_threads(args.threads)
torch.set_grad_enabled(False)
r = common.Runner(args, "torch-eager")
f32 = torch.float32


def emlx_step(x, y):
    acc = x
    for i in range(1, 11):
        acc = float(i) * acc + y
    return acc


def emlx_matmul(x, y):
    acc = x
    for i in range(1, 11):
        acc = float(i) * torch.matmul(acc, y) + y
    return acc


def emlx_dot(x, y):
    acc = x
    for _ in range(10):
        acc = torch.matmul(x, acc) + y
    return acc


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


def both(suite, case, fn, inputs, unit, **kw):
    """Time fn eagerly and as torch.jit.script."""
    r.time(suite, case, lambda: fn(*inputs), unit, impl="torch-eager", **kw)
    if r.wanted(suite, case):
        s = torch.jit.script(fn)
        r.time(suite, case, lambda: s(*inputs), unit, impl="torch-script", warmup=3, **kw)


x = torch.arange(100, dtype=f32).reshape(10, 10) / 100  # as kiln-bench: iota / n^2
both("emlx", "scalar f32[10,10]", emlx_step, (x, x), "us")
both("emlx", "matmul f32[10,10]", emlx_matmul, (x, x), "us")
for n in common.quick_filter(args.quick, common.EMLX_DOT, [10, 100]):
    a = torch.arange(n * n, dtype=f32).reshape(n, n) / (n * n)
    both("emlx", f"dot f32[{n},{n}]", emlx_dot, (a, a), "us" if n < 1000 else "ms")

for op, size in common.quick_filter(args.quick, common.ELEMENTWISE,
                                    [("cos", "1e6"), ("expsin", "1e6")]):
    v = torch.linspace(-3, 3, int(float(size)), dtype=f32)
    both("elementwise", f"{op} {size}", cos if op == "cos" else expsin, (v,), "ms")

m = torch.randn(common.REDUCE_SHAPE, dtype=f32, generator=torch.Generator().manual_seed(0))
shape = "%dx%d" % common.REDUCE_SHAPE
both("reduction", f"sum all {shape}", sum_all, (m,), "ms")
both("reduction", f"sum rows {shape}", sum_rows, (m,), "ms")
both("reduction", f"sum cols {shape}", sum_cols, (m,), "ms")

for n in common.quick_filter(args.quick, common.GEMM, [64, 256]):
    g = torch.Generator().manual_seed(n)
    a, b = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
    both("gemm", f"f32 {n}", gemm, (a, b), "ms")


# comptime: torch.jit.script of a fresh function (the compile cache is keyed by function
# object, so each repetition scripts a new one), plus the two calls after which the profiling
# executor has built its optimized plan.
COMPTIME = {
    "2D sum": ("def f{i}(x):\n    return torch.sum(x)\n", lambda: torch.ones(2, 10)),
    "Basic cos": ("def f{i}(x):\n    return torch.cos(x)\n", lambda: torch.ones(2, 10)),
    # the gradient of sum(cos x), by torch.autograd.grad inside the scripted function
    "Basic grad cos": ("def f{i}(x):\n    x = x.detach().requires_grad_(True)\n"
                       "    y = torch.sum(torch.cos(x))\n"
                       "    g = torch.autograd.grad([y], [x])\n"
                       "    return g[0]\n", lambda: torch.ones(2, 10, dtype=torch.float64)),
}
# Compile times are compared on one thread (kiln-bench measures them there).
for case, (template, make_input) in COMPTIME.items():
    if not r.wanted("comptime", case) or args.threads != 1:
        continue
    reps = 5 if args.quick else 21
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write("import torch\n" + "".join(template.format(i=i) for i in range(reps + 1)))
    spec = importlib.util.spec_from_file_location(f"kiln_comptime_{len(case)}", f.name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    inp = make_input()
    times = []
    try:
        with torch.enable_grad():
            for i in range(reps + 1):
                t0 = time.perf_counter()
                s = torch.jit.script(getattr(mod, f"f{i}"))
                s(inp)
                s(inp)
                times.append(time.perf_counter() - t0)
        r.emit("comptime", case, times[1:], "ms", metric="compile", impl="torch-script")
    except Exception as e:  # noqa: BLE001 -- a case this torch cannot script is reported
        print(f"torch-script: comptime {case}: {type(e).__name__}: {e}", file=sys.stderr)
    os.unlink(f.name)


# VGG11 (torchvision's layout: 8 convs 3x3 + ReLU, 5 max-pools, adaptive avg-pool to 7x7,
# 3 linear layers to 1000 classes), random weights, inference.
class VGG11(nn.Module):
    def __init__(self):
        super().__init__()
        layers, c = [], 3
        for v in [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(c, v, 3, padding=1), nn.ReLU(inplace=True)]
                c = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(), nn.Linear(4096, 1000))

    def forward(self, x):
        x = self.features(x)
        if x.shape[2] == 1 and x.shape[3] == 1:  # 32x32 inputs: adaptive pooling replicates
            x = x.expand(-1, -1, 7, 7)  # (same result; mkldnn rejects the 1x1 -> 7x7 pool)
        else:
            x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


VGG_STAGES = {11: [1, 1, 2, 2, 2], 13: [2, 2, 2, 2, 2], 16: [2, 2, 3, 3, 3],
              19: [2, 2, 4, 4, 4]}


class VGGN(VGG11):
    """VGG11/13/16/19 (the features' stages differ; same classifier)."""

    def __init__(self, depth):
        super().__init__()
        layers, c = [], 3
        for width, n in zip([64, 128, 256, 512, 512], VGG_STAGES[depth]):
            for _ in range(n):
                layers += [nn.Conv2d(c, width, 3, padding=1), nn.ReLU(inplace=True)]
                c = width
            layers.append(nn.MaxPool2d(2, 2))
        self.features = nn.Sequential(*layers)


# comptime VGG11..19: torch.jit.script of the model (what kiln_lower + kiln_compile do for
# f32[16,3,224,224]). TorchScript caches a compiled module type per Python class, so every
# repetition gives the model a fresh subclass.
for depth in [11] if args.quick else VGG_STAGES:
    case = f"VGG{depth}"
    if not r.wanted("comptime", case) or args.threads != 1:
        continue
    reps = 2 if args.quick else 11
    net = VGGN(depth).eval()
    times = []
    for i in range(reps + 1):
        net.__class__ = type(f"VGG{depth}_{i}", (VGGN,), {})
        t0 = time.perf_counter()
        torch.jit.script(net)
        times.append(time.perf_counter() - t0)
    r.emit("comptime", case, times[1:], "ms", metric="compile", impl="torch-script")
    del net

# comptime "VGG11 train step": torch.jit.script of a function doing what kiln's case lowers
# and compiles: VGG11's forward at f32[16,3,224,224] on 22 explicit weights, loss
# sum(logits^2)/16, torch.autograd.grad of every weight, SGD (w - 0.01 g). Scripting only
# (as for the forward cases): each repetition scripts a freshly defined function.
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
        lines.append(f"    h = {act}torch.nn.functional.linear(h, ws[{k}], ws[{k + 1}]))")
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
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write("import torch\nfrom typing import List\n" +
                "".join(vgg11_train_source(i) for i in range(reps + 1)))
    spec = importlib.util.spec_from_file_location("kiln_comptime_vgg_train", f.name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    times = []
    try:
        for i in range(reps + 1):
            t0 = time.perf_counter()
            torch.jit.script(getattr(mod, f"step{i}"))
            times.append(time.perf_counter() - t0)
        r.emit("comptime", "VGG11 train step", times[1:], "ms", metric="compile",
               impl="torch-script")
    except Exception as e:  # noqa: BLE001 -- reported, not fatal
        print(f"torch-script: comptime VGG11 train step: {type(e).__name__}: {e}",
              file=sys.stderr)
    os.unlink(f.name)

vgg_cases = [s for s in common.quick_filter(args.quick, common.VGG, [])
             if r.wanted("vgg", "VGG11 %dx%dx%dx%d" % s)]
if vgg_cases:
    torch.manual_seed(0)
    model = VGG11().eval()
    frozen = None
    for s in vgg_cases:
        case = "VGG11 %dx%dx%dx%d" % s
        inp = torch.randn(*s)
        r.time("vgg", case, lambda: model(inp), "ms", impl="torch-eager", max_reps=21)
        if frozen is None:
            frozen = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(model)))
        r.time("vgg", case, lambda: frozen(inp), "ms", impl="torch-script", warmup=3,
               max_reps=21)
    if args.onnx_dir:  # one file per input shape (the export traces the pooling branch)
        os.makedirs(args.onnx_dir, exist_ok=True)
        for s in vgg_cases:
            path = os.path.join(args.onnx_dir, "vgg11_%dx%dx%dx%d.onnx" % s)
            if not os.path.exists(path):
                torch.onnx.export(model, torch.randn(*s), path, input_names=["input"],
                                  output_names=["logits"], opset_version=13)
                print(f"torch: exported {path}", file=sys.stderr)


# The small functions as ONNX models for ort_peer.js, at the shapes kiln-bench uses (static,
# so ONNX Runtime can plan them fully).
class Wrap(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *xs):
        return self.f(*xs)


if args.onnx_dir:
    os.makedirs(args.onnx_dir, exist_ok=True)
    x10 = torch.arange(100, dtype=f32).reshape(10, 10) / 100
    EXPORTS = [("emlx_scalar", emlx_step, (x10, x10.clone())),
               ("emlx_matmul", emlx_matmul, (x10, x10.clone())),
               ("cos_1e7", cos, (torch.zeros(10000000),)),
               ("expsin_1e7", expsin, (torch.zeros(10000000),)),
               ("sum_all", sum_all, (torch.zeros(common.REDUCE_SHAPE),)),
               ("sum_rows", sum_rows, (torch.zeros(common.REDUCE_SHAPE),)),
               ("sum_cols", sum_cols, (torch.zeros(common.REDUCE_SHAPE),))]
    for name, fn, example in EXPORTS:
        path = os.path.join(args.onnx_dir, name + ".onnx")
        if os.path.exists(path):
            continue
        try:
            torch.onnx.export(Wrap(fn), example, path, opset_version=13,
                              input_names=[f"x{i}" for i in range(len(example))],
                              output_names=["y"])
            print(f"torch: exported {path}", file=sys.stderr)
        except Exception as e:  # noqa: BLE001 -- ort_peer.js then reports the file missing
            print(f"torch: export of {name}: {type(e).__name__}: {e}", file=sys.stderr)
