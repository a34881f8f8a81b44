"""The case table and its JSON encoding, shared by every family of cases
(see gen.py for what a case is).
"""

import base64
import json
import math
import os
import sys

import numpy as np
import torch

# One thread: torch's reductions then add in one fixed order on every run.
torch.set_num_threads(1)

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32,
          "int64": torch.int64, "bool": torch.bool, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int8": torch.int8, "uint8": torch.uint8}
SHORT = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "bool",
         "float16": "f16", "bfloat16": "bf16", "int8": "i8", "uint8": "u8"}
NAMES = {v: k for k, v in DTYPES.items()}
FLOATS = ["float32", "float64"]
INTS = ["int32", "int64"]
# The narrow dtypes (narrow.py): 16-bit floats and 8-bit integers.
HALVES = ["float16", "bfloat16"]
BYTES = ["int8", "uint8"]
INF = math.inf
NAN = math.nan
# Floats that exercise the edges of most ops: signed zeros, round-half ties,
# values where exp and softplus saturate, infinities and NaN.
SPECIALS = [0.0, -0.0, 0.5, -0.5, 2.5, -2.5, 1.0, -1.0, 30.0, -30.0, 100.0, -100.0, INF, -INF, NAN]


def shp(shape):
    return "[" + ",".join(str(s) for s in shape) + "]"


# ---- input makers ----------------------------------------------------------

def rnd(shape, dt, domain="any"):
    """Seeded values for dtype dt in an op's domain, floats to 3 decimals."""
    if dt in INTS:
        lo, hi = {"any": (-9, 10), "small": (-3, 4), "nonneg": (0, 5)}.get(domain, (-9, 10))
        return torch.randint(lo, hi, shape, dtype=DTYPES[dt])
    if dt == "bool":
        return torch.rand(shape) < 0.5
    x = torch.randn(shape, dtype=torch.float64)
    if domain == "pos":
        x = x.abs() + 0.1
    elif domain == "gt-1":
        x = x.abs() * 0.9 - 0.9
    elif domain == "nonzero":
        x = torch.where(x < 0, x - 0.25, x + 0.25)
    elif domain == "gt1":  # acosh's domain, clear of its pole at 1
        x = x.abs() + 1.1
    elif domain == "unit":
        x = torch.rand(shape, dtype=torch.float64) * 1.8 - 0.9
    elif domain == "halves":  # few distinct values, so comparisons tie
        x = torch.randint(-3, 4, shape, dtype=torch.float64) / 2
    elif domain == "wide":
        x = x * 4
    return (torch.round(x * 1000) / 1000).to(DTYPES[dt])


def vals(v, dt, shape=None):
    t = torch.tensor(v, dtype=DTYPES[dt])
    return t.reshape(shape) if shape is not None else t


def idx(v, dt="int64"):
    """An index tensor."""
    return vals(v, dt)


class L:
    """An input with a layout other than contiguous."""

    def __init__(self, t, layout):
        self.t, self.layout = t, layout


M32 = 0xFFFFFFFF


def hash32(seed, n):
    """A multiply-xorshift mix of seed and i = 0..n-1, in uint32 arithmetic;
    internal/conformance (cases.go, hash) computes the same."""
    h = (np.arange(n, dtype=np.uint64) * 0x9E3779B1 + seed * 0x85EBCA77 + 0x165667B1) & M32
    h ^= h >> 15
    h = (h * 0x2C1B3C6D) & M32
    h ^= h >> 12
    h = (h * 0x297A2D39) & M32
    h ^= h >> 15
    return h


class G:
    """An input that both sides generate (cases.go, Gen), so that a long one
    costs no bytes: element i of the row-major storage is
    choices[h(i) % len(choices)], or (h(i) % levels - levels // 2) * step +
    offset. A power-of-two step keeps the values exact in float32, so any
    order of summing them is exact while the partial sums stay below 2^24
    steps."""

    def __init__(self, shape, dt, seed, levels=4096, step=2.0 ** -9, offset=0.0, choices=None):
        self.shape, self.dt, self.layout = list(shape), dt, "contiguous"
        n = int(np.prod(self.shape)) if self.shape else 1
        h = hash32(seed, n)
        if choices is not None:
            v = np.asarray(choices, dtype=np.float64)[h % len(choices)]
            self.spec = {"seed": seed, "choices": [float(c) for c in choices]}
        else:
            v = (h % levels).astype(np.int64) - levels // 2
            v = v.astype(np.float64) * step + offset
            self.spec = {"seed": seed, "levels": levels, "step": step, "offset": offset}
        self.t = torch.from_numpy(v).reshape(self.shape).to(DTYPES[dt])
        assert torch.equal(self.t.double(), torch.from_numpy(v).reshape(self.shape)), "not exact in " + dt


# ---- encoding --------------------------------------------------------------

def enc_scalar(v, dt):
    if dt == "bool":
        return bool(v)
    if dt in INTS or dt in BYTES:
        return int(v)
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if dt == "float32":
        # numpy prints the shortest decimal that reads back as this float32;
        # the double nearest it prints the same way, so json keeps it short.
        s = float(str(np.float32(v)))
        assert np.float32(s) == np.float32(v)
        return s
    return v


# Outputs with more elements than this are stored as base64 little-endian
# bytes rather than JSON numbers (cases.go, B64).
B64_OVER = 4096


def enc_b64(t):
    a = t.contiguous().numpy()
    a = a.astype(a.dtype.newbyteorder("<"))
    return {"dtype": NAMES[t.dtype], "shape": list(t.shape), "b64": base64.b64encode(a.tobytes()).decode()}


def enc_tensor(t, layout="contiguous"):
    dt = NAMES[t.dtype]
    shape = list(t.shape)
    if layout == "contiguous" and t.numel() > B64_OVER and dt != "bool":
        return enc_b64(t)
    if layout == "transposed":
        store = t.transpose(-1, -2).contiguous()
    elif layout == "strided":
        # The logical tensor is every other element of a last dim twice as
        # long; the gaps hold a value no op should ever read.
        store = torch.empty(shape[:-1] + [2 * shape[-1]], dtype=t.dtype)
        store.fill_(True if dt == "bool" else -777)
        store[..., ::2] = t
    else:
        store = t
    # Check that the view the Go side will take gives back t.
    back = store.transpose(-1, -2) if layout == "transposed" else store[..., ::2] if layout == "strided" else store
    same = (lambda a, b: torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))) if dt in FLOATS + HALVES else torch.equal
    assert list(back.shape) == shape and same(back, t), layout
    d = {"dtype": dt, "shape": shape,
         "data": [enc_scalar(v, dt) for v in store.flatten().tolist()]}
    if layout != "contiguous":
        d["layout"] = layout
    return d


def enc_gen(g):
    return {"dtype": g.dt, "shape": g.shape, "gen": g.spec}


def enc_attr(v):
    if isinstance(v, float):
        return enc_scalar(v, "float64")
    if isinstance(v, (list, tuple)):
        return [enc_attr(x) for x in v]
    return v


# ---- the case table ----------------------------------------------------------

class Family:
    def __init__(self, name, seed):
        self.name, self.cases, self.seen = name, [], set()
        torch.manual_seed(seed)

    def case(self, name, op, inputs, fn=None, attrs=None, error=None, out_dtype=None):
        """Add a case. fn computes torch's result from the input tensors.

        With error and fn, torch must raise too; with error and no fn the case
        is lathe-only (lathe refuses what torch would not: 3e9 added to int32,
        which torch wraps).
        """
        assert name not in self.seen, name
        self.seen.add(name)
        ts = [i.t if isinstance(i, (L, G)) else i for i in inputs]
        c = {"name": name, "op": op, "attrs": {k: enc_attr(v) for k, v in (attrs or {}).items()},
             "inputs": [None if i is None else enc_gen(i) if isinstance(i, G)
                        else enc_tensor(i.t, i.layout) if isinstance(i, L) else enc_tensor(i) for i in inputs]}
        if error is not None:
            c["error"] = error
            if fn is not None:
                try:
                    fn(*ts)
                except Exception:
                    c["torch_raises"] = True
                else:
                    sys.exit(f"{name}: torch did not raise")
            self.cases.append(c)
            return
        out = fn(*ts)
        if isinstance(out, (list, tuple)):
            c["outputs"] = [enc_tensor(o.contiguous()) for o in out]
        else:
            if out_dtype is not None:
                out = out.to(DTYPES[out_dtype])
            c["output"] = enc_tensor(out.contiguous())
        self.cases.append(c)

    def write(self, folder):
        path = os.path.join(folder, self.name + ".json")
        with open(path, "w") as f:
            f.write('{"generator":"build/torchref/gen.py","torch":%s,"cases":[\n' % json.dumps(torch.__version__))
            f.write(",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False) for c in self.cases))
            f.write("\n]}\n")
        return path, len(self.cases)
