# SPDX-License-Identifier: Apache-2.0
"""kiln's small float conversions against ml_dtypes, bit for bit: every code of every type
decoded to f32, and a set of f32 values encoded (every 2^32/2^20-th bit pattern, both
signs, and every value within a few ulps of each type's rounding boundaries).
usage: small_float_check.py KILN_SMALL_FLOAT_TOOL WORK_DIR"""
import os
import subprocess
import sys

import ml_dtypes
import numpy as np

TYPES = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
         "float8_e4m3b11fnuz", "float8_e4m3", "float8_e3m4", "float8_e8m0fnu",
         "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"]
WIDTHS = [8, 8, 8, 8, 8, 8, 8, 8, 6, 6, 4]


def values():
    # a spread of bit patterns: every exponent, many mantissas, both signs, NaN and inf
    spread = np.arange(0, 1 << 32, 1 << 12, dtype=np.uint64).astype(np.uint32)
    near = []
    for name, width in zip(TYPES, WIDTHS):
        t = getattr(ml_dtypes, name)
        codes = np.arange(1 << width, dtype=np.uint8)
        decoded = codes.view(t) if width == 8 else codes.astype(np.uint8).view(t)
        f = decoded.astype(np.float32)
        f = f[np.isfinite(f)]
        # the midpoints between neighbours (the ties) and a few ulps around values and ties
        s = np.unique(np.concatenate([f, -f]))
        mids = ((s[1:].astype(np.float64) + s[:-1]) / 2).astype(np.float32)
        for base in (s, mids):
            b = base.view(np.uint32).astype(np.int64)
            for k in range(-3, 4):
                near.append((b + k).astype(np.uint32))
    v = np.concatenate([spread] + near)
    return np.unique(v)


def main():
    tool, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    v = values()
    path = os.path.join(work, "values.txt")
    with open(path, "w") as f:
        f.write("\n".join("%08x" % x for x in v))
    out = subprocess.run([tool, path], check=True, capture_output=True, text=True).stdout
    sections = out.split("type ")[1:]
    floats = v.view(np.float32)
    bad = 0
    for name, width, text in zip(TYPES, WIDTHS, sections):
        lines = text.split()
        t = getattr(ml_dtypes, name)
        n = 1 << width
        got_decode = np.array([int(x, 16) for x in lines[1:1 + n]], dtype=np.uint32)
        want_decode = np.arange(n, dtype=np.uint8).view(t).astype(np.float32).view(np.uint32)
        # NaN payloads: compare NaN-ness and sign only
        gd, wd = got_decode.view(np.float32), want_decode.view(np.float32)
        same = (got_decode == want_decode) | (np.isnan(gd) & np.isnan(wd) &
                                               (np.signbit(gd) == np.signbit(wd)))
        for c in np.nonzero(~same)[0][:5]:
            print("%s: code 0x%02x decodes to %08x, ml_dtypes %08x"
                  % (name, c, got_decode[c], want_decode[c]))
        bad += int((~same).sum())
        got_encode = np.array([int(x, 16) for x in lines[1 + n:]], dtype=np.uint8)
        want_encode = floats.astype(t).view(np.uint8)
        diff = np.nonzero(got_encode != want_encode)[0]
        for i in diff[:5]:
            print("%s: %r (%08x) encodes to 0x%02x, ml_dtypes 0x%02x"
                  % (name, floats[i], v[i], got_encode[i], want_encode[i]))
        bad += len(diff)
        print("%s: %d codes decoded, %d values encoded, %d differ"
              % (name, n, len(floats), int((~same).sum()) + len(diff)))
    if bad:
        print("FAILED: %d conversions differ from ml_dtypes %s" % (bad, ml_dtypes.__version__))
        return 1
    print("all conversions equal ml_dtypes %s" % ml_dtypes.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
