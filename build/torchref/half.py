#!/usr/bin/python3
"""Reference roundings for internal/half: float32 → float16 by numpy
(astype(np.float16)) and float32 → bfloat16 by PyTorch 1.13
(.to(torch.bfloat16)), for boundary cases and random samples, written to
internal/half/testdata/torch.txt, which internal/half/torchref_test.go
compares bit for bit (NaNs: NaN-ness only, see below).

Each case line is three hex fields: the float32's bits, numpy's float16 bits
and torch's bfloat16 bits. Two `widen` lines give the SHA-256 of the
little-endian float32 bytes of all 65536 float16 (numpy) and bfloat16
(torch) bit patterns widened to float32, with every NaN written as its sign
and 0x7fc00000, since numpy keeps a NaN's payload as it is and torch's
bfloat16 widening does too but lathe's sets the quiet bit.

The script also checks that torch's float16 rounding agrees with numpy's on
every case that is not a NaN (torch writes every NaN as 0x7e00 and its sign;
its bfloat16 rounding writes 0x7fc0 or 0xffff), and fails if it does not.

Run: /usr/bin/python3 build/torchref/half.py (make refs runs it). Seeded, so
re-running it without changes gives no diff.
"""

import hashlib
import os
import random

import numpy as np
import torch

torch.set_num_threads(1)
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "internal", "half", "testdata", "torch.txt")


def f32(x):
    """The float32 bits of the Python float x (rounded to float32)."""
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def f16_value(h):
    return float(np.array([h], dtype=np.uint16).view(np.float16)[0])


def around(bits, k=2):
    """bits and its k float32 neighbours either side, within one sign."""
    return [b for b in range(bits - k, bits + k + 1) if 0 <= b <= 0x7fffffff]


def cases():
    rng = random.Random(16)
    out = set()
    # Zeros, infinities, ones, and NaNs: quiet, signalling, payload in the
    # bits float16 and bfloat16 keep and in those they drop.
    out.update([0x00000000, 0x7f800000, 0x3f800000, 0x7fc00000, 0x7f800001, 0x7fbfffff,
                0x7fffffff, 0x7fc00001, 0x7fc02000, 0x7fe00000, 0x7f802000, 0x7f810000,
                0x7f800100, 0x7fa00000, 0x7f80ffff, 0x7fff0000])
    # float16: around its largest finite value, the overflow threshold 65520
    # and 2^16; its smallest normal; its subnormals' ends; and 2^-25, below
    # which everything rounds to 0.
    for x in (65504.0, 65520.0, 65536.0, 2.0**-14, 2.0**-24, 2.0**-25, 1023 * 2.0**-24,
              1.5 * 2.0**-25, 2.0**-26, 3 * 2.0**-25, 1.0, 2048.0, 2049.0, 2051.0):
        out.update(around(f32(x), 3))
    # Halfway points between neighbouring float16s (ties go to the even one)
    # and their float32 neighbours: every 127th float16 and some random ones.
    hs = list(range(0, 0x7c00, 127)) + [rng.randrange(0x7c00) for _ in range(150)] + [0x3ff, 0x400, 0x7bff]
    for h in hs:
        lo, hi = f16_value(h), (f16_value(h + 1) if h < 0x7bff else 65536.0)
        out.update(around(f32((lo + hi) / 2), 1))
        out.add(f32(lo))
    # bfloat16: around its largest finite value and the overflow threshold,
    # float32's subnormals (bfloat16's are the same numbers, rounded), and
    # halfway points with the kept part even and odd.
    out.update(around(0x7f7f0000, 2) + around(0x7f7f8000, 2) + around(0x7f800000 - 1, 2))
    out.update([0x00000001, 0x00007fff, 0x00008000, 0x00008001, 0x00018000, 0x0000ffff,
                0x007f8000, 0x007fffff, 0x00800000])
    for _ in range(200):
        b = rng.randrange(0x7f7f) << 16 | 0x8000
        out.update(around(b, 1))
    # Random float32 bit patterns (NaNs among them), and values of the sizes
    # tensors hold: normal, wide log-uniform, and across the float16 range.
    out.update(rng.getrandbits(31) for _ in range(600))
    out.update(f32(abs(rng.gauss(0, 1))) for _ in range(300))
    out.update(f32(2.0 ** rng.uniform(-30, 17)) for _ in range(400))
    out.update(f32(rng.uniform(0, 70000)) for _ in range(200))
    # Both signs of everything.
    return sorted(out | {b | 0x80000000 for b in out})


def widen_hash(f32s):
    b = f32s.view(np.uint32).copy()
    nan = np.isnan(f32s)
    b[nan] = (b[nan] & 0x80000000) | 0x7fc00000
    return hashlib.sha256(b.astype("<u4").tobytes()).hexdigest()


def main():
    bits = np.array(cases(), dtype=np.uint32)
    x = bits.view(np.float32)
    with np.errstate(all="ignore"):
        h = x.astype(np.float16)
    h16 = h.view(np.uint16)
    t = torch.from_numpy(x.copy())
    bf = t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    th = t.to(torch.float16).view(torch.int16).numpy().view(np.uint16)
    ok = np.isnan(h) | (th == h16)
    if not ok.all():
        raise SystemExit(f"torch and numpy round {np.count_nonzero(~ok)} cases to float16 differently, "
                         f"e.g. {bits[~ok][0]:08x}")

    all16 = np.arange(65536, dtype=np.uint16)
    w16 = all16.view(np.float16).astype(np.float32)
    wbf = torch.from_numpy(all16.view(np.int16).copy()).view(torch.bfloat16).to(torch.float32).numpy()

    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write(f"# build/torchref/half.py: numpy {np.__version__} float16, torch {torch.__version__} bfloat16\n")
        f.write("# float32 bits, float16 bits, bfloat16 bits\n")
        f.write(f"widen f16 {widen_hash(w16)}\n")
        f.write(f"widen bf16 {widen_hash(wbf)}\n")
        for b, a, c in zip(bits.tolist(), h16.tolist(), bf.tolist()):
            f.write(f"{b:08x} {a:04x} {c:04x}\n")
    print(f"{os.path.relpath(OUT, ROOT)}: {len(bits)} cases, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
