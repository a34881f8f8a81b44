"""Cases of torch's arithmetic, statistics and integer functions that lathe
builds as composites (mathextra.json) and their gradients
(grad_mathextra.json):

1. addmm, addmv, addr, baddbmm, addbmm, addcmul and addcdiv;
2. var_mean, std_mean, cov and corrcoef;
3. bitwise_and, bitwise_or, bitwise_xor, bitwise_not, the shifts, gcd, lcm,
   floor_divide and logical_xor;
4. signbit, xlog1py, ldexp, frexp, mvlgamma, isin, renorm, nanquantile,
   nanmedian and histogram.

Run it from the repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/mathextra.py

(gen.py runs it too, with every other family.) Op keys and attributes are
listed with the Go table, internal/conformance/ops_mathextra.go.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily  # noqa: E402
from refcase import FLOATS, INF, NAN, SHORT, Family, L, rnd, vals  # noqa: E402

BLAS = {
    "addmm": (torch.addmm, [2, 3], [3, 4], [2, 4]),
    "addmv": (torch.addmv, [2, 3], [3], [2]),
    "addr": (torch.addr, [2], [3], [2, 3]),
    "baddbmm": (torch.baddbmm, [2, 2, 3], [2, 3, 2], [2, 2, 2]),
    "addbmm": (torch.addbmm, [2, 2, 3], [2, 3, 2], [2, 2]),
}


def ba(beta, alpha):
    return {"beta": float(beta), "alpha": float(alpha)}


def blas_fn(fn, beta, alpha):
    return lambda c, a, b: fn(c, a, b, beta=beta, alpha=alpha)


def group1(fam):
    for op, (fn, sa, sb, sc) in BLAS.items():
        for dt, (beta, alpha) in (("float32", (1, 1)), ("float64", (0.5, -2))):
            s = SHORT[dt]
            a, b = rnd(sa, dt), rnd(sb, dt)
            fam.case(f"{op}/{s}/beta={beta},alpha={alpha}", op, [rnd(sc, dt), a, b],
                     blas_fn(fn, beta, alpha), ba(beta, alpha))
        # input broadcast from its last dim
        fam.case(f"{op}/f32/bcast-input", op, [rnd(sc[-1:], "float32"), rnd(sa, "float32"), rnd(sb, "float32")],
                 blas_fn(fn, 1, 1), ba(1, 1))
        # beta = 0 ignores NaN and Inf in input
        c = torch.full(sc, NAN)
        c.view(-1)[0] = INF
        fam.case(f"{op}/f32/beta=0/nan-input", op, [c, rnd(sa, "float32"), rnd(sb, "float32")],
                 blas_fn(fn, 0, 1.5), ba(0, 1.5))
        # integers: beta and alpha whole
        fam.case(f"{op}/i32/beta=2,alpha=3", op, [rnd(sc, "int32"), rnd(sa, "int32"), rnd(sb, "int32")],
                 blas_fn(fn, 2, 3), ba(2, 3))
        if op != "addr":  # torch truncates a fractional beta for an integer result
            fam.case(f"{op}/i64/beta=0.5,alpha=-1.5", op, [rnd(sc, "int64"), rnd(sa, "int64"), rnd(sb, "int64")],
                     blas_fn(fn, 0.5, -1.5), ba(0.5, -1.5))
    # an empty inner dim: beta·input alone
    fam.case("addmm/f32/empty-k", "addmm", [rnd([2, 3], "float32"), rnd([2, 0], "float32"), rnd([0, 3], "float32")],
             blas_fn(torch.addmm, 2, 1), ba(2, 1))
    fam.case("addmm/f32/0d-input", "addmm", [vals(1.5, "float32"), rnd([2, 3], "float32"), rnd([3, 2], "float32")],
             blas_fn(torch.addmm, 1, 1), ba(1, 1))
    fam.case("addmm/f32/transposed", "addmm", [rnd([3, 2], "float32"), L(rnd([3, 4], "float32"), "transposed"),
                                                rnd([4, 2], "float32")], blas_fn(torch.addmm, 1, 1), ba(1, 1))
    # addr promotes, and takes bool
    fam.case("addr/i32+f32", "addr", [rnd([2, 3], "int32"), rnd([2], "float32"), rnd([3], "int64")],
             blas_fn(torch.addr, 2, 0.5), ba(2, 0.5))
    fam.case("addr/bool", "addr", [rnd([2, 3], "bool"), rnd([2], "bool"), rnd([3], "bool")],
             blas_fn(torch.addr, 1, 1), ba(1, 1))
    # errors
    x = rnd([2, 3], "float32")
    fam.case("addmm/inner/error", "addmm", [rnd([2, 2], "float32"), x, rnd([2, 2], "float32")],
             blas_fn(torch.addmm, 1, 1), ba(1, 1), error="shape")
    fam.case("addmm/input-shape/error", "addmm", [rnd([3, 2], "float32"), x, rnd([3, 2], "float32")],
             blas_fn(torch.addmm, 1, 1), ba(1, 1), error="shape")
    fam.case("addmm/dtype/error", "addmm", [rnd([2, 2], "float32"), x, rnd([3, 2], "float64")],
             blas_fn(torch.addmm, 1, 1), ba(1, 1), error="dtype")
    fam.case("addmm/bool/error", "addmm", [rnd([2, 2], "bool"), rnd([2, 3], "bool"), rnd([3, 2], "bool")],
             blas_fn(torch.addmm, 1, 1), ba(1, 1), error="dtype")
    fam.case("addmv/rank/error", "addmv", [rnd([2], "float32"), x, rnd([3, 1], "float32")],
             blas_fn(torch.addmv, 1, 1), ba(1, 1), error="shape")
    fam.case("baddbmm/batch/error", "baddbmm", [rnd([2, 2], "float32"), rnd([3, 2, 3], "float32"),
                                                 rnd([1, 3, 2], "float32")], blas_fn(torch.baddbmm, 1, 1), ba(1, 1),
             error="shape")
    fam.case("addr/i32-beta=0.5/error", "addr", [rnd([2, 3], "int32"), rnd([2], "int32"), rnd([3], "int32")],
             blas_fn(torch.addr, 0.5, 1), ba(0.5, 1), error="value")

    for op, fn in (("addcmul", torch.addcmul), ("addcdiv", torch.addcdiv)):
        dom = "nonzero" if op == "addcdiv" else "any"
        for dt, value in (("float32", 1.0), ("float64", 0.5), ("float32", -2.0)):
            s = SHORT[dt]
            if True:
                fam.case(f"{op}/{s}/[2,3]+[3]*[2,1]/value={value}", op,
                         [rnd([2, 3], dt), rnd([3], dt), rnd([2, 1], dt, dom)],
                         lambda a, b, c, v=value: fn(a, b, c, value=v), {"value": value})
        sp = vals([NAN, INF, -INF, 0.0, -0.0, 1.0], "float32")
        fam.case(f"{op}/f32/special", op, [sp, vals([1.0, 2, INF, 0, 3, -0.0], "float32"),
                                          vals([INF, 0.0, 1, 2, -0.0, 5], "float32")],
                 lambda a, b, c: fn(a, b, c, value=1.5), {"value": 1.5})
        fam.case(f"{op}/f32/0d", op, [vals(1.5, "float32"), vals(2.0, "float32"), vals(-4.0, "float32")],
                 lambda a, b, c: fn(a, b, c, value=3.0), {"value": 3.0})
        fam.case(f"{op}/f32/empty", op, [rnd([0, 3], "float32"), rnd([3], "float32"), rnd([1, 3], "float32")],
                 lambda a, b, c: fn(a, b, c, value=2.0), {"value": 2.0})
        fam.case(f"{op}/i32+f32-promote", op, [rnd([2, 3], "int32"), rnd([2, 3], "float32", dom),
                                               rnd([3], "float64", dom)],
                 lambda a, b, c: fn(a, b, c, value=0.5), {"value": 0.5})
    for value in (2.0, 2.5, -1.5):  # torch truncates value for an integer result
        fam.case(f"addcmul/i32/value={value}", "addcmul", [rnd([2, 3], "int32"), rnd([2, 3], "int32"), rnd([3], "int64")],
                 lambda a, b, c, v=value: torch.addcmul(a, b, c, value=v), {"value": value})
    fam.case("addcdiv/i32/error", "addcdiv", [rnd([3], "float32"), rnd([3], "int32"), rnd([3], "int32", "nonneg") + 1],
             lambda a, b, c: torch.addcdiv(a, b, c), {"value": 1.0}, error="dtype")
    fam.case("addcmul/bool/error", "addcmul", [rnd([3], "bool"), rnd([3], "bool"), rnd([3], "bool")],
             lambda a, b, c: torch.addcmul(a, b, c), {"value": 1.0}, error="dtype")
    fam.case("addcmul/shape/error", "addcmul", [rnd([2, 3], "float32"), rnd([2], "float32"), rnd([3], "float32")],
             lambda a, b, c: torch.addcmul(a, b, c), {"value": 1.0}, error="shape")


def cov_fn(correction, fw, aw):
    def f(x, *w):
        w = list(w)
        fweights = w.pop(0) if fw else None
        aweights = w.pop(0) if aw else None
        return torch.cov(x, correction=correction, fweights=fweights, aweights=aweights)
    return f


def group2(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        x = rnd([3, 4], dt)
        for op, fn in (("var_mean", torch.var_mean), ("std_mean", torch.std_mean)):
            for dims, unbiased, keep in ((([1], True, False), ([], True, False)) if dt == "float32" else
                                         (([0], False, True), ([0, 1], False, False))):
                fam.case(f"{op}/{s}/[3,4]/dims={dims}/unbiased={unbiased}/keep={keep}", op, [x],
                         lambda x, d=dims, u=unbiased, k=keep: fn(x, d if d else None, unbiased=u, keepdim=k),
                         {"dims": dims, "unbiased": unbiased, "keepdim": keep})
        for correction in ((0, 2) if dt == "float32" else (1,)):
            fam.case(f"cov/{s}/[3,5]/correction={correction}", "cov", [rnd([3, 5], dt)], cov_fn(correction, False, False),
                     {"correction": correction, "fw": False, "aw": False})
        fam.case(f"cov/{s}/[5]", "cov", [rnd([5], dt)], cov_fn(1, False, False), {"correction": 1, "fw": False, "aw": False})
        fam.case(f"corrcoef/{s}/[3,5]", "corrcoef", [rnd([3, 5], dt)], torch.corrcoef)
    x = rnd([2, 4], "float32")
    fw, aw = vals([1, 2, 0, 3], "int64"), vals([0.5, 1.0, 2.0, 0.25], "float32")
    for correction in (0, 1):
        fam.case(f"cov/f32/fweights/correction={correction}", "cov", [x, fw], cov_fn(correction, True, False),
                 {"correction": correction, "fw": True, "aw": False})
        fam.case(f"cov/f32/aweights/correction={correction}", "cov", [x, aw], cov_fn(correction, False, True),
                 {"correction": correction, "fw": False, "aw": True})
        fam.case(f"cov/f32/both/correction={correction}", "cov", [x, fw, aw], cov_fn(correction, True, True),
                 {"correction": correction, "fw": True, "aw": True})
    fam.case("cov/i32/[2,4]", "cov", [rnd([2, 4], "int32")], cov_fn(1, False, False), {"correction": 1, "fw": False, "aw": False})
    fam.case("cov/f32/one-observation", "cov", [rnd([2, 1], "float32")], cov_fn(1, False, False),
             {"correction": 1, "fw": False, "aw": False})
    fam.case("corrcoef/f32/[4]", "corrcoef", [rnd([4], "float32")], torch.corrcoef)
    fam.case("corrcoef/f32/constant-row", "corrcoef", [vals([[1.0, 1, 1], [1, 2, 4]], "float32")], torch.corrcoef)
    fam.case("cov/f32/[2,2,2]/error", "cov", [rnd([2, 2, 2], "float32")], cov_fn(1, False, False),
             {"correction": 1, "fw": False, "aw": False}, error="shape")
    fam.case("cov/f32/fweights-float/error", "cov", [x, aw], lambda x, w: torch.cov(x, fweights=w),
             {"correction": 1, "fw": True, "aw": False}, error="dtype")
    fam.case("cov/f32/fweights-negative/error", "cov", [x, vals([1, -2, 0, 3], "int64")], cov_fn(1, True, False),
             {"correction": 1, "fw": True, "aw": False}, error="value")
    fam.case("cov/f32/aweights-length/error", "cov", [x, aw[:3]], cov_fn(1, False, True),
             {"correction": 1, "fw": False, "aw": True}, error="shape")
    fam.case("var_mean/i32/error", "var_mean", [rnd([3], "int32")], lambda x: torch.var_mean(x),
             {"dims": [], "unbiased": True, "keepdim": False}, error="dtype")


EDGE = {"int8": [0, 1, -1, 5, -8, 127, -128, 99],
        "uint8": [0, 1, 255, 5, 128, 127, 200, 99],
        "int32": [0, 1, -1, 5, -8, 2**31 - 1, -2**31, 123456789],
        "int64": [0, 1, -1, 5, -8, 2**63 - 1, -2**63, 1234567890123]}
EDGE2 = {"int8": [3, -3, 6, 100, 7, 0, -1, -128],
         "uint8": [3, 250, 6, 100, 7, 0, 255, 128],
         "int32": [3, -3, 6, 100, 7, 0, -1, -987654321],
         "int64": [3, -3, 6, 100, 7, 0, -1, -98765432109876]}
COUNTS = [0, 1, 7, 8, 31, 32, 33, -1]


def group3(fam):
    for op, fn in (("bitwise_and", torch.bitwise_and), ("bitwise_or", torch.bitwise_or),
                   ("bitwise_xor", torch.bitwise_xor)):
        for dt in (EDGE if op == "bitwise_and" else ("uint8", "int32", "int64")):
            fam.case(f"{op}/{SHORT[dt]}/edges", op, [vals(EDGE[dt], dt), vals(EDGE2[dt], dt)], fn)
        fam.case(f"{op}/bool", op, [vals([True, True, False, False], "bool"), vals([True, False, True, False], "bool")], fn)
        fam.case(f"{op}/i8+i32/bcast", op, [vals([[-5], [7]], "int8"), vals([3, -1, 12], "int32")], fn)
        fam.case(f"{op}/f32/error", op, [rnd([3], "float32"), rnd([3], "int32")], fn, error="dtype")
    for dt in list(EDGE) + ["bool"]:
        x = vals(EDGE[dt], dt) if dt != "bool" else vals([True, False], "bool")
        fam.case(f"bitwise_not/{SHORT[dt]}", "bitwise_not", [x], torch.bitwise_not)
    fam.case("bitwise_not/f32/error", "bitwise_not", [rnd([3], "float32")], torch.bitwise_not, error="dtype")
    for op, fn in (("bitwise_left_shift", torch.bitwise_left_shift), ("bitwise_right_shift", torch.bitwise_right_shift)):
        for dt in ("int8", "uint8", "int32"):
            x = vals(EDGE[dt], dt)
            fam.case(f"{op}/{SHORT[dt]}/counts", op, [x.reshape(8, 1), vals(COUNTS, "int32" if dt == "int32" else dt)
                                                      .reshape(1, 8) if dt != "uint8" else vals([0, 1, 7, 8, 9, 31, 32, 33], dt)],
                     fn)
        fam.case(f"{op}/i64/counts", op, [vals(EDGE["int64"], "int64").reshape(8, 1),
                                          vals([0, 1, 31, 32, 62, 63, 64, 65], "int64")], fn)
        fam.case(f"{op}/i8+i32", op, [vals([-5, 7, 100], "int8"), vals([1, 2, 3], "int32")], fn)
        fam.case(f"{op}/bool/error", op, [vals([True], "bool"), vals([True], "bool")], fn, error="dtype")
    for op, fn in (("gcd", torch.gcd), ("lcm", torch.lcm)):
        for dt in ("int8", "int32", "int64"):
            big = dt != "int8"
            a = vals([0, 0, 12, -4, 6, -9, 17, 1071 if big else 107, 21, -36], dt)
            b = vals([0, 5, 18, 6, -4, 0, 5, 462 if big else 78, 14, -48], dt)
            fam.case(f"{op}/{SHORT[dt]}", op, [a, b], fn)
        fam.case(f"{op}/i32/bcast", op, [vals([[12], [-30]], "int32"), vals([8, 45, 0], "int32")], fn)
        fam.case(f"{op}/f32/error", op, [rnd([3], "float32"), rnd([3], "float32")], fn, error="dtype")
    fam.case("gcd/i64/large", "gcd", [vals([2**62, 3**39, -2**63 + 1], "int64"), vals([2**40 * 3, 3**20 * 7, 2**62 - 1], "int64")],
             torch.gcd)
    fam.case("gcd/i32/least", "gcd", [vals([-2**31, -2**31, 6], "int32"), vals([0, 6, -2**31], "int32")], torch.gcd)
    # floor_divide
    for dt in ("int8", "int32", "int64"):
        x = vals([-7, 7, -7, 7, 0, 100, -100, 1], dt)
        y = vals([2, 2, -2, -2, 3, 7, 7, -1], dt)
        fam.case(f"floor_divide/{SHORT[dt]}", "floor_divide", [x, y], torch.floor_divide)
    fam.case("floor_divide/u8", "floor_divide", [vals([7, 255, 0, 200], "uint8"), vals([2, 16, 3, 7], "uint8")],
             torch.floor_divide)
    fam.case("floor_divide/i32/large", "floor_divide", [vals([2**31 - 1, -2**31, -2**31 + 1, 123456789], "int32"),
                                                        vals([1, 3, -7, -10], "int32")], torch.floor_divide)
    fam.case("floor_divide/i64/large", "floor_divide", [vals([2**63 - 1, -2**63, 2**62 + 12345, -987654321987654321], "int64"),
                                                        vals([1, 3, -7, 1000000007], "int64")], torch.floor_divide)
    for dt in FLOATS:
        fam.case(f"floor_divide/{SHORT[dt]}/special", "floor_divide",
                 [vals([-7.0, 7, 1, 0, 5, -1, NAN, INF, 7.5, -0.0, 0.3, -5], dt),
                  vals([2.0, -0.0, INF, 3, 0, INF, 1, 2, 2.5, 1, 0.1, 0.0], dt)], torch.floor_divide,
                 # 0.3 // 0.1 is 2 in float64 and 3 in float32: not narrowed
                 {"float64_only": True} if dt == "float64" else None)
        fam.case(f"floor_divide/{SHORT[dt]}/[3,4]", "floor_divide", [rnd([3, 4], dt, "wide"), rnd([4], dt, "nonzero")],
                 torch.floor_divide)
    fam.case("floor_divide/i32+f32", "floor_divide", [vals([5, -5], "int32"), vals([2.0, 2.0], "float32")], torch.floor_divide)
    fam.case("floor_divide/i32/zero/error", "floor_divide", [vals([5, 1], "int32"), vals([2, 0], "int32")],
             torch.floor_divide, error="value")
    fam.case("floor_divide/bool/error", "floor_divide", [vals([True], "bool"), vals([True], "bool")], None, error="dtype")
    fam.case("logical_xor/f32+i32", "logical_xor", [vals([0.0, 1, NAN, -0.0, 2], "float32"), vals([1, 1, 0, 0, 0], "int32")],
             torch.logical_xor)
    fam.case("logical_xor/bool/bcast", "logical_xor", [vals([[True], [False]], "bool"), vals([True, False], "bool")],
             torch.logical_xor)


def group4(fam):
    sp = [NAN, INF, -INF, 0.0, -0.0, 1.5, -2.5, 1e-30, -3.0]
    for dt in FLOATS:
        s = SHORT[dt]
        fam.case(f"signbit/{s}/special", "signbit", [vals(sp[1:], dt)], torch.signbit)
        x = vals([0.0, 0, 0, 2, -1.5, 3, NAN, 1.5], dt)
        y = vals([0.0, -1, INF, NAN, 2, -0.5, 1, 1e-9], dt)
        fam.case(f"xlog1py/{s}/special", "xlog1py", [x, y], torch.special.xlog1py)
        fam.case(f"xlog1py/{s}/bcast", "xlog1py", [rnd([2, 3], dt), rnd([3], dt, "pos")], torch.special.xlog1py)
        fam.case(f"ldexp/{s}", "ldexp", [vals([1.0, -3, 0.75, INF, NAN, 5, 1, -0.0], dt),
                                        vals([2, -3, 10, 1, 1, -1074 if dt == "float64" else -149, 100, 3], "int32")],
                 torch.ldexp)
        fam.case(f"frexp/{s}/special", "frexp", [vals([0.0, -0.0, 1, -1, 0.5, 3, -1000.25, 1e-30, 1e-300 if dt == "float64" else 1e-40,
                                                      5e-324 if dt == "float64" else 1e-45, INF, -INF, NAN, 1e30], dt)],
                 torch.frexp, {"float64_only": True} if dt == "float64" else None)
        fam.case(f"frexp/{s}/[3,4]", "frexp", [rnd([3, 4], dt, "wide")], torch.frexp)
        for p in (1, 3):
            fam.case(f"mvlgamma/{s}/p={p}", "mvlgamma", [rnd([2, 3], dt, "pos") + p], lambda x, p=p: torch.mvlgamma(x, p), {"p": p})
        fam.case(f"renorm/{s}/p=2,dim=0", "renorm", [rnd([3, 4], dt, "wide")], lambda x: torch.renorm(x, 2, 0, 3.0),
                 {"p": 2.0, "dim": 0, "maxnorm": 3.0})
        fam.case(f"renorm/{s}/p=1,dim=-1", "renorm", [rnd([2, 3, 2], dt)], lambda x: torch.renorm(x, 1, -1, 2.0),
                 {"p": 1.0, "dim": -1, "maxnorm": 2.0})
    fam.case("ldexp/i32+i32", "ldexp", [vals([1, 3, -2], "int32"), vals([2, -1, 0], "int32")], torch.ldexp)
    fam.case("signbit/i32", "signbit", [vals([-2, 0, 3], "int32")], torch.signbit)
    fam.case("mvlgamma/f32/p=2/low", "mvlgamma", [vals([0.25, 2.0, 0.5], "float32")], lambda x: torch.mvlgamma(x, 2), {"p": 2})
    fam.case("mvlgamma/f32/p=0/error", "mvlgamma", [vals([0.25, 2.0], "float32")], lambda x: torch.mvlgamma(x, 0), {"p": 0},
             error="value")
    fam.case("frexp/i32/error", "frexp", [vals([1, 2], "int32")], torch.frexp, error="dtype")
    fam.case("renorm/f32/p=0/error", "renorm", [rnd([2, 2], "float32")], lambda x: torch.renorm(x, 0, 0, 1.0),
             {"p": 0.0, "dim": 0, "maxnorm": 1.0}, error="value")
    for inv in (False, True):
        fam.case(f"isin/i32/invert={inv}", "isin", [vals([[1, 2, 3], [4, 5, 1]], "int32"), vals([1, 5, 9], "int64")],
                 lambda a, b, i=inv: torch.isin(a, b, invert=i), {"invert": inv})
    fam.case("isin/f32/nan", "isin", [vals([NAN, 1.0, -0.0, 2.5], "float32"), vals([[0.0, NAN], [2.5, 7]], "float32")],
             lambda a, b: torch.isin(a, b), {"invert": False})
    fam.case("isin/f32+i32", "isin", [vals([1.0, 1.5, 2.0], "float32"), vals([1, 2], "int32")],
             lambda a, b: torch.isin(a, b), {"invert": False})
    nq = vals([[1.0, NAN, 3, 2, 7], [NAN, NAN, NAN, NAN, NAN], [4, 1, NAN, 2, 0]], "float64")
    for interp in ("linear", "lower", "higher", "midpoint", "nearest"):
        fam.case(f"nanquantile/f64/nan[3,5]/q=0.4/dim=1/{interp}", "nanquantile", [nq],
                 lambda x, i=interp: torch.nanquantile(x, 0.4, 1, interpolation=i),
                 {"q": 0.4, "dims": [1], "interpolation": interp, "keepdim": False})
    fam.case("nanquantile/f32/all/q=0.75/keep", "nanquantile", [nq.float()],
             lambda x: torch.nanquantile(x, 0.75, keepdim=True),
             {"q": 0.75, "dims": [], "interpolation": "linear", "keepdim": True})
    fam.case("nanquantile/f32/dim=0", "nanquantile", [rnd([4, 3], "float32")], lambda x: torch.nanquantile(x, 0.3, 0),
             {"q": 0.3, "dims": [0], "interpolation": "linear", "keepdim": False})
    fam.case("nanquantile/i32/error", "nanquantile", [vals([1, 2], "int32")], lambda x: torch.nanquantile(x, 0.5),
             {"q": 0.5, "dims": [], "interpolation": "linear", "keepdim": False}, error="dtype")
    for dt in FLOATS:
        fam.case(f"nanmedian/{SHORT[dt]}/nan", "nanmedian", [vals([3.0, NAN, 1, 2, NAN, 7], dt)], torch.nanmedian)
    fam.case("nanmedian/f32/all-nan", "nanmedian", [vals([NAN, NAN], "float32")], torch.nanmedian)
    fam.case("nanmedian/i32", "nanmedian", [vals([3, 1, 2, 9], "int32")], torch.nanmedian)
    for keep in (False, True):
        fam.case(f"nanmedian_dim/f32/nan[3,5]/dim=1/keep={keep}", "nanmedian_dim", [nq.float()],
                 lambda x, k=keep: torch.nanmedian(x, 1, keepdim=k), {"dim": 1, "keepdim": keep})
    fam.case("nanmedian_dim/f64/[4,3]/dim=0", "nanmedian_dim", [vals([[1.0, NAN, 3], [2, 2, NAN], [0, NAN, 5], [9, 4, NAN]], "float64")],
             lambda x: torch.nanmedian(x, 0), {"dim": 0, "keepdim": False})

    hx = vals([1.0, 2, 1, 4, 2.5, 0, -1, 3.9999, 0.3, 0.6], "float32")
    hw = vals([0.5, 1, 2, 0.25, 3, 1, 1, 2, 0.5, 1.5], "float32")
    fam.case("histogram/f32/bins=4", "histogram", [hx], lambda x: torch.histogram(x, 4), {"bins": 4, "range": [], "density": False})
    fam.case("histogram/f32/range/weight/density", "histogram", [hx, hw],
             lambda x, w: torch.histogram(x, 3, range=(0.0, 3.0), weight=w, density=True),
             {"bins": 3, "range": [0.0, 3.0], "density": True})
    fam.case("histogram/f64/[2,3]/range=(0,0.9)", "histogram", [vals([[0.1, 0.2, 0.3], [0.7, 0.9, 1.5]], "float64")],
             lambda x: torch.histogram(x, 3, range=(0.0, 0.9)), {"bins": 3, "range": [0.0, 0.9], "density": False})
    fam.case("histogram/f32/equal", "histogram", [vals([2.0, 2.0], "float32")], lambda x: torch.histogram(x, 2),
             {"bins": 2, "range": [], "density": False})
    fam.case("histogram/f32/empty", "histogram", [vals([], "float32")], lambda x: torch.histogram(x, 2),
             {"bins": 2, "range": [], "density": False})
    fam.case("histogram/f32/nan/error", "histogram", [vals([1.0, NAN], "float32")], lambda x: torch.histogram(x, 2),
             {"bins": 2, "range": [], "density": False}, error="value")
    fam.case("histogram/f32/range/error", "histogram", [hx], lambda x: torch.histogram(x, 2, range=(3.0, 1.0)),
             {"bins": 2, "range": [3.0, 1.0], "density": False}, error="value")


def grad_group(fam):
    g = fam.gcase
    for op, (fn, sa, sb, sc) in BLAS.items():
        g(f"{op}/f64/beta=0.5,alpha=-2", op, [rnd(sc, "float64"), rnd(sa, "float64"), rnd(sb, "float64")],
          blas_fn(fn, 0.5, -2), ba(0.5, -2), hvp=True)
        g(f"{op}/f32/bcast", op, [rnd(sc[-1:], "float32"), rnd(sa, "float32"), rnd(sb, "float32")],
          blas_fn(fn, 1, 1), ba(1, 1))
        g(f"{op}/f64/beta=0", op, [rnd(sc, "float64"), rnd(sa, "float64"), rnd(sb, "float64")],
          blas_fn(fn, 0, 1), ba(0, 1))
    for op, fn in (("addcmul", torch.addcmul), ("addcdiv", torch.addcdiv)):
        dom = "nonzero" if op == "addcdiv" else "any"
        for dt in FLOATS:
            g(f"{op}/{SHORT[dt]}/bcast", op, [rnd([2, 3], dt), rnd([3], dt), rnd([2, 1], dt, dom)],
              lambda a, b, c: fn(a, b, c, value=0.5), {"value": 0.5}, hvp=True)
        g(f"{op}/f64/value=-2", op, [rnd([3], "float64"), rnd([3], "float64"), rnd([3], "float64", dom)],
          lambda a, b, c: fn(a, b, c, value=-2.0), {"value": -2.0})
    for dt in FLOATS:
        s = SHORT[dt]
        g(f"cov/{s}/[3,5]", "cov", [rnd([3, 5], dt)], cov_fn(1, False, False),
          {"correction": 1, "fw": False, "aw": False}, hvp=True)
        g(f"corrcoef/{s}/[3,5]", "corrcoef", [rnd([3, 5], dt)], torch.corrcoef, hvp=True)
    x = rnd([2, 4], "float64")
    g("cov/f64/both", "cov", [x, vals([1, 2, 0, 3], "int64"), vals([0.5, 1.0, 2.0, 0.25], "float64")],
      cov_fn(1, True, True), {"correction": 1, "fw": True, "aw": True}, hvp=True)
    g("cov/f64/[4]/correction=0", "cov", [rnd([4], "float64")], cov_fn(0, False, False),
      {"correction": 0, "fw": False, "aw": False})
    for part in ("var", "mean"):
        g(f"var_mean_{part}/f64/[3,4]/dims=[1]", f"var_mean_{part}", [rnd([3, 4], "float64")],
          lambda x, p=part: torch.var_mean(x, 1)[0 if p == "var" else 1], {"dims": [1], "unbiased": True, "keepdim": False})

    for dt in FLOATS:
        s = SHORT[dt]
        g(f"xlog1py/{s}/[2,3]", "xlog1py", [rnd([2, 3], dt), rnd([2, 3], dt, "pos")], torch.special.xlog1py, hvp=True)
        g(f"ldexp/{s}", "ldexp", [rnd([4], dt), vals([1, -2, 0, 3], "int32")], torch.ldexp)
        g(f"mvlgamma/{s}/p=3", "mvlgamma", [rnd([2, 3], dt, "pos") + 3], lambda x: torch.mvlgamma(x, 3), {"p": 3})
        g(f"renorm/{s}/p=2,dim=0", "renorm", [rnd([3, 4], dt, "wide")], lambda x: torch.renorm(x, 2, 0, 3.0),
          {"p": 2.0, "dim": 0, "maxnorm": 3.0}, hvp=True)
    g("frexp_mantissa/f64/[5]", "frexp_mantissa", [vals([0.3, -5.5, 1000.0, 1e-3, 7.25], "float64")], lambda x: torch.frexp(x)[0])
    g("nanquantile/f64/nan[3,5]/q=0.4/dim=1", "nanquantile", [vals([[1.0, NAN, 3, 2, 7], [5, 6, 1, 0.5, 2], [4, 1, NAN, 2, 0]], "float64")],
      lambda x: torch.nanquantile(x, 0.4, 1), {"q": 0.4, "dims": [1], "interpolation": "linear", "keepdim": False}, nonsmooth=True)
    g("nanmedian_dim_values/f64/nan[3,5]/dim=1", "nanmedian_dim_values",
      [vals([[1.0, NAN, 3, 2, 7], [5, 6, 1, 0.5, 2], [4, 1, NAN, 2, 0]], "float64")],
      lambda x: torch.nanmedian(x, 1)[0], {"dim": 1, "keepdim": False}, nonsmooth=True)


def mathextra():
    fam = Family("mathextra", 93)
    group1(fam)
    group2(fam)
    group3(fam)
    group4(fam)
    return fam


def grad_mathextra():
    fam = GradFamily("grad_mathextra", 94)
    grad_group(fam)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (mathextra, grad_mathextra):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
