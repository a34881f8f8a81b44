"""Cases of torch.nn.functional.pdist, torch.unique_consecutive with a dim,
torch.linalg.solve with left=False and torch.linalg.lstsq's four results
(residuals, rank and singular values per driver), which lathe builds as
composites (Pdist, UniqueConsecutiveDim, SolveSide, LstsqFull), in
linalg4.json, and their gradients in grad_linalg4.json. Run it from the
repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/linalg4.py

(gen.py runs it too.) Op keys and attributes are listed with the Go table,
internal/conformance/ops_linalg4.go.

torch 1.13 has no second derivative of pdist (its _pdist_backward has
none), so pdist's gradient cases have no Hessian-vector product; its
residuals and singular values of lstsq have no gradient in torch, so only
the solution's is compared (as linalg2's lstsq). torch 1.13 has no
gradient of unique_consecutive either: its case is lathe's (the gradient
of each run's first slice, an index_select), not differentiable by finite
differences (a step splits the runs).
"""

import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily  # noqa: E402
from refcase import FLOATS, NAN, SHORT, Family, rnd, shp, vals  # noqa: E402

INF = math.inf
TD = dict(float32=torch.float32, float64=torch.float64)
PS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, INF)
# A rank-2 [5, 3]: the third column is the sum of the first two.
DEFICIENT = [[1.0, 2.0, 3.0], [3.0, 1.0, 4.0], [0.0, 1.0, 1.0], [1.0, 1.0, 2.0], [2.0, 0.0, 2.0]]


def pdist(p):
    return lambda x: torch.nn.functional.pdist(x, p)


def pdist_cases(fam):
    c = fam.case
    for dt in FLOATS:
        s = SHORT[dt]
        for shape in ([4, 3], [5, 1]) if dt == "float32" else ([4, 3],):
            x = rnd(shape, dt)
            for p in PS:
                c(f"pdist/{s}/{shp(shape)}/p={p}", "pdist", [x], pdist(p), {"p": p})
    # Equal rows (zero distances), ties for the largest difference.
    same = vals([[1.0, 2.0], [1.0, 2.0], [0.0, 5.0], [1.0, 4.0]], "float32")
    for p in PS:
        c(f"pdist/f32/same/p={p}", "pdist", [same], pdist(p), {"p": p})
    special = vals([[1.0, NAN], [0.0, 1.0], [2.0, INF], [2.0, INF]], "float32")
    for p in PS:
        c(f"pdist/f32/nan-inf/p={p}", "pdist", [special], pdist(p), {"p": p})
    for shape in ([1, 3], [0, 3], [3, 0]):
        c(f"pdist/f32/empty{shp(shape)}", "pdist", [rnd(shape, "float32")], pdist(2.0), {"p": 2.0})
    c("pdist/f32/[30,4]", "pdist", [rnd([30, 4], "float32")], pdist(2.0), {"p": 2.0})
    c("pdist/f32/p=-1/error", "pdist", [same], pdist(-1.0), {"p": -1.0}, error="value")
    c("pdist/f32/[3]/error", "pdist", [rnd([3], "float32")], pdist(2.0), {"p": 2.0}, error="shape")
    c("pdist/f32/[2,2,2]/error", "pdist", [rnd([2, 2, 2], "float32")], pdist(2.0), {"p": 2.0}, error="shape")
    c("pdist/i64/error", "pdist", [vals([[1, 2], [3, 4]], "int64")], pdist(2.0), {"p": 2.0}, error="dtype")
    for dt in ("float16", "bfloat16"):  # torch's pdist refuses them outside autocast, which computes in float32
        c(f"pdist/{SHORT[dt]}/[4,3]", "pdist", [rnd([4, 3], dt)], lambda x: pdist(2.0)(x.float()).to(x.dtype),
          {"p": 2.0})


def ucd(dim):
    return lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True, dim=dim)


def unique_cases(fam):
    c = fam.case
    a = [[1, 1, 2, 2, 1], [3, 3, 4, 5, 3]]
    for dt in ("int64", "int32", "float32", "float64"):
        for d in (0, 1, -1):
            c(f"unique_consecutive_dim/{SHORT[dt]}/[2,5]/dim={d}", "unique_consecutive_dim", [vals(a, dt)], ucd(d),
              {"dim": d, "inverse": True, "counts": True})
    x = vals([[[1, 1], [2, 2]], [[1, 1], [2, 2]], [[1, 1], [2, 3]], [[0, 0], [0, 0]]], "float32")
    for d in (0, 1, 2):
        c(f"unique_consecutive_dim/f32/[4,2,2]/dim={d}", "unique_consecutive_dim", [x], ucd(d),
          {"dim": d, "inverse": True, "counts": True})
    c("unique_consecutive_dim/f32/nan", "unique_consecutive_dim", [vals([[NAN, NAN, 1.0], [1.0, 1.0, 1.0]], "float32")],
      ucd(1), {"dim": 1, "inverse": True, "counts": True})
    c("unique_consecutive_dim/f32/-0", "unique_consecutive_dim", [vals([[0.0, -0.0], [1.0, 1.0]], "float32")],
      ucd(1), {"dim": 1, "inverse": True, "counts": True})
    c("unique_consecutive_dim/bool/[2,4]", "unique_consecutive_dim",
      [vals([[True, True, False, False], [True, True, False, True]], "bool")], ucd(1),
      {"dim": 1, "inverse": True, "counts": True})
    c("unique_consecutive_dim/f32/[3]", "unique_consecutive_dim", [vals([2.0, 2.0, 1.0], "float32")], ucd(0),
      {"dim": 0, "inverse": True, "counts": True})
    c("unique_consecutive_dim/f32/values", "unique_consecutive_dim", [vals(a, "float32")],
      lambda x: [torch.unique_consecutive(x, dim=1)], {"dim": 1, "inverse": False, "counts": False})
    c("unique_consecutive_dim/f32/counts", "unique_consecutive_dim", [vals(a, "float32")],
      lambda x: list(torch.unique_consecutive(x, return_counts=True, dim=1)), {"dim": 1, "inverse": False, "counts": True})
    for shape, d in (([0, 3], 0), ([2, 0], 1)):
        c(f"unique_consecutive_dim/f32/empty{shp(shape)}/dim={d}", "unique_consecutive_dim", [rnd(shape, "float32")],
          ucd(d), {"dim": d, "inverse": True, "counts": True})
    for shape, d in (([0, 3], 1), ([2, 0], 0)):
        c(f"unique_consecutive_dim/f32/empty{shp(shape)}/dim={d}/error", "unique_consecutive_dim",
          [rnd(shape, "float32")], ucd(d), {"dim": d, "inverse": True, "counts": True}, error="shape")
    c("unique_consecutive_dim/f32/dim=2/error", "unique_consecutive_dim", [vals(a, "float32")], ucd(2),
      {"dim": 2, "inverse": True, "counts": True}, error="index")
    c("unique_consecutive_dim/f32/0d/error", "unique_consecutive_dim", [vals(1.0, "float32")], ucd(0),
      {"dim": 0, "inverse": True, "counts": True}, error="index")


def solve_right(a, b):
    return torch.linalg.solve(a, b, left=False)


def well(shape, dt):
    """A well-conditioned square matrix (or batch): random plus n·I."""
    n = shape[-1]
    return rnd(shape, dt) + n * torch.eye(n, dtype=TD[dt])


def solve_cases(fam):
    c = fam.case
    for dt in FLOATS:
        s = SHORT[dt]
        for ash, bsh in (([3, 3], [2, 3]), ([3, 3], [3, 3]), ([2, 3, 3], [4, 3]), ([2, 3, 3], [1, 5, 3]),
                         ([1, 4, 4], [2, 1, 4])):
            if dt == "float64" and ash == [1, 4, 4]:
                continue
            c(f"solve_side/{s}/{shp(ash)}x{shp(bsh)}/left=False", "solve_side", [well(ash, dt), rnd(bsh, dt)],
              solve_right, {"left": False})
        c(f"solve_side/{s}/[3,3]x[3,2]/left=True", "solve_side", [well([3, 3], dt), rnd([3, 2], dt)],
          lambda a, b: torch.linalg.solve(a, b, left=True), {"left": True})
    c("solve_side/f32/empty[0,0]x[3,0]", "solve_side", [rnd([0, 0], "float32"), rnd([3, 0], "float32")], solve_right,
      {"left": False})
    c("solve_side/f32/[3,3]x[0,3]", "solve_side", [well([3, 3], "float32"), rnd([0, 3], "float32")], solve_right,
      {"left": False})
    c("solve_side/f32/singular/error", "solve_side", [vals([[1.0, 2.0], [2.0, 4.0]], "float32"), rnd([1, 2], "float32")],
      solve_right, {"left": False}, error="value")
    c("solve_side/f32/vector/error", "solve_side", [well([3, 3], "float32"), rnd([3], "float32")], solve_right,
      {"left": False}, error="shape")
    c("solve_side/f32/batch-vector/error", "solve_side", [well([2, 3, 3], "float32"), rnd([2, 3], "float32")],
      solve_right, {"left": False}, error="shape")
    c("solve_side/f32/[3,2]/error", "solve_side", [well([3, 3], "float32"), rnd([3, 2], "float32")], solve_right,
      {"left": False}, error="shape")
    c("solve_side/f32xf64/error", "solve_side", [well([3, 3], "float32"), rnd([2, 3], "float64")], solve_right,
      {"left": False}, error="dtype")
    c("solve_side/f16/error", "solve_side", [vals([[1, 0], [0, 1]], "float16"), vals([[1, 2]], "float16")],
      solve_right, {"left": False}, error="dtype")


def lstsq(driver):
    """torch's four results; for gelsy, the solution of gelsd (equal for
    the full-rank A of these cases), as gelsy's last bits change from run
    to run here (LAPACK's threads), and the JSON would with them."""
    def f(a, b):
        r = list(torch.linalg.lstsq(a, b, driver=driver))
        if driver == "gelsy":
            r[0] = torch.linalg.lstsq(a, b, driver="gelsd").solution
        return r
    return f


def lstsq_cases(fam):
    c = fam.case
    for dt in FLOATS:
        s = SHORT[dt]
        # Each kind of shape (tall, wide, batched, a vector B) with gelsd,
        # and a few with the others, whose results differ in which are
        # empty (TestLstsqFullResults has every driver and shape): each
        # case costs two SVDs, hundreds of launches on wgpu:0 and the cuda
        # emulation.
        shapes = {
            "gelsd": (([5, 3], [5, 2]), ([3, 5], [3, 2]), ([2, 5, 3], [1, 5, 2]), ([5, 3], [5])),
            "gels": (([5, 3], [5, 2]),),  # a wide A's gels solution is not the least-norm one
            "gelsy": (([5, 3], [5, 2]), ([2, 4, 3], [2, 4])),
            "gelss": (([5, 3], [5, 2]),),
        }
        for driver in ("gels", "gelsy", "gelsd", "gelss"):
            for ash, bsh in shapes[driver]:
                if dt == "float64" and (ash != [5, 3] or driver != "gelsd"):
                    continue
                c(f"lstsq_full/{s}/{shp(ash)}x{shp(bsh)}/{driver}", "lstsq_full", [rnd(ash, dt), rnd(bsh, dt)],
                  lstsq(driver), {"driver": driver})
        for driver in ("gelsy", "gelsd"):
            # gelsy's solution of a rank-deficient A is not the least-norm
            # one: the other three results are compared.
            c(f"lstsq_full/{s}/rank2/{driver}", "lstsq_full", [vals(DEFICIENT, dt), rnd([5, 2], dt)],
              lambda a, b, d=driver: list(torch.linalg.lstsq(a, b, driver=d))[1:],
              {"driver": driver, "skip_solution": True})
    c("lstsq_full/f32/default", "lstsq_full", [rnd([5, 3], "float32"), rnd([5, 2], "float32")],
      lstsq("gelsy"), {"driver": ""})
    c("lstsq_full/f32/zero", "lstsq_full", [torch.zeros(4, 2), rnd([4, 2], "float32")], lstsq("gelsd"),
      {"driver": "gelsd"})
    c("lstsq_full/f32/empty[0,3]", "lstsq_full", [rnd([0, 3], "float32"), rnd([0, 2], "float32")], lstsq("gelsd"),
      {"driver": "gelsd"})
    c("lstsq_full/f32/driver/error", "lstsq_full", [rnd([4, 2], "float32"), rnd([4, 1], "float32")],
      lstsq("gelsx"), {"driver": "gelsx"}, error="value")
    c("lstsq_full/f32/rows/error", "lstsq_full", [rnd([4, 2], "float32"), rnd([3, 1], "float32")],
      lstsq("gelsd"), {"driver": "gelsd"}, error="shape")
    c("lstsq_full/f32xf64/error", "lstsq_full", [rnd([4, 2], "float32"), rnd([4, 1], "float64")],
      lstsq("gelsd"), {"driver": "gelsd"}, error="dtype")


def grad_cases(fam):
    g = fam.gcase
    for dt in FLOATS:
        s = SHORT[dt]
        h = dt == "float64"
        x = rnd([4, 3], dt)
        for p in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, INF) if h else (1.0, 2.0, INF):
            g(f"pdist/{s}/[4,3]/p={p}", "pdist", [x], pdist(p), {"p": p})
        same = vals([[1.0, 2.0], [1.0, 2.0], [0.0, 5.0], [1.0, 4.0]], dt)
        for p in (0.5, 1.0, 2.0, 3.0, INF) if h else (2.0,):
            g(f"pdist/{s}/same/p={p}", "pdist", [same], pdist(p), {"p": p}, nonsmooth=True)
        for ash, bsh in (([3, 3], [2, 3]), ([2, 3, 3], [1, 4, 3])) if h else (([3, 3], [2, 3]),):
            g(f"solve_side/{s}/{shp(ash)}x{shp(bsh)}/left=False", "solve_side", [well(ash, dt), rnd(bsh, dt)],
              solve_right, {"left": False}, hvp=h and ash == [3, 3])
        g(f"lstsq_full/{s}/[5,3]x[5,2]/gelsd", "lstsq_full", [rnd([5, 3], dt), rnd([5, 2], dt)],
          lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd").solution, {"driver": "gelsd", "solution": True})
        g(f"unique_consecutive_dim/{s}/[2,5]/dim=1", "unique_consecutive_dim",
          [vals([[1.0, 1.0, 2.0, 2.0, 1.0], [3.0, 3.0, 4.0, 5.0, 3.0]], dt)],
          lambda x: x.index_select(1, torch.tensor([0, 2, 3, 4])), {"dim": 1, "inverse": False, "counts": False},
          nonsmooth=True)


def linalg4():
    fam = Family("linalg4", 107)
    pdist_cases(fam)
    unique_cases(fam)
    solve_cases(fam)
    lstsq_cases(fam)
    return fam


def grad_linalg4():
    fam = GradFamily("grad_linalg4", 108)
    grad_cases(fam)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (linalg4, grad_linalg4):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
