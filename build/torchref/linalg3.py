"""Cases of torch.linalg.vecdot, torch.logdet, the LU factorization
(torch.linalg.lu_factor, lu_factor_ex, lu, lu_solve, torch.lu_unpack) and
torch.cholesky_inverse, which lathe builds as composites
(ops_linalg_lu.go), in linalg3.json, and their gradients in
grad_linalg3.json. Run it from the repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/linalg3.py

(gen.py runs it too.) Op keys and attributes are listed with the Go table,
internal/conformance/ops_linalg3.go.

The matrices to factor are random (no ties in a column's magnitudes but
where a case asks for one), so that the pivots are those of any correct
partial pivoting. cholesky_inverse's gradient cases give torch L.tril()
(upper: L.triu()), as cholesky_solve's in linalg.py: lathe reads only the
triangle, and its gradient lies there.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily  # noqa: E402
from refcase import FLOATS, SHORT, Family, rnd, shp, vals  # noqa: E402

TD = dict(float32=torch.float32, float64=torch.float64)
SINGULAR = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]


def spd(shape, dt):
    x = rnd(shape, "float64")
    n = shape[-1]
    return (x @ x.mT + n * torch.eye(n, dtype=torch.float64)).to(TD[dt])


def chol(shape, dt, upper=False):
    return torch.linalg.cholesky(spd(shape, dt), upper=upper)


def lu_factor(a):
    return torch.linalg.lu_factor(a)


def lu_factor_ex(a):
    return torch.linalg.lu_factor_ex(a)


def lu_solve(left, adjoint):
    return lambda lu, piv, b: torch.linalg.lu_solve(lu, piv, b, left=left, adjoint=adjoint)


def vecdot_cases(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        for xs, ys, d in (([3, 4], [4], -1), ([2, 3], [2, 1], 0), ([2, 1, 4], [3, 4], -1), ([0, 3], [1, 3], -1)):
            if dt == "float64" and (xs[0] in (0, 5) or 0 in xs):
                continue
            fam.case(f"vecdot/{s}/{shp(xs)}x{shp(ys)}/dim={d}", "vecdot", [rnd(xs, dt), rnd(ys, dt)],
                     lambda x, y, d=d: torch.linalg.vecdot(x, y, dim=d), {"dim": d})
    for dt in ("float16", "bfloat16"):  # torch's cpu refuses them: its cuda computes in float32
        fam.case(f"vecdot/{SHORT[dt]}/[3,4]x[4]", "vecdot", [rnd([3, 4], dt), rnd([4], dt)],
                 lambda x, y: torch.linalg.vecdot(x.float(), y.float()).to(x.dtype), {"dim": -1})
    fam.case("vecdot/f32/0d", "vecdot", [rnd([], "float32"), rnd([], "float32")],
             lambda x, y: torch.linalg.vecdot(x, y), {"dim": -1})
    fam.case("vecdot/f32/nan", "vecdot", [vals([[1.0, float("nan")], [2, 3]], "float32"), vals([1.0, 2], "float32")],
             lambda x, y: torch.linalg.vecdot(x, y), {"dim": -1})
    fam.case("vecdot/i64/error", "vecdot", [vals([1, 2], "int64"), vals([3, 4], "int64")],
             lambda x, y: torch.linalg.vecdot(x, y), {"dim": -1}, error="dtype")
    fam.case("vecdot/f32xf64/error", "vecdot", [rnd([3], "float32"), rnd([3], "float64")],
             lambda x, y: torch.linalg.vecdot(x, y), {"dim": -1}, error="dtype")
    fam.case("vecdot/f32/broadcast/error", "vecdot", [rnd([2, 3], "float32"), rnd([3, 2], "float32")],
             lambda x, y: torch.linalg.vecdot(x, y), {"dim": -1}, error="shape")
    fam.case("vecdot/f32/dim/error", "vecdot", [rnd([2, 3], "float32"), rnd([3], "float32")],
             lambda x, y: torch.linalg.vecdot(x, y, dim=2), {"dim": 2}, error="index")


def logdet_cases(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        for shape in ([3, 3], [4, 4], [2, 3, 3]) if dt == "float32" else ([3, 3],):
            fam.case(f"logdet/{s}/{shp(shape)}", "logdet", [rnd(shape, dt)], torch.logdet)
        if dt == "float32":
            fam.case(f"logdet/{s}/spd[4,4]", "logdet", [spd([4, 4], dt)], torch.logdet)
        fam.case(f"logdet/{s}/singular", "logdet", [vals(SINGULAR, dt)], torch.logdet)
        fam.case(f"logdet/{s}/negative", "logdet", [vals([[0.0, 1], [1, 0]], dt)], torch.logdet)
    fam.case("logdet/f32/empty[0,0]", "logdet", [rnd([0, 0], "float32")], torch.logdet)
    fam.case("logdet/i64/error", "logdet", [vals([[1, 2], [3, 4]], "int64")], torch.logdet, error="dtype")
    fam.case("logdet/f16/error", "logdet", [vals([[1, 2], [3, 4]], "float16")], torch.logdet, error="dtype")
    fam.case("logdet/f32/[2,3]/error", "logdet", [rnd([2, 3], "float32")], torch.logdet, error="shape")


def lu_cases(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        for shape in ([3, 3], [5, 5], [2, 3, 3], [4, 2], [2, 4], [2, 1, 3, 2]):
            if shape == [5, 5]:
                continue
            if dt == "float64" and shape in ([5, 5], [2, 1, 3, 2]):
                continue
            a = rnd(shape, dt)
            fam.case(f"lu_factor/{s}/{shp(shape)}", "lu_factor", [a], lu_factor)
            if shape in ([3, 3], [4, 2], [2, 4], [2, 3, 3]):
                fam.case(f"lu/{s}/{shp(shape)}", "lu", [a], torch.linalg.lu)
        for name, v in (("singular", SINGULAR), ("zero", [[0.0, 0], [0, 0]]), ("zero-column", [[0.0, 1], [0, 3]]),
                        ("ties", [[1.0, 2, 0], [-1, 3, 1], [1, 0, 2]])):
            a = vals(v, dt)
            if dt == "float64" and name not in ("singular", "ties"):
                continue
            fam.case(f"lu_factor_ex/{s}/{name}", "lu_factor_ex", [a], lu_factor_ex)
            if dt == "float64" and name != "singular" or name == "zero":
                continue
            fam.case(f"lu/{s}/{name}", "lu", [a], torch.linalg.lu)
        fam.case(f"lu_factor_ex/{s}/[2,3,3]", "lu_factor_ex", [rnd([2, 3, 3], dt)], lu_factor_ex)
    for name, a in (("[2,0,0]", rnd([2, 0, 0], "float32")), ("[3,0]", rnd([3, 0], "float32"))):
        fam.case(f"lu_factor/f32/empty{name}", "lu_factor", [a], lu_factor)
        if name == "[3,0]":
            fam.case(f"lu/f32/empty{name}", "lu", [a], torch.linalg.lu)
    fam.case("lu_factor/f32/singular/error", "lu_factor", [vals(SINGULAR, "float32")], lu_factor, error="value")
    fam.case("lu_factor/f32/batch-singular/error", "lu_factor",
             [torch.stack([torch.eye(2), torch.zeros(2, 2)])], lu_factor, error="value")
    fam.case("lu_factor/i64/error", "lu_factor", [vals([[1, 2], [3, 4]], "int64")], lu_factor, error="dtype")
    fam.case("lu_factor/f16/error", "lu_factor", [vals([[1, 2], [3, 4]], "float16")], lu_factor, error="dtype")
    fam.case("lu_factor/f32/[3]/error", "lu_factor", [rnd([3], "float32")], lu_factor, error="shape")
    fam.case("lu/f32/[3]/error", "lu", [rnd([3], "float32")], torch.linalg.lu, error="shape")


def unpack_solve_cases(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        for shape in ([3, 3], [4, 2]) if dt == "float32" else ([2, 4],):
            lu, piv = torch.linalg.lu_factor(rnd(shape, dt))
            fam.case(f"lu_unpack/{s}/{shp(shape)}", "lu_unpack", [lu, piv], torch.lu_unpack)
        lu, piv = torch.linalg.lu_factor(rnd([3, 3], dt))
        b = rnd([3, 2], dt)
        for left in (True, False):
            for adj in (False, True):
                if dt == "float64" and left == adj:
                    continue
                bb = b if left else b.mT.contiguous()
                fam.case(f"lu_solve/{s}/[3,3]x{shp(list(bb.shape))}/left={left}/adjoint={adj}", "lu_solve",
                         [lu, piv, bb], lu_solve(left, adj), {"left": left, "adjoint": adj})
        lu, piv = torch.linalg.lu_factor(rnd([2, 4, 4], dt))
        fam.case(f"lu_solve/{s}/[2,4,4]x[1,4,1]", "lu_solve", [lu, piv, rnd([1, 4, 1], dt)], lu_solve(True, False),
                 {"left": True, "adjoint": False})
        for upper in (False, True):
            for shape in ([3, 3], [2, 4, 4]) if dt == "float32" and not upper else ([3, 3],):
                fam.case(f"cholesky_inverse/{s}/{shp(shape)}/upper={upper}", "cholesky_inverse",
                         [chol(shape, dt, upper)], lambda l, u=upper: torch.cholesky_inverse(l, upper=u),
                         {"upper": upper})
    fam.case("cholesky_inverse/f32/empty[0,0]", "cholesky_inverse", [rnd([0, 0], "float32")],
             torch.cholesky_inverse, {"upper": False})
    lu, piv = torch.linalg.lu_factor(rnd([3, 3], "float32"))
    b = rnd([3, 1], "float32")
    fam.case("lu_unpack/f32/pivots-i64/error", "lu_unpack", [lu, piv.long()], torch.lu_unpack, error="dtype")
    fam.case("lu_unpack/f32/pivots-range/error", "lu_unpack", [lu, vals([1, 7, 3], "int32")], torch.lu_unpack,
             error="value")
    fam.case("lu_solve/f32/pivots-i64/error", "lu_solve", [lu, piv.long(), b], lu_solve(True, False),
             {"left": True, "adjoint": False}, error="dtype")
    fam.case("lu_solve/f32/pivots-range/error", "lu_solve", [lu, vals([1, 7, 3], "int32"), b], lu_solve(True, False),
             {"left": True, "adjoint": False}, error="value")
    fam.case("lu_solve/f32/B-rows/error", "lu_solve", [lu, piv, rnd([4, 1], "float32")], lu_solve(True, False),
             {"left": True, "adjoint": False}, error="shape")
    fam.case("cholesky_inverse/i64/error", "cholesky_inverse", [vals([[1, 0], [1, 1]], "int64")],
             torch.cholesky_inverse, {"upper": False}, error="dtype")
    fam.case("cholesky_inverse/f32/[2,3]/error", "cholesky_inverse", [rnd([2, 3], "float32")],
             torch.cholesky_inverse, {"upper": False}, error="shape")


def ex_cases(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        for shape in ([3, 3], [2, 4, 4]) if dt == "float32" else ([3, 3],):
            a = spd(shape, dt)
            for upper in (False, True) if dt == "float32" else (False,):
                fam.case(f"cholesky_ex/{s}/{shp(shape)}/upper={upper}", "cholesky_ex", [a],
                         lambda a, u=upper: torch.linalg.cholesky_ex(a, upper=u), {"upper": upper})
            fam.case(f"inv_ex/{s}/{shp(shape)}", "inv_ex", [rnd(shape, dt)], torch.linalg.inv_ex)
    # Where the factorization fails only info is compared: L's values are
    # LAPACK's partial factorization in torch, NaN in lathe.
    for name, v in (("semidefinite", [[4.0, 2, 0], [2, 1, 0], [0, 0, 1]]), ("indefinite", [[4.0, 2, 0], [2, -1, 0], [0, 0, 1]]),
                    ("nan", [[float("nan")]]), ("zero", [[0.0, 0], [0, 0]])):
        fam.case(f"cholesky_ex_info/f32/{name}", "cholesky_ex_info", [vals(v, "float32")],
                 lambda a: torch.linalg.cholesky_ex(a)[1], {"upper": False})
    fam.case("cholesky_ex_info/f64/batch", "cholesky_ex_info",
             [torch.stack([spd([3, 3], "float64"), vals([[1.0, 0, 0], [0, 1, 0], [0, 0, -1]], "float64")])],
             lambda a: torch.linalg.cholesky_ex(a)[1], {"upper": False})
    # inv_ex's info is the first zero pivot of the LU factorization, which
    # torch's names at other times (a later place): the cases where they agree.
    for name, v in (("rank1", [[1.0, 2], [2, 4]]), ("zero", [[0.0, 0], [0, 0]])):
        fam.case(f"inv_ex_info/f32/{name}", "inv_ex_info", [vals(v, "float32")], lambda a: torch.linalg.inv_ex(a)[1])
    fam.case("cholesky_ex/f32/empty[0,0]", "cholesky_ex", [rnd([0, 0], "float32")], torch.linalg.cholesky_ex,
             {"upper": False})
    fam.case("inv_ex/f32/empty[2,0,0]", "inv_ex", [rnd([2, 0, 0], "float32")], torch.linalg.inv_ex)
    fam.case("cholesky_ex/f16/error", "cholesky_ex", [vals([[1, 0], [0, 1]], "float16")], torch.linalg.cholesky_ex,
             {"upper": False}, error="dtype")
    fam.case("inv_ex/f32/[2,3]/error", "inv_ex", [rnd([2, 3], "float32")], torch.linalg.inv_ex, error="shape")


def sym(a):
    return (a + a.mT) / 2


def grad_cases(fam):
    g = fam.gcase
    for dt in FLOATS:
        s = SHORT[dt]
        h = dt == "float64"
        g(f"vecdot/{s}/[3,4]x[4]", "vecdot", [rnd([3, 4], dt), rnd([4], dt)], lambda x, y: torch.linalg.vecdot(x, y),
          {"dim": -1}, hvp=h)
        if h:
            g(f"vecdot/{s}/[2,3]x[2,1]/dim=0", "vecdot", [rnd([2, 3], dt), rnd([2, 1], dt)],
              lambda x, y: torch.linalg.vecdot(x, y, dim=0), {"dim": 0})
        g(f"logdet/{s}/spd[3,3]", "logdet", [spd([3, 3], dt)], torch.logdet, hvp=h)
        if h:
            g(f"logdet/{s}/[2,3,3]", "logdet", [spd([2, 3, 3], dt)], torch.logdet)
        g(f"logdet/{s}/negative", "logdet", [vals([[0.0, 1], [1, 0]], dt)], torch.logdet, nonsmooth=True)
        for shape in ([3, 3], [4, 3], [3, 4], [2, 3, 3]) if h else ([3, 3], [4, 3]):
            g(f"lu_factor_lu/{s}/{shp(shape)}", "lu_factor_lu", [rnd(shape, dt)],
              lambda a: torch.linalg.lu_factor(a)[0], hvp=h and shape == [3, 3])
        for shape in ([3, 3], [4, 2]):
            g(f"lu_l/{s}/{shp(shape)}", "lu_l", [rnd(shape, dt)], lambda a: torch.linalg.lu(a)[1], hvp=h and shape == [3, 3])
            if h or shape == [3, 3]:
                g(f"lu_u/{s}/{shp(shape)}", "lu_u", [rnd(shape, dt)], lambda a: torch.linalg.lu(a)[2])
        lu, piv = torch.linalg.lu_factor(rnd([3, 3], dt))
        for left, adj in ((True, False), (True, True), (False, False)) if h else ((True, False), (True, True)):
            b = rnd([3, 2] if left else [2, 3], dt)
            g(f"lu_solve/{s}/left={left}/adjoint={adj}", "lu_solve", [lu, piv, b], lu_solve(left, adj),
              {"left": left, "adjoint": adj}, hvp=h and not adj and left)
        for upper in (False, True):
            tri = (lambda l: l.triu()) if upper else (lambda l: l.tril())
            g(f"cholesky_inverse/{s}/[3,3]/upper={upper}", "cholesky_inverse", [chol([3, 3], dt, upper)],
              lambda l, u=upper, t=tri: torch.cholesky_inverse(t(l), upper=u), {"upper": upper}, hvp=h and not upper)
            if upper and not h:
                continue
            g(f"cholesky_ex_l/{s}/[3,3]/upper={upper}/sym", "cholesky_ex_l", [spd([3, 3], dt)],
              lambda a, u=upper: torch.linalg.cholesky_ex(sym(a), upper=u)[0], {"upper": upper, "sym": True},
              hvp=h and not upper)
        g(f"inv_ex_inverse/{s}/[3,3]", "inv_ex_inverse", [rnd([3, 3], dt)], lambda a: torch.linalg.inv_ex(a)[0], hvp=h)


def linalg3():
    fam = Family("linalg3", 101)
    vecdot_cases(fam)
    logdet_cases(fam)
    lu_cases(fam)
    unpack_solve_cases(fam)
    ex_cases(fam)
    return fam


def grad_linalg3():
    fam = GradFamily("grad_linalg3", 102)
    grad_cases(fam)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (linalg3, grad_linalg3):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
