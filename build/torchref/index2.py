"""Cases of the indexing and shape functions of ops_index2.go and
ops_shape2.go (index2.json) and their gradients (grad_index2.json):

1. take, take_along_dim, index_add, index_copy, index_fill and
   scatter_reduce (sum, prod, mean, amax, amin, with and without self);
2. unbind, tensor_split, hstack, vstack, row_stack, dstack, column_stack,
   fliplr, flipud, rot90, diag_embed, block_diag and vander.

Run it from the repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/index2.py

(gen.py runs it too, with every other family.) Op keys and attributes are
listed with the Go table, internal/conformance/ops_index2.go.

Where lathe differs, the case says so: lathe takes int32 indices where
torch takes only int64, so those cases give torch int64 ones (the
function casts). A mean of integers is computed in float64: its case
names the dtype (attrs "dtype"), so that a device without float64 skips
it.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily, distinct  # noqa: E402
from refcase import FLOATS, INF, NAN, SHORT, Family, L, rnd, shp, vals  # noqa: E402


def idx(v, dt="int64"):
    return torch.tensor(v, dtype=getattr(torch, dt))


def long(f):
    """f with its index argument (the second) cast to int64, as torch takes it."""
    return lambda *a: f(*[t.long() if i == 1 else t for i, t in enumerate(a)])


def vander(x, n, increasing):
    p = torch.arange(n, dtype=x.dtype)
    return x.unsqueeze(1) ** (p if increasing else p.flip(0))


REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def group1(fam):
    c = fam.case
    # take: negative indices wrap; any index shape; 0-d and empty.
    for dt in ["float32", "int64", "bool"]:
        c(f"take/{SHORT[dt]}/[2,3]/idx[2,2]", "take", [rnd([2, 3], dt), idx([[-1, 0], [5, 2]])], torch.take)
    c("take/f32/transposed[3,4]", "take", [L(rnd([3, 4], "float32"), "transposed"), idx([1, 4, -12, 11])], torch.take)
    c("take/f32/[2,3]/idx_i32", "take", [rnd([2, 3], "float32"), idx([3, -2], "int32")], long(torch.take))
    c("take/f32/0d", "take", [vals(2.5, "float32"), idx(0)], torch.take)
    c("take/f32/empty/empty", "take", [rnd([0], "float32"), idx([], "int64")], torch.take)
    c("take/f32/[2,3]/6/error", "take", [rnd([2, 3], "float32"), idx([6])], torch.take, error="index")
    c("take/f32/[2,3]/-7/error", "take", [rnd([2, 3], "float32"), idx([-7])], torch.take, error="index")
    c("take/f32/empty/0/error", "take", [rnd([0], "float32"), idx([0])], torch.take, error="index")
    c("take/f32/[2]/f32_index/error", "take", [rnd([2], "float32"), vals([0.0], "float32")], None, error="dtype")
    # take_along_dim: broadcasting off dim, negative dims, the flat form.
    tad = torch.take_along_dim
    for dt in ["float32", "int64"]:
        c(f"take_along_dim/{SHORT[dt]}/[3,4]/dim=1", "take_along_dim",
          [rnd([3, 4], dt), idx([[0, 3], [1, 1], [2, 0]])], lambda x, i: tad(x, i, 1), {"dim": 1})
    c("take_along_dim/f32/[1,4]x[3,2]/dim=1", "take_along_dim", [rnd([1, 4], "float32"), idx([[0, 3], [1, 1], [2, 0]])],
      lambda x, i: tad(x, i, 1), {"dim": 1})
    c("take_along_dim/f32/[3,4]x[1,2]/dim=-1", "take_along_dim", [rnd([3, 4], "float32"), idx([[3, 0]])],
      lambda x, i: tad(x, i, -1), {"dim": -1})
    c("take_along_dim/f32/[2,3,4]x[2,1,1]/dim=0", "take_along_dim", [rnd([2, 3, 4], "float32"), idx([[[1]], [[0]]])],
      lambda x, i: tad(x, i, 0), {"dim": 0})
    c("take_along_dim/f32/[2,3]/flat", "take_along_dim", [rnd([2, 3], "float32"), idx([[5, 0], [2, 2]])], tad)
    c("take_along_dim/f32/[2,3]/empty_index", "take_along_dim", [rnd([2, 3], "float32"), idx([[], []])],
      lambda x, i: tad(x, i.reshape(2, 0), 1), {"dim": 1})
    c("take_along_dim/f32/[2,3]/-1/error", "take_along_dim", [rnd([2, 3], "float32"), idx([[-1], [0]])],
      lambda x, i: tad(x, i, 1), {"dim": 1}, error="index")
    c("take_along_dim/f32/[2,3]/3/error", "take_along_dim", [rnd([2, 3], "float32"), idx([[3], [0]])],
      lambda x, i: tad(x, i, 1), {"dim": 1}, error="index")
    c("take_along_dim/f32/[2,3]/flat/6/error", "take_along_dim", [rnd([2, 3], "float32"), idx([6])], tad, error="index")
    c("take_along_dim/f32/[2,3]x[2]/rank/error", "take_along_dim", [rnd([2, 3], "float32"), idx([0, 1])],
      lambda x, i: tad(x, i, 1), {"dim": 1}, error="shape")
    c("take_along_dim/f32/[2,3]x[3,1]/bcast/error", "take_along_dim", [rnd([2, 3], "float32"), idx([[0], [1], [0]])],
      lambda x, i: tad(x, i, 1), {"dim": 1}, error="shape")
    c("take_along_dim/f32/[2,3]/dim=2/error", "take_along_dim", [rnd([2, 3], "float32"), idx([[0], [1]])],
      lambda x, i: tad(x, i, 2), {"dim": 2}, error="index")
    # index_add, index_copy, index_fill.
    ia = lambda d, a: lambda x, i, s: x.index_add(d, i, s, alpha=a)  # noqa: E731
    for dt in ["float32", "int64"]:
        c(f"index_add/{SHORT[dt]}/[3,4]/dim=0", "index_add", [rnd([3, 4], dt), idx([2, 0, 2]), rnd([3, 4], dt)],
          ia(0, 1), {"dim": 0, "alpha": 1.0})
    c("index_add/f32/[3,4]/dim=-1/alpha=-2.5", "index_add", [rnd([3, 4], "float32"), idx([3, 3]), rnd([3, 2], "float32")],
      ia(-1, -2.5), {"dim": -1, "alpha": -2.5})
    c("index_add/i64/[3,4]/dim=1/alpha=3", "index_add", [rnd([3, 4], "int64"), idx([1, 0, 1]), rnd([3, 3], "int64")],
      ia(1, 3), {"dim": 1, "alpha": 3.0})
    c("index_add/i32/[2,3]/dim=1/idx_i32", "index_add", [rnd([2, 3], "int32"), idx([2], "int32"), rnd([2, 1], "int32")],
      long(ia(1, 1)), {"dim": 1, "alpha": 1.0})
    c("index_add/bool/[2,3]/dim=1", "index_add", [rnd([2, 3], "bool"), idx([0, 0]), rnd([2, 2], "bool")],
      ia(1, 1), {"dim": 1, "alpha": 1.0})
    c("index_add/f32/0d", "index_add", [vals(1.0, "float32"), idx([0, 0]), vals([2.0, 3.0], "float32")],
      ia(0, 1), {"dim": 0, "alpha": 1.0})
    c("index_add/f32/[2,3]/empty_index", "index_add", [rnd([2, 3], "float32"), idx([], "int64"), rnd([0, 3], "float32")],
      ia(0, 1), {"dim": 0, "alpha": 1.0})
    c("index_add/f32/strided[2,3]", "index_add", [L(rnd([2, 3], "float32"), "strided"), idx([1]), rnd([1, 3], "float32")],
      ia(0, 1), {"dim": 0, "alpha": 1.0})
    for name, ins, kind in (("3", [idx([3]), rnd([2, 1], "float32")], "index"),
                            ("-1", [idx([-1]), rnd([2, 1], "float32")], "index"),
                            ("source[2,2]", [idx([0]), rnd([2, 2], "float32")], "shape"),
                            ("index[1,1]", [idx([[0]]), rnd([2, 1], "float32")], "shape"),
                            ("source_f64", [idx([0]), rnd([2, 1], "float64")], "dtype")):
        c(f"index_add/f32/[2,3]/{name}/error", "index_add", [rnd([2, 3], "float32")] + ins, ia(1, 1),
          {"dim": 1, "alpha": 1.0}, error=kind)
    c("index_add/i64/alpha=2.5/error", "index_add", [rnd([2, 3], "int64"), idx([0]), rnd([2, 1], "int64")], None,
      {"dim": 1, "alpha": 2.5}, error="dtype")
    ic = lambda d: lambda x, i, s: x.index_copy(d, i, s)  # noqa: E731
    for dt in ["float32", "int64", "bool"]:
        c(f"index_copy/{SHORT[dt]}/[3,4]/dim=0", "index_copy", [rnd([3, 4], dt), idx([2, 0]), rnd([2, 4], dt)],
          ic(0), {"dim": 0})
    c("index_copy/f64/[2,3,4]/dim=-1", "index_copy", [rnd([2, 3, 4], "float64"), idx([3, 1]), rnd([2, 3, 2], "float64")],
      ic(-1), {"dim": -1})
    c("index_copy/f32/0d", "index_copy", [vals(1.0, "float32"), idx(0), vals(4.0, "float32")], ic(0), {"dim": 0})
    c("index_copy/f32/[2,3]/3/error", "index_copy", [rnd([2, 3], "float32"), idx([3]), rnd([2, 1], "float32")],
      ic(1), {"dim": 1}, error="index")
    c("index_copy/f32/[2,3]/-1/error", "index_copy", [rnd([2, 3], "float32"), idx([-1]), rnd([2, 1], "float32")],
      ic(1), {"dim": 1}, error="index")
    ifl = lambda d, v: lambda x, i: x.index_fill(d, i, v)  # noqa: E731
    for dt, v in (("float64", INF), ("bool", 1.0), ("int32", -3.0)):
        c(f"index_fill/{SHORT[dt]}/[3,4]/dim=1/value={v}", "index_fill", [rnd([3, 4], dt), idx([-1, 0, 2])],
          ifl(1, v), {"dim": 1, "value": v})
    c("index_fill/f32/[3,4]/dim=0/nan", "index_fill", [rnd([3, 4], "float32"), idx(1)], ifl(0, NAN),
      {"dim": 0, "value": NAN})
    c("index_fill/f32/0d", "index_fill", [vals(1.0, "float32"), idx([0])], ifl(0, 3.0), {"dim": 0, "value": 3.0})
    c("index_fill/f32/[2,3]/idx_i32", "index_fill", [rnd([2, 3], "float32"), idx([1, -3], "int32")], long(ifl(1, 2.0)),
      {"dim": 1, "value": 2.0})
    for v in (3, -4):
        c(f"index_fill/f32/[2,3]/{v}/error", "index_fill", [rnd([2, 3], "float32"), idx([v])], ifl(1, 0.0),
          {"dim": 1, "value": 0.0}, error="index")
    c("index_fill/i32/fraction/error", "index_fill", [rnd([2, 3], "int32"), idx([0])], None, {"dim": 1, "value": 1.5},
      error="dtype")
    # scatter_reduce: every reduction with and without self, along both
    # dims, a src larger than index, integers, bool, NaN.
    sr = lambda d, r, s: lambda x, i, src: x.scatter_reduce(d, i, src, r, include_self=s)  # noqa: E731
    i2 = idx([[0, 0, 2, 1, 0], [3, 3, 3, 3, 1], [2, 0, 2, 0, 2]])
    for r in REDUCES:
        for inc in (True, False):
            a = {"dim": 1, "reduce": r, "include_self": inc}
            c(f"scatter_reduce/f32/[3,4]/dim=1/{r}/self={inc}", "scatter_reduce",
              [rnd([3, 4], "float32"), i2, rnd([3, 6], "float32", "halves")], sr(1, r, inc), a)
        ia_ = {"dim": 1, "reduce": r, "include_self": r != "sum"}
        if r == "mean":
            ia_["dtype"] = "float64"
        c(f"scatter_reduce/i64/[3,4]/dim=1/{r}", "scatter_reduce",
          [rnd([3, 4], "int64", "small"), i2, rnd([3, 5], "int64", "small")], sr(1, r, ia_["include_self"]), ia_)
    for r in ("prod", "amin"):
        c(f"scatter_reduce/f64/[4,2]/dim=0/{r}", "scatter_reduce",
          [rnd([4, 2], "float64"), idx([[3, 0], [3, 3], [0, 0]]), rnd([3, 2], "float64")], sr(0, r, True),
          {"dim": 0, "reduce": r, "include_self": True})
    for r in ("sum", "amax"):
        c(f"scatter_reduce/bool/[2,3]/{r}", "scatter_reduce", [rnd([2, 3], "bool"), idx([[0, 0, 2], [1, 1, 1]]),
                                                               rnd([2, 3], "bool")], sr(1, r, True),
          {"dim": 1, "reduce": r, "include_self": True})
    for r in ("amax", "amin", "prod"):
        c(f"scatter_reduce/f32/nan/{r}", "scatter_reduce",
          [vals([1.0, 2, -INF], "float32"), idx([0, 0, 1, 2, 2]), vals([NAN, 3, 1, INF, -1], "float32")],
          sr(0, r, True), {"dim": 0, "reduce": r, "include_self": True})
    c("scatter_reduce/f32/0d/prod", "scatter_reduce", [vals(2.0, "float32"), idx(0), vals(4.0, "float32")],
      sr(0, "prod", True), {"dim": 0, "reduce": "prod", "include_self": True})
    c("scatter_reduce/f32/[3]/empty_index", "scatter_reduce", [rnd([3], "float32"), idx([], "int64"), rnd([0], "float32")],
      sr(0, "amax", False), {"dim": 0, "reduce": "amax", "include_self": False})
    c("scatter_reduce/f32/[2,9]/long/prod", "scatter_reduce",
      [rnd([2, 4], "float32"), idx([[0, 1, 0, 0, 3, 0, 0, 1, 0], [2, 2, 2, 2, 2, 2, 2, 2, 2]]), rnd([2, 9], "float32", "pos")],
      sr(1, "prod", False), {"dim": 1, "reduce": "prod", "include_self": False})
    c("scatter_reduce/f32/idx_i32/amin", "scatter_reduce", [rnd([2, 3], "float32"), idx([[2, 2], [0, 1]], "int32"),
                                                            rnd([2, 2], "float32")], long(sr(1, "amin", True)),
      {"dim": 1, "reduce": "amin", "include_self": True})
    base = [rnd([2, 3], "float32"), idx([[0, 3]]), rnd([1, 2], "float32")]
    c("scatter_reduce/f32/3/error", "scatter_reduce", base, sr(1, "sum", True),
      {"dim": 1, "reduce": "sum", "include_self": True}, error="index")
    c("scatter_reduce/f32/-1/error", "scatter_reduce", [base[0], idx([[0, -1]]), base[2]], sr(1, "amax", True),
      {"dim": 1, "reduce": "amax", "include_self": True}, error="index")
    c("scatter_reduce/f32/max/error", "scatter_reduce", [base[0], idx([[0, 1]]), base[2]], sr(1, "max", True),
      {"dim": 1, "reduce": "max", "include_self": True}, error="value")
    c("scatter_reduce/f32/src_i64/error", "scatter_reduce", [base[0], idx([[0, 1]]), rnd([1, 2], "int64")],
      sr(1, "sum", True), {"dim": 1, "reduce": "sum", "include_self": True}, error="dtype")
    c("scatter_reduce/f32/index[1,4]/error", "scatter_reduce", [base[0], idx([[0, 1, 0, 0]]), base[2]],
      sr(1, "sum", True), {"dim": 1, "reduce": "sum", "include_self": True}, error="shape")


def group3(fam):
    c = fam.case
    ms = torch.masked_scatter
    m = vals([[True, False, True], [False, True, False]], "bool")
    c("masked_scatter/f32/[2,3]", "masked_scatter", [rnd([2, 3], "float32"), m, rnd([7], "float32")], ms)
    c("masked_scatter/i64/[2,3]/mask[3]", "masked_scatter", [rnd([2, 3], "int64"), vals([True, False, True], "bool"),
                                                             rnd([2, 3], "int64")], ms)
    c("masked_scatter/f32/[3]/mask[2,3]", "masked_scatter", [rnd([3], "float32"), m, rnd([3], "float32")], ms)
    c("masked_scatter/bool/none", "masked_scatter", [rnd([2, 3], "bool"), vals([False] * 3, "bool"), rnd([0], "bool")], ms)
    c("masked_scatter/f32/short/error", "masked_scatter", [rnd([2, 3], "float32"), m, rnd([2], "float32")], ms,
      error="shape")
    c("masked_scatter/f32/dtype/error", "masked_scatter", [rnd([2, 3], "float32"), m, rnd([3], "int64")], ms,
      error="dtype")
    uc = lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True)  # noqa: E731
    for name, x in (("i64/[8]", vals([1, 1, 2, 2, 3, 1, 1, 2], "int64")),
                    ("f32/nan", vals([1.0, NAN, NAN, 2.0, 2.0, -0.0, 0.0], "float32")),
                    ("i32/[2,3]", vals([[1, 1, 2], [2, 2, 5]], "int32")),
                    ("bool/[3]", vals([True, True, False], "bool")), ("f32/0d", vals(3.0, "float32")),
                    ("f32/empty", rnd([0], "float32"))):
        c(f"unique_consecutive/{name}", "unique_consecutive", [x], uc, {"inverse": True, "counts": True})
    c("unique_consecutive/f32/values", "unique_consecutive", [vals([2.0, 2.0, 1.0], "float32")],
      lambda x: [torch.unique_consecutive(x)], {"inverse": False, "counts": False})


def group2(fam):
    c = fam.case
    x = rnd([2, 3, 4], "float32")
    for d in (0, -1):
        c(f"unbind/f32/[2,3,4]/dim={d}", "unbind", [x], lambda x, d=d: torch.unbind(x, d), {"dim": d})
    c("unbind/i64/[2,0]/dim=1", "unbind", [rnd([2, 0], "int64")], lambda x: torch.unbind(x, 1), {"dim": 1})
    c("unbind/f32/0d/error", "unbind", [vals(1.0, "float32")], lambda x: torch.unbind(x, 0), {"dim": 0}, error="shape")
    c("unbind/f32/[2,3]/dim=2/error", "unbind", [rnd([2, 3], "float32")], lambda x: torch.unbind(x, 2), {"dim": 2},
      error="index")
    ts = torch.tensor_split
    v = rnd([7, 2], "float32")
    for s in (3, 9):
        c(f"tensor_split/f32/[7,2]/sections={s}", "tensor_split", [v], lambda x, s=s: ts(x, s), {"sections": s, "dim": 0})
    c("tensor_split/i32/[2,5]/sections=2/dim=-1", "tensor_split", [rnd([2, 5], "int32")], lambda x: ts(x, 2, -1),
      {"sections": 2, "dim": -1})
    for ind in ([1, 5], [-2, 9], [4, 2], []):
        c(f"tensor_split/f32/[7,2]/indices={ind}", "tensor_split", [v], lambda x, i=ind: ts(x, i),
          {"indices": ind, "dim": 0})
    c("tensor_split/f32/sections=0/error", "tensor_split", [v], lambda x: ts(x, 0), {"sections": 0, "dim": 0},
      error="value")
    c("tensor_split/f32/0d/error", "tensor_split", [vals(1.0, "float32")], lambda x: ts(x, 1), {"sections": 1, "dim": 0},
      error="shape")
    # The stacks: each of 0-d, vectors, matrices and more.
    stacks = (("hstack", torch.hstack), ("vstack", torch.vstack), ("dstack", torch.dstack),
              ("column_stack", torch.column_stack))
    plans = {"0d,[1]": ([], [1]), "[3],[3]": ([3], [3]), "[2,3,2],[2,3,2]": ([2, 3, 2], [2, 3, 2])}
    for op, fn in stacks:
        for name, shapes in plans.items():
            ins = [rnd(s, "float32") for s in shapes]
            try:
                fn(ins)
            except Exception:
                c(f"{op}/f32/{name}/error", op, ins, lambda *t, fn=fn: fn(t), error="shape")
                continue
            c(f"{op}/f32/{name}", op, ins, lambda *t, fn=fn: fn(t))
    c("row_stack/f32/[3],[2,3]", "row_stack", [rnd([3], "float32"), rnd([2, 3], "float32")],
      lambda *t: torch.row_stack(t))
    c("hstack/i64/[2,1],[2,3]", "hstack", [rnd([2, 1], "int64"), rnd([2, 3], "int64")], lambda *t: torch.hstack(t))
    c("vstack/bool/[3],[2,3]", "vstack", [rnd([3], "bool"), rnd([2, 3], "bool")], lambda *t: torch.vstack(t))
    c("column_stack/f32/[3],[3,2],[3]", "column_stack", [rnd([3], "float32"), rnd([3, 2], "float32"), rnd([3], "float32")],
      lambda *t: torch.column_stack(t))
    c("dstack/f32/[2,3],[2,3,2]", "dstack", [rnd([2, 3], "float32"), rnd([2, 3, 2], "float32")],
      lambda *t: torch.dstack(t))
    c("vstack/f32/[2],[3]/error", "vstack", [rnd([2], "float32"), rnd([3], "float32")], lambda *t: torch.vstack(t),
      error="shape")
    # Flips and rotations.
    m = rnd([2, 3, 4], "float32")
    c("fliplr/f32/[2,3,4]", "fliplr", [m], torch.fliplr)
    c("flipud/f32/[2,3,4]", "flipud", [m], torch.flipud)
    c("flipud/i64/[3]", "flipud", [rnd([3], "int64")], torch.flipud)
    c("fliplr/f32/[3]/error", "fliplr", [rnd([3], "float32")], torch.fliplr, error="shape")
    c("flipud/f32/0d/error", "flipud", [vals(1.0, "float32")], torch.flipud, error="shape")
    for k in (-1, 0, 2, 5):
        c(f"rot90/f32/[2,3]/k={k}", "rot90", [rnd([2, 3], "float32")], lambda x, k=k: torch.rot90(x, k),
          {"k": k, "dims": []})
    for dims in ([-1, 0], [2, 0]):
        c(f"rot90/f32/[2,3,4]/k=1/dims={dims}", "rot90", [m], lambda x, d=dims: torch.rot90(x, 1, d), {"k": 1, "dims": dims})
    c("rot90/bool/[2,3]/k=3", "rot90", [rnd([2, 3], "bool")], lambda x: torch.rot90(x, 3), {"k": 3, "dims": []})
    c("rot90/f32/[3]/error", "rot90", [rnd([3], "float32")], lambda x: torch.rot90(x), {"k": 1, "dims": []}, error="shape")
    c("rot90/f32/same/error", "rot90", [m], lambda x: torch.rot90(x, 1, [1, -2]), {"k": 1, "dims": [1, -2]},
      error="value")
    c("rot90/f32/three/error", "rot90", [m], lambda x: torch.rot90(x, 1, [0, 1, 2]), {"k": 1, "dims": [0, 1, 2]},
      error="value")
    # diag_embed.
    de = torch.diag_embed
    for shape, off, d1, d2 in (([3], 0, -2, -1), ([3], -2, 1, 0), ([2, 3], -1, 0, 2), ([2, 3], 2, 2, 0),
                               ([2, 2, 3], 1, 1, 3), ([0], 1, 0, 1), ([2, 0], 0, 1, 2)):
        c(f"diag_embed/f32/{shp(shape)}/offset={off}/dims={d1},{d2}", "diag_embed", [rnd(shape, "float32")],
          lambda x, o=off, a=d1, b=d2: de(x, o, a, b), {"offset": off, "dim1": d1, "dim2": d2})
    c("diag_embed/i64/[2,2]", "diag_embed", [rnd([2, 2], "int64")], de, {"offset": 0, "dim1": -2, "dim2": -1})
    c("diag_embed/f32/same/error", "diag_embed", [rnd([2, 3], "float32")], lambda x: de(x, 0, 1, 1),
      {"offset": 0, "dim1": 1, "dim2": 1}, error="value")
    c("diag_embed/f32/dim=3/error", "diag_embed", [rnd([2, 3], "float32")], lambda x: de(x, 0, 3, 1),
      {"offset": 0, "dim1": 3, "dim2": 1}, error="index")
    c("diag_embed/f32/0d/error", "diag_embed", [vals(1.0, "float32")], de, {"offset": 0, "dim1": -2, "dim2": -1},
      error="index")
    # block_diag.
    bd = lambda *t: torch.block_diag(*t)  # noqa: E731
    c("block_diag/f32/0d,[2],[2,1]", "block_diag", [vals(1.0, "float32"), rnd([2], "float32"), rnd([2, 1], "float32")], bd)
    c("block_diag/f32/[0],[2,0],[1,1]", "block_diag", [rnd([0], "float32"), rnd([2, 0], "float32"), rnd([1, 1], "float32")], bd)
    c("block_diag/f64/[2,3]", "block_diag", [rnd([2, 3], "float64")], bd)
    c("block_diag/mixed/bool,i64", "block_diag", [rnd([1], "bool"), rnd([1, 2], "int64")], bd)
    c("block_diag/mixed/i32,f32", "block_diag", [rnd([2, 2], "int32"), rnd([1, 2], "float32")], bd)
    c("block_diag/f32/[1,1,1]/error", "block_diag", [rnd([1, 1, 1], "float32")], bd, error="shape")
    # vander.
    for dt, n, inc in (("int64", -1, False), ("float32", 2, True), ("float32", 0, False), ("bool", -1, False)):
        ins = rnd([3], dt, "small") if dt in ("int64", "int32") else rnd([3], dt)
        c(f"vander/{SHORT[dt]}/[3]/n={n}/increasing={inc}", "vander", [ins],
          lambda x, n=n, i=inc: torch.vander(x, None if n == -1 else n, i), {"n": n, "increasing": inc})
    c("vander/f32/[0]", "vander", [rnd([0], "float32")], torch.vander, {"n": -1, "increasing": False})
    c("vander/f32/[2,2]/error", "vander", [rnd([2, 2], "float32")], torch.vander, {"n": -1, "increasing": False},
      error="shape")
    c("vander/f32/n=-2/error", "vander", [rnd([2], "float32")], lambda x: torch.vander(x, -2),
      {"n": -2, "increasing": False}, error="value")


def grad_group(fam):
    g = fam.gcase
    g("take/f64/[3,4]", "take", [rnd([3, 4], "float64"), idx([[0, -1, 5], [5, 2, 11]])], torch.take)
    g("take/f64/[3,4]/squared", "take", [rnd([3, 4], "float64"), idx([0, -1, 5, 5])], lambda x, i: torch.take(x, i) ** 2,
      {"square": True}, hvp=True)
    g("take_along_dim/f64/[1,4]x[3,2]/dim=1", "take_along_dim", [rnd([1, 4], "float64"), idx([[0, 3], [1, 1], [2, 0]])],
      lambda x, i: torch.take_along_dim(x, i, 1), {"dim": 1})
    g("take_along_dim/f64/flat", "take_along_dim", [rnd([2, 3], "float64"), idx([[5, 0], [5, 2]])], torch.take_along_dim)
    g("index_add/f64/[3,4]/dim=0/alpha=-1.5", "index_add", [rnd([3, 4], "float64"), idx([2, 0, 2]), rnd([3, 4], "float64")],
      lambda x, i, s: x.index_add(0, i, s, alpha=-1.5), {"dim": 0, "alpha": -1.5})
    g("index_add/f64/[3,4]/squared", "index_add", [rnd([3, 4], "float64"), idx([1, 1]), rnd([3, 2], "float64")],
      lambda x, i, s: x.index_add(1, i, s) ** 2, {"dim": 1, "alpha": 1.0, "square": True}, hvp=True)
    g("index_copy/f64/[3,4]/dim=1", "index_copy", [rnd([3, 4], "float64"), idx([3, 0]), rnd([3, 2], "float64")],
      lambda x, i, s: x.index_copy(1, i, s), {"dim": 1})
    g("index_fill/f64/[3,4]/dim=0", "index_fill", [rnd([3, 4], "float64"), idx([-1, 0])],
      lambda x, i: x.index_fill(0, i, 2.5), {"dim": 0, "value": 2.5})
    i2 = idx([[0, 0, 2, 1, 0], [3, 3, 3, 3, 1], [2, 0, 2, 0, 2]])
    for r in REDUCES:
        for inc in (True, False):
            a = {"dim": 1, "reduce": r, "include_self": inc}
            dom = "nonzero" if r == "prod" else "any"
            g(f"scatter_reduce/f64/[3,4]/{r}/self={inc}", "scatter_reduce",
              [distinct([3, 4], "float64", dom), i2, distinct([3, 5], "float64", dom)],
              lambda x, i, s, r=r, inc=inc: x.scatter_reduce(1, i, s, r, include_self=inc), a)
    for r in ("prod", "mean"):
        g(f"scatter_reduce/f64/[3,4]/{r}/squared", "scatter_reduce",
          [distinct([3, 4], "float64", "nonzero"), i2, distinct([3, 5], "float64", "nonzero")],
          lambda x, i, s, r=r: x.scatter_reduce(1, i, s, r) ** 2,
          {"dim": 1, "reduce": r, "include_self": True, "square": True}, hvp=True)
    # Ties of amax and amin: the gradient is spread evenly over the equal
    # elements of x and src (x's share dropped, but counted, without self).
    xt = vals([[1.0, 2.0, 3.0], [0.0, 5.0, -1.0]], "float64")
    st = vals([[1.0, 1.0, 2.0, 3.0], [5.0, 5.0, -1.0, 0.0]], "float64")
    it = idx([[0, 0, 1, 2], [1, 1, 2, 0]])
    for r in ("amax", "amin"):
        for inc in (True, False):
            g(f"scatter_reduce/f64/ties/{r}/self={inc}", "scatter_reduce", [xt, it, st],
              lambda x, i, s, r=r, inc=inc: x.scatter_reduce(1, i, s, r, include_self=inc),
              {"dim": 1, "reduce": r, "include_self": inc}, nonsmooth=True)
    # prod through zeros: one zero, and two at one place.
    xz = vals([[2.0, 0.0, 3.0]], "float64")
    sz = vals([[0.0, 1.5, 0.0, 2.0, -1.0]], "float64")
    iz = idx([[0, 0, 1, 1, 2]])
    for inc in (True, False):
        g(f"scatter_reduce/f64/zeros/prod/self={inc}", "scatter_reduce", [xz, iz, sz],
          lambda x, i, s, inc=inc: x.scatter_reduce(1, i, s, "prod", include_self=inc),
          {"dim": 1, "reduce": "prod", "include_self": inc}, nonsmooth=True)
    g("masked_scatter/f64/[2,3]/mask[3]", "masked_scatter", [rnd([2, 3], "float64"), vals([True, False, True], "bool"),
                                                             rnd([2, 3], "float64")], torch.masked_scatter)
    g("hstack/f64/[2],[3]", "hstack", [rnd([2], "float64"), rnd([3], "float64")], lambda *t: torch.hstack(t))
    g("vstack/f64/[3],[2,3]", "vstack", [rnd([3], "float64"), rnd([2, 3], "float64")], lambda *t: torch.vstack(t))
    g("dstack/f64/[2,3],[2,3]", "dstack", [rnd([2, 3], "float64"), rnd([2, 3], "float64")], lambda *t: torch.dstack(t))
    g("column_stack/f64/[3],[3,2]", "column_stack", [rnd([3], "float64"), rnd([3, 2], "float64")],
      lambda *t: torch.column_stack(t))
    g("fliplr/f64/[2,3]", "fliplr", [rnd([2, 3], "float64")], torch.fliplr)
    g("flipud/f64/[2,3]", "flipud", [rnd([2, 3], "float64")], torch.flipud)
    for k in (1, 2, 3):
        g(f"rot90/f64/[2,3,4]/k={k}", "rot90", [rnd([2, 3, 4], "float64")], lambda x, k=k: torch.rot90(x, k, [2, 0]),
          {"k": k, "dims": [2, 0]})
    g("rot90/f64/[2,3]/squared", "rot90", [rnd([2, 3], "float64")], lambda x: torch.rot90(x) ** 2,
      {"k": 1, "dims": [], "square": True}, hvp=True)
    g("diag_embed/f64/[2,3]/offset=-1/dims=0,2", "diag_embed", [rnd([2, 3], "float64")],
      lambda x: torch.diag_embed(x, -1, 0, 2), {"offset": -1, "dim1": 0, "dim2": 2})
    g("diag_embed/f64/[3]/offset=2/squared", "diag_embed", [rnd([3], "float64")],
      lambda x: torch.diag_embed(x, 2) ** 2, {"offset": 2, "dim1": -2, "dim2": -1, "square": True}, hvp=True)
    g("block_diag/f64/0d,[2],[2,3]", "block_diag", [rnd([], "float64"), rnd([2], "float64"), rnd([2, 3], "float64")],
      lambda *t: torch.block_diag(*t))
    # torch 1.13's vander has no working backward (its in-place cumprod):
    # the same powers as x ** k give the reference.
    g("vander/f64/[3]/n=4", "vander", [rnd([3], "float64")], lambda x: vander(x, 4, False),
      {"n": 4, "increasing": False})
    g("vander/f64/[3]/increasing/squared", "vander", [rnd([3], "float64")], lambda x: vander(x, 3, True) ** 2,
      {"n": 3, "increasing": True, "square": True}, hvp=True)


def index2():
    fam = Family("index2", 91)
    group1(fam)
    group2(fam)
    group3(fam)
    return fam


def grad_index2():
    fam = GradFamily("grad_index2", 92)
    grad_group(fam)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (index2, grad_index2):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
