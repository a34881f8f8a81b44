"""Cases of the rest of torch.linalg that lathe builds as composites
(linalg2.json) and their gradients (grad_linalg2.json): eigh and
eigvalsh, svd and svdvals (by Jacobi iterations, ops_linalg_eigh.go), and
pinv, matrix_rank, matrix_norm, cond, matrix_power and multi_dot
(ops_linalg_norms.go). Run it from the repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/linalg2.py

(gen.py runs it too.) Op keys and attributes are listed with the Go table,
internal/conformance/ops_linalg2.go.

Eigenvectors and singular vectors are unique only up to sign: lathe makes
the entry of largest magnitude of each eigenvector (each row of Vh) positive,
and the cases normalize torch's the same way (signs()), on random matrices
whose vectors have no ties. Where the vectors are not unique at all
(repeated eigenvalues, zero singular values, the completing columns of a
full SVD) the cases compare what does not depend on the choice: eigh_inv
gives w, V·Vᵀ and Vᵀ·A·V; svd_inv S, U·diag(S)·Vh, Uᵀ·U and Vh·Vhᵀ. The
gradient cases take functions that do not depend on the signs: V∘V,
U∘U, Vh∘Vh, U·Vh, and the values; eigh's factor sym(A) (attribute "sym"),
as cholesky's in linalg.py, so that a finite difference is torch's
symmetric gradient.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily  # noqa: E402
from refcase import FLOATS, SHORT, Family, L, rnd, shp, vals  # noqa: E402

TD = dict(float32=torch.float32, float64=torch.float64)


def symm(shape, dt):
    x = rnd(shape, "float64")
    return ((x + x.mT) / 2).to(TD[dt])


def sym(a):
    return (a + a.mT) / 2


def vsigns(v):
    """v with each column's entry of largest magnitude positive."""
    if v.numel() == 0:
        return v
    i = v.abs().argmax(-2, keepdim=True)
    s = torch.where(torch.gather(v, -2, i) >= 0, 1.0, -1.0).to(v.dtype)
    return v * s


def eigh(a, upper=False):
    w, v = torch.linalg.eigh(a, UPLO="U" if upper else "L")
    return w, vsigns(v)


def eigh_inv(a):
    w, v = torch.linalg.eigh(a)
    return w, v @ v.mT, v.mT @ a @ v


def svd(a, full=False):
    u, s, vh = torch.linalg.svd(a, full_matrices=full)
    i = vh.abs().argmax(-1, keepdim=True)
    sg = torch.where(torch.gather(vh, -1, i) >= 0, 1.0, -1.0).to(a.dtype)  # [..., k, 1]
    k = s.shape[-1]
    u = torch.cat([u[..., :k] * sg.mT, u[..., k:]], -1)
    vh = torch.cat([vh[..., :k, :] * sg, vh[..., k:, :]], -2)
    return u, s, vh


def svd_inv(a, full):
    u, s, vh = torch.linalg.svd(a, full_matrices=full)
    k = s.shape[-1]
    return s, (u[..., :k] * s.unsqueeze(-2)) @ vh[..., :k, :], u.mT @ u, vh @ vh.mT


ORDS = {"fro": "fro", "nuc": "nuc", "inf": float("inf"), "-inf": -float("inf"), "1": 1, "-1": -1, "2": 2, "-2": -2}

# Repeated and near-repeated eigenvalues, singular matrices.
REPEATED = [[2.0, 0, 0], [0, 2, 0], [0, 0, 5]]
ROTATED_REPEATED = [[3.0, 1, 1], [1, 3, 1], [1, 1, 3]]  # eigenvalues 2, 2, 5
NEAR = [[1.0, 1e-3, 0], [1e-3, 1.0, 0], [0, 0, -1]]
SINGULAR = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]
RANK1 = [[1.0, 2.0], [2.0, 4.0], [-1.0, -2.0]]


def eigh_cases(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        for shape in ([1, 1], [3, 3], [6, 6], [2, 1, 3, 3]):
            a = rnd(shape, dt)  # not symmetric: only a triangle is read
            fam.case(f"eigh/{s}/{shp(shape)}", "eigh", [a], eigh, {"upper": False})
            if shape in ([3, 3], [6, 6]):
                fam.case(f"eigh/{s}/{shp(shape)}/upper", "eigh", [a], lambda a: eigh(a, True), {"upper": True})
                fam.case(f"eigvalsh/{s}/{shp(shape)}/upper", "eigvalsh", [a], lambda a: torch.linalg.eigvalsh(a, "U"),
                         {"upper": True})
                fam.case(f"eigvalsh/{s}/{shp(shape)}", "eigvalsh", [a], torch.linalg.eigvalsh, {"upper": False})
        for name, v in (("repeated", REPEATED), ("rotated-repeated", ROTATED_REPEATED), ("near-repeated", NEAR),
                        ("zero", [[0.0, 0], [0, 0]]), ("diagonal", [[3.0, 0], [0, -1]])):
            a = vals(v, dt)
            fam.case(f"eigh_inv/{s}/{name}", "eigh_inv", [a], eigh_inv)
            if name == "rotated-repeated":
                fam.case(f"eigvalsh/{s}/{name}", "eigvalsh", [a], torch.linalg.eigvalsh, {"upper": False})
        fam.case(f"eigh/{s}/scaled[4,4]", "eigh", [symm([4, 4], dt) * 1e6], eigh, {"upper": False})
    fam.case("eigh/f32/transposed[3,3]", "eigh", [L(rnd([3, 3], "float32"), "transposed")], eigh, {"upper": False})
    for name, a in (("[0,0]", rnd([0, 0], "float32")), ("[2,0,0]", rnd([2, 0, 0], "float32")),
                    ("[0,3,3]", rnd([0, 3, 3], "float32"))):
        fam.case(f"eigh/f32/empty{name}", "eigh", [a], eigh, {"upper": False})
    fam.case("eigh/f32/[2,3]/error", "eigh", [rnd([2, 3], "float32")], eigh, {"upper": False}, error="shape")
    fam.case("eigh/f32/[3]/error", "eigh", [rnd([3], "float32")], eigh, {"upper": False}, error="shape")
    fam.case("eigh/f16/error", "eigh", [vals([[2, 0], [0, 2]], "float16")], eigh, {"upper": False}, error="dtype")
    fam.case("eigh/i64/error", "eigh", [vals([[2, 0], [0, 2]], "int64")], eigh, {"upper": False}, error="dtype")
    # Non-finite: lathe refuses (ErrValue) where torch may give NaN.
    fam.case("eigh/f32/nan/error", "eigh", [vals([[1.0, 0], [float("nan"), 1]], "float32")], None, {"upper": False},
             error="value")


def svd_cases(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        for shape in ([3, 3], [4, 3], [2, 5], [2, 1, 3, 4]):
            a = rnd(shape, dt)
            fam.case(f"svd/{s}/{shp(shape)}", "svd", [a], svd, {"full": False})
            if shape in ([3, 3], [2, 5], [2, 1, 3, 4]):
                fam.case(f"svdvals/{s}/{shp(shape)}", "svdvals", [a], torch.linalg.svdvals)
            if shape in ([4, 3], [2, 5]):
                fam.case(f"svd_inv/{s}/{shp(shape)}/full", "svd_inv", [a], lambda a: svd_inv(a, True), {"full": True})
            if shape == [3, 3]:
                fam.case(f"svd/{s}/{shp(shape)}/full", "svd", [a], lambda a: svd(a, True), {"full": True})
        for name, v in (("singular", SINGULAR), ("rank1", RANK1), ("zero", [[0.0, 0, 0], [0, 0, 0]]),
                        ("repeated", REPEATED)):
            a = vals(v, dt)
            fam.case(f"svd_inv/{s}/{name}", "svd_inv", [a], lambda a: svd_inv(a, False), {"full": False})
        # Ill-conditioned: a small singular value to its relative accuracy.
        g = torch.tensor([[1.0, 1.0], [1.0, 1.0 + 1e-4]], dtype=TD[dt])
        fam.case(f"svdvals/{s}/ill-conditioned", "svdvals", [g], torch.linalg.svdvals)
    fam.case("svd/f32/transposed[3,4]", "svd", [L(rnd([3, 4], "float32"), "transposed")], svd, {"full": False})
    for name, a in (("[0,3]", rnd([0, 3], "float32")), ("[3,0]", rnd([3, 0], "float32")),
                    ("[0,2,2]", rnd([0, 2, 2], "float32"))):
        for full in (False, True):
            fam.case(f"svd/f32/empty{name}/full={full}", "svd", [a], lambda a, f=full: torch.linalg.svd(a, full_matrices=f),
                     {"full": full})
    fam.case("svd/f32/[3]/error", "svd", [rnd([3], "float32")], svd, {"full": False}, error="shape")
    fam.case("svd/bf16/error", "svd", [vals([[2, 0], [0, 2]], "bfloat16")], svd, {"full": False}, error="dtype")
    fam.case("svd/i32/error", "svd", [vals([[2, 0], [0, 2]], "int32")], svd, {"full": False}, error="dtype")
    fam.case("svd/f32/nan/error", "svd", [vals([[1.0, float("nan")], [0, 1]], "float32")], svd, {"full": False},
             error="value")


def derived_cases(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        for shape in ([3, 3], [4, 2], [2, 2, 3]):
            a = rnd(shape, dt)
            fam.case(f"pinv/{s}/{shp(shape)}", "pinv", [a], torch.linalg.pinv)
            fam.case(f"matrix_rank/{s}/{shp(shape)}", "matrix_rank", [a], torch.linalg.matrix_rank)
            fam.case(f"cond/{s}/{shp(shape)}", "cond", [a], torch.linalg.cond)
        for name, v in (("singular", SINGULAR), ("rank1", RANK1), ("zero", [[0.0, 0], [0, 0]])):
            a = vals(v, dt)
            fam.case(f"pinv/{s}/{name}", "pinv", [a], torch.linalg.pinv)
            fam.case(f"matrix_rank/{s}/{name}", "matrix_rank", [a], torch.linalg.matrix_rank)
        a = rnd([2, 3, 4], dt)
        for o in ORDS if dt == "float32" else ("fro", "nuc", "2", "-2"):
            fam.case(f"matrix_norm/{s}/[2,3,4]/{o}", "matrix_norm", [a], lambda a, o=o: torch.linalg.matrix_norm(a, ORDS[o]),
                     {"ord": o})
        m = rnd([3, 3], dt) / 2 + torch.eye(3, dtype=TD[dt])
        for n in (0, 1, 3, -2):
            fam.case(f"matrix_power/{s}/[3,3]/n={n}", "matrix_power", [m], lambda a, n=n: torch.linalg.matrix_power(a, n),
                     {"n": n})
        fam.case(f"matrix_power/{s}/[2,2,2]/n=4", "matrix_power", [rnd([2, 2, 2], dt)],
                 lambda a: torch.linalg.matrix_power(a, 4), {"n": 4})
        for shapes in (([4], [4, 3], [3, 5], [5]), ([2, 6], [6, 1], [1, 5], [5, 3])):
            ins = [rnd(list(sh), dt) for sh in shapes]
            fam.case(f"multi_dot/{s}/{'x'.join(shp(sh) for sh in shapes)}", "multi_dot", ins,
                     lambda *ts: torch.linalg.multi_dot(ts))
    for dt in FLOATS:
        s = SHORT[dt]
        for name, a in (("[3,3]", rnd([3, 3], dt)), ("scaled[3,3]", rnd([3, 3], dt) * 8), ("mixed-batch", torch.stack([rnd([2, 2], dt) / 10, rnd([2, 2], dt) * 20])),
                        ("nilpotent", vals([[0.0, 1, 2], [0, 0, 3], [0, 0, 0]], dt))):
            fam.case(f"matrix_exp/{s}/{name}", "matrix_exp", [a], torch.linalg.matrix_exp)
        lsq = lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd").solution
        for ash, bsh in (([5, 3], [5, 2]), ([4, 2], [4]), ([2, 4, 3], [1, 4, 2])):
            fam.case(f"lstsq/{s}/{shp(ash)}x{shp(bsh)}", "lstsq", [rnd(ash, dt), rnd(bsh, dt)], lsq)
        fam.case(f"lstsq/{s}/singular", "lstsq", [vals(SINGULAR, dt), rnd([3, 2], dt)], lsq)
    fam.case("matrix_exp/f32/empty[0,0]", "matrix_exp", [rnd([0, 0], "float32")], torch.linalg.matrix_exp)
    fam.case("matrix_exp/f32/[2,3]/error", "matrix_exp", [rnd([2, 3], "float32")], torch.linalg.matrix_exp, error="shape")
    fam.case("matrix_exp/f16/error", "matrix_exp", [vals([[1, 0], [0, 1]], "float16")], torch.linalg.matrix_exp,
             error="dtype")
    fam.case("lstsq/f32xf64/error", "lstsq", [rnd([3, 2], "float32"), rnd([3, 1], "float64")],
             lambda a, b: torch.linalg.lstsq(a, b).solution, error="dtype")
    fam.case("lstsq/f32/rows/error", "lstsq", [rnd([3, 2], "float32"), rnd([4, 1], "float32")],
             lambda a, b: torch.linalg.lstsq(a, b).solution, error="shape")
    fam.case("matrix_norm/f16/[3,3]/fro", "matrix_norm", [rnd([3, 3], "float16")],
             lambda a: torch.linalg.matrix_norm(a, "fro"), {"ord": "fro"})
    fam.case("matrix_norm/f16/[3,3]/1", "matrix_norm", [rnd([3, 3], "float16")],
             lambda a: torch.linalg.matrix_norm(a, 1), {"ord": "1"})
    fam.case("matrix_rank/f64/near-singular", "matrix_rank", [vals([[1.0, 1, 1], [1, 1 + 1e-12, 1], [1, 1, 1]], "float64")],
             torch.linalg.matrix_rank, {"float64_only": True})
    # Refusals.
    h = vals([[2, 0], [0, 2]], "float16")
    fam.case("matrix_norm/f16/nuc/error", "matrix_norm", [h], lambda a: torch.linalg.matrix_norm(a, "nuc"),
             {"ord": "nuc"}, error="dtype")
    fam.case("matrix_norm/i64/error", "matrix_norm", [vals([[2, 0], [0, 2]], "int64")],
             lambda a: torch.linalg.matrix_norm(a), {"ord": "fro"}, error="dtype")
    fam.case("matrix_norm/f32/[3]/error", "matrix_norm", [rnd([3], "float32")], lambda a: torch.linalg.matrix_norm(a),
             {"ord": "fro"}, error="shape")
    fam.case("pinv/f16/error", "pinv", [h], torch.linalg.pinv, error="dtype")
    fam.case("matrix_rank/f16/error", "matrix_rank", [h], torch.linalg.matrix_rank, error="dtype")
    fam.case("pinv/f32/[3]/error", "pinv", [rnd([3], "float32")], torch.linalg.pinv, error="shape")
    fam.case("cond/i64/error", "cond", [vals([[2, 0], [0, 2]], "int64")], torch.linalg.cond, error="dtype")
    fam.case("matrix_power/f32/[2,3]/error", "matrix_power", [rnd([2, 3], "float32")],
             lambda a: torch.linalg.matrix_power(a, 2), {"n": 2}, error="shape")
    fam.case("matrix_power/f32/singular/n=-1/error", "matrix_power", [vals(SINGULAR, "float32")],
             lambda a: torch.linalg.matrix_power(a, -1), {"n": -1}, error="value")
    fam.case("multi_dot/f32/one/error", "multi_dot", [rnd([2, 2], "float32")], lambda *ts: torch.linalg.multi_dot(ts),
             error="value")
    fam.case("multi_dot/f32/chain/error", "multi_dot", [rnd([2, 3], "float32"), rnd([2, 3], "float32")],
             lambda *ts: torch.linalg.multi_dot(ts), error="shape")
    fam.case("multi_dot/f32/3d/error", "multi_dot", [rnd([2, 3], "float32"), rnd([2, 3, 3], "float32")],
             lambda *ts: torch.linalg.multi_dot(ts), error="shape")


def grad_cases(fam):
    g = fam.gcase
    for dt in FLOATS:
        s = SHORT[dt]
        h = dt == "float64"
        for shape in ([3, 3], [2, 4, 4]):
            a = symm(shape, dt)
            g(f"eigvalsh/{s}/{shp(shape)}/sym", "eigvalsh", [a], lambda a: torch.linalg.eigvalsh(sym(a)),
              {"sym": True, "upper": False}, hvp=h and shape == [3, 3])
            g(f"eigh_vv/{s}/{shp(shape)}/sym", "eigh_vv", [a], lambda a: torch.linalg.eigh(sym(a))[1] ** 2,
              {"sym": True, "upper": False}, hvp=h and shape == [3, 3])
        g(f"eigh_vv/{s}/[4,4]/upper/sym", "eigh_vv", [symm([4, 4], dt)],
          lambda a: torch.linalg.eigh(sym(a), UPLO="U")[1] ** 2, {"sym": True, "upper": True})
        for shape in ([3, 3], [4, 3], [3, 5], [2, 3, 2]):
            a = rnd(shape, dt)
            hv = h and shape in ([3, 3], [4, 3])
            g(f"svdvals/{s}/{shp(shape)}", "svdvals", [a], torch.linalg.svdvals, hvp=hv)
            if shape in ([3, 3], [4, 3]):
                g(f"svd_uu/{s}/{shp(shape)}", "svd_uu", [a],
                  lambda a: torch.linalg.svd(a, full_matrices=False)[0] ** 2, hvp=hv)
                g(f"svd_vv/{s}/{shp(shape)}", "svd_vv", [a],
                  lambda a: torch.linalg.svd(a, full_matrices=False)[2] ** 2, hvp=hv)
            g(f"svd_uvh/{s}/{shp(shape)}", "svd_uvh", [a],
              lambda a: (lambda u, s_, vh: u @ vh)(*torch.linalg.svd(a, full_matrices=False)), hvp=hv)
        a = rnd([3, 3], dt)
        g(f"svd_full_uu/{s}/[4,3]", "svd_full_uu", [rnd([4, 3], dt)],
          lambda a: torch.linalg.svd(a, full_matrices=True)[0][..., :3] ** 2)
        g(f"pinv/{s}/[3,2]", "pinv", [rnd([3, 2], dt)], torch.linalg.pinv, hvp=h)
        for o in ("fro", "nuc", "2", "inf", "-1"):
            g(f"matrix_norm/{s}/[3,3]/{o}", "matrix_norm", [a], lambda a, o=o: torch.linalg.matrix_norm(a, ORDS[o]),
              {"ord": o}, hvp=h and o in ("nuc", "2"))
        g(f"cond/{s}/[3,3]", "cond", [a], torch.linalg.cond)
        m = rnd([3, 3], dt) / 2 + torch.eye(3, dtype=TD[dt])
        for n in (3, -2):
            g(f"matrix_power/{s}/[3,3]/n={n}", "matrix_power", [m], lambda a, n=n: torch.linalg.matrix_power(a, n),
              {"n": n}, hvp=h and n == 3)
        g(f"matrix_exp/{s}/[3,3]", "matrix_exp", [rnd([3, 3], dt) * 3], torch.linalg.matrix_exp, hvp=h)
        g(f"lstsq/{s}/[4,2]x[4,1]", "lstsq", [rnd([4, 2], dt), rnd([4, 1], dt)],
          lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd").solution)
        g(f"multi_dot/{s}/[3]x[3,4]x[4,2]", "multi_dot", [rnd([3], dt), rnd([3, 4], dt), rnd([4, 2], dt)],
          lambda *ts: torch.linalg.multi_dot(ts))


def linalg2():
    fam = Family("linalg2", 89)
    eigh_cases(fam)
    svd_cases(fam)
    derived_cases(fam)
    return fam


def grad_linalg2():
    fam = GradFamily("grad_linalg2", 90)
    grad_cases(fam)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (linalg2, grad_linalg2):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
