#!/usr/bin/python3
"""Generate lathe's conformance references with PyTorch 1.13.

Each op family's cases go to testdata/conformance/<family>.json, which
internal/conformance loads and runs on every device lathe can open. A case has
a name ("add/f32/bcast[3,1]x[1,4]"), an op key that the Go table maps to a
lathe call, attrs, inputs, and either the output torch computed in the case's
dtype or the kind of error lathe must return. See README.md for how to run it.

Inputs are seeded (one seed per family, so adding a case to one family leaves
the others' data as it was) and rounded to three decimals, which keeps the
JSON small; outputs are torch's exact values.
"""

import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

# One thread: torch's reductions then add in one fixed order on every run.
torch.set_num_threads(1)

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32,
          "int64": torch.int64, "bool": torch.bool}
SHORT = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "bool"}
NAMES = {v: k for k, v in DTYPES.items()}
FLOATS = ["float32", "float64"]
INTS = ["int32", "int64"]
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


class L:
    """An input with a layout other than contiguous."""

    def __init__(self, t, layout):
        self.t, self.layout = t, layout


# ---- encoding --------------------------------------------------------------

def enc_scalar(v, dt):
    if dt == "bool":
        return bool(v)
    if dt in INTS:
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


def enc_tensor(t, layout="contiguous"):
    dt = NAMES[t.dtype]
    shape = list(t.shape)
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
    same = (lambda a, b: torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))) if dt in FLOATS else torch.equal
    assert list(back.shape) == shape and same(back, t), layout
    d = {"dtype": dt, "shape": shape,
         "data": [enc_scalar(v, dt) for v in store.flatten().tolist()]}
    if layout != "contiguous":
        d["layout"] = layout
    return d


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
        is lathe-only (lathe refuses what torch would promote).
        """
        assert name not in self.seen, name
        self.seen.add(name)
        ts = [i.t if isinstance(i, L) else i for i in inputs]
        c = {"name": name, "op": op, "attrs": {k: enc_attr(v) for k, v in (attrs or {}).items()},
             "inputs": [None if i is None else enc_tensor(i.t, i.layout) if isinstance(i, L)
                        else enc_tensor(i) for i in inputs]}
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


# ---- elementwise --------------------------------------------------------------

UNARY = [  # op key, torch function, input domain, takes ints
    ("neg", torch.neg, "any", True), ("abs", torch.abs, "any", True), ("sign", torch.sign, "any", True),
    ("square", torch.square, "any", True), ("relu", torch.relu, "any", True),
    ("floor", torch.floor, "wide", True), ("ceil", torch.ceil, "wide", True), ("round", torch.round, "wide", True),
    ("exp", torch.exp, "any", False), ("log", torch.log, "pos", False), ("log1p", torch.log1p, "gt-1", False),
    ("expm1", torch.expm1, "any", False), ("sqrt", torch.sqrt, "pos", False), ("rsqrt", torch.rsqrt, "pos", False),
    ("reciprocal", torch.reciprocal, "nonzero", False), ("sin", torch.sin, "wide", False),
    ("cos", torch.cos, "wide", False), ("tanh", torch.tanh, "any", False), ("sigmoid", torch.sigmoid, "wide", False),
    ("silu", F.silu, "wide", False), ("softplus", F.softplus, "wide", False), ("erf", torch.erf, "any", False),
    ("gelu", F.gelu, "wide", False), ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), "wide", False),
]


def unary_cases(fam, op, fn, domain, ints, attrs=None, tag=""):
    """The float cases of a unary op, and its int cases (ints True), its
    lathe-only int dtype error (ints False) or neither (ints None)."""
    for dt in FLOATS:
        p = f"{op}{tag}/{SHORT[dt]}"
        fam.case(f"{p}/[3,4]", op, [rnd([3, 4], dt, domain)], fn, attrs)
        fam.case(f"{p}/0d", op, [rnd([], dt, domain)], fn, attrs)
        fam.case(f"{p}/empty[0,3]", op, [rnd([0, 3], dt)], fn, attrs)
        fam.case(f"{p}/transposed[3,4]", op, [L(rnd([3, 4], dt, domain), "transposed")], fn, attrs)
        fam.case(f"{p}/strided[2,5]", op, [L(rnd([2, 5], dt, domain), "strided")], fn, attrs)
        fam.case(f"{p}/special", op, [vals(SPECIALS, dt)], fn, attrs)
    for dt in INTS:
        p = f"{op}{tag}/{SHORT[dt]}"
        if ints:
            fam.case(f"{p}/[3,4]", op, [rnd([3, 4], dt)], fn, attrs)
            fam.case(f"{p}/0d", op, [rnd([], dt)], fn, attrs)
            fam.case(f"{p}/strided[2,3]", op, [L(rnd([2, 3], dt), "strided")], fn, attrs)
        elif ints is not None and dt == "int32":
            fam.case(f"{p}/error", op, [rnd([2, 3], dt)], attrs=attrs, error="dtype")


def elementwise():
    fam = Family("unary", 1)
    for op, fn, domain, ints in UNARY:
        unary_cases(fam, op, fn, domain, ints)
    for slope in (0.01, 0.2):
        unary_cases(fam, "leaky_relu", lambda x, s=slope: F.leaky_relu(x, s), "any", False,
                    {"slope": slope}, f"/slope={slope}")
    for lo, hi in ((-0.5, 0.5), (-INF, 0.3), (0.2, INF)):
        fn = (lambda x, lo=lo, hi=hi: torch.clamp(x, None if lo == -INF else lo, None if hi == INF else hi))
        unary_cases(fam, "clamp", fn, "any", None, {"lo": lo, "hi": hi}, f"/[{lo},{hi}]")
    # Integer bounds for integer tensors: torch would promote to float for
    # fractional ones, and lathe does not promote.
    for lo, hi in ((-3.0, 4.0), (-INF, 2.0), (0.0, INF)):
        fn = (lambda x, lo=lo, hi=hi: torch.clamp(x, None if lo == -INF else int(lo), None if hi == INF else int(hi)))
        unary_cases(fam, "clamp", fn, "any", True, {"lo": lo, "hi": hi}, f"/[{lo},{hi}]")
    fam.case("clamp/f32/lo>hi", "clamp", [rnd([3], "float32")], attrs={"lo": 1.0, "hi": -1.0}, error="value")
    for dt in FLOATS + INTS + ["bool"]:
        fam.case(f"logical_not/{SHORT[dt]}/[3,4]", "logical_not", [rnd([3, 4], dt, "halves")], torch.logical_not)
    fam.case("logical_not/f32/special", "logical_not", [vals(SPECIALS, "float32")], torch.logical_not)
    fam.case("logical_not/bool/0d", "logical_not", [vals(True, "bool")], torch.logical_not)
    return fam


BINARY = [  # op key, torch function, lhs domain, rhs domain, dtypes beyond floats
    ("add", torch.add, "any", "any", INTS), ("sub", torch.sub, "any", "any", INTS),
    ("mul", torch.mul, "any", "any", INTS), ("div", torch.div, "any", "nonzero", []),
    ("pow", torch.pow, "pos", "any", INTS), ("maximum", torch.maximum, "halves", "halves", INTS),
    ("minimum", torch.minimum, "halves", "halves", INTS), ("atan2", torch.atan2, "any", "any", []),
    ("eq", torch.eq, "halves", "halves", INTS + ["bool"]), ("ne", torch.ne, "halves", "halves", INTS + ["bool"]),
    ("lt", torch.lt, "halves", "halves", INTS), ("le", torch.le, "halves", "halves", INTS),
    ("gt", torch.gt, "halves", "halves", INTS), ("ge", torch.ge, "halves", "halves", INTS),
    ("logical_and", torch.logical_and, "halves", "halves", INTS + ["bool"]),
    ("logical_or", torch.logical_or, "halves", "halves", INTS + ["bool"]),
]

BIN_SPECIALS = [0.0, -0.0, 1.0, -2.0, INF, -INF, NAN]

SCALAR = [  # op key, torch function of (x, s), scalars for floats, scalars for ints
    ("add_scalar", lambda x, s: x + s, (1.5, -INF), (2,)),
    ("sub_scalar", lambda x, s: x - s, (1.5,), (3,)),
    ("mul_scalar", lambda x, s: x * s, (-2.5, 0.0), (-2,)),
    ("div_scalar", lambda x, s: x / s, (4.0, 0.0), ()),
    ("pow_scalar", lambda x, s: torch.pow(x, s), (2.0, 0.5, -1.0, 3.0), (2, 3)),
    ("maximum_scalar", lambda x, s: torch.maximum(x, torch.tensor(s, dtype=x.dtype)), (0.5,), (1,)),
    ("minimum_scalar", lambda x, s: torch.minimum(x, torch.tensor(s, dtype=x.dtype)), (0.5,), (1,)),
    ("eq_scalar", lambda x, s: x == s, (0.5,), (1,)),
    ("ne_scalar", lambda x, s: x != s, (0.5,), (1,)),
    ("lt_scalar", lambda x, s: x < s, (0.5,), (1,)),
    ("le_scalar", lambda x, s: x <= s, (0.5,), (1,)),
    ("gt_scalar", lambda x, s: x > s, (0.5,), (1,)),
    ("ge_scalar", lambda x, s: x >= s, (0.5,), (1,)),
]


def binary():
    fam = Family("binary", 2)
    for op, fn, ld, rd, extra in BINARY:
        for dt in FLOATS:
            p = f"{op}/{SHORT[dt]}"
            r = lambda s, d=dt: rnd(s, d, ld)
            q = lambda s, d=dt: rnd(s, d, rd)
            fam.case(f"{p}/same[3,4]", op, [r([3, 4]), q([3, 4])], fn)
            fam.case(f"{p}/bcast[3,1]x[1,4]", op, [r([3, 1]), q([1, 4])], fn)
            fam.case(f"{p}/bcast[2,3,4]x[4]", op, [r([2, 3, 4]), q([4])], fn)
            fam.case(f"{p}/0d", op, [r([]), q([])], fn)
            fam.case(f"{p}/0dx[2,3]", op, [r([]), q([2, 3])], fn)
            fam.case(f"{p}/empty[0,3]x[1,3]", op, [r([0, 3]), q([1, 3])], fn)
            fam.case(f"{p}/transposed[3,4]", op, [L(r([3, 4]), "transposed"), q([3, 4])], fn)
            fam.case(f"{p}/strided[2,3]", op, [r([2, 3]), L(q([2, 3]), "strided")], fn)
            fam.case(f"{p}/special[7,1]x[1,7]", op, [vals(BIN_SPECIALS, dt, [7, 1]), vals(BIN_SPECIALS, dt, [1, 7])], fn)
            fam.case(f"{p}/shape[2,3]x[4]", op, [r([2, 3]), q([4])], fn, error="shape")
        if op.startswith("logical"):
            fam.case(f"{op}/f32xbool", op, [rnd([2, 3], "float32", "halves"), rnd([2, 3], "bool")], fn)
        else:
            fam.case(f"{op}/f32xf64/error", op, [rnd([2, 3], "float32"), rnd([2, 3], "float64")], error="dtype")
        for dt in extra:
            p = f"{op}/{SHORT[dt]}"
            rd2 = "nonneg" if op == "pow" else "any"
            ld2 = "small" if op in ("pow", "mul") else "any"
            fam.case(f"{p}/same[3,4]", op, [rnd([3, 4], dt, ld2), rnd([3, 4], dt, rd2)], fn)
            fam.case(f"{p}/bcast[3,1]x[1,4]", op, [rnd([3, 1], dt, ld2), rnd([1, 4], dt, rd2)], fn)
            fam.case(f"{p}/0dx[2,3]", op, [rnd([], dt, ld2), rnd([2, 3], dt, rd2)], fn)
        if not extra:
            fam.case(f"{op}/i32/error", op, [rnd([2, 3], "int32"), rnd([2, 3], "int32", "nonneg")], error="dtype")
    # An integer power cannot take a negative exponent; torch gives garbage.
    fam.case("pow/i32/negative_exponent", "pow", [vals([2, 3], "int32"), vals([1, -1], "int32")], error="value")
    for dt in FLOATS + INTS + ["bool"]:
        p = f"where/{SHORT[dt]}"
        fam.case(f"{p}/[3,4]", "where", [rnd([3, 4], "bool"), rnd([3, 4], dt), rnd([3, 4], dt)], torch.where)
        fam.case(f"{p}/bcast[3,1]x[1,4]x[]", "where", [rnd([3, 1], "bool"), rnd([1, 4], dt), rnd([], dt)], torch.where)
    fam.case("where/f32/empty[0,2]", "where", [rnd([0, 2], "bool"), rnd([0, 2], "float32"), rnd([2], "float32")], torch.where)
    fam.case("where/f32/strided", "where", [rnd([2, 3], "bool"), L(rnd([2, 3], "float32"), "strided"),
                                           L(rnd([2, 3], "float32"), "transposed")], torch.where)
    fam.case("where/f32/cond_f32", "where", [rnd([2, 3], "float32"), rnd([2, 3], "float32"), rnd([2, 3], "float32")],
             torch.where, error="dtype")
    fam.case("where/f32/shape", "where", [rnd([2, 3], "bool"), rnd([2, 3], "float32"), rnd([4], "float32")],
             torch.where, error="shape")
    fam.case("where/f32xf64/error", "where", [rnd([2, 3], "bool"), rnd([2, 3], "float32"), rnd([2, 3], "float64")], error="dtype")
    for op, fn, fs, is_ in SCALAR:
        dom = "pos" if op == "pow_scalar" else "halves"
        for dt in FLOATS:
            for s in fs:
                p = f"{op}/{SHORT[dt]}/s={s}"
                f = lambda x, s=s, fn=fn: fn(x, s)
                fam.case(f"{p}/[3,4]", op, [rnd([3, 4], dt, dom)], f, {"s": s})
                if s == fs[0]:
                    fam.case(f"{p}/0d", op, [rnd([], dt, dom)], f, {"s": s})
                    fam.case(f"{p}/special", op, [vals(SPECIALS, dt)], f, {"s": s})
                    fam.case(f"{p}/strided[2,3]", op, [L(rnd([2, 3], dt, dom), "strided")], f, {"s": s})
        for dt in INTS:
            for s in is_:
                fam.case(f"{op}/{SHORT[dt]}/s={s}/[3,4]", op, [rnd([3, 4], dt, "small")],
                         lambda x, s=s, fn=fn: fn(x, s), {"s": float(s)})
        # lathe makes the scalar a tensor of x's dtype, so 2.5 cannot meet int32.
        fam.case(f"{op}/i32/s=2.5/error", op, [rnd([3], "int32")], attrs={"s": 2.5}, error="dtype")
    return fam


# ---- reductions -------------------------------------------------------------

def reduce_fn(op, dims, keepdim):
    def f(x):
        if dims is None and not keepdim:
            return {"sum": torch.sum, "mean": torch.mean, "prod": torch.prod, "max": torch.amax,
                    "min": torch.amin, "logsumexp": lambda x: torch.logsumexp(x, tuple(range(x.dim())))}[op](x)
        d = tuple(range(x.dim())) if dims is None else tuple(dims)
        if op == "prod":  # torch.prod takes one dim: reduce them one at a time
            if len(d) == 1:
                return torch.prod(x, d[0], keepdim=keepdim)
            for k in sorted((i % x.dim() for i in d), reverse=True):
                x = torch.prod(x, k, keepdim=keepdim)
            return x
        g = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax, "min": torch.amin,
             "logsumexp": torch.logsumexp}[op]
        return g(x, d, keepdim=keepdim)
    return f


def rattrs(dims, keepdim, **kw):
    a = dict(kw)
    if dims is not None:
        a["dims"] = list(dims)
    if keepdim:
        a["keepdim"] = True
    return a


def rname(dims, keepdim):
    s = "all" if dims is None else "dims" + shp(dims)
    return s + ("/keepdim" if keepdim else "")


def reductions():
    fam = Family("reduce", 3)
    plans = [([3, 4], None, False), ([3, 4], [1], False), ([2, 3, 4], [-1], True), ([2, 3, 4], [0, 2], False),
             ([2, 3, 4], [0, 2], True), ([2, 3], [0, 1], True), ([4, 16], [1], False), ([2, 3, 4], [], False)]
    for op in ("sum", "mean", "prod", "max", "min", "logsumexp"):
        dom = "unit" if op == "prod" else "any"
        for dt in FLOATS:
            p = f"{op}/{SHORT[dt]}"
            for shape, dims, kd in plans:
                if dims == [] and op not in ("sum", "mean"):
                    continue  # dim=() reads as "all dims" only in sum and mean
                fam.case(f"{p}/{rname(dims, kd)}{shp(shape)}", op, [rnd(shape, dt, dom)], reduce_fn(op, dims, kd),
                         rattrs(dims, kd))
            fam.case(f"{p}/0d", op, [rnd([], dt, dom)], reduce_fn(op, None, False))
            fam.case(f"{p}/0d/dims[0]", op, [rnd([], dt, dom)], reduce_fn(op, [0], False), rattrs([0], False))
            fam.case(f"{p}/empty[0,3]/dims[1]", op, [rnd([0, 3], dt)], reduce_fn(op, [1], False), rattrs([1], False))
            if op in ("sum", "mean", "prod", "logsumexp"):  # a reduction over nothing: 0, nan, 1, -inf
                fam.case(f"{p}/empty[0,3]/dims[0]", op, [rnd([0, 3], dt)], reduce_fn(op, [0], False), rattrs([0], False))
            fam.case(f"{p}/transposed[3,4]/dims[0]", op, [L(rnd([3, 4], dt, dom), "transposed")],
                     reduce_fn(op, [0], False), rattrs([0], False))
            fam.case(f"{p}/strided[3,4]/dims[1]", op, [L(rnd([3, 4], dt, dom), "strided")],
                     reduce_fn(op, [1], False), rattrs([1], False))
            fam.case(f"{p}/nan/dims[1]", op, [vals([[1.0, NAN, 2.0], [INF, 1.0, -1.0]], dt)],
                     reduce_fn(op, [1], False), rattrs([1], False))
            fam.case(f"{p}/dims[2]/error", op, [rnd([3, 4], dt)], reduce_fn(op, [2], False), rattrs([2], False),
                     error="index")
        if op == "logsumexp":
            fam.case("logsumexp/f32/large", op, [vals([[1000.0, -1000.0, 0.0], [-1000.0, -1000.0, -1000.0]], "float32")],
                     reduce_fn(op, [1], False), rattrs([1], False))
            fam.case("logsumexp/f32/-inf", op, [vals([[-INF, -INF], [-INF, 0.0]], "float32")],
                     reduce_fn(op, [1], False), rattrs([1], False))
            continue
        for dt in INTS:
            if op == "mean":
                fam.case(f"mean/{SHORT[dt]}/error", op, [rnd([3, 4], dt)], torch.mean, error="dtype")
                continue
            p = f"{op}/{SHORT[dt]}"
            # lathe keeps int32 for int32 sums and products; torch widens to int64.
            od = dt if op in ("sum", "prod") else None
            for shape, dims, kd in plans[:3]:
                fam.case(f"{p}/{rname(dims, kd)}{shp(shape)}", op, [rnd(shape, dt, "small")], reduce_fn(op, dims, kd),
                         rattrs(dims, kd), out_dtype=od)
    for op, fn in (("var", torch.var), ("std", torch.std)):
        for dt in FLOATS:
            p = f"{op}/{SHORT[dt]}"
            for shape, dims, kd in plans[:6]:
                for u in (True, False):
                    f = (lambda x, u=u, fn=fn: fn(x, unbiased=u)) if dims is None and not kd else \
                        (lambda x, d=dims, u=u, kd=kd, fn=fn: fn(x, dim=tuple(d), unbiased=u, keepdim=kd))
                    fam.case(f"{p}/{rname(dims, kd)}/{'unbiased' if u else 'biased'}{shp(shape)}", op,
                             [rnd(shape, dt)], f, rattrs(dims, kd, unbiased=u))
            # One element: the unbiased estimate divides by zero (nan).
            fam.case(f"{p}/one/unbiased", op, [rnd([1, 3], dt)], lambda x, fn=fn: fn(x, dim=0, unbiased=True),
                     rattrs([0], False, unbiased=True))
            fam.case(f"{p}/0d/biased", op, [rnd([], dt)], lambda x, fn=fn: fn(x, unbiased=False),
                     {"unbiased": False})
            fam.case(f"{p}/transposed[3,4]/dims[1]", op, [L(rnd([3, 4], dt), "transposed")],
                     lambda x, fn=fn: fn(x, dim=1, unbiased=True), rattrs([1], False, unbiased=True))
            fam.case(f"{p}/dims[3]/error", op, [rnd([3, 4], dt)], lambda x, fn=fn: fn(x, dim=3),
                     rattrs([3], False, unbiased=True), error="index")
    ties = [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, -1.0]]
    for op, fn in (("argmax", torch.argmax), ("argmin", torch.argmin)):
        for dt in FLOATS + ["int32"]:
            p = f"{op}/{SHORT[dt]}"
            fam.case(f"{p}/all[3,4]", op, [rnd([3, 4], dt)], fn)
            fam.case(f"{p}/dim[1][3,4]", op, [rnd([3, 4], dt)], lambda x, fn=fn: fn(x, 1), {"dim": 1})
            fam.case(f"{p}/dim[-1]/keepdim[2,3,4]", op, [rnd([2, 3, 4], dt)],
                     lambda x, fn=fn: fn(x, -1, keepdim=True), {"dim": -1, "keepdim": True})
            fam.case(f"{p}/dim[0]/keepdim[3,4]", op, [rnd([3, 4], dt)],
                     lambda x, fn=fn: fn(x, 0, keepdim=True), {"dim": 0, "keepdim": True})
            fam.case(f"{p}/ties/dim[1]", op, [vals(ties, dt)], lambda x, fn=fn: fn(x, 1), {"dim": 1})
            fam.case(f"{p}/ties/all", op, [vals(ties, dt)], fn)
            fam.case(f"{p}/0d", op, [rnd([], dt)], fn)
            fam.case(f"{p}/strided[3,4]/dim[1]", op, [L(rnd([3, 4], dt), "strided")],
                     lambda x, fn=fn: fn(x, 1), {"dim": 1})
        fam.case(f"{op}/f32/nan/dim[1]", op, [vals([[1.0, NAN, 5.0, NAN], [0.0, -1.0, 2.0, 1.0]], "float32")],
                 lambda x, fn=fn: fn(x, 1), {"dim": 1})
        fam.case(f"{op}/f32/transposed[3,4]/dim[0]", op, [L(rnd([3, 4], "float32"), "transposed")],
                 lambda x, fn=fn: fn(x, 0), {"dim": 0})
        fam.case(f"{op}/f32/dim[2]/error", op, [rnd([3, 4], "float32")], lambda x, fn=fn: fn(x, 2), {"dim": 2},
                 error="index")
    for dt in FLOATS + INTS:
        p = f"cumsum/{SHORT[dt]}"
        od = dt if dt == "int32" else None
        cs = lambda d: (lambda x: torch.cumsum(x, d))
        fam.case(f"{p}/dim[1][3,4]", "cumsum", [rnd([3, 4], dt)], cs(1), {"dim": 1}, out_dtype=od)
        fam.case(f"{p}/dim[-2][2,3,4]", "cumsum", [rnd([2, 3, 4], dt)], cs(-2), {"dim": -2}, out_dtype=od)
        fam.case(f"{p}/0d/dim[0]", "cumsum", [rnd([], dt)], cs(0), {"dim": 0}, out_dtype=od)
        fam.case(f"{p}/strided[3,4]/dim[1]", "cumsum", [L(rnd([3, 4], dt), "strided")], cs(1), {"dim": 1}, out_dtype=od)
    fam.case("cumsum/f32/empty[0,3]/dim[0]", "cumsum", [rnd([0, 3], "float32")], lambda x: torch.cumsum(x, 0), {"dim": 0})
    fam.case("cumsum/f32/transposed[3,4]/dim[1]", "cumsum", [L(rnd([3, 4], "float32"), "transposed")],
             lambda x: torch.cumsum(x, 1), {"dim": 1})
    fam.case("cumsum/f32/nan", "cumsum", [vals([1.0, NAN, 2.0, INF, -INF], "float32")], lambda x: torch.cumsum(x, 0),
             {"dim": 0})
    fam.case("cumsum/f32/dim[2]/error", "cumsum", [rnd([3, 4], "float32")], lambda x: torch.cumsum(x, 2), {"dim": 2},
             error="index")
    return fam


# ---- matmul -------------------------------------------------------------------

def matmul():
    fam = Family("matmul", 4)
    shapes = [([4], [4]), ([3], [3, 5]), ([2, 3], [3]), ([2, 3], [3, 4]), ([2, 2, 3], [2, 3, 4]),
              ([2, 1, 3, 4], [3, 4, 2]), ([2, 3, 4], [4]), ([4], [2, 4, 3]), ([3, 4], [2, 4, 2]),
              ([0, 3], [3, 2]), ([2, 0], [0, 3]), ([8, 8], [8, 8]), ([1, 1], [1, 1])]
    for dt in FLOATS + ["int32", "int64"]:
        dom = "small" if dt in INTS else "any"
        for a, b in shapes:
            fam.case(f"matmul/{SHORT[dt]}/{shp(a)}x{shp(b)}", "matmul", [rnd(a, dt, dom), rnd(b, dt, dom)], torch.matmul)
        fam.case(f"matmul/{SHORT[dt]}/transposed[3,4]x[4,2]", "matmul",
                 [L(rnd([3, 4], dt, dom), "transposed"), rnd([4, 2], dt, dom)], torch.matmul)
        fam.case(f"matmul/{SHORT[dt]}/[3,4]xtransposed[4,2]", "matmul",
                 [rnd([3, 4], dt, dom), L(rnd([4, 2], dt, dom), "transposed")], torch.matmul)
        fam.case(f"matmul/{SHORT[dt]}/strided[2,3]x[3,2]", "matmul",
                 [L(rnd([2, 3], dt, dom), "strided"), rnd([3, 2], dt, dom)], torch.matmul)
    fam.case("matmul/f32/special", "matmul", [vals([[1.0, INF], [NAN, 0.0]], "float32"), vals([[1.0, 2.0], [0.0, 1.0]], "float32")],
             torch.matmul)
    fam.case("matmul/f32/shape[2,3]x[4,2]", "matmul", [rnd([2, 3], "float32"), rnd([4, 2], "float32")], torch.matmul,
             error="shape")
    fam.case("matmul/f32/shape[2,2,3]x[3,3,2]", "matmul", [rnd([2, 2, 3], "float32"), rnd([3, 3, 2], "float32")],
             torch.matmul, error="shape")
    fam.case("matmul/f32/0d", "matmul", [rnd([], "float32"), rnd([3], "float32")], torch.matmul, error="shape")
    fam.case("matmul/f32xf64/error", "matmul", [rnd([2, 3], "float32"), rnd([3, 2], "float64")], error="dtype")
    fam.case("matmul/bool/error", "matmul", [rnd([2, 3], "bool"), rnd([3, 2], "bool")], error="dtype")
    return fam


# ---- views and copies -------------------------------------------------------------

def slicer(dim, start, stop, step):
    def f(x):
        idx = [slice(None)] * x.dim()
        idx[dim] = slice(start, stop, step)
        return x[tuple(idx)]
    return f


def views():
    fam = Family("views", 5)
    for dt in FLOATS + ["int32", "bool"]:
        s = SHORT[dt]
        r = lambda shape, dt=dt: rnd(shape, dt)
        fam.case(f"reshape/{s}/[2,3]to[3,2]", "reshape", [r([2, 3])], lambda x: x.reshape(3, 2), {"shape": [3, 2]})
        fam.case(f"reshape/{s}/[2,3]to[-1,2]", "reshape", [r([2, 3])], lambda x: x.reshape(-1, 2), {"shape": [-1, 2]})
        fam.case(f"reshape/{s}/transposed[3,4]to[12]", "reshape", [L(r([3, 4]), "transposed")],
                 lambda x: x.reshape(12), {"shape": [12]})
        fam.case(f"permute/{s}/[2,3,4]/[2,0,1]", "permute", [r([2, 3, 4])], lambda x: x.permute(2, 0, 1),
                 {"dims": [2, 0, 1]})
        fam.case(f"transpose/{s}/[2,3,4]/0,2", "transpose", [r([2, 3, 4])], lambda x: x.transpose(0, 2),
                 {"d0": 0, "d1": 2})
        fam.case(f"flip/{s}/[3,4]/[0,1]", "flip", [r([3, 4])], lambda x: x.flip(0, 1), {"dims": [0, 1]})
        fam.case(f"expand/{s}/[3,1]to[2,3,4]", "expand", [r([3, 1])], lambda x: x.expand(2, 3, 4),
                 {"shape": [2, 3, 4]})
        fam.case(f"concat/{s}/[2,3]+[1,3]/dim0", "concat", [r([2, 3]), r([1, 3])], lambda *t: torch.cat(t, 0),
                 {"dim": 0})
        fam.case(f"stack/{s}/2x[2,3]/dim1", "stack", [r([2, 3]), r([2, 3])], lambda *t: torch.stack(t, 1), {"dim": 1})
        fam.case(f"contiguous/{s}/transposed[3,4]", "contiguous", [L(r([3, 4]), "transposed")], lambda x: x.contiguous())
        fam.case(f"contiguous/{s}/strided[2,3]", "contiguous", [L(r([2, 3]), "strided")], lambda x: x.contiguous())
        fam.case(f"contiguous/{s}/[2,3]", "contiguous", [r([2, 3])], lambda x: x.contiguous())
    r = lambda shape: rnd(shape, "float32")
    R = "reshape"
    fam.case("reshape/f32/0dto[1]", R, [r([])], lambda x: x.reshape(1), {"shape": [1]})
    fam.case("reshape/f32/[1]to0d", R, [r([1])], lambda x: x.reshape(()), {"shape": []})
    fam.case("reshape/f32/empty[0,3]to[3,0]", R, [r([0, 3])], lambda x: x.reshape(3, 0), {"shape": [3, 0]})
    fam.case("reshape/f32/[2,3]to[4]/error", R, [r([2, 3])], lambda x: x.reshape(4), {"shape": [4]}, error="shape")
    fam.case("reshape/f32/[2,3]to[-1,-1]/error", R, [r([2, 3])], lambda x: x.reshape(-1, -1), {"shape": [-1, -1]},
             error="shape")
    fam.case("permute/f32/[2,3,4]/[-1,0,1]", "permute", [r([2, 3, 4])], lambda x: x.permute(-1, 0, 1), {"dims": [-1, 0, 1]})
    fam.case("permute/f32/transposed[3,4]/[1,0]", "permute", [L(r([3, 4]), "transposed")], lambda x: x.permute(1, 0),
             {"dims": [1, 0]})
    fam.case("permute/f32/[2,3]/[0,2]/error", "permute", [r([2, 3])], lambda x: x.permute(0, 2), {"dims": [0, 2]},
             error="index")
    fam.case("transpose/f32/[2,3,4]/-1,-2", "transpose", [r([2, 3, 4])], lambda x: x.transpose(-1, -2), {"d0": -1, "d1": -2})
    fam.case("transpose/f32/[2,3]/0,2/error", "transpose", [r([2, 3])], lambda x: x.transpose(0, 2), {"d0": 0, "d1": 2},
             error="index")
    fam.case("mt/f32/[3,4]", "mt", [r([3, 4])], lambda x: x.mT)
    fam.case("mt/f32/[2,3,4]", "mt", [r([2, 3, 4])], lambda x: x.mT)
    fam.case("mt/f32/[3]/error", "mt", [r([3])], lambda x: x.mT, error="shape")
    sq = r([1, 3, 1, 2])
    for dims, out in (([], [3, 2]), ([0], [3, 1, 2]), ([-2], [1, 3, 2]), ([1], [1, 3, 1, 2]), ([0, 2], [3, 2])):
        fam.case(f"squeeze/f32/[1,3,1,2]/dims{shp(dims)}", "squeeze", [sq], lambda x, out=out: x.reshape(out),
                 {"dims": dims})
    fam.case("squeeze/f32/0d", "squeeze", [r([])], lambda x: x.squeeze(), {"dims": []})
    fam.case("squeeze/f32/dims[4]/error", "squeeze", [sq], lambda x: x.squeeze(4), {"dims": [4]}, error="index")
    for shape, d in (([3, 4], 0), ([3, 4], 2), ([3, 4], -1), ([], 0), ([0, 2], 1)):
        fam.case(f"unsqueeze/f32/{shp(shape)}/dim{d}", "unsqueeze", [r(shape)], lambda x, d=d: x.unsqueeze(d), {"dim": d})
    fam.case("unsqueeze/f32/dim3/error", "unsqueeze", [r([3, 4])], lambda x: x.unsqueeze(3), {"dim": 3}, error="index")
    for op in ("expand", "broadcast_to"):
        for shape, to in (([3, 1], [3, 4]), ([3, 1], [-1, 4]), ([], [2, 3]), ([1], [0]), ([2, 1], [2, 2, 3])):
            fam.case(f"{op}/f32/{shp(shape)}to{shp(to)}", op, [r(shape)], lambda x, to=to: x.expand(*to), {"shape": to})
        fam.case(f"{op}/f32/transposed[1,3]to[2,1,3]", op, [L(r([3, 1]).T, "transposed")],
                 lambda x: x.expand(2, 1, 3), {"shape": [2, 1, 3]})
        fam.case(f"{op}/f32/[3,2]to[3,4]/error", op, [r([3, 2])], lambda x: x.expand(3, 4), {"shape": [3, 4]}, error="shape")
        fam.case(f"{op}/f32/[2,3]to[3]/error", op, [r([2, 3])], lambda x: x.expand(3), {"shape": [3]}, error="shape")
    for d, st, ln in ((1, 1, 3), (0, 2, 2), (-1, 0, 0), (-1, 4, 1)):
        fam.case(f"narrow/f32/[4,5]/{d},{st},{ln}", "narrow", [r([4, 5])], lambda x, d=d, st=st, ln=ln: x.narrow(d, st, ln),
                 {"dim": d, "start": st, "length": ln})
    fam.case("narrow/f32/[4,5]/1,4,2/error", "narrow", [r([4, 5])], lambda x: x.narrow(1, 4, 2),
             {"dim": 1, "start": 4, "length": 2}, error="index")
    fam.case("narrow/f32/[4,5]/2,0,1/error", "narrow", [r([4, 5])], lambda x: x.narrow(2, 0, 1),
             {"dim": 2, "start": 0, "length": 1}, error="index")
    for d, a, b, st in ((1, 0, 6, 2), (0, 1, 3, 1), (-1, 1, 5, 3), (0, 0, 0, 1), (1, 5, 6, 4)):
        fam.case(f"slice/f32/[4,6]/{d},{a},{b},{st}", "slice", [r([4, 6])], slicer(d, a, b, st),
                 {"dim": d, "start": a, "stop": b, "step": st})
    fam.case("slice/f32/strided[2,4]/1,1,4,2", "slice", [L(r([2, 4]), "strided")], slicer(1, 1, 4, 2),
             {"dim": 1, "start": 1, "stop": 4, "step": 2})
    fam.case("slice/f32/step0/error", "slice", [r([4, 6])], slicer(1, 0, 6, 0),
             {"dim": 1, "start": 0, "stop": 6, "step": 0}, error="value")
    for shape in ([2, 3, 4], [], [0, 3]):
        fam.case(f"flatten/f32/{shp(shape)}", "flatten", [r(shape)], lambda x: x.flatten())
    fam.case("flatten/f32/transposed[3,4]", "flatten", [L(r([3, 4]), "transposed")], lambda x: x.flatten())
    for shape, dims in (([3, 4], [0]), ([3, 4], [-1]), ([2, 3, 4], [0, 2]), ([], []), ([0, 2], [1])):
        fam.case(f"flip/f32/{shp(shape)}/{shp(dims)}", "flip", [r(shape)], lambda x, d=dims: x.flip(d), {"dims": dims})
    fam.case("flip/f32/strided[2,3]/[1]", "flip", [L(r([2, 3]), "strided")], lambda x: x.flip(1), {"dims": [1]})
    fam.case("flip/f32/dims[2]/error", "flip", [r([3, 4])], lambda x: x.flip(2), {"dims": [2]}, error="index")
    cat = lambda d: (lambda *t: torch.cat(t, d))
    stk = lambda d: (lambda *t: torch.stack(t, d))
    fam.case("concat/f32/[2,3]+[2,1]/dim-1", "concat", [r([2, 3]), r([2, 1])], cat(-1), {"dim": -1})
    fam.case("concat/f32/3x/dim1", "concat", [r([2, 1]), r([2, 2]), r([2, 3])], cat(1), {"dim": 1})
    fam.case("concat/f32/empty/dim0", "concat", [r([0, 3]), r([2, 3])], cat(0), {"dim": 0})
    fam.case("concat/f32/one/dim0", "concat", [r([2, 3])], cat(0), {"dim": 0})
    fam.case("concat/f32/transposed/dim0", "concat", [L(r([3, 2]), "transposed"), r([1, 2])], cat(0), {"dim": 0})
    fam.case("concat/f32/shape/error", "concat", [r([2, 3]), r([2, 4])], cat(0), {"dim": 0}, error="shape")
    fam.case("concat/f32/dim2/error", "concat", [r([2, 3]), r([2, 3])], cat(2), {"dim": 2}, error="index")
    fam.case("concat/f32xf64/error", "concat", [r([2, 3]), rnd([2, 3], "float64")], attrs={"dim": 0}, error="dtype")
    for d in (0, 2, -1):
        fam.case(f"stack/f32/2x[2,3]/dim{d}", "stack", [r([2, 3]), r([2, 3])], stk(d), {"dim": d})
    fam.case("stack/f32/0d/dim0", "stack", [r([]), r([]), r([])], stk(0), {"dim": 0})
    fam.case("stack/f32/shape/error", "stack", [r([2, 3]), r([3, 2])], stk(0), {"dim": 0}, error="shape")
    fam.case("stack/f32/dim3/error", "stack", [r([2, 3]), r([2, 3])], stk(3), {"dim": 3}, error="index")
    for shape, size, d in (([5, 3], 2, 0), ([5, 3], 1, -1), ([4, 2], 4, 0), ([4, 2], 3, 1)):
        fam.case(f"split/f32/{shp(shape)}/{size},{d}", "split", [r(shape)],
                 lambda x, size=size, d=d: torch.split(x, size, d), {"size": size, "dim": d})
    fam.case("split/f32/dim2/error", "split", [r([4, 2])], lambda x: torch.split(x, 1, 2), {"size": 1, "dim": 2},
             error="index")
    # torch.chunk makes pieces of ceil(size/n), so [5] in 4 chunks is 2,2,1.
    for shape, n, d in (([5, 3], 2, 0), ([6, 2], 3, 0), ([5], 4, 0), ([2, 3], 3, -1), ([2, 2], 5, 1)):
        fam.case(f"chunk/f32/{shp(shape)}/{n},{d}", "chunk", [r(shape)], lambda x, n=n, d=d: torch.chunk(x, n, d),
                 {"n": n, "dim": d})
    fam.case("chunk/f32/n0/error", "chunk", [r([4])], lambda x: torch.chunk(x, 0, 0), {"n": 0, "dim": 0}, error="value")
    for dt in FLOATS + ["int32"]:
        for shape, pads, v in (([2, 3], [1, 2], 0.0), ([2, 3], [1, 1, 2, 0], 1.5), ([3], [0, 0], 0.0),
                               ([2, 3], [-1, 1], 0.0), ([0, 2], [1, 1], 2.0), ([2, 2, 2], [0, 1, 1, 0, 1, 1], -1.0)):
            if dt == "int32" and v != int(v):
                continue
            fam.case(f"pad/{SHORT[dt]}/{shp(shape)}/{shp(pads)}/{v}", "pad", [rnd(shape, dt)],
                     lambda x, p=pads, v=v: F.pad(x, p, value=v), {"pads": pads, "value": v})
    fam.case("pad/f32/transposed[3,2]/[1,1]", "pad", [L(r([3, 2]), "transposed")], lambda x: F.pad(x, [1, 1], value=0.0),
             {"pads": [1, 1], "value": 0.0})
    fam.case("pad/f32/odd/error", "pad", [r([2, 3])], lambda x: F.pad(x, [1]), {"pads": [1], "value": 0.0}, error="value")
    fam.case("pad/f32/toolong/error", "pad", [r([3])], lambda x: F.pad(x, [1, 1, 1, 1]), {"pads": [1, 1, 1, 1], "value": 0.0},
             error="value")
    casts = [("float32", "int32", [1.7, -1.7, 0.0, -0.0, 2.5, 100.9]), ("float32", "bool", [0.0, -0.0, 0.5, NAN, INF]),
             ("float64", "float32", [1.0 / 3, 1e-50, 1e50, -INF, NAN]), ("float32", "float64", [0.1, -2.5, INF, NAN]),
             ("float64", "int64", [3.99, -3.99, 1e12]), ("int32", "float32", [1, -7, 16777217]),
             ("int64", "int32", [5, -5, 2**31 - 1]), ("int32", "int64", [3, -3]), ("int32", "bool", [0, 2, -1]),
             ("bool", "float64", [True, False]), ("bool", "int32", [True, False]), ("int64", "float64", [2**53 + 1, -9])]
    for src, to, v in casts:
        fam.case(f"cast/{SHORT[src]}to{SHORT[to]}", "cast", [vals(v, src)], lambda x, to=to: x.to(DTYPES[to]), {"dtype": to})
    fam.case("cast/f32tof64/transposed[2,3]", "cast", [L(r([2, 3]), "transposed")], lambda x: x.double(), {"dtype": "float64"})
    fam.case("cast/i32tof32/strided[2,3]", "cast", [L(rnd([2, 3], "int32"), "strided")], lambda x: x.float(),
             {"dtype": "float32"})
    fam.case("cast/f32tof32/[3]", "cast", [r([3])], lambda x: x.float(), {"dtype": "float32"})
    fam.case("cast/f32/0d", "cast", [r([])], lambda x: x.double(), {"dtype": "float64"})
    fam.case("cast/f32/empty", "cast", [r([0, 2])], lambda x: x.int(), {"dtype": "int32"})
    return fam


# ---- indexing -----------------------------------------------------------------

def idx(v, dt="int64"):
    return vals(v, dt)


def indexing():
    fam = Family("index", 6)
    for dt in FLOATS + ["int32", "bool"]:
        s = SHORT[dt]
        fam.case(f"index_select/{s}/[4,3]/dim0", "index_select", [rnd([4, 3], dt), idx([2, 0, 2])],
                 lambda x, i: torch.index_select(x, 0, i), {"dim": 0})
        fam.case(f"gather/{s}/[3,4]/dim1", "gather", [rnd([3, 4], dt), idx([[0, 3], [1, 1], [2, 0]])],
                 lambda x, i: torch.gather(x, 1, i), {"dim": 1})
        fam.case(f"scatter/{s}/[3,5]/dim0", "scatter", [rnd([3, 5], dt), idx([[0, 1, 2, 0, 1], [2, 0, 1, 1, 0]]),
                                                          rnd([2, 5], dt)],
                 lambda x, i, src: torch.scatter(x, 0, i, src), {"dim": 0})
        fam.case(f"masked_fill/{s}/[3,4]/bcast[1,4]", "masked_fill", [rnd([3, 4], dt), rnd([1, 4], "bool")],
                 lambda x, m: x.masked_fill(m, 1), {"value": 1.0})
    for dt in FLOATS:
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        fam.case(f"index_select/{s}/[2,5]/dim-1/i32", "index_select", [x([2, 5]), idx([4, 0, 1, 4], "int32")],
                 lambda x, i: torch.index_select(x, -1, i.long()), {"dim": -1})
        fam.case(f"index_select/{s}/empty_index", "index_select", [x([4, 3]), idx([], "int64")],
                 lambda x, i: torch.index_select(x, 0, i), {"dim": 0})
        fam.case(f"index_select/{s}/transposed[3,4]/dim1", "index_select", [L(x([3, 4]), "transposed"), idx([3, 1])],
                 lambda x, i: torch.index_select(x, 1, i), {"dim": 1})
        fam.case(f"index_select/{s}/0d_index", "index_select", [x([4]), vals(2, "int64")],
                 lambda x, i: torch.index_select(x, 0, i), {"dim": 0})
        fam.case(f"gather/{s}/[3,4]/dim0/i32", "gather", [x([3, 4]), idx([[2, 0, 1, 1]], "int32")],
                 lambda x, i: torch.gather(x, 0, i.long()), {"dim": 0})
        fam.case(f"gather/{s}/[2,3,2]/dim-2", "gather", [x([2, 3, 2]), idx([[[0, 2], [1, 1], [2, 0], [0, 0]],
                                                                         [[1, 2], [2, 2], [0, 1], [1, 0]]])],
                 lambda x, i: torch.gather(x, -2, i), {"dim": -2})
        fam.case(f"gather/{s}/strided[3,4]/dim1", "gather", [L(x([3, 4]), "strided"), idx([[1], [0], [3]])],
                 lambda x, i: torch.gather(x, 1, i), {"dim": 1})
        fam.case(f"scatter/{s}/[2,4]/dim1", "scatter", [x([2, 4]), idx([[3, 0], [1, 2]]), x([2, 3])],
                 lambda x, i, src: torch.scatter(x, 1, i, src), {"dim": 1})
        fam.case(f"scatter_add/{s}/[3,4]/dim0", "scatter_add",
                 [x([3, 4]), idx([[0, 1, 2, 0], [0, 0, 2, 2], [1, 1, 1, 1]]), x([3, 4])],
                 lambda x, i, src: torch.scatter_add(x, 0, i, src), {"dim": 0})
        fam.case(f"scatter_add/{s}/[2,5]/dim-1", "scatter_add", [x([2, 5]), idx([[4, 4, 0], [1, 1, 1]]), x([2, 3])],
                 lambda x, i, src: torch.scatter_add(x, -1, i, src), {"dim": -1})
        fam.case(f"masked_fill/{s}/-inf", "masked_fill", [x([2, 3]), rnd([2, 3], "bool")],
                 lambda x, m: x.masked_fill(m, -INF), {"value": -INF})
        fam.case(f"masked_fill/{s}/0d_mask", "masked_fill", [x([2, 3]), vals(True, "bool")],
                 lambda x, m: x.masked_fill(m, 2.5), {"value": 2.5})
        fam.case(f"masked_fill/{s}/nan", "masked_fill", [x([4]), vals([True, False, True, False], "bool")],
                 lambda x, m: x.masked_fill(m, NAN), {"value": NAN})
        fam.case(f"embedding/{s}/[2,3]x[5,4]", "embedding", [idx([[0, 4, 2], [2, 2, 1]]), x([5, 4])], F.embedding)
        fam.case(f"embedding/{s}/[3]x[4,2]/i32", "embedding", [idx([3, 0, 3], "int32"), x([4, 2])],
                 lambda i, w: F.embedding(i.long(), w))
        fam.case(f"embedding/{s}/0dx[4,2]", "embedding", [vals(1, "int64"), x([4, 2])], F.embedding)
    f = lambda shape: rnd(shape, "float32")
    fam.case("masked_fill/i64/[2,3]", "masked_fill", [rnd([2, 3], "int64"), rnd([2, 3], "bool")],
             lambda x, m: x.masked_fill(m, -5), {"value": -5.0})
    fam.case("masked_fill/f32/mask_f32/error", "masked_fill", [f([2, 3]), f([2, 3])],
             lambda x, m: x.masked_fill(m, 0.0), {"value": 0.0}, error="dtype")
    fam.case("masked_fill/f32/shape/error", "masked_fill", [f([2, 3]), rnd([4], "bool")],
             lambda x, m: x.masked_fill(m, 0.0), {"value": 0.0}, error="shape")
    fam.case("index_select/f32/out_of_range/error", "index_select", [f([4, 3]), idx([0, 4])],
             lambda x, i: torch.index_select(x, 0, i), {"dim": 0}, error="index")
    fam.case("index_select/f32/negative/error", "index_select", [f([4, 3]), idx([-1])],
             lambda x, i: torch.index_select(x, 0, i), {"dim": 0}, error="index")
    fam.case("index_select/f32/dim2/error", "index_select", [f([4, 3]), idx([0])],
             lambda x, i: torch.index_select(x, 2, i), {"dim": 2}, error="index")
    fam.case("index_select/f32/index_f32/error", "index_select", [f([4, 3]), f([2])],
             lambda x, i: torch.index_select(x, 0, i), {"dim": 0}, error="dtype")
    fam.case("gather/f32/out_of_range/error", "gather", [f([3, 4]), idx([[0, 4]])],
             lambda x, i: torch.gather(x, 1, i), {"dim": 1}, error="index")
    fam.case("scatter/f32/out_of_range/error", "scatter", [f([3, 4]), idx([[3, 0]]), f([1, 2])],
             lambda x, i, s: torch.scatter(x, 0, i, s), {"dim": 0}, error="index")
    fam.case("scatter_add/f32/out_of_range/error", "scatter_add", [f([3, 4]), idx([[0, 5]]), f([1, 2])],
             lambda x, i, s: torch.scatter_add(x, 1, i, s), {"dim": 1}, error="index")
    fam.case("scatter/f32xf64/error", "scatter", [f([3, 4]), idx([[0, 1]]), rnd([1, 2], "float64")],
             lambda x, i, s: torch.scatter(x, 0, i, s), {"dim": 0}, error="dtype")
    for shape, n, v in (([3], 5, [0, 4, 2]), ([2, 3], 4, [[0, 1, 2], [3, 3, 0]]), ([], 3, 1), ([0], 2, [])):
        fam.case(f"one_hot/i64/{shp(shape)}/{n}", "one_hot", [vals(v, "int64", shape)],
                 lambda i, n=n: F.one_hot(i, n), {"num_classes": n})
    fam.case("one_hot/i32/[3]/3", "one_hot", [vals([2, 0, 1], "int32")], lambda i: F.one_hot(i.long(), 3),
             {"num_classes": 3})
    fam.case("one_hot/i64/out_of_range/error", "one_hot", [vals([0, 3], "int64")], lambda i: F.one_hot(i, 3),
             {"num_classes": 3}, error="index")
    fam.case("one_hot/f32/error", "one_hot", [f([3])], lambda i: F.one_hot(i, 3), {"num_classes": 3}, error="dtype")
    fam.case("embedding/f32/out_of_range/error", "embedding", [idx([0, 5]), f([5, 2])], F.embedding, error="index")
    fam.case("embedding/f32/weight1d/error", "embedding", [idx([0, 1]), f([5])], F.embedding, error="shape")
    return fam


# ---- nn -------------------------------------------------------------------------

LARGE = [[1000.0, -1000.0, 0.0, 999.0], [-1000.0, -1000.0, -1000.0, -1000.0], [0.0, 1.0, 2.0, 3.0]]


def nn():
    fam = Family("nn", 7)
    for op, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
        for dt in FLOATS:
            p = f"{op}/{SHORT[dt]}"
            g = lambda d, fn=fn: (lambda x: fn(x, d))
            for shape, d in (([3, 4], 1), ([3, 4], 0), ([3, 4], -1), ([2, 3, 4], 1), ([], 0), ([1, 5], -1), ([0, 3], 1),
                             ([4, 16], 1)):
                fam.case(f"{p}/{shp(shape)}/dim{d}", op, [rnd(shape, dt, "wide")], g(d), {"dim": d})
            fam.case(f"{p}/large/dim1", op, [vals(LARGE, dt)], g(1), {"dim": 1})
            fam.case(f"{p}/-inf/dim1", op, [vals([[0.0, -INF, 1.0], [-INF, 2.0, -INF]], dt)], g(1), {"dim": 1})
            fam.case(f"{p}/transposed[3,4]/dim1", op, [L(rnd([3, 4], dt), "transposed")], g(1), {"dim": 1})
            fam.case(f"{p}/strided[3,4]/dim0", op, [L(rnd([3, 4], dt), "strided")], g(0), {"dim": 0})
        fam.case(f"{op}/f32/dim2/error", op, [rnd([3, 4], "float32")], lambda x, fn=fn: fn(x, 2), {"dim": 2}, error="index")
        fam.case(f"{op}/i32/error", op, [rnd([3, 4], "int32")], lambda x, fn=fn: fn(x, 1), {"dim": 1}, error="dtype")
    for red in ("mean", "sum", "none"):
        for dt in FLOATS:
            p = f"/{SHORT[dt]}/{red}"
            a = {"reduction": red}
            fam.case(f"cross_entropy{p}/[4,5]", "cross_entropy", [rnd([4, 5], dt, "wide"), idx([0, 4, 2, 2])],
                     lambda x, t, r=red: F.cross_entropy(x, t, reduction=r), a)
            fam.case(f"cross_entropy{p}/large", "cross_entropy", [vals(LARGE, dt), idx([1, 0, 3])],
                     lambda x, t, r=red: F.cross_entropy(x, t, reduction=r), a)
            fam.case(f"nll_loss{p}/[4,5]", "nll_loss", [F.log_softmax(rnd([4, 5], dt, "wide"), 1), idx([1, 1, 3, 0])],
                     lambda x, t, r=red: F.nll_loss(x, t, reduction=r), a)
            fam.case(f"mse_loss{p}/[3,4]", "mse_loss", [rnd([3, 4], dt), rnd([3, 4], dt)],
                     lambda x, t, r=red: F.mse_loss(x, t, reduction=r), a)
        fam.case(f"cross_entropy/f32/{red}/[1,3]", "cross_entropy", [rnd([1, 3], "float32"), idx([2])],
                 lambda x, t, r=red: F.cross_entropy(x, t, reduction=r), {"reduction": red})
        fam.case(f"mse_loss/f32/{red}/0d", "mse_loss", [rnd([], "float32"), rnd([], "float32")],
                 lambda x, t, r=red: F.mse_loss(x, t, reduction=r), {"reduction": red})
    f = lambda shape: rnd(shape, "float32")
    m = {"reduction": "mean"}
    fam.case("cross_entropy/f32/mean/transposed[5,3]", "cross_entropy", [L(f([3, 5]), "transposed"), idx([4, 0, 1])],
             F.cross_entropy, m)
    fam.case("cross_entropy/f32/mean/i32_target", "cross_entropy", [f([3, 4]), idx([3, 0, 1], "int32")],
             lambda x, t: F.cross_entropy(x, t.long()), m)
    fam.case("cross_entropy/f32/out_of_range/error", "cross_entropy", [f([2, 3]), idx([0, 3])], F.cross_entropy, m,
             error="index")
    fam.case("cross_entropy/f32/shape/error", "cross_entropy", [f([2, 3]), idx([0, 1, 2])], F.cross_entropy, m,
             error="shape")
    fam.case("cross_entropy/f32/target_f32/error", "cross_entropy", [f([2, 3]), f([2])], F.cross_entropy, m, error="dtype")
    fam.case("nll_loss/f32/out_of_range/error", "nll_loss", [f([2, 3]), idx([5, 0])], F.nll_loss, m, error="index")
    fam.case("mse_loss/f32xf64/error", "mse_loss", [f([3]), rnd([3], "float64")], attrs=m, error="dtype")
    fam.case("mse_loss/f32/mean/strided[2,3]", "mse_loss", [L(f([2, 3]), "strided"), f([2, 3])], F.mse_loss, m)
    for dt in FLOATS:
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        ln = lambda ns, eps: (lambda x, w, b: F.layer_norm(x, ns, w, b, eps))
        fam.case(f"layer_norm/{s}/[3,4]/[4]", "layer_norm", [x([3, 4]), x([4]), x([4])], ln([4], 1e-5),
                 {"normalized_shape": [4], "eps": 1e-5})
        fam.case(f"layer_norm/{s}/[3,4]/[4]/nil", "layer_norm", [x([3, 4]), None, None], ln([4], 1e-5),
                 {"normalized_shape": [4], "eps": 1e-5})
        fam.case(f"layer_norm/{s}/[3,4]/[4]/weight_only", "layer_norm", [x([3, 4]), x([4]), None], ln([4], 1e-5),
                 {"normalized_shape": [4], "eps": 1e-5})
        fam.case(f"layer_norm/{s}/[2,3,4]/[3,4]", "layer_norm", [x([2, 3, 4]), x([3, 4]), x([3, 4])], ln([3, 4], 1e-3),
                 {"normalized_shape": [3, 4], "eps": 1e-3})
        fam.case(f"layer_norm/{s}/constant_rows", "layer_norm", [vals([[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]], dt), None, None],
                 ln([3], 1e-5), {"normalized_shape": [3], "eps": 1e-5})
        fam.case(f"layer_norm/{s}/transposed[4,3]/[3]", "layer_norm", [L(x([4, 3]), "transposed"), x([3]), x([3])],
                 ln([3], 1e-5), {"normalized_shape": [3], "eps": 1e-5})
    fam.case("layer_norm/f32/shape/error", "layer_norm", [f([3, 4]), None, None],
             lambda x, w, b: F.layer_norm(x, [3], w, b), {"normalized_shape": [3], "eps": 1e-5}, error="shape")
    fam.case("layer_norm/f32/weight_shape/error", "layer_norm", [f([3, 4]), f([3]), None],
             lambda x, w, b: F.layer_norm(x, [4], w, b), {"normalized_shape": [4], "eps": 1e-5}, error="shape")
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    os.makedirs(folder, exist_ok=True)
    total, size = 0, 0
    for make in (elementwise, binary, reductions, matmul, views, indexing, nn):
        path, n = make().write(folder)
        total += n
        size += os.path.getsize(path)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")
    print(f"total: {total} cases, {size} bytes")


if __name__ == "__main__":
    main()
