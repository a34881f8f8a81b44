"""Cases of torch.linalg's core for square matrices that lathe builds as
composites (linalg.json) and their gradients (grad_linalg.json):

1. cholesky (lower and upper), solve_triangular (upper, left,
   unitriangular) and cholesky_solve;
2. solve (matrix and vector right sides), inv, det and slogdet, by LU with
   partial pivoting;
3. qr (reduced), by Householder reflections;

over batches that broadcast, empty matrices, matrices that need pivoting,
ill-conditioned ones (Hilbert matrices, in float64), and the refusals:
singular matrices (solve, inv), matrices that are not positive-definite
(cholesky), shapes and dtypes. Run it from the repository root with
PyTorch 1.13:

    /usr/bin/python3 build/torchref/linalg.py

(gen.py runs it too, with every other family.) Op keys and attributes are
listed with the Go table, internal/conformance/ops_linalgfam.go.

Gradients: torch's cholesky gradient is symmetric (cholesky_backward
symmetrizes it), while the op reads only A's lower triangle, so that a
finite difference of it gives another (lower) matrix; the gradient cases
factor sym(A) = (A + Aᵀ)/2 on both sides ("sym": true), whose finite
difference is torch's, and one case without it, nonsmooth (no finite
difference), checks lathe's symmetric gradient. torch's cholesky_solve
gradient spreads onto the triangle of L that it does not read; lathe's is
the derivative of what it computes, torch's for L.tril() (L.triu()), which
the cases give torch.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily  # noqa: E402
from refcase import FLOATS, SHORT, Family, L, rnd, shp, vals  # noqa: E402


def spd(shape, dt):
    """A symmetric positive-definite batch: X·Xᵀ + n·I, to three decimals."""
    n = shape[-1]
    x = rnd(shape, "float64")
    a = x @ x.mT + n * torch.eye(n, dtype=torch.float64)
    return (torch.round(a * 1000) / 1000).to(dict(float32=torch.float32, float64=torch.float64)[dt])


def wellcond(shape, dt):
    """A random batch kept well away from singular: X + n·I·sign-ish."""
    n = shape[-1]
    x = rnd(shape, "float64") + 2.0 * torch.eye(n, dtype=torch.float64)
    return x.to(dict(float32=torch.float32, float64=torch.float64)[dt])


def tri(shape, dt, upper):
    """A triangular batch with a diagonal clear of zero, and the other
    triangle full of values the op must not read."""
    n = shape[-1]
    x = rnd(shape, "float64")
    d = torch.diagonal(x, 0, -2, -1)
    x = x + torch.diag_embed(torch.where(d < 0, d - 1.0, d + 1.0) - d)
    return x.to(dict(float32=torch.float32, float64=torch.float64)[dt])


def hilbert(n, dt):
    i = torch.arange(n, dtype=torch.float64)
    return (1.0 / (i[:, None] + i[None, :] + 1)).to(dict(float32=torch.float32, float64=torch.float64)[dt])


# A matrix whose elimination needs every row swap (a small first pivot),
# and one whose largest column entries tie.
PIVOTING = [[1e-3, 2.0, 3.0, 1.0], [4.0, 1.0, -2.0, 0.5], [-2.0, 5.0, 1.0, 3.0], [1.0, -1.0, 6.0, 2.0]]
TIES = [[1.0, 2.0, 0.0], [-1.0, 0.5, 3.0], [1.0, -4.0, 2.0]]
SINGULAR = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]


def group1(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        for shape in ([1, 1], [3, 3], [4, 4], [2, 3, 3], [2, 1, 2, 2]):
            a = spd(shape, dt)
            for upper in (False, True):
                fam.case(f"cholesky/{s}/{shp(shape)}/upper={upper}", "cholesky", [a],
                         lambda a, u=upper: torch.linalg.cholesky(a, upper=u), {"upper": upper})
        # Only the lower triangle is read: the upper one holds garbage.
        a = spd([3, 3], dt) + torch.triu(rnd([3, 3], dt), 1) * 7
        fam.case(f"cholesky/{s}/lower-only[3,3]", "cholesky", [a], torch.linalg.cholesky, {"upper": False})
        for upper in (False, True):
            for left in (True, False):
                for unit in (False, True):
                    a = tri([3, 3], dt, upper)
                    b = rnd([3, 2] if left else [2, 3], dt)
                    fam.case(f"solve_triangular/{s}/[3,3]/upper={upper}/left={left}/unit={unit}", "solve_triangular",
                             [a, b], lambda a, b, u=upper, l=left, t=unit: torch.linalg.solve_triangular(
                                 a, b, upper=u, left=l, unitriangular=t),
                             {"upper": upper, "left": left, "unitriangular": unit})
        fam.case(f"solve_triangular/{s}/bcast[2,1,4,4]x[3,4,2]", "solve_triangular",
                 [tri([2, 1, 4, 4], dt, False), rnd([3, 4, 2], dt)],
                 lambda a, b: torch.linalg.solve_triangular(a, b, upper=False),
                 {"upper": False, "left": True, "unitriangular": False})
        fam.case(f"solve_triangular/{s}/right/bcast[3,3]x[2,4,3]", "solve_triangular",
                 [tri([3, 3], dt, True), rnd([2, 4, 3], dt)],
                 lambda a, b: torch.linalg.solve_triangular(a, b, upper=True, left=False),
                 {"upper": True, "left": False, "unitriangular": False})
        for upper in (False, True):
            lf = torch.linalg.cholesky(spd([2, 3, 3], "float64"), upper=upper).to(dict(float32=torch.float32,
                                                                                       float64=torch.float64)[dt])
            # The triangle not read holds garbage.
            lf = lf + (torch.tril(rnd([2, 3, 3], dt), -1) if upper else torch.triu(rnd([2, 3, 3], dt), 1))
            fam.case(f"cholesky_solve/{s}/[2,3,3]/upper={upper}", "cholesky_solve", [rnd([2, 3, 2], dt), lf],
                     lambda b, l, u=upper: torch.cholesky_solve(b, l.triu() if u else l.tril(), upper=u),
                     {"upper": upper})
        lf = torch.linalg.cholesky(spd([2, 1, 3, 3], "float64")).to(dict(float32=torch.float32,
                                                                          float64=torch.float64)[dt])
        fam.case(f"cholesky_solve/{s}/bcast[4,3,2]x[2,1,3,3]", "cholesky_solve", [rnd([4, 3, 2], dt), lf],
                 lambda b, l: torch.cholesky_solve(b, l), {"upper": False})
    fam.case("cholesky/f32/transposed[3,3]", "cholesky", [L(spd([3, 3], "float32"), "transposed")],
             torch.linalg.cholesky, {"upper": False})
    fam.case("cholesky/f32/empty[0,0]", "cholesky", [rnd([0, 0], "float32")], torch.linalg.cholesky, {"upper": False})
    fam.case("cholesky/f32/empty[0,3,3]", "cholesky", [rnd([0, 3, 3], "float32")], torch.linalg.cholesky,
             {"upper": False})
    fam.case("solve_triangular/f32/empty[0,0]x[0,2]", "solve_triangular", [rnd([0, 0], "float32"), rnd([0, 2], "float32")],
             lambda a, b: torch.linalg.solve_triangular(a, b, upper=True),
             {"upper": True, "left": True, "unitriangular": False})
    fam.case("solve_triangular/f32/[3,3]x[3,0]", "solve_triangular", [tri([3, 3], "float32", True), rnd([3, 0], "float32")],
             lambda a, b: torch.linalg.solve_triangular(a, b, upper=True),
             {"upper": True, "left": True, "unitriangular": False})
    # Ill-conditioned but positive-definite: the Hilbert matrix of order 5
    # (condition number about 5e5).
    # float64_only: not run narrowed to float32 (on wgpu), where the
    # condition number leaves no digits to compare.
    fam.case("cholesky/f64/hilbert[5,5]", "cholesky", [hilbert(5, "float64")], torch.linalg.cholesky,
             {"upper": False, "float64_only": True})
    # Refusals.
    npd = vals([[[2.0, 0, 0], [0, 1, 0], [0, 0, 1]], [[1.0, 2, 0], [2, 1, 0], [0, 0, 1]]], "float32")
    fam.case("cholesky/f32/not-pd-batch/error", "cholesky", [npd], torch.linalg.cholesky, {"upper": False}, error="value")
    fam.case("cholesky/f64/not-pd[3,3]/error", "cholesky", [vals([[1.0, 0, 0], [0, -1, 0], [0, 0, 1]], "float64")],
             torch.linalg.cholesky, {"upper": False}, error="value")
    fam.case("cholesky/f32/semidefinite/error", "cholesky", [vals([[1.0, 1], [1, 1]], "float32")],
             torch.linalg.cholesky, {"upper": False}, error="value")
    fam.case("cholesky/f32/[2,3]/error", "cholesky", [rnd([2, 3], "float32")], torch.linalg.cholesky, {"upper": False},
             error="shape")
    fam.case("cholesky/f32/[3]/error", "cholesky", [rnd([3], "float32")], torch.linalg.cholesky, {"upper": False},
             error="shape")
    for dt in ("float16", "bfloat16", "int64"):
        fam.case(f"cholesky/{SHORT[dt]}/error", "cholesky", [vals([[2, 0], [0, 2]], dt)], torch.linalg.cholesky,
                 {"upper": False}, error="dtype")
    tri_attrs = {"upper": True, "left": True, "unitriangular": False}
    fam.case("solve_triangular/f32/[3,3]x[3]/error", "solve_triangular", [tri([3, 3], "float32", True), rnd([3], "float32")],
             lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), tri_attrs, error="shape")
    fam.case("solve_triangular/f32/[3,3]x[2,2]/error", "solve_triangular",
             [tri([3, 3], "float32", True), rnd([2, 2], "float32")],
             lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), tri_attrs, error="shape")
    # torch promotes here (not in solve): lathe refuses, as its solve.
    fam.case("solve_triangular/f32xf64/error", "solve_triangular", [tri([3, 3], "float32", True), rnd([3, 2], "float64")],
             None, tri_attrs, error="dtype")
    fam.case("solve_triangular/f16/error", "solve_triangular", [tri([2, 2], "float32", True).half(), rnd([2, 2], "float16")],
             lambda a, b: torch.linalg.solve_triangular(a, b, upper=True), tri_attrs, error="dtype")
    fam.case("cholesky_solve/f32/[2,2]x[3,3]/error", "cholesky_solve", [rnd([2, 2], "float32"), spd([3, 3], "float32")],
             lambda b, l: torch.cholesky_solve(b, l), {"upper": False}, error="shape")
    fam.case("cholesky_solve/f32/[3]x[3,3]/error", "cholesky_solve", [rnd([3], "float32"), spd([3, 3], "float32")],
             lambda b, l: torch.cholesky_solve(b, l), {"upper": False}, error="shape")


def group2(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        for shape in ([1, 1], [2, 2], [3, 3], [5, 5], [2, 3, 3], [2, 1, 2, 2]):
            a = wellcond(shape, dt)
            fam.case(f"inv/{s}/{shp(shape)}", "inv", [a], torch.linalg.inv)
            fam.case(f"det/{s}/{shp(shape)}", "det", [a], torch.linalg.det)
            fam.case(f"slogdet/{s}/{shp(shape)}", "slogdet", [a], lambda a: tuple(torch.linalg.slogdet(a)))
        for shape in ([3, 3], [4, 4]):
            a = rnd(shape, dt)  # not shifted: negative determinants too
            fam.case(f"det/{s}/random{shp(shape)}", "det", [a], torch.linalg.det)
            fam.case(f"slogdet/{s}/random{shp(shape)}", "slogdet", [a], lambda a: tuple(torch.linalg.slogdet(a)))
        piv, ties = vals(PIVOTING, dt), vals(TIES, dt)
        for name, a in (("pivoting[4,4]", piv), ("ties[3,3]", ties)):
            fam.case(f"inv/{s}/{name}", "inv", [a], torch.linalg.inv)
            fam.case(f"det/{s}/{name}", "det", [a], torch.linalg.det)
            fam.case(f"slogdet/{s}/{name}", "slogdet", [a], lambda a: tuple(torch.linalg.slogdet(a)))
            fam.case(f"solve/{s}/{name}x[{a.shape[0]},2]", "solve", [a, rnd([a.shape[0], 2], dt)], torch.linalg.solve)
        sing = vals(SINGULAR, dt)
        fam.case(f"det/{s}/singular[3,3]", "det", [sing], torch.linalg.det)
        fam.case(f"slogdet/{s}/singular[3,3]", "slogdet", [sing], lambda a: tuple(torch.linalg.slogdet(a)))
        fam.case(f"det/{s}/zero-column[2,2]", "det", [vals([[0.0, 1], [0, 3]], dt)], torch.linalg.det)
        for ash, bsh in (([3, 3], [3]), ([3, 3], [3, 2]), ([2, 3, 3], [2, 3]), ([2, 3, 3], [3]), ([2, 1, 3, 3], [4, 3, 2]),
                         ([3, 3], [2, 3, 1]), ([1, 1], [1, 4])):
            fam.case(f"solve/{s}/{shp(ash)}x{shp(bsh)}", "solve", [wellcond(ash, dt), rnd(bsh, dt)], torch.linalg.solve)
    fam.case("inv/f32/transposed[3,3]", "inv", [L(wellcond([3, 3], "float32"), "transposed")], torch.linalg.inv)
    fam.case("solve/f32/transposed[3,3]xstrided[3,2]", "solve",
             [L(wellcond([3, 3], "float32"), "transposed"), L(rnd([3, 2], "float32"), "strided")], torch.linalg.solve)
    for name, a in (("[0,0]", rnd([0, 0], "float32")), ("[2,0,0]", rnd([2, 0, 0], "float32")),
                    ("[0,3,3]", rnd([0, 3, 3], "float32"))):
        fam.case(f"inv/f32/empty{name}", "inv", [a], torch.linalg.inv)
        fam.case(f"det/f32/empty{name}", "det", [a], torch.linalg.det)
        fam.case(f"slogdet/f32/empty{name}", "slogdet", [a], lambda a: tuple(torch.linalg.slogdet(a)))
    fam.case("solve/f32/empty[0,0]x[0,2]", "solve", [rnd([0, 0], "float32"), rnd([0, 2], "float32")], torch.linalg.solve)
    fam.case("solve/f32/[3,3]x[3,0]", "solve", [wellcond([3, 3], "float32"), rnd([3, 0], "float32")], torch.linalg.solve)
    # Ill-conditioned but invertible, in float64 only: the Hilbert
    # matrices of order 4 and 5 (condition numbers about 1.6e4 and 4.8e5;
    # worse ones are checked by their residual, ops_linalg_solve_test.go).
    f64 = {"float64_only": True}
    for n in (4, 5):
        h = hilbert(n, "float64")
        fam.case(f"inv/f64/hilbert[{n},{n}]", "inv", [h], torch.linalg.inv, f64)
        fam.case(f"det/f64/hilbert[{n},{n}]", "det", [h], torch.linalg.det, f64)
        fam.case(f"slogdet/f64/hilbert[{n},{n}]", "slogdet", [h], lambda a: tuple(torch.linalg.slogdet(a)), f64)
        fam.case(f"solve/f64/hilbert[{n},{n}]x[{n}]", "solve", [h, torch.ones(n, dtype=torch.float64)], torch.linalg.solve,
                 f64)
    # Refusals.
    sing_batch = torch.stack([torch.eye(3), vals(SINGULAR, "float32")])
    fam.case("inv/f32/singular[3,3]/error", "inv", [vals(SINGULAR, "float32")], torch.linalg.inv, error="value")
    fam.case("inv/f64/singular-batch/error", "inv", [sing_batch.double()], torch.linalg.inv, error="value")
    fam.case("inv/f32/zero[2,2]/error", "inv", [torch.zeros(2, 2)], torch.linalg.inv, error="value")
    fam.case("solve/f32/singular[3,3]/error", "solve", [vals(SINGULAR, "float32"), rnd([3], "float32")], torch.linalg.solve,
             error="value")
    fam.case("solve/f32/singular-batch/error", "solve", [sing_batch, rnd([3, 2], "float32")], torch.linalg.solve,
             error="value")
    for op, fn in (("inv", torch.linalg.inv), ("det", torch.linalg.det),
                   ("slogdet", lambda a: tuple(torch.linalg.slogdet(a)))):
        fam.case(f"{op}/f32/[2,3]/error", op, [rnd([2, 3], "float32")], fn, error="shape")
        fam.case(f"{op}/f32/[3]/error", op, [rnd([3], "float32")], fn, error="shape")
        fam.case(f"{op}/f16/error", op, [vals([[2, 0], [0, 2]], "float16")], fn, error="dtype")
        fam.case(f"{op}/i32/error", op, [vals([[2, 0], [0, 2]], "int32")], fn, error="dtype")
    fam.case("solve/f32/[3,3]x[2]/error", "solve", [wellcond([3, 3], "float32"), rnd([2], "float32")], torch.linalg.solve,
             error="shape")
    fam.case("solve/f32/[4,3,3]x[2,3]/error", "solve", [wellcond([4, 3, 3], "float32"), rnd([2, 3], "float32")],
             torch.linalg.solve, error="shape")
    fam.case("solve/f32/bcast[2,3,3]x[3,3,1]/error", "solve", [wellcond([2, 3, 3], "float32"), rnd([3, 3, 1], "float32")],
             torch.linalg.solve, error="shape")
    fam.case("solve/f32xf64/error", "solve", [wellcond([3, 3], "float32"), rnd([3], "float64")], torch.linalg.solve,
             error="dtype")
    fam.case("solve/bf16/error", "solve", [vals([[2, 0], [0, 2]], "bfloat16"), vals([1, 1], "bfloat16")],
             torch.linalg.solve, error="dtype")


def group3(fam):
    qr = lambda a: tuple(torch.linalg.qr(a))
    for dt in FLOATS:
        s = SHORT[dt]
        for shape in ([1, 1], [3, 3], [4, 3], [3, 4], [5, 2], [2, 3, 2], [2, 1, 3, 3]):
            fam.case(f"qr/{s}/{shp(shape)}", "qr", [rnd(shape, dt)], qr)
        # Upper triangular already, a negative corner, a zero column below
        # the corner (no reflection: R keeps x0's sign, as geqrf).
        fam.case(f"qr/{s}/triangular[3,3]", "qr", [vals([[-1.0, 2, 3], [0, 4, 5], [0, 0, -6]], dt)], qr)
        fam.case(f"qr/{s}/pivoting[4,4]", "qr", [vals(PIVOTING, dt)], qr)
    fam.case("qr/f32/transposed[3,4]", "qr", [L(rnd([3, 4], "float32"), "transposed")], qr)
    fam.case("qr/f32/empty[0,3]", "qr", [rnd([0, 3], "float32")], qr)
    fam.case("qr/f32/empty[3,0]", "qr", [rnd([3, 0], "float32")], qr)
    fam.case("qr/f32/[3]/error", "qr", [rnd([3], "float32")], qr, error="shape")
    fam.case("qr/f16/error", "qr", [vals([[2, 0], [0, 2]], "float16")], qr, error="dtype")
    fam.case("qr/i64/error", "qr", [vals([[2, 0], [0, 2]], "int64")], qr, error="dtype")


def grad_qr(fam):
    g = fam.gcase
    for dt in FLOATS:
        s = SHORT[dt]
        h = dt == "float64"
        for shape in ([3, 3], [4, 3], [2, 3, 2]):
            a = rnd(shape, dt)
            g(f"qr_q/{s}/{shp(shape)}", "qr_q", [a], lambda a: torch.linalg.qr(a)[0], hvp=h and shape == [4, 3])
            g(f"qr_r/{s}/{shp(shape)}", "qr_r", [a], lambda a: torch.linalg.qr(a)[1], hvp=h and shape == [4, 3])


def sym(a):
    return (a + a.mT) / 2


def grad_cases(fam):
    g = fam.gcase
    for dt in FLOATS:
        s = SHORT[dt]
        h = dt == "float64"
        for shape in ([3, 3], [2, 2, 2]):
            for upper in (False, True):
                g(f"cholesky/{s}/{shp(shape)}/upper={upper}/sym", "cholesky", [spd(shape, dt)],
                  lambda a, u=upper: torch.linalg.cholesky(sym(a), upper=u), {"upper": upper, "sym": True},
                  hvp=h and shape == [3, 3])
        for upper in (False, True):
            for left in (True, False):
                unit = upper and not left
                g(f"solve_triangular/{s}/[3,3]/upper={upper}/left={left}/unit={unit}", "solve_triangular",
                  [tri([3, 3], dt, upper), rnd([3, 2] if left else [2, 3], dt)],
                  lambda a, b, u=upper, l=left, t=unit: torch.linalg.solve_triangular(a, b, upper=u, left=l,
                                                                                      unitriangular=t),
                  {"upper": upper, "left": left, "unitriangular": unit}, hvp=h and left)
        for upper in (False, True):
            lf = torch.linalg.cholesky(spd([3, 3], "float64"), upper=upper).to(dict(float32=torch.float32,
                                                                                   float64=torch.float64)[dt])
            g(f"cholesky_solve/{s}/[3,3]/upper={upper}", "cholesky_solve", [rnd([3, 2], dt), lf],
              lambda b, l, u=upper: torch.cholesky_solve(b, l.triu() if u else l.tril(), upper=u), {"upper": upper},
              hvp=h)
        for shape in ([3, 3], [2, 2, 2]):
            a = wellcond(shape, dt)
            g(f"inv/{s}/{shp(shape)}", "inv", [a], torch.linalg.inv, hvp=h and shape == [3, 3])
            g(f"det/{s}/{shp(shape)}", "det", [a], torch.linalg.det, hvp=h and shape == [3, 3])
            g(f"slogdet_logabsdet/{s}/{shp(shape)}", "slogdet_logabsdet", [a], lambda a: torch.linalg.slogdet(a)[1],
              hvp=h and shape == [3, 3])
        g(f"solve/{s}/[3,3]x[3,2]", "solve", [wellcond([3, 3], dt), rnd([3, 2], dt)], torch.linalg.solve, hvp=h)
        g(f"solve/{s}/[2,3,3]x[3]", "solve", [wellcond([2, 3, 3], dt), rnd([3], dt)], torch.linalg.solve)
        g(f"solve/{s}/pivoting[4,4]x[4,1]", "solve", [vals(PIVOTING, dt), rnd([4, 1], dt)], torch.linalg.solve)
        g(f"det/{s}/random[4,4]", "det", [rnd([4, 4], dt)], torch.linalg.det)
    # Cholesky's own gradient, symmetric as torch's, where a finite
    # difference (of the lower triangle alone) would differ.
    g("cholesky/f64/[3,3]/lower-read", "cholesky", [spd([3, 3], "float64")], torch.linalg.cholesky, {"upper": False},
      nonsmooth=True)
    # (At a singular matrix torch 1.13's det gradient is zero, not the
    # adjugate, which lathe gives: ops_linalg_solve_test.go checks it
    # against a finite difference instead.)
    g("det/f64/hilbert[4,4]", "det", [hilbert(4, "float64")], torch.linalg.det, {"float64_only": True})
    g("solve/f64/bcast[2,1,3,3]x[2,3,2]", "solve", [wellcond([2, 1, 3, 3], "float64"), rnd([2, 3, 2], "float64")],
      torch.linalg.solve)


def linalg():
    fam = Family("linalg", 87)
    group1(fam)
    group2(fam)
    group3(fam)
    return fam


def grad_linalg():
    fam = GradFamily("grad_linalg", 88)
    grad_cases(fam)
    grad_qr(fam)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (linalg, grad_linalg):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
