#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""safetensors files between kiln and an independent writer/reader, in both directions.

    test_safetensors_interop.py TEST_IO WORKDIR

Written from the format's description with json, struct and numpy only (no safetensors
package): an 8-byte little-endian header length, a JSON header {name: {dtype, shape,
data_offsets}, "__metadata__": {str: str}}, then the data.

 (a) This script writes python.safetensors (every kiln dtype, scalars, empty tensors,
     entries in shuffled JSON order) with one .bin file per tensor and a manifest; the
     Criterion test safetensors_interop/python_files (tests/io/test_safetensors_interop.c)
     loads it, compares with the .bin files, and writes kiln.safetensors from them.
 (b) This script reads kiln.safetensors with its own parser and checks it against the
     reference writer's rules (header padded with spaces to a multiple of 8, compact JSON,
     "__metadata__" first, tensors by descending dtype alignment then name, contiguous
     offsets covering the data) and the numpy arrays, byte for byte.
Exits non-zero, naming the case, on any mismatch.
"""
import json
import os
import random
import struct
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("safetensors_interop: numpy is missing (on Debian: apt-get install python3-numpy)",
          file=sys.stderr)
    sys.exit(1)

test_io, workdir = sys.argv[1], sys.argv[2]
os.makedirs(workdir, exist_ok=True)
for f in os.listdir(workdir):
    if f.endswith((".bin", ".safetensors", ".txt")):
        os.remove(os.path.join(workdir, f))

failures = []


def fail(case, message):
    failures.append(f"{case}: {message}")
    print(f"FAIL {case}: {message}", file=sys.stderr)


# The reference's Dtype enum order for the dtypes kiln has (larger = saved first).
ORDER = ["BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64",
         "U64"]
NUMPY = {"BOOL": "?", "U8": "<u1", "I8": "<i1", "U16": "<u2", "I16": "<i2", "U32": "<u4",
         "I32": "<i4", "U64": "<u8", "I64": "<i8", "F16": "<f2", "F32": "<f4", "F64": "<f8",
         "BF16": "<u2"}  # bf16 as its raw bits

rng = np.random.default_rng(20261129)


def values(dtype, shape):
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == "BOOL":
        return rng.integers(0, 2, n).astype("?").reshape(shape)
    if dtype == "BF16":
        f = rng.standard_normal(n).astype("<f4")
        return (f.view("<u4") >> 16).astype("<u2").reshape(shape)
    if dtype.startswith("F"):
        a = rng.standard_normal(n).astype(NUMPY[dtype])
        if n >= 4:
            a[:4] = [np.inf, -0.0, np.nan, -np.inf]
        return a.reshape(shape)
    info = np.iinfo(np.dtype(NUMPY[dtype]))
    a = rng.integers(info.min, info.max, n, dtype=np.dtype(NUMPY[dtype]), endpoint=True)
    if n >= 2:
        a[:2] = [info.min, info.max]
    return a.reshape(shape)


tensors = {}
shapes = [(), (5,), (2, 3), (3, 1, 2), (2, 2, 1, 3), (0,), (4, 0, 2)]
for dtype in ORDER:
    for k, shape in enumerate(shapes):
        tensors[f"{dtype.lower()}.s{k}"] = (dtype, values(dtype, shape))
tensors["model.layers.0.weight"] = ("F32", values("F32", (7, 9)))

# (a) python.safetensors, data in one order, JSON entries in another.
names = list(tensors)
random.Random(5).shuffle(names)
header = {}
blob = b""
for name in names:
    dtype, arr = tensors[name]
    raw = arr.tobytes()
    header[name] = {"dtype": dtype, "shape": list(arr.shape),
                    "data_offsets": [len(blob), len(blob) + len(raw)]}
    blob += raw
json_order = list(header.items())
random.Random(6).shuffle(json_order)
obj = dict(json_order)
obj["__metadata__"] = {"writer": "python", "n": str(len(tensors))}
text = json.dumps(obj, indent=1).encode()  # not compact, not padded: both are allowed
with open(os.path.join(workdir, "python.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + blob)
with open(os.path.join(workdir, "manifest.txt"), "w") as f:
    for name, (dtype, arr) in tensors.items():
        dims = ",".join(str(d) for d in arr.shape) or "-"
        f.write(f"{name} {dtype} {dims}\n")
        with open(os.path.join(workdir, f"{name}.bin"), "wb") as b:
            b.write(arr.tobytes())

env = dict(os.environ, KILN_ST_INTEROP_DIR=workdir)
r = subprocess.run([test_io, "--filter=safetensors_interop/*", "--jobs=1"],
                   env=env, capture_output=True, text=True, timeout=300)
out = r.stdout + r.stderr
if r.returncode != 0 or "Passing: 1" not in out or "Failing: 0" not in out:
    fail("kiln reads python.safetensors", f"test_io exited {r.returncode}:\n{out}")

# (b) kiln.safetensors, read here.
path = os.path.join(workdir, "kiln.safetensors")
if not failures:
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    htext = raw[8:8 + n]
    data = raw[8 + n:]
    if n % 8:
        fail("kiln header", f"length {n} is not a multiple of 8")
    stripped = htext.rstrip(b" ")
    if len(htext) - len(stripped) >= 8 or not stripped.endswith(b"}"):
        fail("kiln header", "padding is not 0-7 spaces after the JSON")
    hobj = json.loads(htext)
    if json.dumps(hobj, separators=(",", ":"), ensure_ascii=False).encode() != stripped:
        fail("kiln header", "not compact JSON in the reference's field order")
    keys = list(hobj)
    if keys[0] != "__metadata__" or hobj["__metadata__"] != {"writer": "kiln"}:
        fail("kiln header", f"metadata {hobj.get('__metadata__')!r} first key {keys[0]!r}")
    want_order = sorted(tensors, key=lambda k: (-ORDER.index(tensors[k][0]), k.encode()))
    if keys[1:] != want_order:
        fail("kiln order", f"{keys[1:]} != {want_order}")
    at = 0
    for name in keys[1:]:
        e = hobj[name]
        dtype, arr = tensors[name]
        if list(e) != ["dtype", "shape", "data_offsets"]:
            fail(name, f"fields {list(e)}")
        if e["dtype"] != dtype or e["shape"] != list(arr.shape):
            fail(name, f"dtype/shape {e['dtype']} {e['shape']}, expected {dtype} {arr.shape}")
        b, end = e["data_offsets"]
        if b != at or end - b != arr.nbytes:
            fail(name, f"data_offsets {e['data_offsets']} at {at}, size {arr.nbytes}")
        got = np.frombuffer(data[b:end], dtype=NUMPY[dtype]).reshape(arr.shape)
        if got.tobytes() != arr.tobytes():
            fail(name, "bytes differ from numpy's")
        at = end
    if at != len(data):
        fail("kiln data", f"{len(data) - at} bytes after the last tensor")

if failures:
    print(f"safetensors_interop: {len(failures)} failure(s)", file=sys.stderr)
    sys.exit(1)
print(f"safetensors_interop: {len(tensors)} tensors both ways, all checks passed")
