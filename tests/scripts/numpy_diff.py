#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Differential test of kiln's op builders against numpy.

    numpy_diff.py OP_TOOL WORKDIR

OP_TOOL is kiln_op_tool (tests/support/op_tool.c); WORKDIR a scratch folder (created; what
this script writes there is replaced on each run: in.blob, out*.blob, batch*.txt, and for
each failing case reported in full c<ID>_i<K>.npy (inputs), c<ID>_expected<K>.npy and
c<ID>_got<K>.npy, for the printed `rerun:` command).

Seeded random cases (shapes including rank 0, size-1 and zero-size dimensions; every dtype
but bf16, which numpy lacks and the unit tests cover; edge values: NaN, NaN payloads,
signalling NaN, +-inf, -0.0, subnormals, the integer extremes) for the elementwise ops,
compare/select/clamp/convert/bitcast_convert, the reductions, dot_general, matmul,
convolution, the data-movement ops and gather/take/scatter/sort, plus a few bigger cases for
the vector loops and library paths. The inputs of all cases go into one blob of .npy
images, one `OP_TOOL --batch` process runs them all (a crash costs the case it happened
on, the rest run in a new process), and the outputs come back in another blob, compared:

  bits    identical bytes (data movement, bitcast, select): NaN payloads must survive
  exact   same dtype and shape, same values bit for bit, any NaN matching any NaN
  ulp     floats within a few units in the last place of a reference computed in higher
          precision (float64 for f16/f32, long double for f64); NaN, infinities and the
          sign of zero exact (transcendental functions)
  tol     floats within an error bound of the summation (reductions, dot, convolution),
          computed from the magnitudes of the terms; NaN and infinities exact

StableHLO semantics win where numpy's differ (integer division by zero, INT_MIN / -1,
remainder's sign, maximum/minimum and -0.0, shifts past the bit width, saturating
float->int convert, round_nearest_afz, integer power with negative exponents, ...): those
references are computed here. f16 references are computed in float32 (exact ops) or
float64 and rounded to float16, as kiln computes f16 in f32 and rounds once.

Environment:
  KILN_DIFF_ALLOW_UNIMPLEMENTED=1  count UNIMPLEMENTED results separately instead of as
                                   failures (while op families are being written)
  KILN_DIFF_SEED=N                 another seed (default: fixed)
  KILN_DIFF_FILTER=REGEX           only ops whose name matches (re.search)
  KILN_DIFF_VERBOSE=1              print every failure in full (default: the first few
                                   per op in full, then one line each)
  KILN_DIFF_STATS=1                print, per op and dtype, the largest ulp distance and the
                                   largest error / allowed error seen (how tight the
                                   tolerances are)

Exits 0 when every case passes, 1 otherwise; the last line is the summary
`numpy_diff: N cases, F failed`.
"""
import io
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np

warnings.simplefilter("ignore")  # numpy's overflow/invalid warnings are expected here
np.seterr(all="ignore")

if len(sys.argv) != 3:
    print("usage: numpy_diff.py OP_TOOL WORKDIR", file=sys.stderr)
    sys.exit(2)
TOOL = os.path.abspath(sys.argv[1])
WORKDIR = os.path.abspath(sys.argv[2])
SEED = int(os.environ.get("KILN_DIFF_SEED", "20250607"))
ALLOW_UNIMPLEMENTED = os.environ.get("KILN_DIFF_ALLOW_UNIMPLEMENTED") == "1"
FILTER = re.compile(os.environ["KILN_DIFF_FILTER"]) if os.environ.get("KILN_DIFF_FILTER") else None
VERBOSE = os.environ.get("KILN_DIFF_VERBOSE") == "1"
STATS = os.environ.get("KILN_DIFF_STATS") == "1"
FULL_REPORTS_PER_OP = 2
MAX_CRASHES = 20

rng = np.random.default_rng(SEED)

# ---- dtypes ------------------------------------------------------------------------------

BOOL = np.dtype(np.bool_)
I8, I16, I32, I64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
U8, U16, U32, U64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
F16, F32, F64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
LD = np.dtype(np.longdouble)
SINTS = [I8, I16, I32, I64]
UINTS = [U8, U16, U32, U64]
INTS = SINTS + UINTS
FLOATS = [F16, F32, F64]
ALL = [BOOL] + INTS + FLOATS

KILN_NAME = {BOOL: "i1", I8: "i8", I16: "i16", I32: "i32", I64: "i64", U8: "ui8", U16: "ui16",
             U32: "ui32", U64: "ui64", F16: "f16", F32: "f32", F64: "f64"}
UINT_OF_SIZE = {1: U8, 2: U16, 4: U32, 8: U64}
SINT_OF_SIZE = {1: I8, 2: I16, 4: I32, 8: I64}


def is_float(dt):
    return dt.kind == "f"


def is_int(dt):
    return dt.kind in "iu"


def bits(dt):
    return dt.itemsize * 8


def acc_eps(dt):
    """Unit roundoff of the type kiln accumulates in for dtype dt (f32 for f16)."""
    return float(np.finfo(F64 if dt == F64 else F32).eps)


def hi_dtype(dt):
    """The precision references for float dtype dt are computed in."""
    return LD if dt == F64 else F64


# ---- values ------------------------------------------------------------------------------

def size_of(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def rand_shape(max_rank=4, max_dim=5, zero_p=0.06, min_rank=0):
    rank = int(rng.integers(min_rank, max_rank + 1))
    dims = []
    for _ in range(rank):
        r = rng.random()
        if r < zero_p:
            dims.append(0)
        elif r < zero_p + 0.2:
            dims.append(1)
        else:
            dims.append(int(rng.integers(2, max_dim + 1)))
    return tuple(dims)


def nan_with_payload(dt):
    if dt == F16:
        return np.array([0x7E01], U16).view(F16)[0]
    if dt == F32:
        return np.array([0x7FC00123], U32).view(F32)[0]
    return np.array([0x7FF8000000000123], U64).view(F64)[0]


def signalling_nan(dt):
    if dt == F16:
        return np.array([0x7C01], U16).view(F16)[0]
    if dt == F32:
        return np.array([0x7F800001], U32).view(F32)[0]
    return np.array([0x7FF0000000000001], U64).view(F64)[0]


def int_edges(dt):
    info = np.iinfo(dt)
    if info.min < 0:
        v = [info.min, info.min + 1, -2, -1, 0, 1, 2, 3, info.max - 1, info.max]
    else:
        v = [0, 1, 2, 3, info.max // 2, info.max // 2 + 1, info.max - 1, info.max]
    return np.array(v, dtype=dt)


def float_edges(dt, payloads=True):
    fi = np.finfo(dt)
    v = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, -7.0,
                  np.inf, -np.inf, np.nan, -np.nan], dtype=dt)
    extra = np.array([fi.max, -fi.max, fi.tiny, -fi.tiny, fi.smallest_subnormal,
                      -fi.smallest_subnormal, fi.eps], dtype=dt)
    below_half = np.nextafter(np.array(0.5, dt), np.array(0.0, dt))
    above_one = np.nextafter(np.array(1.0, dt), np.array(2.0, dt))
    parts = [v, extra, np.array([below_half, -below_half, above_one], dtype=dt)]
    if payloads:
        parts.append(np.array([nan_with_payload(dt), signalling_nan(dt)], dtype=dt))
    return np.concatenate(parts)


def edges(dt):
    if dt == BOOL:
        return np.array([False, True])
    return int_edges(dt) if is_int(dt) else float_edges(dt)


def mix_in(arr, pool, p):
    """Replaces each element of arr with a random one of pool with probability p."""
    if arr.size == 0 or len(pool) == 0:
        return arr
    flat = arr.reshape(-1).copy()
    m = rng.random(flat.size) < p
    flat[m] = pool[rng.integers(0, len(pool), int(m.sum()))]
    return flat.reshape(arr.shape)


def float_random(dt, shape, lo_exp=None, hi_exp=None, halves_p=0.2):
    n = size_of(shape)
    if lo_exp is None:
        lo_exp, hi_exp = {F16: (-4, 4), F32: (-10, 10), F64: (-20, 20)}[dt]
    mag = 10.0 ** rng.uniform(lo_exp, hi_exp, n)
    v = np.where(rng.random(n) < 0.5, -mag, mag)
    m = rng.random(n) < halves_p
    v[m] = rng.integers(-12, 13, int(m.sum())) / 2.0
    return v.astype(dt).reshape(shape)


def int_random(dt, shape, small_p=0.5, small=8):
    n = size_of(shape)
    info = np.iinfo(dt)
    full = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
    lo = max(int(info.min), -small)
    sm = rng.integers(lo, small + 1, n).astype(dt)
    return np.where(rng.random(n) < small_p, sm, full).reshape(shape)


def random_values(dt, shape, edge_p=0.15, **kw):
    if dt == BOOL:
        return rng.random(shape) < 0.5 if shape else np.array(rng.random() < 0.5)
    if is_int(dt):
        a = int_random(dt, shape, **kw)
    else:
        a = float_random(dt, shape, **kw)
    return mix_in(a, edges(dt), edge_p)


def uniform(dt, shape, lo, hi):
    return rng.uniform(lo, hi, size_of(shape)).astype(dt).reshape(shape)


# ---- StableHLO references ----------------------------------------------------------------

def contiguous(x):
    """A C-ordered copy that keeps rank 0 (np.ascontiguousarray makes it rank 1)."""
    return np.array(x, order="C", copy=True)


def where(cond, a, b, dt):
    """np.where with both branches of dtype dt first: numpy's value-based casting of rank-0
    operands and Python ints may otherwise go through float64 and lose uint64 bits."""
    return np.where(cond, np.asarray(a).astype(dt), np.asarray(b).astype(dt)).astype(dt)


def as_unsigned(x):
    return x.view(UINT_OF_SIZE[x.dtype.itemsize])


def as_signed(x):
    return x.view(SINT_OF_SIZE[x.dtype.itemsize])


def in_f32(fn, *xs):
    """An exact op on f16 computed in float32 and rounded once; other dtypes as they are."""
    dt = xs[0].dtype
    if dt == F16:
        return fn(*(x.astype(F32) for x in xs)).astype(F16)
    return np.asarray(fn(*xs)).astype(dt)


def ref_float(fn, dt, *xs):
    """fn in higher precision, rounded to dt (f16: from float64 directly)."""
    h = hi_dtype(dt)
    return np.asarray(fn(*(x.astype(h) for x in xs))).astype(dt)


def ref_sign(x):
    if is_int(x.dtype):
        return np.sign(x).astype(x.dtype)
    r = np.where(x > 0, 1.0, np.where(x < 0, -1.0, x.astype(F64)))  # +-0 and NaN stay
    return r.astype(x.dtype)


def ref_round_afz(x):
    h = x.astype(F64)
    t = np.trunc(h)
    frac = h - t
    r = t + np.where(np.abs(frac) >= 0.5, np.sign(h), 0.0)
    return np.copysign(r, h).astype(x.dtype)


def ref_popcnt(x):
    u = contiguous(as_unsigned(x) if x.dtype != BOOL else x.view(U8))
    table = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)
    b = u.reshape(u.shape + (1,)).view(U8)
    return table[b].sum(axis=-1).astype(x.dtype)


def ref_clz(x):
    u = as_unsigned(x).astype(U64)
    w = bits(x.dtype)
    length = np.zeros(x.shape, np.int64)
    for b in range(w):
        length += ((u >> np.uint64(b)) != 0).astype(np.int64)
    return (w - length).astype(x.dtype)


def ref_logistic(x):
    h = hi_dtype(x.dtype)
    xh = x.astype(h)
    return (1 / (1 + np.exp(-xh))).astype(x.dtype)


def ref_rsqrt(x):
    return ref_float(lambda v: 1 / np.sqrt(v), x.dtype, x)


def ref_maximum(a, b, is_max=True):
    a, b = np.broadcast_arrays(a, b)
    if a.dtype == BOOL:
        return (a | b) if is_max else (a & b)
    if is_int(a.dtype):
        return np.maximum(a, b) if is_max else np.minimum(a, b)
    r = np.where(a > b, a, b) if is_max else np.where(a < b, a, b)
    zeros = (a == 0) & (b == 0)
    if is_max:  # +0 wins unless both are -0
        z = np.where(np.signbit(a) & np.signbit(b), a, np.where(np.signbit(a), b, a))
    else:       # -0 wins if either is -0
        z = np.where(np.signbit(a), a, b)
    r = np.where(zeros, z, r)
    r = np.where(np.isnan(a), a, np.where(np.isnan(b), b, r))
    return r.astype(a.dtype)


def ref_div_int(a, b):
    a, b = np.broadcast_arrays(a, b)
    dt = a.dtype
    info = np.iinfo(dt)
    zero = b == 0
    overflow = (a == info.min) & (b == -1) if info.min < 0 else np.zeros(a.shape, bool)
    bs = where(zero | overflow, 1, b, dt)
    q = (a // bs).astype(dt)
    r = (a - q * bs).astype(dt)
    q = where((r != 0) & ((a < 0) != (bs < 0)), q + np.array(1, dt), q, dt)
    q = where(zero, np.array(-1).astype(dt), q, dt)  # all bits set, for unsigned too
    return where(overflow, info.min, q, dt)


def ref_rem_int(a, b):
    a, b = np.broadcast_arrays(a, b)
    dt = a.dtype
    info = np.iinfo(dt)
    zero = b == 0
    overflow = (a == info.min) & (b == -1) if info.min < 0 else np.zeros(a.shape, bool)
    bs = where(zero | overflow, 1, b, dt)
    r = np.fmod(a, bs).astype(dt)
    r = where(zero, a, r, dt)
    return where(overflow, 0, r, dt)


def ref_pow_int(a, b):
    a, b = np.broadcast_arrays(a, b)
    dt = a.dtype
    res = np.ones(a.shape, dt)
    base = a.copy()
    e = as_unsigned(b.copy()) if dt.kind == "i" else b.copy()
    neg = b < 0 if dt.kind == "i" else np.zeros(a.shape, bool)
    e = where(neg, 0, e, e.dtype)
    one = np.array(1, e.dtype)
    while np.any(e != 0):
        res = where((e & one) != 0, res * base, res, dt)
        base = (base * base).astype(dt)
        e = e >> one
    if dt.kind == "i":
        odd = (b & np.array(1, dt)) != 0
        neg_res = where(a == 1, 1, where(a == -1, where(odd, -1, 1, dt), 0, dt), dt)
        res = where(neg, neg_res, res, dt)
    return res


def ref_shift(a, b, kind):
    a, b = np.broadcast_arrays(a, b)
    dt = a.dtype
    w = bits(dt)
    amt = as_unsigned(contiguous(b)).astype(U64)
    big = amt >= w
    ut = UINT_OF_SIZE[dt.itemsize]
    s = where(big, 0, amt, ut)
    if kind == "left":
        r = as_unsigned(contiguous(a)) << s
        return where(big, 0, r, ut).view(dt)
    if kind == "logical":
        r = as_unsigned(contiguous(a)) >> s
        return where(big, 0, r, ut).view(dt)
    sa = as_signed(contiguous(a))  # the bit pattern, shifted arithmetically
    r = sa >> s.astype(sa.dtype)
    r = where(big, where(sa < 0, -1, 0, sa.dtype), r, sa.dtype)
    return r.view(dt)


def total_order_key(x):
    s = as_signed(contiguous(x))
    mask = np.array(np.iinfo(s.dtype).max, s.dtype)
    return np.where(s < 0, s ^ mask, s)


CMP = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal, "GT": np.greater,
       "LE": np.less_equal, "LT": np.less}


def ref_compare(a, b, direction, ctype):
    if ctype == "TOTALORDER":
        a, b = np.broadcast_arrays(a, b)
        return CMP[direction](total_order_key(a), total_order_key(b))
    return CMP[direction](a, b)


def ref_convert(x, t):
    s = x.dtype
    if t == BOOL:
        return np.asarray(x != 0)
    if s == BOOL:
        return x.astype(t)
    if is_float(s) and is_int(t):
        xf = x.astype(F64)
        tr = np.trunc(xf)
        info = np.iinfo(t)
        out = np.zeros(x.shape, t)
        hi = tr >= float(info.max) + 1.0
        lo = tr < float(info.min)
        ok = ~(np.isnan(xf) | hi | lo)
        out[ok] = tr[ok].astype(t)
        out[hi] = info.max
        out[lo] = info.min
        return out
    return x.astype(t)


def ref_bitcast(x, t):
    x = contiguous(x)
    if t.itemsize == x.dtype.itemsize:
        return x.view(t)
    if t.itemsize < x.dtype.itemsize:
        return x.reshape(x.shape + (1,)).view(t)
    return x.view(t).reshape(x.shape[:-1])


def ref_pad(x, value, low, high, interior):
    shape = []
    for d, i in zip(x.shape, interior):
        shape.append(d + max(d - 1, 0) * i)
    big = np.full(shape, value, dtype=x.dtype)
    big[tuple(slice(None, None, i + 1) for i in interior)] = x
    for axis, (lo, hi) in enumerate(zip(low, high)):
        if lo < 0:
            big = np.take(big, range(-lo, big.shape[axis]), axis=axis)
        if hi < 0:
            big = np.take(big, range(0, big.shape[axis] + hi), axis=axis)
        widths = [(0, 0)] * big.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        big = np.pad(big, widths, constant_values=value)
    return big.astype(x.dtype)


# ---- cases -------------------------------------------------------------------------------

class Case:
    def __init__(self, op, inputs, attrs, expected, check, note="", ulps=0, ref=None, tol=None):
        self.id = None
        self.op = op
        self.inputs = [np.asarray(x) for x in inputs]
        self.attrs = attrs
        self.expected = [np.asarray(e) for e in (expected if isinstance(expected, list)
                                                 else [expected])]
        self.check = check      # bits | exact | ulp | tol
        self.note = note
        self.ulps = ulps        # ulp: allowed units in the last place
        self.ref = ref          # tol: the high-precision reference (list, like expected)
        self.tol = tol          # tol: the allowed absolute error per element (list)
        self.in_places = []     # (offset, length) of each input in the input blob
        self.out_places = None  # (blob path, [(offset, length) per output])
        self.status = None      # ok | error | usage | crash | not run
        self.message = ""
        self.got = None


CASES = []


def add(op, inputs, attrs, expected, check="exact", **kw):
    if FILTER and not FILTER.search(op):
        return
    c = Case(op, inputs, attrs, expected, check, **kw)
    c.id = len(CASES)
    CASES.append(c)


def attr_text(v):
    if isinstance(v, np.dtype):
        return KILN_NAME[v]
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (list, tuple)):
        return ",".join(str(int(i)) for i in v)
    return str(v)


def command(c, blob=False):
    """The kiln_op_tool arguments of case c: with blob, for --batch with --in-blob and
    --out-blob; otherwise with the file names reproducer() writes."""
    if blob:
        outs = ",".join("@" for _ in c.expected)
        ins = " ".join(f"@{off}+{n}" for off, n in c.in_places)
    else:
        outs = ",".join(f"c{c.id}_o{k}.npy" for k in range(len(c.expected)))
        ins = " ".join(f"c{c.id}_i{k}.npy" for k in range(len(c.inputs)))
    attrs = " ".join(f"{k}={attr_text(v)}" for k, v in c.attrs.items())
    return " ".join(p for p in (c.op, outs, ins, attrs) if p)


# ---- elementwise ---------------------------------------------------------------------------

def float_domain(op, dt, shape):
    """Inputs suited to a float unary op: its interesting range, plus edge values."""
    big = {F16: 3, F32: 6, F64: 8}[dt]
    if op in ("exponential", "exponential_minus_one"):
        lim = {F16: 12.0, F32: 90.0, F64: 710.0}[dt]
        a = uniform(dt, shape, -lim, lim)
        a = mix_in(a, float_random(dt, (64,), -8, 0), 0.25)
    elif op in ("log", "log_plus_one"):
        lo, hi = {F16: (-7, 4), F32: (-40, 38), F64: (-300, 300)}[dt]
        a = (10.0 ** rng.uniform(lo, hi, size_of(shape))).astype(dt).reshape(shape)
        near = (1 + rng.uniform(-1e-3, 1e-3, 64)).astype(dt)
        a = mix_in(a, near, 0.2)
        a = mix_in(a, float_random(dt, (64,), -8, 0), 0.15)
    elif op in ("sine", "cosine", "tan"):
        a = uniform(dt, shape, -10, 10)
        a = mix_in(a, float_random(dt, (64,), -6, big), 0.2)
    elif op in ("tanh", "logistic"):
        a = uniform(dt, shape, -25, 25)
        a = mix_in(a, float_random(dt, (64,), -8, big), 0.2)
    elif op in ("sqrt", "rsqrt", "cbrt"):
        a = np.abs(float_random(dt, shape))
        a = mix_in(a, float_random(dt, (64,)), 0.2)
    else:
        a = float_random(dt, shape)
    return mix_in(a, float_edges(dt), 0.12)


ULP_UNARY = {
    "rsqrt": np.sqrt, "cbrt": np.cbrt, "exponential": np.exp, "exponential_minus_one": np.expm1,
    "log": np.log, "log_plus_one": np.log1p, "sine": np.sin, "cosine": np.cos, "tan": np.tan,
    "tanh": np.tanh, "logistic": None,
}


# Inputs where a result over- or underflows, or leaves the normal range: the formulas that
# work elsewhere often fail here (e.g. 1/(1+exp(-x)) for logistic(-100) in f32).
BOUNDARY = {
    "exponential": {F32: [-87.3, -88.0, -95.0, -103.0, -103.9, -104.0, 88.7, 88.72, 89.0],
                    F64: [-708.0, -709.8, -720.0, -744.0, -745.2, 709.7, 709.79, 710.0],
                    F16: [-9.7, -12.0, -16.0, -17.4, 11.08, 11.1, 12.0]},
    "logistic": {F32: [-87.0, -88.0, -90.0, -95.0, -100.0, -103.0, -103.9, -104.0, 17.0,
                       88.8, 100.0],
                 F64: [-700.0, -709.0, -710.0, -720.0, -740.0, -744.0, -745.2, 37.0, 710.0],
                 F16: [-9.0, -10.0, -15.0, -16.5, -17.3, -18.0, 8.0, 12.0]},
    "exponential_minus_one": {F32: [88.7, 88.72, -20.0, -1e-30, 1e-30],
                              F64: [709.78, 709.8, -40.0, -1e-300, 1e-300],
                              F16: [11.08, 11.1, -8.0, -6e-8]},
    "tanh": {F32: [1e-30, -1e-40, 9.0, 10.0, 20.0], F64: [1e-300, -5e-324, 19.0, 20.0, 40.0],
             F16: [6e-8, -1e-4, 4.0, 5.0]},
    "log_plus_one": {F32: [-0.99999994, -1.0, 1e-30, -1e-40, 3e38],
                     F64: [np.nextafter(-1.0, 0.0), -1.0, 1e-300, -5e-324, 1e308],
                     F16: [-0.9995, -1.0, 6e-8, 65504.0]},
    "rsqrt": {F32: [1e-45, 1e-38, 3e38], F64: [5e-324, 1e-308, 1e308], F16: [6e-8, 65504.0]},
}


def ulps_for(dt, n=4):
    return 1 if dt == F16 else n


def unary_ref(op, x):
    dt = x.dtype
    if op == "abs":
        return np.abs(x) if is_int(dt) else in_f32(np.abs, x)
    if op == "negate":
        return np.negative(x).astype(dt)
    if op == "sign":
        return ref_sign(x)
    if op == "not":
        return np.invert(x)
    if op == "floor":
        return in_f32(np.floor, x)
    if op == "ceil":
        return in_f32(np.ceil, x)
    if op == "round_nearest_afz":
        return ref_round_afz(x)
    if op == "round_nearest_even":
        return in_f32(np.rint, x)
    if op == "sqrt":
        return in_f32(np.sqrt, x)
    if op == "is_finite":
        return np.isfinite(x)
    if op == "popcnt":
        return ref_popcnt(x)
    if op == "count_leading_zeros":
        return ref_clz(x)
    if op == "logistic":
        return ref_logistic(x)
    if op == "rsqrt":
        return ref_rsqrt(x)
    return ref_float(ULP_UNARY[op], dt, x)


UNARY_DTYPES = {
    "abs": SINTS + FLOATS, "negate": INTS + FLOATS, "sign": SINTS + FLOATS,
    "not": [BOOL] + INTS, "floor": FLOATS, "ceil": FLOATS, "round_nearest_afz": FLOATS,
    "round_nearest_even": FLOATS, "sqrt": FLOATS, "is_finite": FLOATS,
    "popcnt": INTS, "count_leading_zeros": INTS,
}
for _op in ULP_UNARY:
    UNARY_DTYPES[_op] = FLOATS


def unary_cases():
    for op, dtypes in UNARY_DTYPES.items():
        for dt in dtypes:
            inputs = [edges(dt)]
            for _ in range(3):
                shape = rand_shape()
                if is_float(dt):
                    inputs.append(float_domain(op, dt, shape))
                else:
                    inputs.append(random_values(dt, shape))
            if op in BOUNDARY and dt in BOUNDARY[op]:
                inputs.append(np.array(BOUNDARY[op][dt], dtype=dt))
            if dt in (F32, F64, I32, U8):  # long enough for vector loops and their tails
                shape = (int(rng.integers(33, 70)), 7)
                inputs.append(float_domain(op, dt, shape) if is_float(dt)
                              else random_values(dt, shape))
            for x in inputs:
                exp = unary_ref(op, x)
                if op in ULP_UNARY:
                    add(op, [x], {}, exp, "ulp", ulps=ulps_for(dt))
                else:
                    add(op, [x], {}, exp, "exact")


def broadcast_shapes_pair():
    out = rand_shape(max_rank=4)
    a = [d if rng.random() > 0.3 else 1 for d in out]
    b = [d if rng.random() > 0.3 else 1 for d in out]
    if rng.random() < 0.5:
        b = b[int(rng.integers(0, len(b) + 1)):]
    else:
        a = a[int(rng.integers(0, len(a) + 1)):]
    return tuple(a), tuple(b)


def binary_values(op, dt, shape, which):
    """Random operand `which` (0 or 1) of binary op `op`."""
    if dt == BOOL:
        return random_values(dt, shape)
    if op in ("shift_left", "shift_right_arithmetic", "shift_right_logical") and which == 1:
        w = bits(dt)
        a = rng.integers(0, w + 3, size_of(shape)).astype(dt).reshape(shape)
        return mix_in(a, int_edges(dt), 0.15)
    if op == "power" and is_int(dt):
        if which == 0:
            return mix_in(int_random(dt, shape, small_p=0.8, small=5), int_edges(dt), 0.1)
        lo = -3 if dt.kind == "i" else 0
        a = rng.integers(lo, 40, size_of(shape)).astype(dt).reshape(shape)
        return mix_in(a, int_edges(dt), 0.1)
    if op == "power" and is_float(dt):
        if which == 0:
            return mix_in(float_random(dt, shape, -2, 2), float_edges(dt, False), 0.1)
        a = uniform(dt, shape, -8, 8)
        a = mix_in(a, float_edges(dt, False), 0.1)
        return mix_in(a, np.arange(-4, 5).astype(dt), 0.3)
    if op in ("divide", "remainder") and is_int(dt) and which == 1:
        a = int_random(dt, shape, small_p=0.7, small=9)
        return mix_in(a, int_edges(dt), 0.15)
    return random_values(dt, shape)


def binary_ref(op, a, b):
    dt = a.dtype
    if op in ("add", "subtract", "multiply"):
        if dt == BOOL:
            return (a | b) if op == "add" else (a & b)
        fn = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}[op]
        if is_int(dt):
            return fn(a, b).astype(dt)
        return in_f32(fn, a, b)
    if op == "divide":
        return ref_div_int(a, b) if is_int(dt) else in_f32(np.divide, a, b)
    if op == "remainder":
        return ref_rem_int(a, b) if is_int(dt) else in_f32(np.fmod, a, b)
    if op == "power":
        return ref_pow_int(a, b) if is_int(dt) else ref_float(np.power, dt, a, b)
    if op == "maximum":
        return ref_maximum(a, b, True)
    if op == "minimum":
        return ref_maximum(a, b, False)
    if op == "atan2":
        return ref_float(np.arctan2, dt, a, b)
    if op == "and":
        return np.bitwise_and(a, b)
    if op == "or":
        return np.bitwise_or(a, b)
    if op == "xor":
        return np.bitwise_xor(a, b)
    if op == "shift_left":
        return ref_shift(a, b, "left")
    if op == "shift_right_logical":
        return ref_shift(a, b, "logical")
    if op == "shift_right_arithmetic":
        return ref_shift(a, b, "arithmetic")
    raise KeyError(op)


BINARY_DTYPES = {
    "add": ALL, "subtract": INTS + FLOATS, "multiply": ALL, "divide": INTS + FLOATS,
    "remainder": INTS + FLOATS, "power": INTS + FLOATS, "maximum": ALL, "minimum": ALL,
    "atan2": FLOATS, "and": [BOOL] + INTS, "or": [BOOL] + INTS, "xor": [BOOL] + INTS,
    "shift_left": INTS, "shift_right_arithmetic": INTS, "shift_right_logical": INTS,
}


def binary_cases():
    for op, dtypes in BINARY_DTYPES.items():
        for dt in dtypes:
            pairs = []
            for _ in range(2):
                shape = rand_shape()
                pairs.append((binary_values(op, dt, shape, 0), binary_values(op, dt, shape, 1)))
                sa, sb = broadcast_shapes_pair()
                pairs.append((binary_values(op, dt, sa, 0), binary_values(op, dt, sb, 1)))
            # pow(sNaN, 0) and pow(1, sNaN): C says 1 for NaN, IEEE 754 leaves signalling NaN
            # to the implementation
            e = float_edges(dt, False) if op == "power" and is_float(dt) else edges(dt)
            # every pair of edge values, through broadcasting: [n,1] with [n]
            pairs.append((e.reshape(-1, 1), e))
            if dt in (F32, I32, I64, U16, F64):
                shape = (int(rng.integers(33, 70)), 5)
                pairs.append((binary_values(op, dt, shape, 0), binary_values(op, dt, shape, 1)))
            for a, b in pairs:
                exp = binary_ref(op, a, b)
                if op in ("power", "atan2") and is_float(dt):
                    add(op, [a, b], {}, exp, "ulp", ulps=ulps_for(dt))
                else:
                    add(op, [a, b], {}, exp, "exact")


def compare_cases():
    for dt in ALL:
        pool = edges(dt) if dt == BOOL else np.concatenate([edges(dt), random_values(dt, (6,))])
        types = ["DEFAULT"]
        types.append("FLOAT" if is_float(dt) else ("SIGNED" if dt.kind == "i" else "UNSIGNED"))
        if is_float(dt):
            types.append("TOTALORDER")
        for ctype in types:
            for direction in CMP:
                if rng.random() < 0.5:
                    sa = sb = rand_shape()
                else:
                    sa, sb = broadcast_shapes_pair()
                a = pool[rng.integers(0, len(pool), size_of(sa))].reshape(sa)
                b = pool[rng.integers(0, len(pool), size_of(sb))].reshape(sb)
                attrs = {"direction": direction}
                if ctype != "DEFAULT":
                    attrs["type"] = ctype
                add("compare", [a, b], attrs, ref_compare(a, b, direction, ctype), "exact")
            # every pair of edge values once per type, all directions
            e = pool
            for direction in CMP:
                attrs = {"direction": direction}
                if ctype != "DEFAULT":
                    attrs["type"] = ctype
                a, b = e.reshape(-1, 1), e
                add("compare", [a, b], attrs, ref_compare(a, b, direction, ctype), "exact",
                    note="all pairs of edge values")


def select_clamp_cases():
    for dt in ALL:
        for _ in range(2):
            shape = rand_shape()
            pred_shape = shape if rng.random() < 0.7 else ()
            pred = rng.random(pred_shape) < 0.5 if pred_shape else np.array(rng.random() < 0.5)
            if rng.random() < 0.5:
                st, sf = shape, shape
            else:
                # on_true / on_false broadcast together to the result's shape
                st = tuple(d if rng.random() < 0.6 else 1 for d in shape)
                sf = shape[int(rng.integers(0, len(shape) + 1)):]
                full = np.broadcast_shapes(st, sf)
                if pred_shape and pred_shape != full:
                    pred = rng.random(full) < 0.5
            t = random_values(dt, st)
            f = random_values(dt, sf)
            exp = np.where(pred, t, f).astype(dt)
            add("select", [pred, t, f], {}, exp, "bits")
        if dt == BOOL:
            continue
        for k in range(3):
            shape = rand_shape()
            x = random_values(dt, shape)
            if k == 0:
                lo, hi = np.sort(random_values(dt, (2,), edge_p=0.05))
                lo, hi = np.array(lo, dt), np.array(hi, dt)
            elif k == 1:
                lo = random_values(dt, shape)
                hi = random_values(dt, shape)
            else:  # lo > hi somewhere, NaN bounds
                lo = random_values(dt, shape, edge_p=0.3)
                hi = np.array(random_values(dt, (1,), edge_p=0.5)[0], dt)
            exp = ref_maximum(ref_maximum(x, lo, True), hi, False)
            add("clamp", [lo, x, hi], {}, exp, "exact")
    for _ in range(12):  # numpy.where: any pred dtype (non-zero is true), all three broadcast
        dt = any_dtype()
        pt = any_dtype()
        sp, sa = broadcast_shapes_pair()
        sb = tuple(d if rng.random() < 0.7 else 1 for d in np.broadcast_shapes(sp, sa))
        sb = sb[int(rng.integers(0, len(sb) + 1)):]
        pred = random_values(pt, sp, edge_p=0.3)
        a, b = random_values(dt, sa), random_values(dt, sb)
        add("where", [pred, a, b], {}, contiguous(np.where(pred != 0, a, b)).astype(dt), "bits",
            note=f"pred {KILN_NAME[pt]}")


def convert_values(s, t):
    n = int(rng.integers(8, 40))
    if s == BOOL:
        return random_values(s, (n,))
    if is_int(s):
        return random_values(s, (n,), edge_p=0.25)
    # floats: around the target's range, fractions, out of range, specials
    parts = [float_random(s, (n,)), float_edges(s)]
    if is_int(t):
        info = np.iinfo(t)
        near = np.array([info.min, info.max, float(info.max) + 1, float(info.min) - 1,
                         -0.7, 0.7, -1.0, 2.5, -2.5, float(info.max) * 0.75,
                         float(info.min) * 0.75], F64)
        parts.append(near.astype(s))
    if t == F16 and s in (F32, F64):
        # values just off an f16 tie: rounding through f32 first would give the wrong answer
        ties = np.array([1 + 2.0 ** -11 + 2.0 ** -30, 1 + 2.0 ** -11 - 2.0 ** -30,
                         -(1 + 3 * 2.0 ** -11 + 2.0 ** -35), 65520.0 - 2.0 ** -20,
                         2.0 ** -24 * 1.5000001, 2.0 ** -25 + 2.0 ** -40, 65519.99], F64)
        parts.append(ties.astype(s))
    if t == F32 and s in (I64, U64):
        # more than 53 bits: rounding through f64 first would give the wrong answer
        crafted = [2 ** 60 + 2 ** 36 + 1, 2 ** 62 + 2 ** 38 + 1, 2 ** 40 + 2 ** 16 + 1,
                   2 ** 63 - 1, 2 ** 55 + 2 ** 31 + 3, 2 ** 31 - 1]
        if s == I64:
            crafted += [-(2 ** 60 + 2 ** 36 + 1), -(2 ** 63)]
        else:
            crafted += [2 ** 64 - 1, 2 ** 63 + 2 ** 39 + 1]
        parts = [random_values(s, (n,), edge_p=0.25), np.array(crafted, dtype=s)]
        a = np.concatenate(parts)
        return a[rng.permutation(a.size)]
    if t == F32 and s == F64:
        parts.append(np.array([1 + 2.0 ** -24 + 2.0 ** -60, 3.4028235677973366e38,
                               1.401298464324817e-45 / 2, 1e-46], F64))
    a = np.concatenate(parts).astype(s)
    return a[rng.permutation(a.size)]


def convert_cases():
    for s in ALL:
        for t in ALL:
            x = convert_values(s, t)
            if rng.random() < 0.5 and x.size >= 6:
                x = x[: (x.size // 6) * 6].reshape(-1, 2, 3)
            add("convert", [x], {"dtype": t}, ref_convert(x, t), "exact",
                note=f"{KILN_NAME[s]} -> {KILN_NAME[t]}")
            if rng.random() < 0.1:
                add("cast", [x], {"dtype": t}, ref_convert(x, t), "exact",
                    note=f"{KILN_NAME[s]} -> {KILN_NAME[t]}")
    nonbool = INTS + FLOATS
    for s in nonbool:
        for t in nonbool:
            if s.itemsize != t.itemsize and rng.random() < 0.5:
                continue
            if t.itemsize >= s.itemsize:
                ratio = t.itemsize // s.itemsize
                shape = rand_shape(max_rank=2) + ((ratio,) if ratio > 1 else ())
            else:
                shape = rand_shape(max_rank=2)
            x = random_values(s, shape, edge_p=0.3)
            add("bitcast_convert", [x], {"dtype": t}, ref_bitcast(x, t), "bits",
                note=f"{KILN_NAME[s]} -> {KILN_NAME[t]}")


# ---- data movement -------------------------------------------------------------------------

def any_dtype():
    return ALL[int(rng.integers(0, len(ALL)))]


def movement_values(dt, shape):
    if size_of(shape) == 0:
        return np.zeros(shape, dt)
    return random_values(dt, shape, edge_p=0.2)


def movement_cases():
    for _ in range(25):  # broadcast_in_dim
        dt = any_dtype()
        target = rand_shape(max_rank=4, min_rank=0)
        r = int(rng.integers(0, len(target) + 1))
        dims = sorted(rng.choice(len(target), r, replace=False).tolist()) if r else []
        if r > 1 and rng.random() < 0.3:
            dims = rng.permutation(dims).tolist()
        xshape = tuple(target[d] if rng.random() < 0.7 else 1 for d in dims)
        x = movement_values(dt, xshape)
        order = np.argsort(dims)
        xt = np.transpose(x, order) if x.ndim else x
        tmp = [1] * len(target)
        for i, d in enumerate(sorted(dims)):
            tmp[d] = xt.shape[i]
        exp = np.broadcast_to(xt.reshape(tmp), target)
        add("broadcast_in_dim", [x], {"shape": target, "dims": dims}, contiguous(exp),
            "bits")
    for _ in range(12):  # broadcast_to
        dt = any_dtype()
        target = rand_shape(max_rank=4)
        cut = int(rng.integers(0, len(target) + 1))
        xshape = tuple(d if rng.random() < 0.7 else 1 for d in target[cut:])
        x = movement_values(dt, xshape)
        add("broadcast_to", [x], {"shape": target}, contiguous(
            np.broadcast_to(x, target)), "bits")
    for _ in range(20):  # reshape
        dt = any_dtype()
        shape = rand_shape(max_rank=4)
        x = movement_values(dt, shape)
        n = x.size
        new = []
        rest = n
        while rest > 1 and len(new) < 4:
            divs = [d for d in range(2, rest + 1) if rest % d == 0]
            d = divs[int(rng.integers(0, len(divs)))]
            new.append(d)
            rest //= d
        if rest != 1 or n == 0:
            new.append(rest if n else 0)
        if rng.random() < 0.3:
            new.insert(int(rng.integers(0, len(new) + 1)), 1)
        new = [int(v) for v in new]
        if n == 1 and rng.random() < 0.3:
            new = []
        exp = x.reshape(new)
        attr = list(new)
        if n > 0 and attr and rng.random() < 0.3:
            attr[int(rng.integers(0, len(attr)))] = -1
        add("reshape", [x], {"shape": attr}, exp, "bits")
    for _ in range(20):  # transpose
        dt = any_dtype()
        x = movement_values(dt, rand_shape(max_rank=5))
        perm = rng.permutation(x.ndim).tolist()
        add("transpose", [x], {"perm": perm}, contiguous(np.transpose(x, perm)), "bits")
    x = movement_values(F32, (37, 29))  # big enough for a blocked transpose
    add("transpose", [x], {"perm": [1, 0]}, contiguous(x.T), "bits")
    for _ in range(15):  # reverse
        dt = any_dtype()
        x = movement_values(dt, rand_shape(max_rank=4))
        k = int(rng.integers(0, x.ndim + 1))
        dims = sorted(rng.choice(x.ndim, k, replace=False).tolist()) if k else []
        exp = np.flip(x, axis=tuple(dims)) if dims else x
        add("reverse", [x], {"dims": dims}, contiguous(exp), "bits")
    for _ in range(25):  # slice
        dt = any_dtype()
        x = movement_values(dt, rand_shape(max_rank=4, max_dim=7))
        start, limit, strides = [], [], []
        for d in x.shape:
            a = int(rng.integers(0, d + 1))
            b = int(rng.integers(a, d + 1))
            start.append(a)
            limit.append(b)
            strides.append(int(rng.integers(1, 4)))
        exp = x[tuple(slice(a, b, s) for a, b, s in zip(start, limit, strides))]
        attrs = {"start": start, "limit": limit}
        if rng.random() < 0.8:
            attrs["strides"] = strides
        else:
            exp = x[tuple(slice(a, b) for a, b in zip(start, limit))]
        add("slice", [x], attrs, contiguous(exp), "bits")
    for _ in range(25):  # pad
        dt = any_dtype()
        x = movement_values(dt, rand_shape(max_rank=3, max_dim=4))
        value = random_values(dt, ())
        low, high, interior = [], [], []
        for d in x.shape:
            i = int(rng.integers(0, 3)) if rng.random() < 0.5 else 0
            full = d + max(d - 1, 0) * i
            lo = int(rng.integers(-min(full, 2), 3))
            hi = int(rng.integers(-min(full + min(lo, 0), 2), 3))
            low.append(lo)
            high.append(hi)
            interior.append(i)
        exp = ref_pad(x, value, low, high, interior)
        add("pad", [x, value], {"low": low, "high": high, "interior": interior}, exp, "bits")
    for _ in range(20):  # concatenate
        dt = any_dtype()
        base = rand_shape(max_rank=3, min_rank=1)
        dim = int(rng.integers(0, len(base)))
        xs = []
        for _ in range(int(rng.integers(1, 5))):
            s = list(base)
            s[dim] = int(rng.integers(0, 4))
            xs.append(movement_values(dt, tuple(s)))
        add("concatenate", xs, {"dim": dim}, np.concatenate(xs, axis=dim), "bits")
    for _ in range(8):  # concat, stack (numpy axes)
        dt = any_dtype()
        base = rand_shape(max_rank=3, min_rank=1)
        axis = int(rng.integers(-len(base), len(base)))
        xs = []
        for _ in range(int(rng.integers(1, 4))):
            s = list(base)
            s[axis] = int(rng.integers(1, 4))
            xs.append(movement_values(dt, tuple(s)))
        add("concat", xs, {"axis": axis}, np.concatenate(xs, axis=axis), "bits")
        axis = int(rng.integers(-len(base) - 1, len(base) + 1))
        xs = [movement_values(dt, base) for _ in range(int(rng.integers(1, 4)))]
        add("stack", xs, {"axis": axis}, np.stack(xs, axis=axis), "bits")
    for _ in range(8):  # expand_dims, squeeze
        dt = any_dtype()
        x = movement_values(dt, rand_shape(max_rank=3))
        axis = int(rng.integers(-x.ndim - 1, x.ndim + 1))
        add("expand_dims", [x], {"axis": axis}, np.expand_dims(x, axis), "bits")
        shape = list(rand_shape(max_rank=3))
        for _ in range(int(rng.integers(1, 3))):
            shape.insert(int(rng.integers(0, len(shape) + 1)), 1)
        x = movement_values(dt, tuple(shape))
        ones = [i for i, d in enumerate(shape) if d == 1]
        if rng.random() < 0.5:
            axes = []
            exp = np.squeeze(x)
        else:
            axes = sorted(rng.choice(ones, int(rng.integers(1, len(ones) + 1)),
                                     replace=False).tolist())
            exp = np.squeeze(x, axis=tuple(axes))
        add("squeeze", [x], {"axes": axes}, exp, "bits")
    for _ in range(15):  # dynamic_slice, dynamic_update_slice
        dt = any_dtype()
        x = movement_values(dt, rand_shape(max_rank=3, max_dim=6, zero_p=0))
        idt = [I32, I64, U32, I8][int(rng.integers(0, 4))]
        sizes = [int(rng.integers(0, d + 1)) for d in x.shape]
        starts = []
        for d, s in zip(x.shape, sizes):
            lo = 0 if idt.kind == "u" else -3
            starts.append(int(rng.integers(lo, d + 4)))
        clamped = [min(max(st, 0), d - s) for st, d, s in zip(starts, x.shape, sizes)]
        exp = x[tuple(slice(c, c + s) for c, s in zip(clamped, sizes))]
        st_arrays = [np.array(v, idt) for v in starts]
        add("dynamic_slice", [x] + st_arrays, {"sizes": sizes}, contiguous(exp), "bits")
        upd = movement_values(dt, tuple(sizes))
        exp = x.copy()
        exp[tuple(slice(c, c + s) for c, s in zip(clamped, sizes))] = upd
        add("dynamic_update_slice", [x, upd] + st_arrays, {}, exp, "bits")


# ---- indexing --------------------------------------------------------------------------------

def ref_gather(operand, indices, offset_dims, collapsed, start_index_map, index_vector_dim,
               slice_sizes, operand_batching=(), indices_batching=()):
    """StableHLO gather, straight from the spec (loops; for small cases)."""
    idx = indices
    if index_vector_dim == idx.ndim:
        idx = idx.reshape(idx.shape + (1,))
    batch_shape = [d for i, d in enumerate(idx.shape) if i != index_vector_dim]
    offset_sizes = [s for i, s in enumerate(slice_sizes)
                    if i not in collapsed and i not in operand_batching]
    out_rank = len(batch_shape) + len(offset_sizes)
    batch_dims = [d for d in range(out_rank) if d not in offset_dims]
    out_shape = [0] * out_rank
    for i, d in enumerate(batch_dims):
        out_shape[d] = batch_shape[i]
    for i, d in enumerate(offset_dims):
        out_shape[d] = offset_sizes[i]
    out = np.zeros(out_shape, operand.dtype)
    offset_operand_dims = [i for i in range(operand.ndim)
                           if i not in collapsed and i not in operand_batching]
    for out_index in np.ndindex(*out_shape):
        batch_index = [out_index[d] for d in batch_dims]
        sl = list(batch_index)
        sl.insert(index_vector_dim, slice(None))
        start = idx[tuple(sl)]
        full_start = [0] * operand.ndim
        for k, d in enumerate(start_index_map):
            full_start[d] = int(start[k])
        for ob, ib in zip(operand_batching, indices_batching):
            # the batch index along indices dimension ib
            pos = ib if ib < index_vector_dim else ib - 1
            full_start[ob] = batch_index[pos]
        for d in range(operand.ndim):
            full_start[d] = min(max(full_start[d], 0), operand.shape[d] - slice_sizes[d])
        full_offset = [0] * operand.ndim
        for k, d in enumerate(offset_dims):
            full_offset[offset_operand_dims[k]] = out_index[d]
        out[out_index] = operand[tuple(s + o for s, o in zip(full_start, full_offset))]
    return out


def ref_scatter(inp, indices, updates, update_window_dims, inserted, sd2od, index_vector_dim,
                combine):
    res = inp.copy()
    idx = indices
    if index_vector_dim == idx.ndim:
        idx = idx.reshape(idx.shape + (1,))
    scatter_dims = [d for d in range(updates.ndim) if d not in update_window_dims]
    window_operand_dims = [d for d in range(inp.ndim) if d not in inserted]
    for u_index in np.ndindex(*updates.shape):
        sidx = [u_index[d] for d in scatter_dims]
        sl = list(sidx)
        sl.insert(index_vector_dim, slice(None))
        start = idx[tuple(sl)]
        full_start = [0] * inp.ndim
        for k, d in enumerate(sd2od):
            full_start[d] = int(start[k])
        full_window = [0] * inp.ndim
        for k, d in enumerate(update_window_dims):
            full_window[window_operand_dims[k]] = u_index[d]
        r = tuple(s + w for s, w in zip(full_start, full_window))
        if all(0 <= v < n for v, n in zip(r, inp.shape)):
            res[r] = combine(res[r], updates[u_index])
    return res


def index_values(idt, shape, dim):
    lo = 0 if idt.kind == "u" else -2
    a = rng.integers(lo, dim + 3, size_of(shape)).astype(idt).reshape(shape)
    return a


def indexing_cases():
    for _ in range(20):  # take
        dt = any_dtype()
        x = movement_values(dt, rand_shape(max_rank=3, min_rank=1, zero_p=0))
        axis = int(rng.integers(0, x.ndim))
        idt = [I32, I64, U8, I16][int(rng.integers(0, 4))]
        ishape = rand_shape(max_rank=2)
        dim = x.shape[axis]
        ind = index_values(idt, ishape, dim)
        if idt.kind == "i":
            ind = mix_in(ind, np.array([-dim - 2, -dim, -1, dim], idt), 0.2)
        i64 = ind.astype(np.int64)
        i64 = np.where(i64 < 0, i64 + dim, i64)  # numpy's negative indices, then clamped
        exp = np.take(x, np.clip(i64, 0, dim - 1), axis=axis)
        if rng.random() < 0.3:
            axis -= x.ndim
        add("take", [x, ind], {"axis": axis}, exp, "bits")
    for _ in range(8):  # one_hot
        idt = [I32, I64, U8][int(rng.integers(0, 3))]
        depth = int(rng.integers(0, 6))
        ind = index_values(idt, rand_shape(max_rank=2), depth)
        t = [F32, I32, BOOL, F16, U8][int(rng.integers(0, 5))]
        exp = (ind.astype(np.int64)[..., None] == np.arange(depth)).astype(t)
        add("one_hot", [ind], {"depth": depth, "dtype": t}, exp, "exact")
    for _ in range(12):  # gather: rows (embedding lookup) and 2-d windows with clamping
        dt = any_dtype()
        if rng.random() < 0.5:
            operand = movement_values(dt, (int(rng.integers(1, 7)), int(rng.integers(1, 5))))
            ind = index_values(I32, rand_shape(max_rank=2), operand.shape[0])
            ivd = ind.ndim
            params = dict(offset_dims=[ivd], collapsed=[0], start_index_map=[0],
                          index_vector_dim=ivd, slice_sizes=[1, operand.shape[1]])
        else:
            operand = movement_values(dt, (int(rng.integers(2, 6)), int(rng.integers(2, 6)),
                                           int(rng.integers(1, 4))))
            n = int(rng.integers(0, 5))
            ind = np.stack([index_values(I64, (n,), operand.shape[0]),
                            index_values(I64, (n,), operand.shape[1])], axis=1)
            s0 = int(rng.integers(1, operand.shape[0] + 1))
            s1 = int(rng.integers(1, operand.shape[1] + 1))
            params = dict(offset_dims=[1, 2, 3], collapsed=[], start_index_map=[0, 1],
                          index_vector_dim=1, slice_sizes=[s0, s1, operand.shape[2]])
        exp = ref_gather(operand, ind, **params)
        attrs = {"offset_dims": params["offset_dims"],
                 "collapsed_slice_dims": params["collapsed"],
                 "start_index_map": params["start_index_map"],
                 "index_vector_dim": params["index_vector_dim"],
                 "slice_sizes": params["slice_sizes"]}
        add("gather", [operand, ind], attrs, exp, "bits")
    for _ in range(4):  # gather with batching dims: per-batch row lookup
        dt = any_dtype()
        b, rows, cols = int(rng.integers(1, 4)), int(rng.integers(1, 5)), int(rng.integers(1, 4))
        operand = movement_values(dt, (b, rows, cols))
        k = int(rng.integers(0, 4))
        ind = index_values(I32, (b, k, 1), rows)
        params = dict(offset_dims=[2], collapsed=[1], start_index_map=[1], index_vector_dim=2,
                      slice_sizes=[1, 1, cols], operand_batching=[0], indices_batching=[0])
        exp = ref_gather(operand, ind, **params)
        attrs = {"offset_dims": [2], "collapsed_slice_dims": [1], "operand_batching_dims": [0],
                 "start_indices_batching_dims": [0], "start_index_map": [1],
                 "index_vector_dim": 2, "slice_sizes": [1, 1, cols]}
        add("gather", [operand, ind], attrs, exp, "bits", note="batching dims")
    regions = {"add": None, "maximum": None, "minimum": None, "replace": None}
    for region in list(regions) * 3:  # scatter: row updates, out-of-bounds skipped
        dt = [F32, I32, F64, U8, I64][int(rng.integers(0, 5))]
        rows, cols = int(rng.integers(1, 6)), int(rng.integers(1, 4))
        inp = movement_values(dt, (rows, cols))
        if region == "replace":
            k = int(rng.integers(0, rows + 1))
            ind = rng.permutation(rows)[:k].astype(I32)
            if k and rng.random() < 0.5:
                ind[0] = rows + 1  # out of bounds: skipped
            ind = ind.reshape(k, 1)
        else:
            k = int(rng.integers(0, 6))
            ind = index_values(I32, (k, 1), rows)
        if is_float(dt):
            upd = float_random(dt, (ind.shape[0], cols), -1, 1)
        else:
            upd = random_values(dt, (ind.shape[0], cols))
        combine = {"add": lambda a, b: np.array(a + b).astype(dt) if is_int(dt)
                   else in_f32(np.add, np.array(a), np.array(b)),
                   "maximum": lambda a, b: ref_maximum(np.array(a), np.array(b), True),
                   "minimum": lambda a, b: ref_maximum(np.array(a), np.array(b), False),
                   "replace": lambda a, b: b}[region]
        exp = ref_scatter(inp, ind, upd, [1], [0], [0], 1, combine)
        attrs = {"update_window_dims": [1], "inserted_window_dims": [0],
                 "scatter_dims_to_operand_dims": [0], "index_vector_dim": 1, "region": region}
        # float adds of repeated indices may be done in another order: a tolerance
        if region == "add" and is_float(dt):
            mag = ref_scatter(np.abs(inp).astype(F64), ind, np.abs(upd).astype(F64), [1], [0],
                              [0], 1, lambda a, b: a + b)
            refv = ref_scatter(inp.astype(F64), ind, upd.astype(F64), [1], [0], [0], 1,
                               lambda a, b: a + b)
            tol = 4 * 8 * acc_eps(dt) * mag + spacing_of(exp)
            add("scatter", [inp, ind, upd], attrs, exp, "tol", ref=[refv], tol=[tol])
        else:
            add("scatter", [inp, ind, upd], attrs, exp, "exact")
    for _ in range(14):  # sort, one or two tensors, stable
        dt = [I32, F32, F64, U8, I64, F16, I8, U64][int(rng.integers(0, 8))]
        x = random_values(dt, rand_shape(max_rank=3, min_rank=1), edge_p=0.1)
        if rng.random() < 0.5:  # many ties
            pool = x.reshape(-1)[:3] if x.size else x.reshape(-1)
            if pool.size:
                x = pool[rng.integers(0, pool.size, x.size)].reshape(x.shape)
        dim = int(rng.integers(0, x.ndim))
        cmp = ["less", "greater"][int(rng.integers(0, 2))]
        if cmp == "less":
            order = np.argsort(x, axis=dim, kind="stable")
        else:
            rev = np.flip(x, axis=dim)
            order = np.flip(np.argsort(rev, axis=dim, kind="stable"), axis=dim)
            order = x.shape[dim] - 1 - order
        two = rng.random() < 0.5
        inputs = [x]
        exp = [np.take_along_axis(x, order, axis=dim)]
        if two:
            v = np.broadcast_to(np.arange(x.shape[dim], dtype=I32).reshape(
                [-1 if i == dim else 1 for i in range(x.ndim)]), x.shape).copy()
            inputs.append(v)
            exp.append(np.take_along_axis(v, order, axis=dim))
        if rng.random() < 0.3:
            dim -= x.ndim
        add("sort", inputs, {"dim": dim, "stable": True, "cmp": cmp}, exp, "bits")


# ---- reductions --------------------------------------------------------------------------

def spacing_of(exp):
    """One unit in the last place of each element of float array exp (as float64)."""
    e = np.asarray(exp)
    s = np.abs(np.spacing(e.astype(e.dtype))).astype(F64)
    return np.where(np.isfinite(s), s, 0.0)


def reduce_values(dt, shape, kind="sum"):
    if dt == BOOL or is_int(dt):
        return random_values(dt, shape)
    if kind == "prod":
        mag = rng.uniform(0.5, 2.0, size_of(shape))
        v = np.where(rng.random(size_of(shape)) < 0.5, -mag, mag).astype(dt).reshape(shape)
        return mix_in(v, np.array([0.0, -0.0, np.inf, np.nan], dt), 0.02)
    if kind == "soft":
        return uniform(dt, shape, -8, 8)
    v = float_random(dt, shape, -3, 3)
    return mix_in(v, np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dt), 0.03)


def rand_axes(ndim):
    k = int(rng.integers(0, ndim + 1))
    axes = sorted(rng.choice(ndim, k, replace=False).tolist()) if k else []
    if axes and rng.random() < 0.3:
        axes = [a - ndim if rng.random() < 0.5 else a for a in axes]  # numpy negative axes
    return axes


def float_reduce_case(op, x, axes, keepdims):
    dt = x.dtype
    ax = tuple(axes) if axes else None
    h = hi_dtype(dt)
    xh = x.astype(h)
    count = size_of([x.shape[a] for a in ax]) if ax is not None else x.size
    n = max(1, count)
    eps = acc_eps(dt)
    if op in ("sum", "mean"):
        ref = np.sum(xh, axis=ax, keepdims=keepdims)
        mag = np.sum(np.abs(xh), axis=ax, keepdims=keepdims)
        if op == "mean":
            ref = ref / count if count else ref * np.nan  # 0/0
            mag = mag / n
        bound = 2 * (n + 2) * eps * mag
    else:  # prod
        ref = np.prod(xh, axis=ax, keepdims=keepdims)
        bound = 2 * (n + 2) * eps * np.abs(ref)
    exp = np.asarray(ref).astype(dt)
    tol = np.asarray(bound).astype(F64) + spacing_of(exp)
    return exp, np.asarray(ref), tol


def ref_maxmin(x, axes, keepdims, is_max):
    ax = tuple(axes) if axes else None
    if x.dtype == BOOL:
        return (np.any if is_max else np.all)(x, axis=ax, keepdims=keepdims)
    r = (np.max if is_max else np.min)(x, axis=ax, keepdims=keepdims)
    if is_float(x.dtype):
        pos_zero = np.any((x == 0) & ~np.signbit(x), axis=ax, keepdims=keepdims)
        neg_zero = np.any((x == 0) & np.signbit(x), axis=ax, keepdims=keepdims)
        z = np.array(0.0, x.dtype)
        nz = np.array(-0.0, x.dtype)
        if is_max:
            fix = np.where(pos_zero, z, nz)
        else:
            fix = np.where(neg_zero, nz, z)
        r = np.where(r == 0, fix, r).astype(x.dtype)
    return np.asarray(r)


def reduce_cases():
    for op in ("sum", "prod", "max", "min", "mean"):
        dtypes = FLOATS if op == "mean" else [BOOL] + INTS + FLOATS
        for dt in dtypes:
            for _ in range(3 if dt in (F32, I32) else 2):
                shape = rand_shape(max_rank=4, max_dim=6)
                if op in ("max", "min"):  # numpy has no answer for empty reductions
                    shape = tuple(d if d else 2 for d in shape)
                x = reduce_values(dt, shape, "prod" if op == "prod" else "sum")
                axes = rand_axes(x.ndim)
                keepdims = bool(rng.random() < 0.4)
                attrs = {"axes": axes, "keepdims": keepdims}
                ax = tuple(axes) if axes else None
                if op in ("max", "min"):
                    add(op, [x], attrs, ref_maxmin(x, axes, keepdims, op == "max"), "exact")
                elif dt == BOOL:  # numpy counts: i64
                    fn = np.sum if op == "sum" else np.prod
                    exp = fn(x.astype(I64), axis=ax, keepdims=keepdims)
                    add(op, [x], attrs, np.asarray(exp).astype(I64), "exact")
                elif is_int(dt):
                    fn = np.sum if op == "sum" else np.prod
                    exp = fn(x, axis=ax, keepdims=keepdims, dtype=dt)
                    add(op, [x], attrs, np.asarray(exp).astype(dt), "exact")
                else:
                    exp, ref, tol = float_reduce_case(op, x, axes, keepdims)
                    add(op, [x], attrs, exp, "tol", ref=[ref], tol=[tol])
        if op == "sum":  # long rows: pairwise/vector summation vs numpy
            x = reduce_values(F32, (3, 1000))
            x = np.where(np.isfinite(x), x, np.array(1.0, F32))
            exp, ref, tol = float_reduce_case("sum", x, [1], False)
            add("sum", [x], {"axes": [1], "keepdims": False}, exp, "tol", ref=[ref], tol=[tol])
    for op in ("argmax", "argmin"):
        for dt in [BOOL] + INTS + FLOATS:
            shape = rand_shape(max_rank=3, min_rank=1, zero_p=0)
            x = random_values(dt, shape, edge_p=0.15)
            if rng.random() < 0.5 and x.size:  # ties
                pool = x.reshape(-1)[:3].copy()
                x = pool[rng.integers(0, pool.size, x.size)].reshape(x.shape)
            axis = int(rng.integers(-x.ndim, x.ndim))
            keepdims = bool(rng.random() < 0.4)
            fn = np.argmax if op == "argmax" else np.argmin
            exp = fn(x, axis=axis)
            if keepdims:
                exp = np.expand_dims(exp, axis)
            add(op, [x], {"axis": axis, "keepdims": keepdims}, np.asarray(exp).astype(I64), "exact")
    for dt in FLOATS:
        for op in ("logsumexp", "softmax", "log_softmax"):
            shape = rand_shape(max_rank=3, min_rank=1, zero_p=0)
            x = reduce_values(dt, shape, "soft")
            h = hi_dtype(dt)
            xh = x.astype(h)
            eps = acc_eps(dt)
            if op == "logsumexp":
                axes = rand_axes(x.ndim)
                keepdims = bool(rng.random() < 0.4)
                ax = tuple(axes) if axes else None
                m = np.max(xh, axis=ax, keepdims=True)
                s = np.sum(np.exp(xh - m), axis=ax, keepdims=True)
                ref = np.log(s) + m
                n = size_of(x.shape) // size_of(ref.shape)
                tol = 4 * (n + 4) * eps * (1 + np.abs(ref) + np.abs(m))
                if not keepdims:
                    ref = np.squeeze(ref, axis=ax) if ax is not None else ref.reshape(())
                    tol = np.squeeze(tol, axis=ax) if ax is not None else tol.reshape(())
                exp = ref.astype(dt)
                tol = tol.astype(F64) + spacing_of(exp)
                add(op, [x], {"axes": axes, "keepdims": keepdims}, exp, "tol", ref=[ref],
                    tol=[tol])
                continue
            axis = int(rng.integers(-x.ndim, x.ndim))
            m = np.max(xh, axis=axis, keepdims=True)
            s = np.sum(np.exp(xh - m), axis=axis, keepdims=True)
            n = x.shape[axis]
            if op == "softmax":
                ref = np.exp(xh - m) / s
                tol = 4 * (n + 4 + np.abs(xh - m)) * eps * ref
            else:
                ref = xh - m - np.log(s)
                tol = 4 * (n + 4) * eps * (np.abs(xh) + np.abs(m) + np.abs(np.log(s)) + 1)
            exp = ref.astype(dt)
            tol = tol.astype(F64) + spacing_of(exp)
            add(op, [x], {"axis": axis}, exp, "tol", ref=[ref], tol=[tol])
    # generic reduce with a builtin region and an init value; reduce_window
    for region, dt in (("add", I32), ("add", F32), ("multiply", I64), ("maximum", F64),
                       ("minimum", I8), ("and", BOOL), ("or", BOOL), ("maximum", U16),
                       ("add", F16)):
        shape = rand_shape(max_rank=3, max_dim=5)
        if region in ("maximum", "minimum"):
            shape = tuple(d if d else 1 for d in shape)
        x = reduce_values(dt, shape)
        init = random_values(dt, (), edge_p=0)
        if is_float(dt):
            init = np.array(rng.integers(-3, 4), dt)
        dims = sorted(rand_axes(x.ndim))
        dims = [d % x.ndim for d in dims] if x.ndim else []
        ax = tuple(dims)
        if region == "add" and is_float(dt):
            h = hi_dtype(dt)
            ref = np.sum(x.astype(h), axis=ax) + init.astype(h)
            mag = np.sum(np.abs(x.astype(h)), axis=ax) + abs(init.astype(h))
            n = size_of(x.shape) // max(1, size_of(np.asarray(ref).shape)) + 1
            exp = np.asarray(ref).astype(dt)
            tol = (2 * (n + 2) * acc_eps(dt) * mag).astype(F64) + spacing_of(exp)
            add("reduce", [x, init], {"dims": dims, "region": region}, exp, "tol",
                ref=[np.asarray(ref)], tol=[np.asarray(tol)])
            continue
        if region == "add":
            exp = (np.sum(x, axis=ax, dtype=dt) + init).astype(dt)
        elif region == "multiply":
            exp = (np.prod(x, axis=ax, dtype=dt) * init).astype(dt)
        elif region in ("maximum", "minimum"):
            r = ref_maxmin(x, dims, False, region == "maximum") if dims else x
            exp = ref_maximum(r, init, region == "maximum")
        elif region == "and":
            exp = np.all(x, axis=ax) & init
        else:
            exp = np.any(x, axis=ax) | init
        add("reduce", [x, init], {"dims": dims, "region": region}, np.asarray(exp).astype(dt),
            "exact")
    for _ in range(12):
        reduce_window_case()
    for _ in range(10):
        select_and_scatter_case()


def ref_reduce_window(x, init, window, strides, base_dil, win_dil, pad_low, pad_high, combine):
    padded = ref_pad(x, init, pad_low, pad_high, [b - 1 for b in base_dil])
    eff = [(w - 1) * d + 1 for w, d in zip(window, win_dil)]
    out_shape = [(p - e) // s + 1 if p >= e else 0
                 for p, e, s in zip(padded.shape, eff, strides)]
    out = np.full(out_shape, init, dtype=x.dtype)
    if size_of(out_shape) == 0:
        return out
    for k in np.ndindex(*window):
        sl = tuple(slice(ki * d, ki * d + (o - 1) * s + 1, s)
                   for ki, d, o, s in zip(k, win_dil, out_shape, strides))
        out = combine(out, padded[sl])
    return out


def reduce_window_case():
    dt = [F32, I32, F64, F16, I8][int(rng.integers(0, 5))]
    region = ["maximum", "add", "minimum"][int(rng.integers(0, 3))]
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    hw = [int(rng.integers(1, 7)), int(rng.integers(1, 7))]
    x = reduce_values(dt, (n, c) + tuple(hw))
    if is_float(dt):
        x = np.where(np.isnan(x), np.array(0.5, dt), x)
    window = [1, 1] + [int(rng.integers(1, 4)) for _ in range(2)]
    strides = [1, 1] + [int(rng.integers(1, 3)) for _ in range(2)]
    base_dil = [1, 1] + [int(rng.integers(1, 3)) if rng.random() < 0.3 else 1 for _ in range(2)]
    win_dil = [1, 1] + [int(rng.integers(1, 3)) if rng.random() < 0.3 else 1 for _ in range(2)]
    pad_low = [0, 0] + [int(rng.integers(-1, 3)) for _ in range(2)]
    pad_high = [0, 0] + [int(rng.integers(-1, 3)) for _ in range(2)]
    for i in (2, 3):  # negative padding crops, but not below nothing
        while (hw[i - 2] - 1) * base_dil[i] + 1 + pad_low[i] + pad_high[i] < 0:
            pad_high[i] += 1
    if region == "add":
        init = np.array(0, dt)
    elif is_float(dt):
        init = np.array(-np.inf if region == "maximum" else np.inf, dt)
    else:
        info = np.iinfo(dt)
        init = np.array(info.min if region == "maximum" else info.max, dt)
    attrs = {"window": window, "strides": strides, "base_dil": base_dil, "win_dil": win_dil,
             "pad_low": pad_low, "pad_high": pad_high, "region": region}
    args = (window, strides, base_dil, win_dil, pad_low, pad_high)
    if region == "add" and is_float(dt):
        h = hi_dtype(dt)
        ref = ref_reduce_window(x.astype(h), np.array(0, h), *args, lambda a, b: a + b)
        mag = ref_reduce_window(np.abs(x.astype(h)), np.array(0, h), *args, lambda a, b: a + b)
        exp = ref.astype(dt)
        k = size_of(window) + 2
        tol = (2 * k * acc_eps(dt) * mag).astype(F64) + spacing_of(exp)
        add("reduce_window", [x, init], attrs, exp, "tol", ref=[ref], tol=[tol])
        return
    if region == "add":
        exp = ref_reduce_window(x, init, *args, lambda a, b: (a + b).astype(dt))
    else:
        exp = ref_reduce_window(x, init, *args,
                                lambda a, b: ref_maximum(a, b, region == "maximum"))
    add("reduce_window", [x, init], attrs, exp, "exact")


def ref_select_and_scatter(operand, source, init, window, strides, pad_low, select, combine):
    result = np.full(operand.shape, init, operand.dtype)
    for w_index in np.ndindex(*source.shape):
        selected = None
        for k in np.ndindex(*window):  # the window's elements in row-major order
            pos = tuple(w * s + ki - lo for w, s, ki, lo in zip(w_index, strides, k, pad_low))
            if not all(0 <= p < n for p, n in zip(pos, operand.shape)):
                continue  # padding holds no operand element
            if selected is None or not select(operand[selected], operand[pos]):
                selected = pos
        if selected is not None:
            result[selected] = combine(result[selected], source[w_index])
    return result


def select_and_scatter_case():
    dt = [F32, I32, F64, I8, U16][int(rng.integers(0, 5))]
    rank4 = rng.random() < 0.5
    if rank4:
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3)),
                 int(rng.integers(1, 7)), int(rng.integers(1, 7)))
    else:
        shape = (int(rng.integers(1, 8)), int(rng.integers(1, 8)))
    lead = 2 if rank4 else 0
    window = [1] * lead + [int(rng.integers(1, 4)) for _ in range(2)]
    strides = [1] * lead + [int(rng.integers(1, 3)) for _ in range(2)]
    pad_low = [0] * lead + [int(rng.integers(0, 2)) for _ in range(2)]
    pad_high = [0] * lead + [int(rng.integers(0, 2)) for _ in range(2)]
    padded = [d + lo + hi for d, lo, hi in zip(shape, pad_low, pad_high)]
    out = [(p - w) // s + 1 if p >= w else 0 for p, w, s in zip(padded, window, strides)]
    operand = random_values(dt, shape, edge_p=0.1)
    if is_float(dt):
        operand = np.where(np.isnan(operand), np.array(0.25, dt), operand)
    if rng.random() < 0.4 and operand.size:  # ties: the first one wins
        pool = operand.reshape(-1)[:2].copy()
        operand = pool[rng.integers(0, pool.size, operand.size)].reshape(shape)
    source = (float_random(dt, tuple(out), -1, 1) if is_float(dt)
              else random_values(dt, tuple(out)))
    init = np.array(0, dt)
    ge = rng.random() < 0.6
    select = (lambda a, b: a >= b) if ge else (lambda a, b: a <= b)
    if is_float(dt):  # repeated positions add up in row-major order of the source
        combine = lambda a, b: in_f32(np.add, np.array(a), np.array(b))
    else:
        combine = lambda a, b: np.array(a + b).astype(dt)
    exp = ref_select_and_scatter(operand, source, init, window, strides, pad_low, select, combine)
    attrs = {"window": window, "strides": strides, "pad_low": pad_low, "pad_high": pad_high,
             "select": "greater_equal" if ge else "less_equal", "scatter": "add"}
    add("select_and_scatter", [operand, source, init], attrs, exp, "exact")


# ---- dot_general, matmul, convolution ------------------------------------------------------

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def linalg_values(dt, shape):
    if is_int(dt) or dt == BOOL:
        return random_values(dt, shape, edge_p=0.05)
    v = float_random(dt, shape, -1, 1, halves_p=0.3)
    return v


def accumulate_ref(fn, a, b, rt):
    """fn(a, b) (an einsum-like function) with inputs converted to result dtype rt; returns
    (expected in rt, reference, tolerance or None)."""
    ac, bc = a.astype(rt), b.astype(rt)
    if is_int(rt):
        acc = U64 if rt.kind == "u" else I64
        return np.asarray(fn(ac.astype(acc), bc.astype(acc))).astype(rt), None, None
    h = hi_dtype(rt)
    ref = np.asarray(fn(ac.astype(h), bc.astype(h)))
    mag = np.asarray(fn(np.abs(ac.astype(h)), np.abs(bc.astype(h))))
    exp = ref.astype(rt)
    return exp, ref, mag


def dot_cases():
    combos = [(F32, None), (F64, None), (F16, None), (I32, None), (I8, I32), (F16, F32),
              (F32, F64), (U8, U32), (I64, None), (U16, None), (F32, None), (F64, None),
              (BOOL, None), (I32, F32)]
    for dt, rt in combos * 3:
        nb, nc = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        nfl, nfr = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        sizes = {}
        letters = iter(LETTERS)
        batch = [next(letters) for _ in range(nb)]
        contract = [next(letters) for _ in range(nc)]
        free_l = [next(letters) for _ in range(nfl)]
        free_r = [next(letters) for _ in range(nfr)]
        for ch in batch + contract + free_l + free_r:
            sizes[ch] = int(rng.integers(0, 5)) if rng.random() < 0.05 else int(rng.integers(1, 6))
        lhs_l = rng.permutation(batch + contract + free_l).tolist()
        rhs_l = rng.permutation(batch + contract + free_r).tolist()
        # batch dims come out first in lhs_batch order; free dims in operand order
        free_l = [ch for ch in lhs_l if ch in free_l]
        free_r = [ch for ch in rhs_l if ch in free_r]
        a = linalg_values(dt, tuple(sizes[ch] for ch in lhs_l))
        b = linalg_values(dt, tuple(sizes[ch] for ch in rhs_l))
        out = "".join(batch + free_l + free_r)
        subs = "".join(lhs_l) + "," + "".join(rhs_l) + "->" + out
        attrs = {"lhs_batch": [lhs_l.index(ch) for ch in batch],
                 "rhs_batch": [rhs_l.index(ch) for ch in batch],
                 "lhs_contract": [lhs_l.index(ch) for ch in contract],
                 "rhs_contract": [rhs_l.index(ch) for ch in contract]}
        rtype = rt or dt
        if rt:
            attrs["dtype"] = rt
        if dt == BOOL:  # and, then or
            exp = np.asarray(np.einsum(subs, a.astype(I64), b.astype(I64)) > 0)
            add("dot_general", [a, b], attrs, exp, "exact", note=f"einsum {subs}")
            continue
        exp, ref, mag = accumulate_ref(lambda p, q: np.einsum(subs, p, q), a, b, rtype)
        k = size_of([sizes[ch] for ch in contract])
        note = f"einsum {subs}"
        if ref is None:
            add("dot_general", [a, b], attrs, exp, "exact", note=note)
        else:
            tol = (2 * (k + 2) * acc_eps(rtype) * mag).astype(F64) + spacing_of(exp)
            add("dot_general", [a, b], attrs, exp, "tol", ref=[ref], tol=[tol], note=note)
    # a bigger matrix product (the BLAS path)
    for dt in (F32, F64):
        a = linalg_values(dt, (37, 65))
        b = linalg_values(dt, (65, 23))
        exp, ref, mag = accumulate_ref(np.matmul, a, b, dt)
        tol = (2 * 67 * acc_eps(dt) * mag).astype(F64) + spacing_of(exp)
        add("dot_general", [a, b], {"lhs_contract": [1], "rhs_contract": [0]}, exp, "tol",
            ref=[ref], tol=[tol], note="37x65 @ 65x23")
    for _ in range(12):  # matmul: 1-d operands, broadcast batch dims
        dt = [F32, F64, I32, F16][int(rng.integers(0, 4))]
        m, k, n = (int(rng.integers(1, 5)) for _ in range(3))
        kind = int(rng.integers(0, 4))
        if kind == 0:
            sa, sb = (k,), (k,)
        elif kind == 1:
            sa, sb = (k,), (int(rng.integers(1, 3)), k, n)
        elif kind == 2:
            sa, sb = (m, k), (k,)
        else:
            ba = rand_shape(max_rank=2, zero_p=0)
            bb = tuple(d if rng.random() < 0.6 else 1 for d in ba)[
                int(rng.integers(0, len(ba) + 1)):]
            sa, sb = ba + (m, k), bb + (k, n)
        a, b = linalg_values(dt, sa), linalg_values(dt, sb)
        exp, ref, mag = accumulate_ref(np.matmul, a, b, dt)
        if ref is None:
            add("matmul", [a, b], {}, exp, "exact")
        else:
            tol = (2 * (k + 2) * acc_eps(dt) * mag).astype(F64) + spacing_of(exp)
            add("matmul", [a, b], {}, exp, "tol", ref=[ref], tol=[tol])


def conv_ref(x, w, strides, plo, phi, ld, rd, groups, batch_groups):
    """StableHLO convolution for NCHW input, OIHW kernel, NCHW output, in x's dtype."""
    ns = x.ndim - 2
    n, c = x.shape[:2]
    o = w.shape[0]
    sp = x.shape[2:]
    dil = [(s - 1) * d + 1 if s > 0 else 0 for s, d in zip(sp, ld)]
    xd = np.zeros((n, c) + tuple(dil), x.dtype)
    xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in ld)] = x
    xp = ref_pad(xd, np.array(0, x.dtype), [0, 0] + list(plo), [0, 0] + list(phi), [0] * (ns + 2))
    ks = w.shape[2:]
    eff = [(k - 1) * d + 1 for k, d in zip(ks, rd)]
    out_sp = [(p - e) // s + 1 if p >= e else 0 for p, e, s in zip(xp.shape[2:], eff, strides)]
    nb = n // batch_groups
    out = np.zeros((nb, o) + tuple(out_sp), x.dtype)
    if size_of(out.shape) == 0 or size_of(ks) == 0:
        return out
    sl = "xyz"[:ns]
    subs = "nc" + sl + ",oc->no" + sl
    og = o // groups
    ob = o // batch_groups
    cg = w.shape[1]
    for k in np.ndindex(*ks):
        win = tuple(slice(ki * d, ki * d + (q - 1) * s + 1, s)
                    for ki, d, q, s in zip(k, rd, out_sp, strides))
        xs = xp[(slice(None), slice(None)) + win]
        wk = w[(slice(None), slice(None)) + k]
        if batch_groups > 1:
            for b in range(batch_groups):
                out[:, b * ob:(b + 1) * ob] += np.einsum(
                    subs, xs[b * nb:(b + 1) * nb], wk[b * ob:(b + 1) * ob]).astype(x.dtype)
        else:
            for g in range(groups):
                out[:, g * og:(g + 1) * og] += np.einsum(
                    subs, xs[:, g * cg:(g + 1) * cg], wk[g * og:(g + 1) * og]).astype(x.dtype)
    return out


def conv_cases():
    combos = [F32, F32, F64, F16, I32, F32, F64, I8, F32, F32]
    for i, dt in enumerate(combos * 3):
        ns = 2 if i % 3 else int(rng.integers(1, 4))
        groups = batch_groups = 1
        r = rng.random()
        if r < 0.25:
            groups = int(rng.integers(2, 4))
        elif r < 0.35:
            batch_groups = 2
        n = batch_groups * int(rng.integers(1, 3))
        cg = int(rng.integers(1, 4))
        c = cg * groups
        o = groups * batch_groups * int(rng.integers(1, 3))
        sp = [int(rng.integers(1, 7 if ns < 3 else 4)) for _ in range(ns)]
        ks = [int(rng.integers(1, 4)) for _ in range(ns)]
        strides = [int(rng.integers(1, 3)) for _ in range(ns)]
        ld = [int(rng.integers(1, 3)) if rng.random() < 0.2 else 1 for _ in range(ns)]
        rd = [int(rng.integers(1, 3)) if rng.random() < 0.3 else 1 for _ in range(ns)]
        plo = [int(rng.integers(-1, 3)) for _ in range(ns)]
        phi = [int(rng.integers(-1, 3)) for _ in range(ns)]
        for i in range(ns):  # the padded input must not have a negative size
            while (sp[i] - 1) * ld[i] + 1 + plo[i] + phi[i] < 0:
                phi[i] += 1
        kin = c if batch_groups > 1 else cg
        x = linalg_values(dt, (n, c) + tuple(sp))
        w = linalg_values(dt, (o, kin) + tuple(ks))
        rt = None
        if dt == F16 and rng.random() < 0.5:
            rt = F32
        if dt == I8:
            rt = I32
        attrs = {}
        if rng.random() < 0.8 or strides != [1] * ns:
            attrs["strides"] = strides
        attrs.update({"pad_low": plo, "pad_high": phi, "lhs_dil": ld, "rhs_dil": rd})
        if groups > 1:
            attrs["groups"] = groups
        if batch_groups > 1:
            attrs["batch_groups"] = batch_groups
        rtype = rt or dt
        if rt:
            attrs["dtype"] = rt

        def fn(p, q):
            return conv_ref(p, q, strides, plo, phi, ld, rd, groups, batch_groups)
        exp, ref, mag = accumulate_ref(fn, x, w, rtype)
        note = (f"x{list(x.shape)} w{list(w.shape)} strides {strides} pad {plo}/{phi} "
                f"lhs_dil {ld} rhs_dil {rd} groups {groups} batch_groups {batch_groups}")
        if ref is None:
            add("convolution", [x, w], attrs, exp, "exact", note=note)
        else:
            k = kin * size_of(ks)
            tol = (2 * (k + 2) * acc_eps(rtype) * mag).astype(F64) + spacing_of(exp)
            add("convolution", [x, w], attrs, exp, "tol", ref=[ref], tol=[tol], note=note)


# ---- bigger cases: the vector loops, blocked kernels and library paths ---------------------

def big_cases():
    n = 4099  # not a multiple of any vector width
    for op in ("exponential", "sine", "tanh", "log", "logistic", "exponential_minus_one"):
        x = float_domain(op, F32, (n,))
        add(op, [x], {}, unary_ref(op, x), "ulp", ulps=4, note="big")
    for op, dt in (("sqrt", F16), ("round_nearest_afz", F32), ("abs", F64), ("negate", I16),
                   ("popcnt", U32), ("floor", F16)):
        x = float_domain(op, dt, (n,)) if is_float(dt) else random_values(dt, (n,))
        add(op, [x], {}, unary_ref(op, x), "exact", note="big")
    for op, dt, sa, sb in (("add", F32, (257, 33), (33,)), ("multiply", F16, (n,), (n,)),
                           ("divide", F32, (n,), (n,)), ("divide", I32, (n,), (n,)),
                           ("maximum", F64, (129, 31), (129, 1)), ("subtract", U8, (n,), ()),
                           ("shift_right_arithmetic", I64, (n,), (n,)),
                           ("remainder", F64, (n,), (n,)), ("power", F32, (n,), (n,))):
        a, b = binary_values(op, dt, sa, 0), binary_values(op, dt, sb, 1)
        exp = binary_ref(op, a, b)
        if op == "power":
            add(op, [a, b], {}, exp, "ulp", ulps=4, note="big")
        else:
            add(op, [a, b], {}, exp, "exact", note="big")
    for s_, t in ((F32, F16), (F16, F32), (F64, I32), (I64, F32), (F32, U8), (F64, F16),
                  (U64, F64)):
        x = np.concatenate([convert_values(s_, t) for _ in range(60)])
        add("convert", [x], {"dtype": t}, ref_convert(x, t), "exact",
            note=f"big {KILN_NAME[s_]} -> {KILN_NAME[t]}")
    a, b = random_values(F32, (n,)), random_values(F32, (n,))
    b[::3] = a[::3]
    add("compare", [a, b], {"direction": "LE"}, a <= b, "exact", note="big")
    add("compare", [a, b], {"direction": "GT", "type": "TOTALORDER"},
        ref_compare(a, b, "GT", "TOTALORDER"), "exact", note="big")
    # reductions
    x = float_random(F16, (2, 5000), -2, 1)
    exp, ref, tol = float_reduce_case("sum", x, [1], False)
    add("sum", [x], {"axes": [1]}, exp, "tol", ref=[ref], tol=[tol], note="big f16 sum in f32")
    x = float_random(F64, (100003,), -3, 3)
    exp, ref, tol = float_reduce_case("sum", x, [], False)
    add("sum", [x], {}, exp, "tol", ref=[ref], tol=[tol], note="big")
    x = float_random(F32, (64, 300), -2, 2)
    exp, ref, tol = float_reduce_case("mean", x, [0], True)
    add("mean", [x], {"axes": [0], "keepdims": True}, exp, "tol", ref=[ref], tol=[tol],
        note="big")
    x = random_values(F32, (3, 3000), edge_p=0.01)
    add("argmax", [x], {"axis": 1}, np.argmax(x, axis=1).astype(I64), "exact", note="big")
    add("max", [x], {"axes": [1]}, ref_maxmin(x, [1], False, True), "exact", note="big")
    x = random_values(I32, (5000,))
    add("sum", [x], {}, np.asarray(np.sum(x, dtype=I32)), "exact", note="big")
    # sort: long rows with ties and NaNs
    x = random_values(F32, (3, 2000), edge_p=0.05)
    x[:, ::7] = 1.5
    for cmp in ("less", "greater"):
        if cmp == "less":
            order = np.argsort(x, axis=1, kind="stable")
        else:
            order = x.shape[1] - 1 - np.flip(np.argsort(np.flip(x, 1), axis=1, kind="stable"), 1)
        add("sort", [x], {"dim": 1, "stable": True, "cmp": cmp},
            np.take_along_axis(x, order, 1), "bits", note="big")
    x = random_values(I32, (5000,), small_p=0.9)
    add("sort", [x], {"dim": 0, "stable": True, "cmp": "less"}, np.sort(x, kind="stable"),
        "bits", note="big")
    # movement and indexing
    x = random_values(F32, (64, 33, 17))
    add("transpose", [x], {"perm": [2, 0, 1]}, contiguous(np.transpose(x, (2, 0, 1))), "bits",
        note="big")
    x = random_values(I16, (1000, 16))
    ind = rng.integers(0, 1000, 500).astype(I32)
    add("take", [x, ind], {"axis": 0}, np.take(x, ind, axis=0), "bits", note="big")
    x = random_values(F64, (50, 60))
    v = np.array(-1.5, F64)
    add("pad", [x, v], {"low": [3, -2], "high": [-1, 4], "interior": [1, 2]},
        ref_pad(x, v, [3, -2], [-1, 4], [1, 2]), "bits", note="big")
    # dot_general and convolution at sizes the libraries take
    for dt, rt, (m, k, n2) in ((F32, None, (128, 300, 64)), (F16, None, (64, 200, 32)),
                               (I8, I32, (50, 300, 40)), (F64, None, (70, 129, 65))):
        a, b = linalg_values(dt, (m, k)), linalg_values(dt, (k, n2))
        rtype = rt or dt
        attrs = {"lhs_contract": [1], "rhs_contract": [0]}
        if rt:
            attrs["dtype"] = rt
        exp, ref, mag = accumulate_ref(np.matmul, a, b, rtype)
        if ref is None:
            add("dot_general", [a, b], attrs, exp, "exact", note="big")
        else:
            tol = (2 * (k + 2) * acc_eps(rtype) * mag).astype(F64) + spacing_of(exp)
            add("dot_general", [a, b], attrs, exp, "tol", ref=[ref], tol=[tol], note="big")
    for strides, groups in (([1, 1], 1), ([2, 2], 1), ([1, 1], 2)):
        x = linalg_values(F32, (2, 8, 16, 16))
        w = linalg_values(F32, (16, 8 // groups, 3, 3))
        pad = [1, 1]

        def fn(p, q, strides=strides, groups=groups):
            return conv_ref(p, q, strides, pad, pad, [1, 1], [1, 1], groups, 1)
        exp, ref, mag = accumulate_ref(fn, x, w, F32)
        tol = (2 * (8 * 9 + 2) * acc_eps(F32) * mag).astype(F64) + spacing_of(exp)
        attrs = {"strides": strides, "pad_low": pad, "pad_high": pad}
        if groups > 1:
            attrs["groups"] = groups
        add("convolution", [x, w], attrs, exp, "tol", ref=[ref], tol=[tol],
            note=f"big 3x3 strides {strides} groups {groups}")
    x = reduce_values(F32, (2, 4, 32, 32))
    x = np.where(np.isnan(x), np.array(0.5, F32), x)
    init = np.array(-np.inf, F32)
    win = [1, 1, 2, 2]
    exp = ref_reduce_window(x, init, win, win, [1] * 4, [1] * 4, [0] * 4, [0] * 4,
                            lambda p, q: ref_maximum(p, q, True))
    add("reduce_window", [x, init], {"window": win, "strides": win, "region": "maximum"}, exp,
        "exact", note="big max pool")


# ---- comparison ------------------------------------------------------------------------------

def ordered_int(v, dt):
    """Floats as integers in value order (for ulp distances): Python ints."""
    u = int(np.asarray(v, dt).reshape(1).view(UINT_OF_SIZE[dt.itemsize])[0])
    sign = 1 << (bits(dt) - 1)
    return -(u & (sign - 1)) if u & sign else u


def same_value_mask(got, exp):
    """Elementwise: identical bits, or both NaN."""
    dt = exp.dtype
    if is_float(dt):
        gb = as_unsigned(contiguous(got))
        eb = as_unsigned(contiguous(exp))
        return (gb == eb) | (np.isnan(got) & np.isnan(exp))
    return got == exp


def fmt(v, dt):
    v = np.asarray(v, dt)
    if is_float(dt):
        b = int(v.reshape(1).view(UINT_OF_SIZE[dt.itemsize])[0])
        return f"{float(v)!r} (0x{b:0{dt.itemsize * 2}x})"
    return repr(v.item())


def mismatch_mask(c, k, got):
    """Elements of output k that fail, as a flat bool array."""
    exp = c.expected[k].reshape(-1)
    got = got.reshape(-1)
    if c.check in ("bits", "exact"):
        return ~same_value_mask(got, exp)
    if c.check == "ulp":
        ok = same_value_mask(got, exp)
        bad = ~ok
        dt = exp.dtype
        for idx in np.nonzero(bad)[0]:
            g, e = got[idx], exp[idx]
            if np.isnan(g) or np.isnan(e) or np.isinf(e) or (e == 0 and g == 0):
                continue  # NaN, infinity and signed zero must match exactly
            d = abs(ordered_int(g, dt) - ordered_int(e, dt))
            note_stat(c, "ulp", d)
            if d <= c.ulps:
                bad[idx] = False
        return bad
    # tol
    ref = np.asarray(c.ref[k]).reshape(-1)
    tol = np.broadcast_to(np.asarray(c.tol[k]), c.expected[k].shape).reshape(-1)
    g = got.astype(ref.dtype if ref.dtype in (F64, LD) else F64)
    special = ~np.isfinite(exp) | ~np.isfinite(ref)
    ok_special = same_value_mask(got, exp) | (np.isnan(got) & np.isnan(ref))
    # an infinity may also be the rounding of a finite reference
    ok_special |= np.isinf(got) & np.isinf(exp) & (np.sign(got) == np.sign(exp))
    err = np.abs(g - ref)
    ok = np.where(special, ok_special, err <= tol)
    if STATS and err.size:
        finite = ~special & (tol > 0)
        if np.any(finite):
            note_stat(c, "err/tol", float(np.max(err[finite] / tol[finite])))
    return ~ok


STAT = {}


def note_stat(c, what, value):
    key = (c.op, KILN_NAME.get(c.expected[0].dtype, "?"), what)
    STAT[key] = max(STAT.get(key, 0), value)


def describe(c, k, got, bad):
    exp = c.expected[k]
    lines = []
    flat = np.nonzero(bad)[0]
    lines.append(f"    output {k}: {len(flat)} of {exp.size} elements differ")
    for i in flat[:6]:
        idx = tuple(int(v) for v in np.unravel_index(int(i), exp.shape))
        where = "[" + ",".join(str(int(i)) for i in idx) + "]"
        ins = ""
        if c.op in ELEMENTWISE:  # the operands at that element, through broadcasting
            vals = []
            for i, x in enumerate(c.inputs):
                try:
                    xb = np.broadcast_to(x, exp.shape)
                    vals.append(f"in{i}={fmt(xb[idx], x.dtype)}")
                except ValueError:
                    pass
            ins = " " + " ".join(vals)
        extra = ""
        g, e = got[idx], exp[idx]
        if c.check == "ulp" and is_float(exp.dtype) and np.isfinite(g) and np.isfinite(e):
            extra = f" ({abs(ordered_int(g, exp.dtype) - ordered_int(e, exp.dtype))} ulp)"
        if c.check == "tol":
            tol = np.broadcast_to(np.asarray(c.tol[k]), exp.shape)
            extra = (f" (reference {float(np.asarray(c.ref[k])[idx])!r}, allowed error "
                     f"{float(tol[idx]):.3g})")
        lines.append(f"      at {where}:{ins} expected {fmt(exp[idx], exp.dtype)} got "
                     f"{fmt(got[idx], exp.dtype)}{extra}")
    return lines


ELEMENTWISE = set(UNARY_DTYPES) | set(BINARY_DTYPES) | {"compare", "select", "clamp", "convert"}


def array_text(a):
    with np.printoptions(threshold=40, edgeitems=4, linewidth=100, precision=9):
        t = np.array2string(a, separator=", ")
    return t.replace("\n", "\n        ")


def check_case(c):
    """Returns None when the case passes, else a list of report lines."""
    if c.status != "ok":
        return [f"    {c.status}: {c.message}"]
    problems = []
    for k, exp in enumerate(c.expected):
        got = c.got[k]
        if got.dtype != exp.dtype or got.shape != exp.shape:
            problems.append(f"    output {k}: got {got.dtype}{list(got.shape)}, expected "
                            f"{exp.dtype}{list(exp.shape)}")
            continue
        if c.check == "bits":
            if contiguous(got).tobytes() == contiguous(exp).tobytes():
                continue
        bad = mismatch_mask(c, k, got)
        if np.any(bad):
            problems.extend(describe(c, k, got, bad))
    return problems or None


def case_title(c):
    dts = ",".join(f"{KILN_NAME.get(x.dtype, x.dtype)}{list(x.shape)}" for x in c.inputs)
    attrs = " ".join(f"{k}={attr_text(v)}" for k, v in c.attrs.items())
    note = f" ({c.note})" if c.note else ""
    return f"#{c.id} {c.op} {dts} {attrs}{note}".rstrip()


def full_report(c, lines):
    out = [f"FAIL {case_title(c)}"] + lines
    out.append(f"    check: {c.check}" + (f" ({c.ulps} ulp)" if c.check == "ulp" else ""))
    out.append(f"    rerun: cd {WORKDIR} && {TOOL} {command(c)}")
    if c.got is not None:
        out.append(f"    (c{c.id}_expected*.npy and c{c.id}_got*.npy hold both answers)")
    for i, x in enumerate(c.inputs):
        out.append(f"    in{i} {KILN_NAME.get(x.dtype)}{list(x.shape)} = {array_text(x)}")
    for k, exp in enumerate(c.expected):
        out.append(f"    expected{k} {KILN_NAME.get(exp.dtype)}{list(exp.shape)} = "
                   f"{array_text(exp)}")
        if c.got is not None and k < len(c.got):
            g = c.got[k]
            out.append(f"    got{k} {KILN_NAME.get(g.dtype, g.dtype)}{list(g.shape)} = "
                       f"{array_text(g)}")
    return out


# ---- running -------------------------------------------------------------------------------

def npy_bytes(x):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(x), allow_pickle=False)
    return buf.getvalue()


def clean_workdir():
    for name in os.listdir(WORKDIR):
        if re.fullmatch(r"c\d+_(i|o|expected|got)\d+\.npy|batch\d*\.txt|(in|out)\d*\.blob",
                        name):
            os.remove(os.path.join(WORKDIR, name))


def write_inputs():
    """All inputs in one blob: a file per array costs more than kiln's work on it."""
    parts = []
    offset = 0
    for c in CASES:
        for x in c.inputs:
            b = npy_bytes(x)
            c.in_places.append((offset, len(b)))
            parts.append(b)
            offset += len(b)
    path = os.path.join(WORKDIR, "in.blob")
    with open(path, "wb") as f:
        f.write(b"".join(parts))
    return path


def reproducer_files(c):
    """Writes case c's inputs, expected and actual outputs as .npy files in WORKDIR."""
    for k, x in enumerate(c.inputs):
        np.save(os.path.join(WORKDIR, f"c{c.id}_i{k}.npy"), x)
    for k, e in enumerate(c.expected):
        np.save(os.path.join(WORKDIR, f"c{c.id}_expected{k}.npy"), e)
    for k, g in enumerate(c.got or []):
        np.save(os.path.join(WORKDIR, f"c{c.id}_got{k}.npy"), g)


RESULT = re.compile(r"^(\d+) (ok|error|usage)(?: (.*))?$")


def run_all(in_blob):
    pending = list(CASES)
    crashes = 0
    round_no = 0
    while pending:
        path = os.path.join(WORKDIR, f"batch{round_no}.txt")
        out_blob = os.path.join(WORKDIR, f"out{round_no}.blob")
        with open(path, "w") as f:
            for c in pending:
                f.write(command(c, blob=True) + "\n")
        try:
            proc = subprocess.run([TOOL, "--batch", path, "--in-blob", in_blob,
                                   "--out-blob", out_blob], cwd=WORKDIR, capture_output=True,
                                  text=True, timeout=240)
            stdout, stderr, rc = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:
            stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            stderr = "timed out after 240 s"
            rc = None
        done = False
        seen = 0
        for line in stdout.splitlines():
            if line.startswith("done "):
                done = True
                continue
            m = RESULT.match(line)
            if not m:
                continue
            c = pending[int(m.group(1)) - 1]
            seen = max(seen, int(m.group(1)))
            c.status = m.group(2)
            c.message = m.group(3) or ""
            if c.status == "ok":
                try:
                    places = [tuple(int(v) for v in p.split("+")) for p in c.message.split(",")]
                except ValueError:
                    places = []
                if len(places) != len(c.expected):
                    c.status = "bad output"
                    c.message = f"kiln_op_tool reported {c.message!r} as the outputs' places"
                else:
                    c.out_places = (out_blob, places)
                    c.message = ""
        sanitizer = re.search(r"AddressSanitizer|LeakSanitizer|runtime error:", stderr)
        if done and not sanitizer and rc in (0, 1, 2):
            return
        if done:
            # finished, but a sanitizer complained (a leak at exit, or a reported error)
            print(f"numpy_diff: kiln_op_tool exited {rc} after the whole batch:\n{stderr[-4000:]}",
                  file=sys.stderr)
            SANITIZER_FAILURES.append(stderr[-4000:])
            return
        # it died on the first command without a result line
        if seen >= len(pending):
            return
        victim = pending[seen]
        victim.status = "crash"
        victim.message = (f"kiln_op_tool died (exit status {rc}) on this case; stderr tail:\n"
                          + stderr[-3000:])
        crashes += 1
        pending = pending[seen + 1:]
        round_no += 1
        if crashes >= MAX_CRASHES:
            for c in pending:
                c.status = "not run"
                c.message = f"not run: kiln_op_tool crashed {crashes} times"
            return


def read_outputs():
    blobs = {}
    for c in CASES:
        if c.status != "ok":
            continue
        path, places = c.out_places
        if path not in blobs:
            with open(path, "rb") as f:
                blobs[path] = f.read()
        data = blobs[path]
        try:
            c.got = [np.lib.format.read_array(io.BytesIO(data[off:off + n]), allow_pickle=False)
                     for off, n in places]
        except Exception as e:  # bytes kiln wrote that numpy cannot read are a failure
            c.status = "bad output"
            c.message = f"numpy cannot read kiln's .npy: {type(e).__name__}: {e}"


SANITIZER_FAILURES = []


def main():
    t0 = time.time()
    os.makedirs(WORKDIR, exist_ok=True)
    unary_cases()
    binary_cases()
    compare_cases()
    select_clamp_cases()
    convert_cases()
    movement_cases()
    indexing_cases()
    reduce_cases()
    dot_cases()
    conv_cases()
    big_cases()
    clean_workdir()
    in_blob = write_inputs()
    t1 = time.time()
    run_all(in_blob)
    read_outputs()
    t2 = time.time()
    failed, unimplemented = [], []
    per_op = {}
    for c in CASES:
        if c.status == "error" and c.message.startswith("UNIMPLEMENTED") and ALLOW_UNIMPLEMENTED:
            unimplemented.append(c)
            continue
        lines = check_case(c)
        if lines is None:
            continue
        failed.append(c)
        n = per_op.get(c.op, 0)
        per_op[c.op] = n + 1
        if VERBOSE or n < FULL_REPORTS_PER_OP:
            reproducer_files(c)
            print("\n".join(full_report(c, lines)))
        else:
            print(f"FAIL {case_title(c)}\n" + "\n".join(lines[:3]))
    t3 = time.time()
    if STATS:
        for (op, dt, what), v in sorted(STAT.items()):
            print(f"numpy_diff: stats {op} {dt}: largest {what} {v:.3g}")
    if failed:
        print("numpy_diff: failures per op: " +
              ", ".join(f"{op} {n}" for op, n in sorted(per_op.items())))
    if unimplemented:
        ops = sorted({c.op for c in unimplemented})
        print(f"numpy_diff: {len(unimplemented)} cases UNIMPLEMENTED (allowed by "
              f"KILN_DIFF_ALLOW_UNIMPLEMENTED): {', '.join(ops)}")
    print(f"numpy_diff: seed {SEED}; generate {t1 - t0:.1f} s, kiln {t2 - t1:.1f} s, "
          f"compare {t3 - t2:.1f} s")
    summary = f"numpy_diff: {len(CASES)} cases, {len(failed)} failed"
    if ALLOW_UNIMPLEMENTED:
        summary += f", {len(unimplemented)} unimplemented"
    print(summary)
    if SANITIZER_FAILURES:
        print("numpy_diff: kiln_op_tool reported a sanitizer error (above)")
    sys.exit(1 if failed or SANITIZER_FAILURES or not CASES else 0)


main()
