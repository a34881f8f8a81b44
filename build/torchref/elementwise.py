"""Cases for the elementwise ops: unary, binary, where and the scalar forms."""

import torch
import torch.nn.functional as F

from refcase import DTYPES, FLOATS, INF, INTS, NAN, SHORT, SPECIALS, Family, L, rnd, vals


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


# The inverse and hyperbolic trigonometric functions (issue 19), after the
# others so that the others' inputs stay as they were: op key, torch
# function, input domain (values), input domain (gradients).
TRIG = [
    ("tan", torch.tan, "any", "any"), ("asin", torch.asin, "unit", "unit"), ("acos", torch.acos, "unit", "unit"),
    ("atan", torch.atan, "wide", "wide"), ("sinh", torch.sinh, "wide", "any"), ("cosh", torch.cosh, "wide", "any"),
    ("asinh", torch.asinh, "wide", "wide"), ("acosh", torch.acosh, "gt1", "gt1"), ("atanh", torch.atanh, "unit", "unit"),
]

# Their edges: domain edges (±1), just inside and past them, tiny values
# (where the functions are x), near float32's overflow of sinh and cosh
# (89.416), large magnitudes, and the float specials. Each is exact in
# float32, so that a device without float64 runs the float64 case on the
# same inputs (a float64 1e30 rounded to float32 has another tangent).
TRIG_EDGES = [1.0, -1.0, 1 - 2**-11, -(1 - 2**-11), 1 + 2**-10, -(1 + 2**-10), 2**-100, -2**-100, 2**-27, -2**-27,
              2**-13, 2.0, 4096.5, 88.5, 89.5, -89.5, 710.0, 1e10, -1e10, 2.0**100, 1.5 * 2.0**127, -1.5 * 2.0**127,
              0.0, -0.0, INF, -INF, NAN]
# And in float64 only: torch's float32 sinh and cosh overflow to ±Inf from
# 88.72 on, where exp(|x|) does, though they are finite up to 89.416;
# lathe gives the finite value (backends/wgpu's TestFloatAccuracy holds
# float32 there to the exact one).
TRIG_EDGES64 = [-89.25, 89.0]


def finite_near_overflow(fn):
    """torch's float64 sinh and cosh overflow where exp(|x|) does, from
    709.78, although both are finite up to 710.4758 (e^|x|/2 there, as
    glibc's and CUDA's libdevice give; the H200's cuda:0 returned
    1.117e308 for 710). Past 709 e^-|x| is below float64's precision, so
    the reference is e^|x|/2 taken as (e^(|x|/2) / 2) * e^(|x|/2), which
    overflows only where the result does."""
    def f(x):
        y = fn(x)
        if x.dtype != torch.float64:
            return y
        h = torch.exp(x.abs() / 2)
        big = (h / 2) * h
        if fn is torch.sinh:
            big = torch.copysign(big, x)
        return torch.where(x.abs() > 709, big, y)
    return f


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
    for op, fn, domain, _ in TRIG:
        unary_cases(fam, op, fn, domain, False)
        for dt in FLOATS:
            edges = TRIG_EDGES + (TRIG_EDGES64 if dt == "float64" else [])
            ref = finite_near_overflow(fn) if op in ("sinh", "cosh") else fn
            fam.case(f"{op}/{SHORT[dt]}/edges", op, [vals(edges, dt)], ref)
    # softplus with its beta and threshold (issue 19): where beta·x crosses
    # the threshold, a negative beta, and the specials.
    for beta, thr in ((2.0, 20.0), (0.5, 3.0), (-1.5, 10.0), (1.0, 1.0)):
        f = lambda x, beta=beta, thr=thr: F.softplus(x, beta, thr)
        unary_cases(fam, "softplus_with", f, "wide", False, {"beta": beta, "threshold": thr},
                    f"/beta={beta},threshold={thr}")
    fam.case("softplus_with/f32/beta=0", "softplus_with", [rnd([3], "float32")], attrs={"beta": 0.0, "threshold": 20.0},
             error="value")
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
    ("maximum_scalar", lambda x, s: torch.maximum(x, torch.tensor(s)), (0.5,), (1,)),
    ("minimum_scalar", lambda x, s: torch.minimum(x, torch.tensor(s)), (0.5,), (1,)),
    ("eq_scalar", lambda x, s: x == s, (0.5,), (1,)),
    ("ne_scalar", lambda x, s: x != s, (0.5,), (1,)),
    ("lt_scalar", lambda x, s: x < s, (0.5,), (1,)),
    ("le_scalar", lambda x, s: x <= s, (0.5,), (1,)),
    ("gt_scalar", lambda x, s: x > s, (0.5,), (1,)),
    ("ge_scalar", lambda x, s: x >= s, (0.5,), (1,)),
]


COMPARE = ("eq_scalar", "ne_scalar", "lt_scalar", "le_scalar", "gt_scalar", "ge_scalar")


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
            # Mixed dtypes promote as torch.result_type: the wider float, a
            # float over an int, and a 0-d tensor only across categories.
            # (More mixed cases at the end, so that these inputs stay as they were.)
            fam.case(f"{op}/f32xf64", op, [rnd([2, 3], "float32"), rnd([2, 3], "float64")], fn)
        for dt in extra:
            p = f"{op}/{SHORT[dt]}"
            rd2 = "nonneg" if op == "pow" else "any"
            ld2 = "small" if op in ("pow", "mul") else "any"
            fam.case(f"{p}/same[3,4]", op, [rnd([3, 4], dt, ld2), rnd([3, 4], dt, rd2)], fn)
            fam.case(f"{p}/bcast[3,1]x[1,4]", op, [rnd([3, 1], dt, ld2), rnd([1, 4], dt, rd2)], fn)
            fam.case(f"{p}/0dx[2,3]", op, [rnd([], dt, ld2), rnd([2, 3], dt, rd2)], fn)
        if not extra:
            # True division and atan2 of integers are float32, as torch's.
            fam.case(f"{op}/i32", op, [rnd([2, 3], "int32"), rnd([2, 3], "int32", "nonneg")], fn)
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
    fam.case("where/f32xf64", "where", [rnd([2, 3], "bool"), rnd([2, 3], "float32"), rnd([2, 3], "float64")], torch.where)
    fam.case("where/i32x0d_f64", "where", [rnd([2, 3], "bool"), rnd([2, 3], "int32"), rnd([], "float64")], torch.where)
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
        if op in COMPARE:
            # A comparison with a scalar is exact, as torch's: 2.5 meets int32.
            fam.case(f"{op}/i32/s=2.5/[3]", op, [rnd([3], "int32")], lambda x, fn=fn: fn(x, 2.5), {"s": 2.5})
        else:
            # A fractional scalar is a float: int32 with 2.5 computes in float32.
            fam.case(f"{op}/i32/s=2.5/[3]", op, [rnd([3], "int32", "small")], lambda x, fn=fn: fn(x, 2.5), {"s": 2.5})
    x = vals([-2**31, -3, -1, 0, 1, 2, 3, 2**31 - 1], "int32")
    for op, fn, _, _ in SCALAR:
        if op in COMPARE:
            # Past int32's range too (x < 3e9 is all true), and NaN is unordered.
            for s in (-0.5, 3e9, -3e9, INF, NAN):
                fam.case(f"{op}/i32/s={s}/extremes", op, [x], lambda x, s=s, fn=fn: fn(x, s), {"s": s})
        elif op != "div_scalar":
            # 3e9 is an integer out of int32's range, where torch would wrap.
            fam.case(f"{op}/i32/s=3e9/error", op, [rnd([3], "int32")], attrs={"s": 3e9}, error="value")
    for op, fn, ld, rd, _ in BINARY:
        if not op.startswith("logical"):
            fam.case(f"{op}/f32x0d_f64", op, [rnd([2, 3], "float32", ld), rnd([], "float64", rd)], fn)
            fam.case(f"{op}/i32x0d_f64", op, [rnd([2, 3], "int32", "small"), rnd([], "float64", rd)], fn)
            fam.case(f"{op}/i32xf32", op, [rnd([2, 3], "int32", "small"), rnd([2, 3], "float32", rd)], fn)
            fam.case(f"{op}/boolxi32", op, [rnd([2, 3], "bool"), rnd([2, 3], "int32", "nonneg")], fn,
                     error="dtype" if op == "sub" else None)
    remainder_cases(fam)
    add_scaled_cases(fam)
    return fam


def add_scaled_cases(fam):
    """torch.add with alpha (lathe's AddScaled), after the rest so that their
    inputs stay as they were. torch's vectorised loop fuses the product and
    the sum, as lathe's kernels do."""
    for dt in FLOATS:
        for alpha in (-0.75, 3.0, 1e-3):
            f = lambda x, y, a=alpha: torch.add(x, y, alpha=a)
            p = f"add_scaled/{SHORT[dt]}/alpha={alpha}"
            fam.case(f"{p}/same[3,40]", "add_scaled", [rnd([3, 40], dt), rnd([3, 40], dt)], f, {"alpha": alpha})
            fam.case(f"{p}/bcast[3,1]x[1,4]", "add_scaled", [rnd([3, 1], dt), rnd([1, 4], dt)], f, {"alpha": alpha})
            fam.case(f"{p}/0dx[2,3]", "add_scaled", [rnd([], dt), rnd([2, 3], dt)], f, {"alpha": alpha})
            fam.case(f"{p}/transposed[3,4]", "add_scaled", [L(rnd([3, 4], dt), "transposed"), rnd([3, 4], dt)], f,
                     {"alpha": alpha})
            fam.case(f"{p}/special[7,1]x[1,7]", "add_scaled", [vals(BIN_SPECIALS, dt, [7, 1]), vals(BIN_SPECIALS, dt, [1, 7])],
                     f, {"alpha": alpha})
    f = lambda x, y: torch.add(x, y, alpha=0.5)
    fam.case("add_scaled/f32xf64", "add_scaled", [rnd([2, 3], "float32"), rnd([2, 3], "float64")], f, {"alpha": 0.5})
    fam.case("add_scaled/f32x0d_f64", "add_scaled", [rnd([2, 3], "float32"), rnd([], "float64")], f, {"alpha": 0.5})
    fam.case("add_scaled/i32xf32", "add_scaled", [rnd([2, 3], "int32", "small"), rnd([2, 3], "float32")], f,
             {"alpha": 0.5})
    # Integers: torch takes an integral alpha; lathe's op is for floats.
    fam.case("add_scaled/i32", "add_scaled", [rnd([2, 3], "int32", "small"), rnd([2, 3], "int32", "small")],
             attrs={"alpha": 2.0}, error="dtype")
    fam.case("add_scaled/f32/shape[2,3]x[4]", "add_scaled", [rnd([2, 3], "float32"), rnd([4], "float32")],
             attrs={"alpha": 2.0}, error="shape")


# remainder and fmod (after the other binary cases, so that their inputs
# stay as they were): op key, torch function, scalar op key.
REMAINDER = [("remainder", torch.remainder, "remainder_scalar"), ("fmod", torch.fmod, "fmod_scalar")]

# Specials on both sides: signed zeros (a zero divisor gives NaN), ±Inf
# (an infinite divisor gives x, or x + y where the signs differ, for
# remainder) and NaN.
REM_SPECIALS = [0.0, -0.0, 1.5, -1.5, 5.25, -5.25, INF, -INF, NAN]

# Large and small magnitudes, each exact in float32 (so that a device
# without float64 runs the float64 case on the same inputs), whose
# quotients are far past 2²⁴: fmod is exact, never x - trunc(x/y)·y.
REM_LARGE_X = [1.5 * 2.0**127, -1.5 * 2.0**127, 1.5 * 2.0**100, 2.0**60 + 2.0**40, 1e10, -1e10, 7.0, 2.0**-20]
REM_LARGE_Y = [3.0, -7.0, 0.375, 3 * 2.0**-10, -1e10]


def dyadic(shape, dt, scale, nonzero=False):
    """Seeded floats that are multiples of 2⁻⁶, exact in float32, so that
    fmod and remainder give one result in float32 and float64 and a device
    without float64 narrows the float64 cases exactly."""
    x = torch.round(torch.randn(shape, dtype=torch.float64) * scale * 64) / 64
    if nonzero:
        x = torch.where(x < 0, x - 0.25, x + 0.25)
    return x.to(DTYPES[dt])


def int_divisor(shape, dt):
    """Seeded nonzero integers in [-9, 9]."""
    q = rnd(shape, dt)
    return torch.where(q == 0, torch.full_like(q, 4), q)


def remainder_cases(fam):
    for op, fn, sop in REMAINDER:
        for dt in FLOATS:
            p = f"{op}/{SHORT[dt]}"
            r = lambda s, d=dt: dyadic(s, d, 8)
            q = lambda s, d=dt: dyadic(s, d, 2, nonzero=True)
            fam.case(f"{p}/same[3,4]", op, [r([3, 4]), q([3, 4])], fn)
            fam.case(f"{p}/bcast[3,1]x[1,4]", op, [r([3, 1]), q([1, 4])], fn)
            fam.case(f"{p}/0dx[2,3]", op, [r([]), q([2, 3])], fn)
            fam.case(f"{p}/empty[0,3]x[1,3]", op, [r([0, 3]), q([1, 3])], fn)
            fam.case(f"{p}/transposed[3,4]", op, [L(r([3, 4]), "transposed"), q([3, 4])], fn)
            fam.case(f"{p}/strided[2,3]", op, [r([2, 3]), L(q([2, 3]), "strided")], fn)
            n = len(REM_SPECIALS)
            fam.case(f"{p}/special[{n},1]x[1,{n}]", op,
                     [vals(REM_SPECIALS, dt, [n, 1]), vals(REM_SPECIALS, dt, [1, n])], fn)
            nx, ny = len(REM_LARGE_X), len(REM_LARGE_Y)
            fam.case(f"{p}/large[{nx},1]x[1,{ny}]", op,
                     [vals(REM_LARGE_X, dt, [nx, 1]), vals(REM_LARGE_Y, dt, [1, ny])], fn)
            fam.case(f"{p}/shape[2,3]x[4]", op, [r([2, 3]), q([4])], fn, error="shape")
            for s in (2.5, -1.5, 0.0):
                f = lambda x, s=s: fn(x, s)
                fam.case(f"{sop}/{SHORT[dt]}/s={s}/[3,4]", sop, [r([3, 4])], f, {"s": s})
            fam.case(f"{sop}/{SHORT[dt]}/s=2.5/special", sop, [vals(REM_SPECIALS, dt)], lambda x: fn(x, 2.5),
                     {"s": 2.5})
        for dt in INTS:
            p = f"{op}/{SHORT[dt]}"
            fam.case(f"{p}/same[3,4]", op, [rnd([3, 4], dt), int_divisor([3, 4], dt)], fn)
            fam.case(f"{p}/bcast[3,1]x[1,4]", op, [rnd([3, 1], dt), int_divisor([1, 4], dt)], fn)
            fam.case(f"{p}/0dx[2,3]", op, [rnd([], dt), int_divisor([2, 3], dt)], fn)
            fam.case(f"{p}/strided[2,3]", op, [L(rnd([2, 3], dt), "transposed"), L(int_divisor([2, 3], dt), "strided")], fn)
            bits = 31 if dt == "int32" else 63
            x = [-2**bits, -2**bits + 1, -7, -1, 0, 1, 7, 2**bits - 1]
            y = [-2**bits, -3, 2, 5, 2**bits - 1]  # not -1: the least integer over -1 traps in C
            fam.case(f"{p}/extremes[8,1]x[1,5]", op, [vals(x, dt, [8, 1]), vals(y, dt, [1, 5])], fn)
            # An integer divisor of zero: torch raises ZeroDivisionError.
            fam.case(f"{p}/zero_divisor", op, [vals([5, -3, 2], dt), vals([2, 0, 1], dt)], fn, error="value")
            for s in (3, -2):
                fam.case(f"{sop}/{SHORT[dt]}/s={s}/[3,4]", sop, [rnd([3, 4], dt)], lambda x, s=s: fn(x, s),
                         {"s": float(s)})
            fam.case(f"{sop}/{SHORT[dt]}/s=0", sop, [rnd([3], dt)], lambda x: fn(x, 0), {"s": 0.0}, error="value")
        # Mixed dtypes promote as the other binary ops: int32 with float32
        # is float32, and an int32 with a fractional scalar too.
        fam.case(f"{op}/i32xf32", op, [rnd([2, 3], "int32"), dyadic([2, 3], "float32", 2, nonzero=True)], fn)
        fam.case(f"{sop}/i32/s=2.5/[3]", sop, [rnd([3], "int32")], lambda x: fn(x, 2.5), {"s": 2.5})
