"""Cases of torch's everyday math functions that lathe builds as composites
of its own (mathops.json) and their gradients (grad_mathops.json):

1. log2, log10, exp2, trunc, frac, logit, sinc, deg2rad, rad2deg and the
   shrinks (softshrink, hardshrink, tanhshrink);
2. xlogy, hypot, logaddexp, logaddexp2, copysign, heaviside, fmax, fmin;
3. nansum, nanmean, count_nonzero, amax, amin, isclose, softmin and glu;
4. cross (torch.linalg.cross), kron, tensordot and cdist.

Run it from the repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/mathops.py

(gen.py runs it too, with every other family.) Op keys and attributes are
listed with the Go table, internal/conformance/ops_mathops.go.

float16 and bfloat16 are computed in float32 and rounded once, as torch's
cuda kernels (torch 1.13's cpu has no float16 trunc or hypot): those cases'
reference is the float32 function of the widened input, rounded (half).
An integer nansum is int64, as torch's (and lathe's Sum).
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily, distinct, off  # noqa: E402
from refcase import FLOATS, HALVES, INF, INTS, NAN, SHORT, Family, L, rnd, vals  # noqa: E402


def half(fn):
    """fn computed in float32 for 16-bit inputs and rounded once."""
    def f(*xs):
        dt = xs[0].dtype
        if dt in (torch.float16, torch.bfloat16):
            return fn(*[x.float() for x in xs]).to(dt)
        return fn(*xs)
    return f


# (op key, torch function, attrs, input domain, special values)
SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 8.0, 1000.0, 1e-3, INF, -INF, NAN]
UNIT = [0.0, 1.0, 0.5, 0.25, 1e-7, 0.9999, -0.5, 1.5, INF, NAN]
UNARY = [
    ("log2", torch.log2, None, "pos", SPECIAL + [2.0 ** -20, 1024.0, 3.0]),
    ("log10", torch.log10, None, "pos", SPECIAL + [100.0, 1e5, 0.01]),
    ("exp2", torch.exp2, None, "wide", SPECIAL + [-3.0, 10.0, 130.0, -150.0]),
    ("trunc", torch.trunc, None, "wide", SPECIAL + [-0.25, 7.9, -7.9]),
    ("frac", torch.frac, None, "wide", SPECIAL + [-0.25, 7.9, -7.9]),
    ("logit", torch.logit, None, "unit01", UNIT),
    ("logit_eps", lambda x: torch.logit(x, 0.1), {"eps": 0.1}, "unit01", UNIT + [0.1, 0.9, 0.05, 0.95]),
    ("sinc", torch.sinc, None, "wide", SPECIAL + [1e-20, 3.0, -4.0, 0.25]),
    ("deg2rad", torch.deg2rad, None, "wide", SPECIAL + [180.0, -90.0]),
    ("rad2deg", torch.rad2deg, None, "wide", SPECIAL + [3.141592653589793]),
    ("softshrink", lambda x: F.softshrink(x, 0.5), {"lambd": 0.5}, "wide", SPECIAL + [0.7, -0.2]),
    ("softshrink", lambda x: F.softshrink(x, 0.0), {"lambd": 0.0}, "wide", SPECIAL),
    ("hardshrink", lambda x: F.hardshrink(x, 0.5), {"lambd": 0.5}, "wide", SPECIAL + [0.7, -0.2]),
    ("hardshrink", lambda x: F.hardshrink(x, -1.0), {"lambd": -1.0}, "wide", SPECIAL),
    ("tanhshrink", F.tanhshrink, None, "wide", SPECIAL + [1e-3, 20.0]),
    ("erfc", torch.erfc, None, "wide", SPECIAL + [1.25, 2.8, 2.9, 5.0, 9.0, 10.0, 26.0, -6.0]),
    ("erfinv", torch.erfinv, None, "unit", [0.0, -0.0, 0.5, -0.5, 0.7, -0.71, 0.9, 0.999, -0.9999, 1e-6, 1.0, -1.0,
                                             1.5, INF, NAN]),
    ("lgamma", torch.lgamma, None, "wide", SPECIAL + [1.0, 2.0, 3.0, -1.5, -0.25, 1e-20, 1e10, 1.4616, 7.99]),
    ("digamma", torch.digamma, None, "wide", SPECIAL + [1.0, 2.0, 10.0, -1.5, -0.25, 1e-20, 1e10, 1.4616, -2.0]),
]
# The ops exact in every float dtype, whose 16-bit cases would add nothing.
EXACT = {"trunc", "frac", "hardshrink", "copysign", "heaviside", "fmax", "fmin"}
# The ops whose float64 special values are a case of their own (float64
# routines of their own, or pieces that float32 does not reach).
F64_SPECIAL = {"log2", "log10", "exp2", "logit", "logit_eps", "sinc", "erfc", "erfinv", "lgamma", "digamma"}
# Dense grids of the special functions, where their pieces meet.
GRIDS = [("erfc", torch.erfc, -3.0, 12.0, 27.0), ("erfinv", torch.erfinv, -0.9995, 0.9995, 0.9995),
         ("lgamma", torch.lgamma, -6.3, 14.0, 14.0), ("digamma", torch.digamma, -6.3, 14.0, 14.0)]


def name_of(op, attrs):
    return op + ("/" + ",".join(f"{k}={v}" for k, v in attrs.items()) if attrs else "")


def inputs(domain, shape, dt):
    if domain == "unit01":
        return (torch.rand(shape, dtype=torch.float64) * 0.98 + 0.01).to(getattr(torch, dt))
    return rnd(shape, dt, domain)


def group1(fam):
    seen = set()
    for i, (op, fn, attrs, domain, special) in enumerate(UNARY):
        n = name_of(op, attrs)
        f = half(fn)
        for dt in FLOATS if op in F64_SPECIAL else ["float32"]:
            a = attrs
            if op.startswith("logit") and dt == "float64":
                # 0.9999 rounded to float32 is another logit (1 - x cancels)
                a = dict(attrs or {}, float64_only=True)
            fam.case(f"{n}/{SHORT[dt]}/special", op, [vals(special, dt)], f, a)
        for dt in ["float32"] + ([] if op in EXACT else [HALVES[i % 2]]):
            fam.case(f"{n}/{SHORT[dt]}/[3,4]", op, [inputs(domain, [3, 4], dt)], f, attrs)
        # one other layout or shape for every other op
        if i % 2:
            pass
        elif i % 3 == 0:
            fam.case(f"{n}/f32/transposed[3,4]", op, [L(inputs(domain, [3, 4], "float32"), "transposed")], fn, attrs)
        elif i % 3 == 1:
            fam.case(f"{n}/f32/0d", op, [inputs(domain, [], "float32")], fn, attrs)
        else:
            fam.case(f"{n}/f32/empty[0,3]", op, [rnd([0, 3], "float32")], fn, attrs)
        if op in seen:
            continue
        seen.add(op)
        if op == "trunc":
            for dt in INTS:
                fam.case(f"{n}/{SHORT[dt]}/[2,3]", op, [rnd([2, 3], dt)], fn, attrs)
            fam.case(f"{n}/bool/error", op, [rnd([3], "bool")], fn, attrs, error="dtype")
        else:
            fam.case(f"{n}/i32/error", op, [rnd([3], "int32")], None, attrs, error="dtype")
    x = rnd([3], "float32")
    fam.case("softshrink/lambd=-1.0/f32/error", "softshrink", [x], lambda x: F.softshrink(x, -1.0), {"lambd": -1.0},
             error="value")
    # eps above 0.5 clamps to an empty interval, where torch 1.13's vectorised
    # and scalar loops disagree: lathe refuses it.
    fam.case("logit_eps/eps=0.7/f32/error", "logit_eps", [x], None, {"eps": 0.7}, error="value")
    for op, fn, lo, hi32, hi64 in GRIDS:
        for dt, hi in (("float32", hi32), ("float64", hi64)):
            x = torch.linspace(lo, hi, 257, dtype=torch.float64).to(getattr(torch, dt))
            # poles: float64's points rounded to float32 are other cases
            fam.case(f"{op}/{SHORT[dt]}/grid[{lo},{hi}]", op, [x], fn, {"float64_only": True} if dt == "float64" else None)
    fam.case("log2/bool/error", "log2", [rnd([3], "bool")], None, None, error="dtype")


SPECIAL_PAIRS = ([0.0, 0.0, 1.0, -1.0, INF, -INF, INF, -INF, NAN, 1.0, NAN, 0.0, -0.0, 2.0, 1e30, -3.0, 1e-30],
                 [0.0, 1.0, 0.0, -0.0, INF, -INF, NAN, 5.0, 1.0, NAN, NAN, -0.0, 2.0, 2.0, 1e30, 4.0, 1e-30])
BINARY = [
    ("xlogy", torch.xlogy, "pos"),
    ("hypot", torch.hypot, "any"),
    ("logaddexp", torch.logaddexp, "wide"),
    ("logaddexp2", torch.logaddexp2, "wide"),
    ("copysign", torch.copysign, "any"),
    ("heaviside", torch.heaviside, "halves"),
    ("fmax", torch.fmax, "halves"),
    ("fmin", torch.fmin, "halves"),
]


def group2(fam):
    for op, fn, domain in BINARY:
        f = half(fn)
        for dt in FLOATS:
            fam.case(f"{op}/{SHORT[dt]}/special", op, [vals(SPECIAL_PAIRS[0], dt), vals(SPECIAL_PAIRS[1], dt)], f)
        for dt in ["float32"] + ([] if op in EXACT else [HALVES[len(op) % 2]]):
            fam.case(f"{op}/{SHORT[dt]}/[3,4]x[4]", op, [rnd([3, 4], dt, "halves"), rnd([4], dt, domain)], f)
        if op in ("xlogy", "hypot", "copysign", "fmax"):
            fam.case(f"{op}/f32/transposed[3,4]x0d", op, [L(rnd([3, 4], "float32", "wide"), "transposed"),
                                                       rnd([], "float32", domain)], fn)
        fam.case(f"{op}/f32/[2]x[3]/error", op, [rnd([2], "float32"), rnd([3], "float32")], fn, error="shape")
        if op == "heaviside":
            fam.case(f"{op}/i64/[2,3]", op, [rnd([2, 3], "int64", "small"), rnd([3], "int64")], fn)
            fam.case(f"{op}/bool/[4]", op, [vals([True, False, True, False], "bool"), vals([True, True, False, False], "bool")], fn)
            fam.case(f"{op}/f32xf64/error", op, [rnd([3], "float32"), rnd([3], "float64")], fn, error="dtype")
        elif op in ("fmax", "fmin"):
            fam.case(f"{op}/i64/[2,3]", op, [rnd([2, 3], "int64"), rnd([3], "int64")], fn)
            fam.case(f"{op}/i32xf32/[3]", op, [rnd([3], "int32"), vals([NAN, 1.5, -20.0], "float32")], fn)
            fam.case(f"{op}/bool/[4]", op, [vals([True, False, True, False], "bool"), vals([True, True, False, False], "bool")], fn)
        elif op not in ("hypot", "logaddexp", "logaddexp2"):
            # torch 1.13 has no integer hypot or logaddexp; the others give float32.
            fam.case(f"{op}/i32/[2,3]", op, [rnd([2, 3], "int32", "nonneg"), rnd([3], "int32", "nonneg")], fn)
    fam.case("xlogy/f32/empty[0,3]x[3]", "xlogy", [rnd([0, 3], "float32"), rnd([3], "float32")], torch.xlogy)
    fam.case("hypot/f32/[2,1]x[3]", "hypot", [rnd([2, 1], "float32", "wide"), rnd([3], "float32")], torch.hypot)


def nan_input(shape, dt):
    x = rnd(shape, dt)
    m = torch.rand(shape) < 0.3
    return torch.where(m, torch.tensor(NAN, dtype=x.dtype), x)


DIMS = [([], False), ([1], False), ([-1, 0], False), ([0, 2], True)]


def group3(fam):
    for dt in FLOATS + HALVES:
        s = SHORT[dt]
        x = nan_input([2, 3, 4], dt)
        for dims, keep in DIMS if dt == "float32" else DIMS[2:3]:
            d = f"dims={dims}/keep={keep}"
            for op, fn in (("nansum", torch.nansum), ("nanmean", torch.nanmean)):
                f = (lambda x, fn=fn, dims=dims, keep=keep: fn(x, dims, keepdim=keep) if dims else fn(x))
                if keep and not dims:
                    continue
                fam.case(f"{op}/{s}/nan[2,3,4]/{d}", op, [x], half(f) if op == "nanmean" else f,
                         {"dims": dims, "keepdim": keep})
            for op, fn in (("amax", torch.amax), ("amin", torch.amin)) if dt in FLOATS else ():
                fam.case(f"{op}/{s}/[2,3,4]/{d}", op, [rnd([2, 3, 4], dt, "halves")],
                         lambda x, fn=fn, dims=dims, keep=keep: fn(x, dims, keep), {"dims": dims, "keepdim": keep})
        if dt in HALVES:
            continue
        fam.case(f"nanmean/{s}/allnan[2,2]/dims=[1]", "nanmean", [vals([[NAN, NAN], [1.0, NAN]], dt)],
                 lambda x: torch.nanmean(x, 1), {"dims": [1], "keepdim": False})
        for op, fn in (("amax", torch.amax), ("amin", torch.amin)):
            fam.case(f"{op}/{s}/special[2,4]/dims=[1]", op, [vals([[NAN, 1.0, INF, 2.0], [-INF, 0.0, -0.0, 3.0]], dt)],
                     lambda x, fn=fn: fn(x, 1), {"dims": [1], "keepdim": False})
    for dt in INTS:
        fam.case(f"nansum/{SHORT[dt]}/[3,4]/dims=[1]", "nansum", [rnd([3, 4], dt)], lambda x: torch.nansum(x, 1),
                 {"dims": [1], "keepdim": False})
        fam.case(f"amax/{SHORT[dt]}/[3,4]/dims=[0]", "amax", [rnd([3, 4], dt)], lambda x: torch.amax(x, 0),
                 {"dims": [0], "keepdim": False})
    fam.case("amax/bool/[2,3]/dims=[]", "amax", [rnd([2, 3], "bool")], torch.amax, {"dims": [], "keepdim": False})
    fam.case("amin/f32/0d/dims=[]", "amin", [rnd([], "float32")], torch.amin, {"dims": [], "keepdim": False})
    fam.case("amax/f32/empty[0,3]/dims=[1]", "amax", [rnd([0, 3], "float32")], lambda x: torch.amax(x, 1),
             {"dims": [1], "keepdim": False})
    fam.case("amax/f32/[2,3]/dims=[2]/error", "amax", [rnd([2, 3], "float32")], lambda x: torch.amax(x, 2),
             {"dims": [2], "keepdim": False}, error="index")
    fam.case("nansum/f32/empty[0,3]/dims=[0]", "nansum", [rnd([0, 3], "float32")], lambda x: torch.nansum(x, 0),
             {"dims": [0], "keepdim": False})
    fam.case("nanmean/i32/error", "nanmean", [rnd([3], "int32")], torch.nanmean, {"dims": [], "keepdim": False},
             error="dtype")
    for dt in ["float32", "int64", "bool"]:
        x = nan_input([3, 4], dt) if dt in FLOATS else rnd([3, 4], dt, "small")
        if dt in FLOATS:
            x[0, 0] = -0.0
        for dims in ([1, 0],) if dt == "float32" else ([0],):
            fam.case(f"count_nonzero/{SHORT[dt]}/[3,4]/dims={dims}", "count_nonzero", [x],
                     lambda x, dims=dims: torch.count_nonzero(x, dims) if dims else torch.count_nonzero(x), {"dims": dims})
    # isclose: tolerances, infinities, NaN with and without equal_nan,
    # broadcasting, integers and bool (compared in float32).
    a = vals([1.0, 1.0 + 1e-6, 1.0 + 1e-4, INF, INF, -INF, NAN, NAN, 0.0, 1e-9, 100.0, 100.01], "float64")
    b = vals([1.0, 1.0, 1.0, INF, -INF, INF, NAN, 1.0, -0.0, 0.0, 100.0, 100.0], "float64")
    for dt in FLOATS + HALVES:
        tols = ((1e-5, 1e-8, False), (1e-5, 1e-8, True), (0.0, 0.0, True), (1e-3, 0.0, False), (0.0, 0.5, False))
        for rtol, atol, en in tols[1:4] if dt == "float32" else tols[:1] if dt == "float64" else tols[4:]:
            fam.case(f"isclose/{SHORT[dt]}/special/rtol={rtol},atol={atol},equal_nan={en}", "isclose",
                     [a.to(getattr(torch, dt)), b.to(getattr(torch, dt))],
                     lambda x, y, r=rtol, t=atol, e=en: torch.isclose(x, y, r, t, e),
                     {"rtol": rtol, "atol": atol, "equal_nan": en})
    fam.case("isclose/f32/[3,4]x[4]", "isclose", [rnd([3, 4], "float32", "halves"), rnd([4], "float32", "halves")],
             lambda x, y: torch.isclose(x, y, 0.1, 0.3), {"rtol": 0.1, "atol": 0.3, "equal_nan": False})
    for dt in ["int32", "bool"]:
        fam.case(f"isclose/{SHORT[dt]}/[2,5]", "isclose", [rnd([2, 5], dt, "small"), rnd([2, 5], dt, "small")],
                 lambda x, y: torch.isclose(x, y, 0.5, 1.0), {"rtol": 0.5, "atol": 1.0, "equal_nan": False})
    fam.case("isclose/f32xf64/error", "isclose", [rnd([3], "float32"), rnd([3], "float64")],
             lambda x, y: torch.isclose(x, y), {"rtol": 1e-5, "atol": 1e-8, "equal_nan": False}, error="dtype")
    fam.case("isclose/f32/rtol=-1/error", "isclose", [rnd([3], "float32"), rnd([3], "float32")],
             lambda x, y: torch.isclose(x, y, -1.0), {"rtol": -1.0, "atol": 1e-8, "equal_nan": False}, error="value")
    for dt in FLOATS + HALVES:
        s = SHORT[dt]
        for dim in (1, -1, 0) if dt == "float32" else (1,):
            fam.case(f"softmin/{s}/[3,4]/dim={dim}", "softmin", [rnd([3, 4], dt, "wide")],
                     half(lambda x, d=dim: F.softmin(x, d)), {"dim": dim})
        for shape, dim in (([4, 6], -1), ([4, 6], 0), ([2, 4, 3], 1)) if dt == "float32" else (([4, 6], -1),):
            fam.case(f"glu/{s}/{shape}/dim={dim}", "glu", [rnd(shape, dt, "wide")], half(lambda x, d=dim: F.glu(x, d)),
                     {"dim": dim})
    fam.case("softmin/f32/special/dim=0", "softmin", [vals([INF, 0.0, -INF, 1.0], "float32")],
             lambda x: F.softmin(x, 0), {"dim": 0})
    fam.case("glu/f32/empty[0,4]/dim=1", "glu", [rnd([0, 4], "float32")], lambda x: F.glu(x, 1), {"dim": 1})
    fam.case("glu/f32/[4,3]/dim=1/error", "glu", [rnd([4, 3], "float32")], lambda x: F.glu(x, 1), {"dim": 1},
             error="shape")
    fam.case("glu/f32/[4,2]/dim=2/error", "glu", [rnd([4, 2], "float32")], lambda x: F.glu(x, 2), {"dim": 2},
             error="index")
    fam.case("softmin/i32/error", "softmin", [rnd([3], "int32")], None, {"dim": 0}, error="dtype")


# Gradient cases: float64 (compared with finite differences too) and
# float32, a Hessian-vector product where the op is smooth.
GRAD_UNARY = [("log2", "pos", True), ("log10", "pos", True), ("exp2", "wide", True), ("trunc", "wide", False),
              ("frac", "wide", False), ("logit", "unit01", True), ("logit_eps", "unit01", True),
              ("sinc", "wide", True), ("deg2rad", "wide", False), ("rad2deg", "wide", False),
              ("softshrink", "wide", False), ("hardshrink", "wide", False), ("tanhshrink", "wide", True),
              ("erfc", "wide", True), ("erfinv", "unit", True), ("lgamma", "wide", True), ("digamma", "wide", True)]
PIECEWISE = {"trunc", "frac", "deg2rad", "rad2deg", "softshrink", "hardshrink"}


def grad_group1(fam):
    g = fam.gcase
    fns = {}
    for op, fn, attrs, _, _ in UNARY:
        fns.setdefault(op, (fn, attrs))
    for i, (op, domain, smooth) in enumerate(GRAD_UNARY):
        fn, attrs = fns[op]
        n = name_of(op, attrs)
        for dt in ["float64"] if op in PIECEWISE else FLOATS:
            x = inputs(domain, [3, 4], dt)
            if domain != "unit01":
                x = off(x)
            g(f"{n}/{SHORT[dt]}/[3,4]", op, [x], fn, attrs, hvp=smooth)
        if i % 6 == 0:
            g(f"{n}/f64/transposed[3,4]", op, [L(off(inputs(domain, [3, 4], "float64")), "transposed")], fn, attrs)
    g("sinc/f64/zero", "sinc", [vals([0.0, 1.0, -0.5], "float64")], torch.sinc, nonsmooth=True)
    g("logit_eps/eps=0.1/f64/clamped", "logit_eps", [vals([0.05, 0.5, 0.95, 0.1], "float64")],
      lambda x: torch.logit(x, 0.1), {"eps": 0.1}, nonsmooth=True)
    # linear ops squared, so that their Hessian-vector products are not 0
    g("deg2rad/f64/[3,4]/squared", "deg2rad", [rnd([3, 4], "float64")], lambda x: torch.deg2rad(x) ** 2,
      {"square": True}, hvp=True)


GRAD_BINARY = [("xlogy", "pos", True), ("hypot", "any", True), ("logaddexp", "wide", True),
               ("logaddexp2", "wide", True), ("copysign", "nonzero", False), ("fmax", "any", False),
               ("fmin", "any", False), ("heaviside", "any", False)]


def grad_group2(fam):
    g = fam.gcase
    fns = dict((op, fn) for op, fn, _ in BINARY)
    for op, domain, smooth in GRAD_BINARY:
        fn = fns[op]
        if op == "heaviside":
            # values' gradient where x is 0 (torch has none: its reference
            # is the where that heaviside is).
            x = vals([0.0, 1.0, -2.0, 0.0], "float64")
            g("heaviside/f64/[4]", op, [x, rnd([4], "float64")], lambda x, v: torch.where(x == 0, v, (x > 0).double()),
              nonsmooth=True)
            continue
        for dt in FLOATS if smooth else ["float64"]:
            g(f"{op}/{SHORT[dt]}/[3,4]x[4]", op, [off(rnd([3, 4], dt, "any")), rnd([4], dt, domain)], fn, hvp=smooth)
        if op in ("hypot", "xlogy", "fmax"):
            g(f"{op}/f64/[2,1]x[3]", op, [off(rnd([2, 1], "float64", "wide")), rnd([3], "float64", domain)], fn)
    g("xlogy/f64/zeros", "xlogy", [vals([0.0, 0.0, 2.0], "float64"), vals([3.0, NAN, 0.5], "float64")], torch.xlogy,
      nonsmooth=True)
    g("fmax/f64/ties-nan", "fmax", [vals([1.0, NAN, 2.0, NAN], "float64"), vals([1.0, 3.0, NAN, NAN], "float64")],
      torch.fmax, nonsmooth=True)
    g("fmin/f64/ties-nan", "fmin", [vals([1.0, NAN, 2.0, NAN], "float64"), vals([1.0, 3.0, NAN, NAN], "float64")],
      torch.fmin, nonsmooth=True)
    g("logaddexp/f64/ties", "logaddexp", [vals([1.0, -3.0], "float64"), vals([1.0, -3.0], "float64")],
      torch.logaddexp, hvp=True)
    g("copysign/f64/zero", "copysign", [vals([0.0, 2.0, -1.5], "float64"), vals([-1.0, -0.0, 2.0], "float64")],
      torch.copysign, nonsmooth=True)


def grad_group3(fam):
    g = fam.gcase
    for dt in FLOATS:
        s = SHORT[dt]
        x = nan_input([2, 3, 4], dt)
        # no line all NaN: there torch's nanmean gradient is NaN (inf·0)
        # and lathe's 0 (ops_mathreduce.go)
        x[:, 0, :] = 0.5
        x[0, :, 0] = -0.25
        for dims, keep in ((([1], False)), ([0, 2], True)):
            d = f"dims={dims}/keep={keep}"
            g(f"nansum/{s}/nan[2,3,4]/{d}", "nansum", [x], lambda x, dims=dims, keep=keep: torch.nansum(x, dims, keep),
              {"dims": dims, "keepdim": keep}, nonsmooth=True)
            g(f"nanmean/{s}/nan[2,3,4]/{d}", "nanmean", [x],
              lambda x, dims=dims, keep=keep: torch.nanmean(x, dims, keep), {"dims": dims, "keepdim": keep},
              nonsmooth=True)
            if dt == "float32":
                continue
            g(f"amax/{s}/distinct[2,3,4]/{d}", "amax", [distinct([2, 3, 4], dt)],
              lambda x, dims=dims, keep=keep: torch.amax(x, dims, keep), {"dims": dims, "keepdim": keep})
        g(f"softmin/{s}/[3,4]/dim=1", "softmin", [rnd([3, 4], dt)], lambda x: F.softmin(x, 1), {"dim": 1}, hvp=True)
        g(f"glu/{s}/[3,4]/dim=-1", "glu", [rnd([3, 4], dt)], lambda x: F.glu(x, -1), {"dim": -1}, hvp=True)
    ties = vals([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [NAN, 1.0, 5.0, 5.0]], "float64")
    for op, fn in (("amax", torch.amax), ("amin", torch.amin)):
        g(f"{op}/f64/ties[3,4]/dims=[1]", op, [ties], lambda x, fn=fn: fn(x, 1), {"dims": [1], "keepdim": False},
          nonsmooth=True)
        g(f"{op}/f64/ties[3,4]/dims=[]", op, [ties[1:]], fn, {"dims": [], "keepdim": False}, nonsmooth=True)
        g(f"{op}/f64/nan[3,4]/dims=[]", op, [ties], fn, {"dims": [], "keepdim": False}, nonsmooth=True)


CROSS_PLANS = [([2, 3], [1, 3], -1), ([2, 3, 4], [2, 3, 1], 1), ([0, 3], [1, 3], 1)]
KRON_PLANS = [([2, 3], [4]), ([2, 1], [3, 2]), ([], [3]), ([0, 2], [3, 1])]
TENSORDOT_PLANS = [([2, 3, 4], [3, 4, 5], [1, 2], [0, 1]), ([2, 3, 4], [4, 3], [1, 2], [1, 0]), ([2, 3], [4, 5], [], []),
                   ([2, 0], [0, 3], [1], [0])]


def group4(fam):
    for dt in ["float32", "int32"]:
        s = SHORT[dt]
        for a, b, dim in CROSS_PLANS if dt == "float32" else CROSS_PLANS[1:2]:
            fam.case(f"cross/{s}/{a}x{b}/dim={dim}", "cross", [rnd(a, dt), rnd(b, dt)],
                     lambda x, y, d=dim: torch.linalg.cross(x, y, dim=d), {"dim": dim})
        for a, b in KRON_PLANS if dt == "float32" else KRON_PLANS[1:2]:
            fam.case(f"kron/{s}/{a}x{b}", "kron", [rnd(a, dt), rnd(b, dt)], torch.kron)
        for a, b, xd, yd in TENSORDOT_PLANS if dt == "float32" else TENSORDOT_PLANS[:1]:
            fam.case(f"tensordot/{s}/{a}x{b}/{xd},{yd}", "tensordot", [rnd(a, dt), rnd(b, dt)],
                     lambda x, y, xd=xd, yd=yd: torch.tensordot(x, y, (xd, yd)), {"xdims": xd, "ydims": yd})
    fam.case("cross/f32/transposed[3,3]/dim=0", "cross", [L(rnd([3, 3], "float32"), "transposed"), rnd([3, 1], "float32")],
             lambda x, y: torch.linalg.cross(x, y, dim=0), {"dim": 0})
    fam.case("kron/i32xf32/[2]x[2]", "kron", [rnd([2], "int32"), rnd([2], "float32")], torch.kron)
    fam.case("kron/bool/[2]x[2]", "kron", [rnd([2], "bool"), rnd([2], "bool")], torch.kron)
    x3 = rnd([2, 3], "float32")
    fam.case("cross/f32/[2,4]/error", "cross", [rnd([2, 4], "float32"), rnd([2, 4], "float32")],
             lambda x, y: torch.linalg.cross(x, y), {"dim": -1}, error="shape")
    fam.case("cross/f32/rank/error", "cross", [x3, rnd([3], "float32")], lambda x, y: torch.linalg.cross(x, y),
             {"dim": -1}, error="shape")
    fam.case("cross/f32xf64/error", "cross", [x3, rnd([2, 3], "float64")], lambda x, y: torch.linalg.cross(x, y),
             {"dim": -1}, error="dtype")
    fam.case("cross/f32/dim=2/error", "cross", [x3, x3], lambda x, y: torch.linalg.cross(x, y, dim=2), {"dim": 2},
             error="index")
    fam.case("cross/bool/error", "cross", [rnd([3], "bool"), rnd([3], "bool")], lambda x, y: torch.linalg.cross(x, y),
             {"dim": -1}, error="dtype")
    fam.case("tensordot/f32/sizes/error", "tensordot", [x3, x3], lambda x, y: torch.tensordot(x, y, ([1], [0])),
             {"xdims": [1], "ydims": [0]}, error="shape")
    fam.case("tensordot/f32/dim=2/error", "tensordot", [x3, x3], lambda x, y: torch.tensordot(x, y, ([2], [0])),
             {"xdims": [2], "ydims": [0]}, error="index")
    fam.case("tensordot/f32xf64/error", "tensordot", [x3, rnd([3, 2], "float64")],
             lambda x, y: torch.tensordot(x, y, ([1], [0])), {"xdims": [1], "ydims": [0]}, error="dtype")


CDIST_PLANS = [([4, 3], [5, 3], 2.0), ([4, 3], [5, 3], 1.0), ([4, 3], [5, 3], 0.0), ([4, 3], [5, 3], INF),
               ([4, 3], [5, 3], 0.5), ([30, 3], [4, 3], 2.0), ([2, 1, 3, 2], [3, 4, 2], 2.0),
               ([2, 27, 4], [1, 3, 4], 2.0), ([0, 3], [2, 3], 2.0)]


def group5(fam):
    for a, b, p in CDIST_PLANS:
        for dt in FLOATS if p == 2.0 and a == [30, 3] else ["float32"]:
            fam.case(f"cdist/{SHORT[dt]}/{a}x{b}/p={p}", "cdist", [rnd(a, dt), rnd(b, dt)],
                     lambda x, y, p=p: torch.cdist(x, y, p), {"p": p})
    x = vals([[0.0, 0.0], [1.0, 1.0], [1.0, 2.0]], "float32")
    fam.case("cdist/f32/ties/p=inf", "cdist", [x, x], lambda x, y: torch.cdist(x, y, INF), {"p": INF})
    fam.case("cdist/f32/same/p=2", "cdist", [x, x], lambda x, y: torch.cdist(x, y), {"p": 2.0})
    fam.case("cdist/f32/p=-1/error", "cdist", [x, x], lambda x, y: torch.cdist(x, y, -1.0), {"p": -1.0}, error="value")
    fam.case("cdist/f32/[3]/error", "cdist", [rnd([3], "float32"), x], lambda x, y: torch.cdist(x, y), {"p": 2.0},
             error="shape")
    fam.case("cdist/f32/features/error", "cdist", [x, rnd([2, 3], "float32")], lambda x, y: torch.cdist(x, y), {"p": 2.0},
             error="shape")
    fam.case("cdist/f32xf64/error", "cdist", [x, x.double()], lambda x, y: torch.cdist(x, y), {"p": 2.0}, error="dtype")
    fam.case("cdist/i32/error", "cdist", [rnd([2, 2], "int32"), rnd([2, 2], "int32")], lambda x, y: torch.cdist(x, y),
             {"p": 2.0}, error="dtype")


def mathops():
    fam = Family("mathops", 83)
    group1(fam)
    group2(fam)
    group3(fam)
    group4(fam)
    group5(fam)
    return fam


def grad_group4(fam):
    g = fam.gcase
    for dt in ["float64"]:
        s = SHORT[dt]
        g(f"cross/{s}/[2,3]x[1,3]/dim=-1/squared", "cross", [rnd([2, 3], dt), rnd([1, 3], dt)],
          lambda x, y: torch.linalg.cross(x, y) ** 2, {"dim": -1, "square": True}, hvp=True)
        g(f"kron/{s}/[2,3]x[2,1]/squared", "kron", [rnd([2, 3], dt), rnd([2, 1], dt)], lambda x, y: torch.kron(x, y) ** 2,
          {"square": True}, hvp=True)
        g(f"tensordot/{s}/[2,3,4]x[4,3]/squared", "tensordot", [rnd([2, 3, 4], dt), rnd([4, 3], dt)],
          lambda x, y: torch.tensordot(x, y, ([1, 2], [1, 0])) ** 2, {"xdims": [1, 2], "ydims": [1, 0], "square": True},
          hvp=True)


def grad_group5(fam):
    g = fam.gcase
    for a, b, p, hvp in (([4, 3], [5, 3], 2.0, False), ([30, 3], [4, 3], 2.0, True), ([4, 3], [5, 3], 1.0, False),
                         ([4, 3], [5, 3], 0.5, False)):
        g(f"cdist/f64/{a}x{b}/p={p}", "cdist", [rnd(a, "float64"), rnd(b, "float64")],
          lambda x, y, p=p: torch.cdist(x, y, p), {"p": p}, hvp=hvp)
    x = vals([[0.0, 0.0], [1.0, 1.0], [1.0, 2.0]], "float64")
    g("cdist/f64/ties/p=inf", "cdist", [x, x + 0.0], lambda x, y: torch.cdist(x, y, INF), {"p": INF}, nonsmooth=True)
    g("cdist/f64/same/p=2", "cdist", [x, x + 0.0], lambda x, y: torch.cdist(x, y), {"p": 2.0}, nonsmooth=True)


def grad_mathops():
    fam = GradFamily("grad_mathops", 84)
    grad_group1(fam)
    grad_group2(fam)
    grad_group3(fam)
    grad_group4(fam)
    grad_group5(fam)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (mathops, grad_mathops):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
