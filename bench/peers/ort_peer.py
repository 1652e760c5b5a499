# SPDX-License-Identifier: Apache-2.0
"""ONNX Runtime peer of kiln-bench (the onnxruntime package, CPU execution provider): the
same suites and case names, one JSON record per line on stdout (see common.py), computed
from kiln-bench's inputs and checked against its results. Impl "ort".

Each case's function is written as an ONNX graph with onnx.helper (opset 17) at the shapes
kiln-bench uses, static, so that ONNX Runtime can plan it fully; VGG11's weights are kiln's,
as initializers (what a deployed model holds, and what lets ONNX Runtime pre-pack them).
Sessions: all graph optimizations, intra_op_num_threads = the thread count,
inter_op_num_threads = 1.
Usage: ort_peer.py [--threads N|all] [--quick] [--filter SUBSTRING] [--check-dir DIR]"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__.splitlines()[0])
common.pin_threads(args.threads)

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

r = common.Runner(args, "ort")
OPSET = 17


class Graph:
    """A small builder: named values, nodes, initializers."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def const(self, array):
        name = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, *inputs, **attrs):
        self.n += 1
        out = f"v{self.n}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def model(self, inputs, output):
        ins = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, list(x.shape))
               for i, x in enumerate(inputs)]
        outs = [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)]
        g = helper.make_graph(self.nodes, "kiln_bench_case", ins, outs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 8  # ONNX Runtime validates the model when it loads it
        return m


def emlx_step(g, x, y):
    acc = x
    for i in range(1, 11):
        acc = g.op("Add", g.op("Mul", g.const(np.float32(i)), acc), y)
    return acc


def emlx_matmul(g, x, y):
    acc = x
    for i in range(1, 11):
        acc = g.op("Add", g.op("Mul", g.const(np.float32(i)), g.op("MatMul", acc, y)), y)
    return acc


def emlx_dot(g, x, y):
    acc = x
    for _ in range(10):
        acc = g.op("Add", g.op("MatMul", x, acc), y)
    return acc


def expsin(g, x):
    e = g.op("Exp", g.op("Neg", g.op("Mul", x, x)))
    return g.op("Add", g.op("Mul", e, g.op("Sin", x)), g.op("Mul", g.const(np.float32(0.5)), x))


def reduce(axes):
    def build(g, x):
        if axes is None:
            return g.op("ReduceSum", x, keepdims=0)
        return g.op("ReduceSum", x, g.const(np.array(axes, np.int64)), keepdims=0)
    return build


def vgg(depth, weights):
    """VGG on kiln's weights (conv OIHW + bias, dense [in, out] + bias), all constants."""
    def build(g, x):
        h, k = x, 0
        for n in common.VGG_STAGES[depth]:
            for _ in range(n):
                h = g.op("Relu", g.op("Conv", h, g.const(weights[k]), g.const(weights[k + 1]),
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
                k += 2
            h = g.op("MaxPool", h, kernel_shape=[2, 2], strides=[2, 2])
        h = g.op("Flatten", h, axis=1)
        for j in range(3):
            h = g.op("Gemm", h, g.const(weights[k]), g.const(weights[k + 1]))
            k += 2
            if j < 2:
                h = g.op("Relu", h)
        return h
    return build


def session(model):
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def case(suite, name, build, unit, xs=None, max_reps=None):
    """build(graph, *input names) -> output name. xs: the graph's inputs (default: all of
    the case's; VGG passes the image alone, its weights being constants inside build)."""
    xs = xs if xs is not None else r.inputs(suite, name)
    if xs is None:
        return
    try:
        g = Graph()
        out = build(g, *[f"x{i}" for i in range(len(xs))])
        sess = session(g.model(xs, out))
        feeds = {f"x{i}": x for i, x in enumerate(xs)}
        r.check(suite, name, sess.run(None, feeds)[0])
        r.time(suite, name, lambda: sess.run(None, feeds), unit, max_reps=max_reps)
    except Exception as e:  # noqa: BLE001 -- a case that cannot run is reported, not fatal
        print(f"ort: {suite} {name}: {type(e).__name__}: {e}", file=sys.stderr)


BUILDERS = {"emlx_step": emlx_step, "emlx_matmul": emlx_matmul, "emlx_dot": emlx_dot,
            "cos": lambda g, x: g.op("Cos", x), "expsin": expsin, "sum_all": reduce(None),
            "sum_rows": reduce([1]), "sum_cols": reduce([0]),
            "gemm": lambda g, a, b: g.op("MatMul", a, b)}
for suite, name, key, unit in common.call_cases(args.quick):
    is_vgg = key.startswith("vgg")
    if not is_vgg and key not in BUILDERS:
        continue  # no ONNX graph for it (the heat loop)
    if not is_vgg:
        case(suite, name, BUILDERS[key], unit)
    else:  # the image is the input; kiln's weights become constants
        ws = r.inputs(suite, name)
        if ws is not None:
            case(suite, name, vgg(int(key[3:]), ws[1:]), unit, xs=ws[:1], max_reps=21)
        del ws
