"""Cases of torch.special's functions that lathe builds as composites
(special.json) and their gradients (grad_special.json): erfcx, entr, ndtr,
log_ndtr, ndtri, spherical_bessel_j0, zeta, polygamma, multigammaln and
nextafter, the modified Bessel functions of the second kind and the Bessel
functions J0, J1, Y0 and Y1; and of
the kernels of gammainc and gammaincc (torch.igamma, igammac) and of the
orthogonal polynomials (chebyshev_polynomial_t ... legendre_polynomial_p)
and airy_ai.

Run it from the repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/special.py

(gen.py runs it too, with every other family.) Op keys and attributes are
listed with the Go table, internal/conformance/ops_special.go.

Where lathe differs from torch the cases stay where they agree: torch's
ndtr is (1 + erf(x/√2))/2, which loses the left tail (lathe's keeps it),
so its inputs stay above -2.5; float16 and bfloat16 are computed in
float32 and rounded once, the reference so made from torch's float32
result (torch's cpu refuses float16 for most of them). Gradients:
spherical_bessel_j0 and nextafter have none in torch, zeta has q's only
(x is an integer tensor in its gradient cases, which torch promotes), and
igamma and igammac x's only (a is marked nograd: torch refuses to
differentiate it, while the Hessian-vector product has the mixed term).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily  # noqa: E402
from refcase import FLOATS, INF, NAN, SHORT, Family, L, rnd, vals  # noqa: E402

S = torch.special

UNARY = {
    "special_erfcx": (S.erfcx, [NAN, INF, -INF, 0.0, -0.0, 1e-30, 0.3, 1.24, 1.25, 1.3, 2.8, 2.9, 5.0, 10.0, 26.0, 30.0,
                                1e5, 1e30, -0.5, -1.3, -3.0, -4.5, -6.5, -9.0, -9.5, -26.0, -27.0, -1e5]),
    "special_entr": (S.entr, [NAN, INF, -INF, 0.0, -0.0, 1e-30, 1e-5, 0.3, 1.0, 2.5, 1e30, -1e-30, -2.0]),
    "special_ndtr": (S.ndtr, [NAN, INF, -INF, 0.0, -0.0, 1e-30, 0.5, -0.5, 1.5, -1.5, -2.0, 3.0, 6.0, 10.0, 40.0]),
    "special_log_ndtr": (S.log_ndtr, [NAN, INF, -INF, 0.0, -0.0, 0.5, -0.5, -0.99, -1.0, -1.01, -3.0, 2.0, 6.0, 10.0,
                                      -10.0, -30.0, -100.0, -1e3, -1e5]),
    "special_ndtri": (S.ndtri, [NAN, INF, -INF, 0.0, -0.0, 1.0, 1.5, -0.5, 0.5, 0.1, 0.13, 0.14, 0.86, 0.87, 0.9,
                                0.999, 1e-5, 1e-20, 1e-30, 0.25, 0.75]),
    "special_spherical_bessel_j0": (S.spherical_bessel_j0, [NAN, INF, -INF, 0.0, -0.0, 1e-30, 0.1, 0.49, 0.5, -0.5, 1.0,
                                                            -2.0, 3.14159, 10.0, -100.0, 1e4]),
}
# Where torch's own float32 result is not what its formula means (ndtr's
# cancellation), or the f64 special values do not exist in float32.
F64_ONLY = {"special_erfcx": [1e30, 1e5], "special_log_ndtr": [-1e5]}


def bf16(fn):
    """fn in float32, rounded to bfloat16 once (lathe's 16-bit rule)."""
    return lambda x: fn(x.float()).to(torch.bfloat16)


def group_unary(fam):
    for op, (fn, sp) in UNARY.items():
        dom = "any" if op != "special_ndtri" else "unit"
        for dt in FLOATS:
            s = SHORT[dt]
            vs = [v for v in sp if dt == "float64" or v not in F64_ONLY.get(op, [])]
            if op == "special_ndtr" and dt == "float32":
                vs = [v for v in vs if not v <= -2.0]
            fam.case(f"{op}/{s}/special", op, [vals(vs, dt)], fn)
            x = rnd([3, 4], dt, dom)
            if op == "special_ndtri":
                x = (x + 1) / 2
            elif op == "special_entr":
                x = x.abs()
            fam.case(f"{op}/{s}/[3,4]", op, [x], fn)
        fam.case(f"{op}/f32/transposed[3,4]", op, [L(rnd([3, 4], "float32", "unit").abs(), "transposed")], fn)
        fam.case(f"{op}/f32/0d", op, [vals(0.375, "float32")], fn)
        fam.case(f"{op}/f32/empty[0,3]", op, [rnd([0, 3], "float32")], fn)
        fam.case(f"{op}/i64/[4]", op, [vals([0, 1, 2, -1], "int64")], fn)
        fam.case(f"{op}/bool/[2]", op, [vals([True, False], "bool")], fn)
        fam.case(f"{op}/bf16/[5]", op, [vals([0.0, 0.25, 0.5, 0.75, 1.5], "bfloat16")], bf16(fn))


def group_zeta(fam):
    xs = [2.0, 3.0, 2.0, 2.5, 1.0, 0.5, 2.0, 2.0, 3.0, 4.0, 2.0, 5.0, 2.0, 10.0, 1.5, 1.001, 30.0, 2.0, 3.0, 2.0, 2.0,
          3.0, 7.0, 2.5, 3.0, NAN, 2.0, 4.0, INF]
    qs = [-1.5, -2.0, -10.5, -1.5, 1.0, 1.0, 0.0, -0.0, 1e-5, 0.3, 1.0, 2.0, 10.0, 3.0, 1e8, 1.0, 0.5, INF, -INF, NAN,
          -7.25, -0.75, -3.6, 7.0, 1e3, 1.0, 20.0, -20.5, 2.0]
    for dt in FLOATS:
        s = SHORT[dt]
        # float64's special values are not float32's (1.001, the poles'
        # neighbours): not narrowed on wgpu.
        f64only = {"float64_only": True} if dt == "float64" else None
        fam.case(f"special_zeta/{s}/special", "special_zeta", [vals(xs, dt), vals(qs, dt)], S.zeta, f64only)
        fam.case(f"special_zeta/{s}/[3,4]", "special_zeta", [rnd([3, 4], dt, "gt1") + 0.5, rnd([3, 4], dt, "pos")],
                 S.zeta)
        fam.case(f"special_zeta/{s}/bcast[2,1]x[3]", "special_zeta", [vals([[2.0], [3.5]], dt), rnd([3], dt, "pos")],
                 S.zeta)
    fam.case("special_zeta/i64xf32", "special_zeta", [vals([2, 3, 4], "int64"), vals([0.5, 1.0, 2.5], "float32")], S.zeta)
    fam.case("special_zeta/i64xi64", "special_zeta", [vals([2, 3, 4], "int64"), vals([1, 2, 3], "int64")], S.zeta)
    fam.case("special_zeta/f32xf64", "special_zeta", [vals([2.0, 3.0], "float32"), vals([1.5, 2.0], "float64")], S.zeta)
    fam.case("special_zeta/f32/empty[0]", "special_zeta", [rnd([0], "float32"), rnd([0], "float32")], S.zeta)
    fam.case("special_zeta/f32/0d", "special_zeta", [vals(2.0, "float32"), vals(1.0, "float32")], S.zeta)
    fam.case("special_zeta/bf16", "special_zeta", [vals([2.0, 3.0], "bfloat16"), vals([1.5, 4.0], "bfloat16")],
             lambda x, q: S.zeta(x.float(), q.float()).to(torch.bfloat16))
    fam.case("special_zeta/f32/[2]x[3]/error", "special_zeta", [rnd([2], "float32"), rnd([3], "float32")], S.zeta,
             error="shape")


def group_polygamma(fam):
    sp = [NAN, INF, -INF, 0.0, -0.0, 1e-5, 0.5, 1.0, 2.0, 2.5, 10.0, 30.0, 1e3, -0.5, -1.5, -2.0, -3.6, -7.25]
    for n in range(5):
        for dt in FLOATS:
            s = SHORT[dt]
            vs = [v for v in sp if not (dt == "float32" and n >= 2 and v in (-1.5, -3.6, -7.25))]
            a = {"n": n, "float64_only": True} if dt == "float64" else {"n": n}
            fam.case(f"polygamma/{s}/n={n}/special", "polygamma", [vals(vs, dt)], lambda x, n=n: torch.polygamma(n, x), a)
            fam.case(f"polygamma/{s}/n={n}/[3,4]", "polygamma", [rnd([3, 4], dt, "pos")],
                     lambda x, n=n: torch.polygamma(n, x), {"n": n})
    fam.case("polygamma/f64/n=9/[4]", "polygamma", [vals([0.5, 1.0, 3.0, 10.0], "float64")],
             lambda x: torch.polygamma(9, x), {"n": 9})
    fam.case("polygamma/i64/n=1", "polygamma", [vals([1, 2, 3], "int64")], lambda x: torch.polygamma(1, x), {"n": 1})
    fam.case("polygamma/f32/n=2/transposed", "polygamma", [L(rnd([3, 4], "float32", "pos"), "transposed")],
             lambda x: torch.polygamma(2, x), {"n": 2})
    fam.case("polygamma/f32/n=1/empty[0]", "polygamma", [rnd([0], "float32")], lambda x: torch.polygamma(1, x), {"n": 1})
    fam.case("polygamma/f32/n=-1/error", "polygamma", [rnd([2], "float32", "pos")], lambda x: torch.polygamma(-1, x),
             {"n": -1}, error="value")
    for p in (1, 3):
        for dt in FLOATS:
            fam.case(f"special_multigammaln/{SHORT[dt]}/p={p}", "special_multigammaln", [rnd([2, 3], dt, "pos") + p],
                     lambda x, p=p: S.multigammaln(x, p), {"p": p})


def group_nextafter(fam):
    base = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -0.5, INF, -INF, NAN, 0.1, 3.0, -3.0, 1024.0, 1e-30]
    xs, ys = [], []
    for a in base:
        for b in (0.0, -0.0, INF, -INF, NAN, 1.0, a):
            xs.append(a)
            ys.append(b)
    for dt in FLOATS:
        s = SHORT[dt]
        attrs = {"float64_only": True} if dt == "float64" else None
        fam.case(f"nextafter/{s}/special", "nextafter", [vals(xs, dt), vals(ys, dt)], torch.nextafter, attrs)
        x = rnd([3, 4], dt, "wide")
        fam.case(f"nextafter/{s}/[3,4]", "nextafter", [x, rnd([3, 4], dt, "wide")], torch.nextafter, attrs)
        fam.case(f"nextafter/{s}/bcast[3,1]x[4]", "nextafter", [rnd([3, 1], dt), vals([INF, -INF, 0.0, 1.0], dt)],
                 torch.nextafter, attrs)
        big = 1.7976931348623157e308 if dt == "float64" else 3.4028234663852886e38
        fam.case(f"nextafter/{s}/largest", "nextafter", [vals([big, -big, big], dt), vals([INF, -INF, 0.0], dt)],
                 torch.nextafter, attrs)
    fam.case("nextafter/f64/subnormal", "nextafter", [vals([5e-324, -5e-324, 1e-310, 2.2250738585072014e-308], "float64"),
                                                      vals([1.0, 1.0, 0.0, 0.0], "float64")], torch.nextafter,
             {"float64_only": True})
    fam.case("nextafter/bf16", "nextafter", [vals([1.0, -2.0, 0.0, 3.5, INF], "bfloat16"),
                                             vals([2.0, 0.0, -1.0, INF, 0.0], "bfloat16")], torch.nextafter)
    fam.case("nextafter/f32xf64", "nextafter", [vals([1.0, 2.0], "float32"), vals([2.0, 0.0], "float64")],
             torch.nextafter, {"float64_only": True})
    fam.case("nextafter/f32/0d", "nextafter", [vals(1.0, "float32"), vals(2.0, "float32")], torch.nextafter)
    fam.case("nextafter/f32/empty[0,2]", "nextafter", [rnd([0, 2], "float32"), rnd([2], "float32")], torch.nextafter)
    fam.case("nextafter/i64/error", "nextafter", [vals([1, 2], "int64"), vals([2, 3], "int64")], torch.nextafter,
             error="dtype")
    fam.case("nextafter/f32/[2]x[3]/error", "nextafter", [rnd([2], "float32"), rnd([3], "float32")], torch.nextafter,
             error="shape")


# (a, x) pairs that take each branch of the incomplete gamma functions:
# P's and Q's series, the continued fraction, 1 - P and 1 - Q, Temme's
# expansion (20 < a < 200 with x within 30% of a; a > 200 within 4.5√a),
# the Lanczos form on both sides of 200, and the edges of the domain.
IGAMMA = [(0.5, 0.25), (1.0, 1.0), (2.0, 3.0), (3.0, 2.0), (0.1, 0.05), (5.0, 0.3), (0.01, 1e-3), (0.3, 0.8),
          (10.0, 0.6), (30.0, 2.0), (1.5, 40.0), (4.0, 4.4), (12.0, 7.0), (7.0, 12.0), (25.0, 24.0), (25.0, 30.0),
          (100.0, 80.0), (150.0, 160.0), (199.0, 199.5), (500.0, 510.0), (1e4, 9900.0), (250.0, 180.0),
          (250.0, 330.0), (180.0, 230.0), (50.0, 120.0), (1000.0, 100.0), (0.5, 700.0),
          (0.0, 0.0), (0.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (INF, 1.0), (INF, INF), (1.0, INF), (NAN, 1.0),
          (2.0, NAN), (0.5, 0.0), (0.0, INF), (-0.0, 2.0), (3.0, -0.0)]
# float32 keeps the pairs whose tails float32 holds to its own digits.
IGAMMA_F32 = [(a, x) for a, x in IGAMMA if (a, x) not in ((30.0, 2.0), (1.5, 40.0), (50.0, 120.0), (1e4, 9900.0))]


def group_igamma(fam):
    for op, fn in (("igamma", S.gammainc), ("igammac", S.gammaincc)):
        for dt in FLOATS:
            s = SHORT[dt]
            pairs = IGAMMA if dt == "float64" else IGAMMA_F32
            f64only = {"float64_only": True} if dt == "float64" else None
            fam.case(f"{op}/{s}/special", op, [vals([a for a, _ in pairs], dt), vals([x for _, x in pairs], dt)], fn,
                     f64only)
            fam.case(f"{op}/{s}/[3,4]", op, [rnd([3, 4], dt, "pos") * 4, rnd([3, 4], dt, "pos") * 4], fn)
            fam.case(f"{op}/{s}/bcast[2,1]x[3]", op, [vals([[0.7], [3.5]], dt), rnd([3], dt, "pos") * 3], fn)
        fam.case(f"{op}/f32/transposed[3,4]", op, [L(rnd([3, 4], "float32", "pos") * 3, "transposed"),
                                                   rnd([3, 4], "float32", "pos") * 3], fn)
        fam.case(f"{op}/f32xf64", op, [vals([2.0, 3.0], "float32"), vals([1.5, 2.0], "float64")], fn,
                 {"float64_only": True})
        fam.case(f"{op}/f32/0d", op, [vals(2.0, "float32"), vals(1.0, "float32")], fn)
        fam.case(f"{op}/f32/empty[0,3]", op, [rnd([0, 3], "float32"), rnd([3], "float32")], fn)
        for dt in ("bfloat16", "float16"):
            a, x = vals([0.5, 2.0, 3.0, 25.0], dt), vals([1.0, 2.5, 0.25, 24.0], dt)
            fam.case(f"{op}/{SHORT[dt]}", op, [a, x], lambda a, x, fn=fn: fn(a.float(), x.float()).to(a.dtype))
        fam.case(f"{op}/i64/error", op, [vals([1, 2], "int64"), vals([2, 3], "int64")], fn, error="dtype")
        fam.case(f"{op}/f32/[2]x[3]/error", op, [rnd([2], "float32"), rnd([3], "float32")], fn, error="shape")


BESSEL_K = {"special_modified_bessel_k0": S.modified_bessel_k0, "special_modified_bessel_k1": S.modified_bessel_k1,
            "special_scaled_modified_bessel_k0": S.scaled_modified_bessel_k0,
            "special_scaled_modified_bessel_k1": S.scaled_modified_bessel_k1}
# Both sides of the branch at 2, the pole at 0, the underflow of the
# unscaled functions (past 705 in float64, 85 in float32) and the edges.
BESSEL_K_VALUES = [NAN, INF, -INF, 0.0, -0.0, -1.0, 1e-30, 1e-5, 0.1, 0.5, 1.0, 1.9999, 2.0, 2.0001, 3.0, 8.0, 30.0,
                   80.0, 90.0, 700.0, 710.0]


def group_bessel_k(fam):
    """The modified Bessel functions of the second kind (torch 1.13's
    special.modified_bessel_k0 ... scaled_modified_bessel_k1), composites
    in lathe; torch has no gradient for them."""
    for op, fn in BESSEL_K.items():
        for dt in FLOATS:
            s = SHORT[dt]
            f64only = {"float64_only": True} if dt == "float64" else None
            fam.case(f"{op}/{s}/special", op, [vals(BESSEL_K_VALUES, dt)], fn, f64only)
            fam.case(f"{op}/{s}/[3,4]", op, [rnd([3, 4], dt, "pos") * 5], fn)
        fam.case(f"{op}/f32/transposed[3,4]", op, [L(rnd([3, 4], "float32", "pos") * 3, "transposed")], fn)
        fam.case(f"{op}/f32/0d", op, [vals(0.375, "float32")], fn)
        fam.case(f"{op}/f32/empty[0,3]", op, [rnd([0, 3], "float32")], fn)
        fam.case(f"{op}/i64/[4]", op, [vals([0, 1, 2, 3], "int64")], fn)
        fam.case(f"{op}/bf16/[5]", op, [vals([0.25, 0.5, 1.5, 2.5, 6.0], "bfloat16")], bf16(fn))


BESSEL_JY = {"special_bessel_j0": S.bessel_j0, "special_bessel_j1": S.bessel_j1, "special_bessel_y0": S.bessel_y0,
             "special_bessel_y1": S.bessel_y1}
# Where torch 1.13's approximations are Cephes's: below 2 and from 25 on.
# Between, its denominators drop Cephes's leading 1 (up to 6e-6 off at 5),
# so lathe's are checked against mpmath there (ops_bessel_j_test.go).
BESSEL_JY_VALUES = [NAN, INF, -INF, 0.0, -0.0, -1.0, -1.5, 1e-30, 1e-5, 0.1, 0.5, 1.0, 1.5, 2.0, 25.0, 31.5, 60.0]


def group_bessel_jy(fam):
    """The Bessel functions of the first and second kinds (torch 1.13's
    special.bessel_j0 ... bessel_y1), composites in lathe; torch has no
    gradient for them."""
    for op, fn in BESSEL_JY.items():
        for dt in FLOATS:
            s = SHORT[dt]
            f64only = {"float64_only": True} if dt == "float64" else None
            fam.case(f"{op}/{s}/special", op, [vals(BESSEL_JY_VALUES, dt)], fn, f64only)
            fam.case(f"{op}/{s}/[3,4]", op, [rnd([3, 4], dt, "unit").abs() * 2], fn)
        fam.case(f"{op}/f32/transposed[3,4]", op, [L(rnd([3, 4], "float32", "unit").abs() * 2, "transposed")], fn)
        fam.case(f"{op}/f32/0d", op, [vals(0.375, "float32")], fn)
        fam.case(f"{op}/f32/empty[0,3]", op, [rnd([0, 3], "float32")], fn)
        fam.case(f"{op}/i64/[4]", op, [vals([0, 1, 2, 30], "int64")], fn)
        fam.case(f"{op}/bf16/[5]", op, [vals([0.25, 0.5, 1.5, 2.0, 26.0], "bfloat16")], bf16(fn))


POLYS = {"special_chebyshev_polynomial_t": S.chebyshev_polynomial_t, "special_chebyshev_polynomial_u": S.chebyshev_polynomial_u,
         "special_chebyshev_polynomial_v": S.chebyshev_polynomial_v, "special_chebyshev_polynomial_w": S.chebyshev_polynomial_w,
         "special_shifted_chebyshev_polynomial_t": S.shifted_chebyshev_polynomial_t,
         "special_shifted_chebyshev_polynomial_u": S.shifted_chebyshev_polynomial_u,
         "special_shifted_chebyshev_polynomial_v": S.shifted_chebyshev_polynomial_v,
         "special_shifted_chebyshev_polynomial_w": S.shifted_chebyshev_polynomial_w,
         "special_hermite_polynomial_h": S.hermite_polynomial_h, "special_hermite_polynomial_he": S.hermite_polynomial_he,
         "special_laguerre_polynomial_l": S.laguerre_polynomial_l, "special_legendre_polynomial_p": S.legendre_polynomial_p}
# The endpoints of [-1, 1] and [0, 1], points inside and outside them, and
# NaN; not ±Inf, where torch's recurrence gives NaN and lathe's ±Inf
# (ops_orthopoly_test.go checks those).
POLY_VALUES = [NAN, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.90625, -0.3125, 1.25, -1.5, 3.0, 1e-30]


def group_orthopoly(fam):
    """torch.special's orthogonal polynomials with an integer degree n,
    kernels in lathe; torch has no gradient for them (lathe's derivatives
    are checked against exact ones in ops_orthopoly_test.go)."""
    for op, fn in POLYS.items():
        for dt in FLOATS:
            s = SHORT[dt]
            for n in (-1, 0, 1, 2, 5, 7, 9, 12, 30):
                attrs = {"n": n, "float64_only": True} if dt == "float64" else {"n": n}
                fam.case(f"{op}/{s}/n={n}/special", op, [vals(POLY_VALUES, dt)], lambda x, n=n, fn=fn: fn(x, n), attrs)
            fam.case(f"{op}/{s}/n=4/[3,4]", op, [rnd([3, 4], dt, "unit")], lambda x, fn=fn: fn(x, 4), {"n": 4})
            # float64's own: on a float32 device its tolerance is float64's.
            attrs = {"n": 11, "float64_only": True} if dt == "float64" else {"n": 11}
            fam.case(f"{op}/{s}/n=11/[3,4]", op, [rnd([3, 4], dt, "unit") * 1.2], lambda x, fn=fn: fn(x, 11), attrs)
        if "chebyshev" in op:  # the closed forms at a high degree, inside [-1, 1] or [0, 1]
            xs = [0.75, 0.046875, 0.6015625, 0.9995] if "shifted" in op else [0.5, -0.90625, 0.203125, 0.999]
            fam.case(f"{op}/f64/n=1000", op, [vals(xs, "float64")], lambda x, fn=fn: fn(x, 1000),
                     {"n": 1000, "float64_only": True})
        fam.case(f"{op}/f32/n=3/transposed[3,4]", op, [L(rnd([3, 4], "float32", "unit"), "transposed")],
                 lambda x, fn=fn: fn(x, 3), {"n": 3})
        fam.case(f"{op}/f32/n=3/0d", op, [vals(0.375, "float32")], lambda x, fn=fn: fn(x, 3), {"n": 3})
        fam.case(f"{op}/f32/n=3/empty[0,3]", op, [rnd([0, 3], "float32")], lambda x, fn=fn: fn(x, 3), {"n": 3})
        fam.case(f"{op}/i64/n=3/[4]", op, [vals([0, 1, 2, -3], "int64")], lambda x, fn=fn: fn(x, 3), {"n": 3})
        fam.case(f"{op}/bf16/n=3/[5]", op, [vals([0.25, 0.5, -0.75, 1.5, 2.0], "bfloat16")],
                 bf16(lambda x, fn=fn: fn(x, 3)), {"n": 3})


# Where torch 1.13's airy_ai is Cephes's: from -2.09 up, and far enough
# below it that its dropped leading 1s no longer show (1e-13 of the value
# at -5, 3e-14 at -10); between, lathe's are checked against mpmath
# (ops_airy_test.go). Not ±Inf, where torch's is NaN and lathe's 0.
AIRY_VALUES = [NAN, -100.0, -20.0, -10.0, -2.09, -2.0, -1.0, -0.5, -1e-30, 0.0, -0.0, 0.5, 1.0, 2.0, 2.0899, 2.09, 2.5, 5.0,
               8.3, 10.0, 25.0, 30.0, 50.0, 104.0]


def group_airy(fam):
    """torch.special.airy_ai, a kernel in lathe; torch has no gradient."""
    op, fn = "special_airy_ai", S.airy_ai
    for dt in FLOATS:
        s = SHORT[dt]
        f64only = {"float64_only": True} if dt == "float64" else None
        fam.case(f"{op}/{s}/special", op, [vals(AIRY_VALUES, dt)], fn, f64only)
        fam.case(f"{op}/{s}/[3,4]", op, [rnd([3, 4], dt, "unit") * 2], fn)
    fam.case(f"{op}/f32/transposed[3,4]", op, [L(rnd([3, 4], "float32", "unit") * 2, "transposed")], fn)
    fam.case(f"{op}/f32/0d", op, [vals(0.375, "float32")], fn)
    fam.case(f"{op}/f32/empty[0,3]", op, [rnd([0, 3], "float32")], fn)
    fam.case(f"{op}/i64/[4]", op, [vals([0, 1, 2, -1], "int64")], fn)
    fam.case(f"{op}/bf16/[5]", op, [vals([0.25, 0.5, -1.5, 2.5, 6.0], "bfloat16")], bf16(fn))


def grad_igamma(fam):
    for op, fn in (("igamma", S.gammainc), ("igammac", S.gammaincc)):
        for dt in FLOATS:
            s = SHORT[dt]
            h = dt == "float64"
            fam.gcase(f"{op}/{s}/[2,3]", op, [rnd([2, 3], dt, "pos") * 3 + 0.2, rnd([2, 3], dt, "pos") * 3 + 0.1], fn,
                      hvp=h, nograd=(0,))
            fam.gcase(f"{op}/{s}/bcast[2,1]x[3]", op, [vals([[0.7], [3.5]], dt), rnd([3], dt, "pos") * 3 + 0.1], fn,
                      hvp=h, nograd=(0,))


def grad_group(fam):
    g = fam.gcase
    for dt in FLOATS:
        s = SHORT[dt]
        h = dt == "float64"
        g(f"special_erfcx/{s}/[2,3]", "special_erfcx", [rnd([2, 3], dt, "wide")], S.erfcx, hvp=h)
        g(f"special_erfcx/{s}/special", "special_erfcx", [vals([-9.0, -4.5, 0.0, 1.25, 3.0, 8.0], dt)], S.erfcx, hvp=h)
        g(f"special_entr/{s}/[2,3]", "special_entr", [rnd([2, 3], dt, "pos")], S.entr, hvp=h)
        g(f"special_ndtr/{s}/[2,3]", "special_ndtr", [rnd([2, 3], dt, "wide")], S.ndtr, hvp=h)
        g(f"special_log_ndtr/{s}/[2,3]", "special_log_ndtr", [rnd([2, 3], dt, "wide")], S.log_ndtr, hvp=h)
        g(f"special_log_ndtr/{s}/special", "special_log_ndtr", [vals([-30.0, -5.0, -1.0, 0.0, 3.0], dt)], S.log_ndtr,
          hvp=h)
        g(f"special_ndtri/{s}/[2,3]", "special_ndtri", [(rnd([2, 3], dt, "unit") + 1) / 2], S.ndtri, hvp=h)
        g(f"special_ndtri/{s}/tails", "special_ndtri", [vals([0.02, 0.05, 0.2, 0.9, 0.97], dt)], S.ndtri, hvp=h)
        for n in range(4):
            g(f"polygamma/{s}/n={n}/[2,3]", "polygamma", [rnd([2, 3], dt, "pos")], lambda x, n=n: torch.polygamma(n, x),
              {"n": n}, hvp=h)
        g(f"polygamma/{s}/n=2/negative", "polygamma", [vals([-0.5, -1.25, -2.7], dt)], lambda x: torch.polygamma(2, x),
          {"n": 2}, hvp=h)
        g(f"special_zeta/{s}/q", "special_zeta", [vals([2, 3, 4, 2, 3, 6], "int64"), rnd([6], dt, "pos")], S.zeta, hvp=h)
        g(f"special_multigammaln/{s}/p=2", "special_multigammaln", [rnd([2, 3], dt, "pos") + 2],
          lambda x: S.multigammaln(x, 2), {"p": 2}, hvp=h)


def special():
    fam = Family("special", 103)
    group_unary(fam)
    group_zeta(fam)
    group_polygamma(fam)
    group_nextafter(fam)
    group_igamma(fam)
    group_bessel_k(fam)
    group_bessel_jy(fam)
    group_orthopoly(fam)
    group_airy(fam)
    return fam


def grad_special():
    fam = GradFamily("grad_special", 104)
    grad_group(fam)
    grad_igamma(fam)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (special, grad_special):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
