#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks kiln's .npy files against numpy itself, in both directions.
#
#   npy_interop.sh TOOL PYTHON WORKDIR
#
# TOOL is kiln_npy_tool (tests/support/npy_tool.c), PYTHON a Python 3 with numpy (Debian's
# /usr/bin/python3 and python3-numpy), WORKDIR a scratch folder (created; only its *.npy
# files are removed).
#  (a) numpy writes arrays of every dtype kiln reads (plus big-endian, scalar, empty,
#      version 2.0/3.0 and rank-16 files); `TOOL read` must report the same dtype, shape
#      and values (complex: each element's real part, then its imaginary part). Files kiln
#      must refuse (Fortran order, object, strings, 17 dimensions) must make it fail with a
#      clear message.
#  (b) `TOOL write` produces every kiln dtype; numpy's np.load must give exactly the
#      expected values (bf16 through arr['bf16'] bits -> float32).
# Exits non-zero, naming the case, on any mismatch.
set -euo pipefail

if [[ $# -ne 3 ]]; then
    echo "usage: $0 TOOL PYTHON WORKDIR" >&2
    exit 2
fi
tool=$1
python=$2
workdir=$3

if [[ ! -x $tool ]]; then
    echo "npy_interop: $tool is not an executable" >&2
    exit 1
fi
if ! "$python" -c 'import numpy' 2>/dev/null; then
    echo "npy_interop: $python cannot import numpy (on Debian: apt-get install python3-numpy)" >&2
    exit 1
fi
mkdir -p "$workdir"
rm -f "$workdir"/*.npy

exec "$python" - "$tool" "$workdir" <<'PYTHON'
import math
import os
import struct
import subprocess
import sys

import numpy as np

tool, workdir = sys.argv[1], sys.argv[2]
failures = []


def fail(case, message):
    failures.append(f"{case}: {message}")
    print(f"FAIL {case}: {message}", file=sys.stderr)


KILN_NAMES = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64",
    "float16": "f16", "float32": "f32", "float64": "f64",
    "complex64": "complex<f32>", "complex128": "complex<f64>",
}


def run_tool(*args):
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)


def same_double(a, b):
    """Bit-exact equality of two doubles, any NaN matching any NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return struct.pack("<d", a) == struct.pack("<d", b)


def shape_text(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


def check_read(case, path, kiln_dtype, shape, values):
    """`TOOL read path` must print kiln_dtype, shape and the values (as doubles)."""
    r = run_tool("read", path)
    if r.returncode != 0:
        fail(case, f"kiln_npy_tool read exited {r.returncode}: {r.stderr.strip()}")
        return
    lines = r.stdout.splitlines()
    want_head = f"{kiln_dtype} {shape_text(shape)}"
    if not lines or lines[0] != want_head:
        fail(case, f"header line {lines[0] if lines else '(none)'!r}, expected {want_head!r}")
        return
    got = lines[1:]
    if len(got) != len(values):
        fail(case, f"{len(got)} values, expected {len(values)}")
        return
    for i, (text, want) in enumerate(zip(got, values)):
        try:
            value = float(text)
        except ValueError:
            fail(case, f"value {i} is {text!r}, not a number")
            return
        if not same_double(value, want):
            fail(case, f"value {i} is {text}, expected {want!r}")
            return


# ---- (a) numpy writes, kiln reads ----------------------------------------------------

def numpy_case(name, arr, version=None):
    path = os.path.join(workdir, f"np_{name}.npy")
    if version is None:
        np.save(path, arr)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, arr, version=version)
    flat = np.ascontiguousarray(arr).reshape(-1)
    if arr.dtype.kind == "c":
        values = [float(p) for x in flat for p in (x.real, x.imag)]
    else:
        values = [float(x) for x in flat]
    check_read(f"numpy->kiln {name}", path, KILN_NAMES[arr.dtype.name], arr.shape, values)


def ints(dtype):
    info = np.iinfo(dtype)
    if info.min < 0:
        return np.array([info.min, -1, 0, 1, 2, info.max], dtype=dtype).reshape(2, 3)
    return np.array([0, 1, 2, 3, 100, info.max], dtype=dtype).reshape(2, 3)


numpy_case("bool", np.array([[True, False, True], [False, False, True]]))
for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
    numpy_case(np.dtype(t).name, ints(t))
numpy_case("float16", np.array([-1.5, -0.0, 0.25, 65504, np.inf, np.nan, 6e-8, -np.inf],
                               dtype=np.float16).reshape(4, 2))
numpy_case("float32", np.array([-1.5, -0.0, 0.1, 3.4028235e38, -np.inf, 1e-45, np.nan],
                               dtype=np.float32))
numpy_case("float64", np.array([-1.5, -0.0, 0.1, 1e300, 5e-324, np.inf, -2.0, 7.0],
                               dtype=np.float64).reshape(2, 2, 2))
numpy_case("float64_be", np.array([1.5, -2.25, 1e300, 5e-324, -0.0], dtype=">f8"))
numpy_case("int32_be", np.array([[1, -2], [0x12345678, -(2**31)]], dtype=">i4"))
numpy_case("uint16_be", np.array([1, 0xfffe, 0x1234], dtype=">u2"))
numpy_case("int64_be", np.array([-(2**63), 2**63 - 1, -5], dtype=">i8"))
numpy_case("float32_be", np.array([0.1, -3.5], dtype=">f4"))
numpy_case("float16_be", np.array([0.1, -3.5, 65504], dtype=">f2"))
numpy_case("complex64", np.array([[1 + 2j, -0.0 - 3.5j], [np.inf + 1j, 0.1 - 0.0j]],
                                 dtype=np.complex64))
numpy_case("complex128", np.array([1e300 - 5e-324j, np.nan + 2j], dtype=np.complex128))
numpy_case("complex64_be", np.array([1.5 - 2.25j, 0.1 + 3j], dtype=">c8"))
numpy_case("complex128_be", np.array([1.5 - 2.25j, 1e-300 + 3j], dtype=">c16"))
numpy_case("scalar_float64", np.array(3.5))
numpy_case("scalar_int32", np.array(-7, dtype=np.int32))
numpy_case("scalar_bool", np.array(True))
numpy_case("empty_float32", np.zeros((0, 3), dtype=np.float32))
numpy_case("empty_int16", np.zeros((0,), dtype=np.int16))
numpy_case("empty_uint8", np.zeros((2, 0, 5), dtype=np.uint8))
numpy_case("rank16", np.arange(4, dtype=np.int16).reshape((1,) * 14 + (2, 2)))
numpy_case("noncontiguous", np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2])
numpy_case("version2", ints(np.int16), version=(2, 0))
numpy_case("version3", np.array([0.5, -0.5], dtype=np.float32), version=(3, 0))

# bf16 the way kiln/npy.h documents it: a structured array with one 'bf16' field of uint16.
bf_bits = np.array([0x3F80, 0xC020, 0x0000, 0x8000, 0x4049, 0x7F80], dtype=np.uint16)
bf = np.zeros(6, dtype=[("bf16", "<u2")])
bf["bf16"] = bf_bits
bf_path = os.path.join(workdir, "np_bf16.npy")
np.save(bf_path, bf.reshape(3, 2))
bf_values = [float(x) for x in (bf_bits.astype(np.uint32) << 16).view(np.float32)]
check_read("numpy->kiln bf16", bf_path, "bf16", (3, 2), bf_values)


def refused(name, arr, fragment, **save_args):
    path = os.path.join(workdir, f"np_refused_{name}.npy")
    np.save(path, arr, **save_args)
    r = run_tool("read", path)
    case = f"numpy->kiln refuses {name}"
    if r.returncode != 1:
        fail(case, f"kiln_npy_tool read exited {r.returncode}, expected 1; stdout {r.stdout!r}")
    elif fragment not in r.stderr or path not in r.stderr:
        fail(case, f"message {r.stderr.strip()!r} lacks {fragment!r} or the path")
    elif r.stdout:
        fail(case, f"printed {r.stdout!r} on error")


refused("fortran", np.asfortranarray(np.arange(6.0).reshape(2, 3)), "Fortran-order")
refused("complex256", np.array([1 + 2j], dtype=np.clongdouble), "is not supported")
refused("object", np.array([1, "a"], dtype=object), "'|O' is not supported", allow_pickle=True)
refused("unicode", np.array(["hello"]), "'<U5' is not supported")
refused("structured", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]), "structured dtype")
refused("rank17", np.zeros((1,) * 17, dtype=np.float32), "more than 16 dimensions")

# ---- (b) kiln writes, numpy reads -----------------------------------------------------

F32_MAX = float(np.finfo(np.float32).max)
EXPECTED = {
    "i1": (np.bool_, [1, 0, 0, 1, 1, 0]),
    "f16": (np.float16, [-1.5, -0.0, 0.25, 1.0, 2.5, 65504.0]),
    "f32": (np.float32, [-1.5, -0.0, 0.1, 1.0, 2.5, F32_MAX]),
    "f64": (np.float64, [-1.5, -0.0, 0.1, 1.0, 2.5, 1e300]),
}
for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
    EXPECTED[KILN_NAMES[np.dtype(t).name]] = (t, ints(t).reshape(-1).tolist())
BF16_EXPECTED = [-1.5, -0.0, 0.25, 1.0, 2.5, 3.140625]
C64_PARTS = np.array([-1.5, -0.0, 0.1, 1.0, 2.5, F32_MAX / 4], dtype=np.float32)
C128_PARTS = np.array([-1.5, -0.0, 0.1, 1.0, 2.5, 1e300])


def complex_of(re, im, dtype):
    """re + i im with both zeros' signs kept (re + 1j * im would lose them)."""
    out = np.empty(re.shape, dtype=dtype)
    out.real, out.imag = re, im
    return out


EXPECTED["complex<f32>"] = (np.complex64, complex_of(C64_PARTS, C64_PARTS * -2, np.complex64))
EXPECTED["complex<f64>"] = (np.complex128,
                            complex_of(C128_PARTS, C128_PARTS * -2, np.complex128))


def check_header_bytes(case, path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:8] != b"\x93NUMPY\x01\x00":
        fail(case, f"preamble {raw[:8]!r}, expected version 1.0")
        return
    hlen = int.from_bytes(raw[8:10], "little")
    if (10 + hlen) % 64 != 0 or raw[10 + hlen - 1:10 + hlen] != b"\n":
        fail(case, f"header of {hlen} bytes is not padded to 64 with a final newline")


for kiln_dtype in ["i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64",
                   "f16", "bf16", "f32", "f64", "complex<f32>", "complex<f64>"]:
    case = f"kiln->numpy {kiln_dtype}"
    path = os.path.join(workdir, f"kiln_{kiln_dtype}.npy")
    r = run_tool("write", kiln_dtype, path)
    if r.returncode != 0:
        fail(case, f"kiln_npy_tool write exited {r.returncode}: {r.stderr.strip()}")
        continue
    check_header_bytes(case, path)
    try:
        arr = np.load(path, allow_pickle=False)
    except Exception as e:  # numpy's own complaint is the message
        fail(case, f"np.load failed: {type(e).__name__}: {e}")
        continue
    if arr.shape != (2, 3):
        fail(case, f"shape {arr.shape}, expected (2, 3)")
        continue
    if arr.flags.fortran and not arr.flags.c_contiguous:
        fail(case, "numpy sees a Fortran-order array")
    if kiln_dtype == "bf16":
        if arr.dtype != np.dtype([("bf16", "<u2")]):
            fail(case, f"dtype {arr.dtype}, expected [('bf16', '<u2')]")
            continue
        got = (arr["bf16"].astype(np.uint32) << 16).view(np.float32)
        want = np.array(BF16_EXPECTED, dtype=np.float32).reshape(2, 3)
        values = [float(x) for x in want.reshape(-1)]
    else:
        np_type, expected = EXPECTED[kiln_dtype]
        if arr.dtype != np.dtype(np_type):
            fail(case, f"dtype {arr.dtype}, expected {np.dtype(np_type)}")
            continue
        got = arr
        want = np.array(expected, dtype=np_type).reshape(2, 3)
        if want.dtype.kind == "c":
            values = [float(p) for x in want.reshape(-1) for p in (x.real, x.imag)]
        else:
            values = [float(x) for x in want.reshape(-1)]
    # Bit-exact: signed zeros and every bit of the largest values.
    if got.tobytes() != want.tobytes():
        fail(case, f"values {got.reshape(-1).tolist()}, expected {want.reshape(-1).tolist()}")
        continue
    # And kiln reads back what it wrote.
    check_read(case + " (read back)", path, kiln_dtype, (2, 3), values)

r = run_tool("write", "c64", os.path.join(workdir, "kiln_c64.npy"))
if r.returncode == 0 or "unknown dtype" not in r.stderr:
    fail("kiln_npy_tool write c64", f"exited {r.returncode} with {r.stderr.strip()!r}")

if failures:
    print(f"npy_interop: {len(failures)} failure(s)", file=sys.stderr)
    sys.exit(1)
print("npy_interop: all numpy interop checks passed")
PYTHON
