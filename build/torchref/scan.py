"""Cases of the scan, search and counting ops that lathe builds as
composites (scan.json) and their gradients (grad_scan.json):

1. cumprod, cummax, cummin, logcumsumexp and diff;
2. searchsorted, bucketize, bincount and histc;
3. meshgrid, cartesian_prod, tril_indices, triu_indices and argwhere.

Run it from the repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/scan.py

(gen.py runs it too, with every other family.) Op keys and attributes are
listed with the Go table, internal/conformance/ops_scan.go.

tril_indices and triu_indices take no tensor: their cases carry a 0-d
input whose device the Go side uses. Keys ending in "_values" take the
values of a pair; "square": true squares the result, so that the
Hessian-vector product of an op linear in x is not zero.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily, distinct  # noqa: E402
from refcase import FLOATS, INF, INTS, NAN, SHORT, Family, L, rnd, shp, vals  # noqa: E402


def group1(fam):
    c = fam.case
    # Every shape in float32 and int64; the other dtypes a few.
    plans = [([5], 0), ([3, 4], 1), ([3, 4], 0), ([2, 3, 4], -2), ([], 0), ([0, 3], 0), ([3, 0], 1)]
    for dt in FLOATS + INTS + ["bool"]:
        s = SHORT[dt]
        for shape, dim in plans if dt in ("float32", "int64") else plans[3:4]:
            x = rnd(shape, dt, "small") if dt in INTS else rnd(shape, dt, "halves")
            c(f"cumprod/{s}/{shp(shape)}/dim={dim}", "cumprod", [x], lambda x, d=dim: torch.cumprod(x, d), {"dim": dim})
            for op, fn in (("cummax", torch.cummax), ("cummin", torch.cummin)):
                c(f"{op}/{s}/{shp(shape)}/dim={dim}", op, [x], lambda x, d=dim, fn=fn: tuple(fn(x, d)), {"dim": dim})
    for dt in FLOATS:
        s = SHORT[dt]
        # Ties, NaN (the latest NaN's index from there on), infinities.
        sp = vals([1.0, 3.0, 3.0, NAN, 5.0, NAN, -INF, INF, 3.0], dt)
        for op, fn in (("cummax", torch.cummax), ("cummin", torch.cummin)):
            c(f"{op}/{s}/special", op, [sp], lambda x, fn=fn: tuple(fn(x, 0)), {"dim": 0})
            c(f"{op}/{s}/transposed[3,4]/dim=1", op, [L(rnd([3, 4], dt, "halves"), "transposed")],
              lambda x, fn=fn: tuple(fn(x, 1)), {"dim": 1})
        c(f"cumprod/{s}/special", "cumprod", [vals([2.0, 0.0, INF, -1.5, NAN, 3.0], dt)], lambda x: torch.cumprod(x, 0),
          {"dim": 0})
        c(f"cumprod/{s}/[17]", "cumprod", [rnd([17], dt, "unit")], lambda x: torch.cumprod(x, 0), {"dim": 0})
        c(f"cumprod/{s}/strided[3,4]/dim=1", "cumprod", [L(rnd([3, 4], dt), "strided")], lambda x: torch.cumprod(x, 1),
          {"dim": 1})
        for shape, dim in (([6], 0), ([3, 4], 1), ([3, 4], -2), ([2, 3, 5], 2), ([], 0), ([0, 2], 0)):
            c(f"logcumsumexp/{s}/{shp(shape)}/dim={dim}", "logcumsumexp", [rnd(shape, dt, "wide")],
              lambda x, d=dim: torch.logcumsumexp(x, d), {"dim": dim})
        c(f"logcumsumexp/{s}/special", "logcumsumexp", [vals([-INF, -INF, 0.0, 1e30, -1e30, INF, 2.0], dt)],
          lambda x: torch.logcumsumexp(x, 0), {"dim": 0})
        c(f"logcumsumexp/{s}/nan", "logcumsumexp", [vals([1.0, NAN, 0.0, INF], dt)], lambda x: torch.logcumsumexp(x, 0),
          {"dim": 0})
        c(f"logcumsumexp/{s}/wide[33]", "logcumsumexp", [rnd([33], dt, "wide") * 20], lambda x: torch.logcumsumexp(x, 0),
          {"dim": 0})
        c(f"logcumsumexp/{s}/transposed[3,4]/dim=1", "logcumsumexp", [L(rnd([3, 4], dt), "transposed")],
          lambda x: torch.logcumsumexp(x, 1), {"dim": 1})
    c("cumprod/i32/[2,3]/dim=2/error", "cumprod", [rnd([2, 3], "int32")], lambda x: torch.cumprod(x, 2), {"dim": 2},
      error="index")
    c("cummax/f32/[2,3]/dim=-3/error", "cummax", [rnd([2, 3], "float32")], lambda x: torch.cummax(x, -3), {"dim": -3},
      error="index")
    c("logcumsumexp/i64/error", "logcumsumexp", [rnd([3], "int64")], lambda x: torch.logcumsumexp(x, 0), {"dim": 0},
      error="dtype")
    # diff: n, dims, prepend and append (promoted), bool's xor, n past the size.
    for dt in FLOATS + INTS + ["bool"]:
        s = SHORT[dt]
        x = rnd([3, 5], dt)
        plans = ((1, -1), (2, 1), (1, 0), (3, 0), (7, 1), (0, 1))
        for n, dim in plans if dt in ("float32", "int64") else plans[1:2]:
            c(f"diff/{s}/[3,5]/n={n},dim={dim}", "diff", [x, None, None], lambda x, p, a, n=n, d=dim: torch.diff(x, n, d),
              {"n": n, "dim": dim})
        c(f"diff/{s}/[3,5]/prepend,append/dim=1", "diff", [x, rnd([3, 2], dt), rnd([3, 1], dt)],
          lambda x, p, a: torch.diff(x, 1, 1, p, a), {"n": 1, "dim": 1})
    c("diff/i64xf32/prepend/[4]", "diff", [rnd([4], "int64"), rnd([2], "float32"), None],
      lambda x, p, a: torch.diff(x, 2, 0, p), {"n": 2, "dim": 0})
    c("diff/f32/append/[2,3]/dim=0", "diff", [rnd([2, 3], "float32"), None, rnd([1, 3], "float32")],
      lambda x, p, a: torch.diff(x, 1, 0, append=a), {"n": 1, "dim": 0})
    c("diff/f32/transposed[3,4]/dim=1", "diff", [L(rnd([3, 4], "float32"), "transposed"), None, None],
      lambda x, p, a: torch.diff(x, 1, 1), {"n": 1, "dim": 1})
    c("diff/f32/0d/error", "diff", [rnd([], "float32"), None, None], lambda x, p, a: torch.diff(x), {"n": 1, "dim": 0},
      error="shape")
    c("diff/f32/append[3]/error", "diff", [rnd([2, 3], "float32"), None, rnd([3], "float32")],
      lambda x, p, a: torch.diff(x, 1, 0, append=a), {"n": 1, "dim": 0}, error="shape")
    c("diff/f32/prepend[2,2]/error", "diff", [rnd([2, 3], "float32"), rnd([2, 2], "float32"), None],
      lambda x, p, a: torch.diff(x, 1, 0, prepend=p), {"n": 1, "dim": 0}, error="shape")
    c("diff/f32/dim=2/error", "diff", [rnd([2, 3], "float32"), None, None], lambda x, p, a: torch.diff(x, 1, 2),
      {"n": 1, "dim": 2}, error="index")


def grad_group1(fam):
    g = fam.gcase
    for dt in FLOATS:
        s = SHORT[dt]
        g(f"cumprod/{s}/[3,4]/dim=1", "cumprod", [rnd([3, 4], dt)], lambda x: torch.cumprod(x, 1), {"dim": 1}, hvp=True)
        g(f"cumprod/{s}/[5,2]/dim=0", "cumprod", [rnd([5, 2], dt)], lambda x: torch.cumprod(x, 0), {"dim": 0})
        g(f"logcumsumexp/{s}/[3,5]/dim=1", "logcumsumexp", [rnd([3, 5], dt, "wide")],
          lambda x: torch.logcumsumexp(x, 1), {"dim": 1}, hvp=True)
        for op, fn in (("cummax_values", torch.cummax), ("cummin_values", torch.cummin)):
            g(f"{op}/{s}/[3,5]/dim=1", op, [distinct([3, 5], dt)], lambda x, fn=fn: fn(x, 1)[0], {"dim": 1})
        g(f"diff/{s}/[3,5]/n=2,dim=1", "diff", [rnd([3, 5], dt), None, None], lambda x, p, a: torch.diff(x, 2, 1),
          {"n": 2, "dim": 1})
    # Zeros: one, two and a zero first; torch's cumprod_backward takes care
    # of them, lathe's products have no division to take care of.
    for name, v in (("zero", [2.0, 0.5, 0.0, 3.0, -1.5]), ("zeros", [2.0, 0.0, 1.5, 0.0, 3.0]),
                    ("first", [0.0, 2.0, -1.0, 1.5, 0.5])):
        g(f"cumprod/f64/{name}[5]", "cumprod", [vals(v, "float64")], lambda x: torch.cumprod(x, 0), {"dim": 0}, hvp=True)
    g("cumprod/f64/zeros[2,3]/dim=0", "cumprod", [vals([[0.0, 2.0, 1.5], [3.0, 0.0, -2.0]], "float64")],
      lambda x: torch.cumprod(x, 0), {"dim": 0}, hvp=True)
    g("cumprod/f64/0d", "cumprod", [rnd([], "float64")], lambda x: torch.cumprod(x, 0), {"dim": 0})
    g("logcumsumexp/f64/[7]", "logcumsumexp", [rnd([7], "float64", "wide")], lambda x: torch.logcumsumexp(x, 0),
      {"dim": 0}, hvp=True)
    g("logcumsumexp/f64/transposed[3,4]/dim=0", "logcumsumexp", [L(rnd([3, 4], "float64"), "transposed")],
      lambda x: torch.logcumsumexp(x, 0), {"dim": 0})
    for op, fn in (("cummax_values", torch.cummax), ("cummin_values", torch.cummin)):
        g(f"{op}/f64/[4,3]/dim=0/squared", op, [distinct([4, 3], "float64")], lambda x, fn=fn: fn(x, 0)[0] ** 2,
          {"dim": 0, "square": True}, hvp=True)
        # Ties: the gradient goes to the last of equal extremes, as torch's.
        g(f"{op}/f64/ties", op, [vals([1.0, 3.0, 3.0, -2.0, 3.0, 0.5], "float64")], lambda x, fn=fn: fn(x, 0)[0],
          {"dim": 0}, nonsmooth=True)
    g("diff/f64/prepend,append/dim=0/squared", "diff",
      [rnd([3, 4], "float64"), rnd([2, 4], "float64"), rnd([1, 4], "float64")],
      lambda x, p, a: torch.diff(x, 2, 0, p, a) ** 2, {"n": 2, "dim": 0, "square": True}, hvp=True)


def group2(fam):
    c = fam.case
    seqs = {"float32": vals([-1.5, 0.0, 0.0, 1.0, 2.5, 4.0], "float32"),
            "float64": vals([-2.0, -1.0, 0.5, 0.5, 0.5, 3.0, 7.0], "float64"),
            "int32": vals([-3, 0, 2, 2, 5], "int32"), "int64": vals([1, 3, 5, 7, 9, 11, 13, 15, 17], "int64")}
    for dt, seq in seqs.items():
        s = SHORT[dt]
        v = rnd([3, 4], dt, "wide") if dt in FLOATS else rnd([3, 4], dt)
        for right in (False, True):
            c(f"searchsorted/{s}/[{seq.numel()}]x[3,4]/right={right}", "searchsorted", [seq, v, None],
              lambda b, v, _, r=right: torch.searchsorted(b, v, right=r), {"right": right})
            c(f"bucketize/{s}/[3,4]x[{seq.numel()}]/right={right}", "bucketize", [v, seq],
              lambda v, b, r=right: torch.bucketize(v, b, right=r), {"right": right})
        # Values equal to boundaries, out_int32, side.
        c(f"searchsorted/{s}/exact/side=right/int32", "searchsorted", [seq, seq.flip(0), None],
          lambda b, v, _: torch.searchsorted(b, v, side="right", out_int32=True), {"side": "right", "out_int32": True})
        c(f"searchsorted/{s}/exact/left", "searchsorted", [seq, seq.clone(), None],
          lambda b, v, _: torch.searchsorted(b, v), {})
    for m in (0, 1, 3, 8, 9):
        b = torch.sort(rnd([m], "float32", "halves"))[0]
        c(f"searchsorted/f32/[{m}]x[9]", "searchsorted", [b, rnd([9], "float32", "halves"), None],
          lambda b, v, _: torch.searchsorted(b, v), {})
        c(f"searchsorted/f32/[{m}]x[9]/right", "searchsorted", [b, rnd([9], "float32", "halves"), None],
          lambda b, v, _: torch.searchsorted(b, v, right=True), {"right": True})
    c("searchsorted/f32/nan,inf", "searchsorted", [vals([-INF, 0.0, 1.0, INF], "float32"),
                                                   vals([NAN, INF, -INF, 0.5, 1.0], "float32"), None],
      lambda b, v, _: torch.searchsorted(b, v), {})
    c("searchsorted/f32/nan,inf/right", "searchsorted", [vals([-INF, 0.0, 1.0, INF], "float32"),
                                                         vals([NAN, INF, -INF, 0.5, 1.0], "float32"), None],
      lambda b, v, _: torch.searchsorted(b, v, right=True), {"right": True})
    b2 = torch.sort(rnd([2, 3, 5], "float64"), -1)[0]
    c("searchsorted/f64/batched[2,3,5]x[2,3,4]", "searchsorted", [b2, rnd([2, 3, 4], "float64"), None],
      lambda b, v, _: torch.searchsorted(b, v), {})
    c("searchsorted/f64/batched[2,3,5]x[2,3,4]/right", "searchsorted", [b2, rnd([2, 3, 4], "float64"), None],
      lambda b, v, _: torch.searchsorted(b, v, right=True), {"right": True})
    c("searchsorted/f32xi64/[5]x[4]", "searchsorted", [seqs["float32"][:5], vals([0, 1, -2, 5], "int64"), None],
      lambda b, v, _: torch.searchsorted(b, v), {})
    c("searchsorted/i32xf32/[5]x[4]", "searchsorted", [seqs["int32"], vals([0.5, 2.0, -9.0, 5.0], "float32"), None],
      lambda b, v, _: torch.searchsorted(b, v, right=True), {"right": True})
    c("searchsorted/f32/[6]x0d", "searchsorted", [seqs["float32"], vals(1.0, "float32"), None],
      lambda b, v, _: torch.searchsorted(b, v), {})
    c("searchsorted/f32/[6]x[0]", "searchsorted", [seqs["float32"], rnd([0], "float32"), None],
      lambda b, v, _: torch.searchsorted(b, v), {})
    unsorted = rnd([2, 6], "float32")
    sorter = torch.argsort(unsorted, -1)
    for right in (False, True):
        c(f"searchsorted/f32/sorter[2,6]/right={right}", "searchsorted", [unsorted, rnd([2, 3], "float32"), sorter],
          lambda b, v, so, r=right: torch.searchsorted(b, v, right=r, sorter=so), {"right": right})
    c("searchsorted/f32/strided", "searchsorted", [L(seqs["float32"], "strided"), L(rnd([3, 4], "float32"), "transposed"),
                                                   None], lambda b, v, _: torch.searchsorted(b, v), {})
    c("bucketize/f32/0d", "bucketize", [vals(2.5, "float32"), seqs["float32"]], lambda v, b: torch.bucketize(v, b), {})
    c("bucketize/i64/[5]/int32", "bucketize", [vals([0, 4, 17, 20, 1], "int64"), seqs["int64"]],
      lambda v, b: torch.bucketize(v, b, out_int32=True, right=True), {"right": True, "out_int32": True})
    c("searchsorted/f32/[2,3]x[3,2]/error", "searchsorted", [rnd([2, 3], "float32"), rnd([3, 2], "float32"), None],
      lambda b, v, _: torch.searchsorted(b, v), {}, error="shape")
    c("searchsorted/f32/0d/error", "searchsorted", [rnd([], "float32"), rnd([2], "float32"), None],
      lambda b, v, _: torch.searchsorted(b, v), {}, error="shape")
    c("searchsorted/bool/error", "searchsorted", [vals([False, True], "bool"), vals([True], "bool"), None],
      lambda b, v, _: torch.searchsorted(b, v), {}, error="dtype")
    c("searchsorted/f32/side=left,right/error", "searchsorted", [seqs["float32"], rnd([2], "float32"), None],
      lambda b, v, _: torch.searchsorted(b, v, side="left", right=True), {"side": "left", "right": True}, error="value")
    c("searchsorted/f32/sorter-i32/error", "searchsorted", [unsorted, rnd([2, 3], "float32"), sorter.int()],
      lambda b, v, so: torch.searchsorted(b, v, sorter=so), {}, error="dtype")
    c("searchsorted/f32/sorter[6]/error", "searchsorted", [unsorted, rnd([2, 3], "float32"), sorter[0]],
      lambda b, v, so: torch.searchsorted(b, v, sorter=so), {}, error="shape")
    c("searchsorted/f32/sorter-range/error", "searchsorted", [unsorted, rnd([2, 3], "float32"), sorter + 1], None, {},
      error="index")
    c("bucketize/f32/[2,3]/error", "bucketize", [rnd([2], "float32"), rnd([2, 3], "float32")],
      lambda v, b: torch.bucketize(v, b), {}, error="shape")

    for dt in ("int64", "int32", "uint8", "int8"):
        s = SHORT[dt]
        x = rnd([12], dt, "nonneg") if dt in INTS else vals([0, 3, 3, 1, 7, 3, 0, 2], dt)
        c(f"bincount/{s}/[{x.numel()}]", "bincount", [x, None], lambda x, w: torch.bincount(x), {"minlength": 0})
        c(f"bincount/{s}/minlength=10", "bincount", [x, None], lambda x, w: torch.bincount(x, minlength=10),
          {"minlength": 10})
    x = rnd([12], "int64", "nonneg")
    c("bincount/i64/weights-f32", "bincount", [x, rnd([12], "float32")], lambda x, w: torch.bincount(x, w),
      {"minlength": 0})
    c("bincount/i64/weights-f32/minlength=8", "bincount", [x, rnd([12], "float32")],
      lambda x, w: torch.bincount(x, w, 8), {"minlength": 8})
    c("bincount/i64/weights-f64", "bincount", [x, rnd([12], "float64")], lambda x, w: torch.bincount(x, w),
      {"minlength": 0})
    c("bincount/i64/weights-i32", "bincount", [x, rnd([12], "int32")], lambda x, w: torch.bincount(x, w),
      {"minlength": 0, "float64_only": True})
    c("bincount/i64/empty", "bincount", [rnd([0], "int64"), None], lambda x, w: torch.bincount(x), {"minlength": 0})
    c("bincount/i64/empty/minlength=3", "bincount", [rnd([0], "int64"), None], lambda x, w: torch.bincount(x, None, 3),
      {"minlength": 3})
    c("bincount/i64/strided", "bincount", [L(x, "strided"), None], lambda x, w: torch.bincount(x), {"minlength": 0})
    c("bincount/i64/negative/error", "bincount", [vals([1, -1, 2], "int64"), None], lambda x, w: torch.bincount(x),
      {"minlength": 0}, error="value")
    c("bincount/f32/error", "bincount", [rnd([3], "float32"), None], lambda x, w: torch.bincount(x), {"minlength": 0},
      error="dtype")
    c("bincount/i64/[2,2]/error", "bincount", [rnd([2, 2], "int64", "nonneg"), None], lambda x, w: torch.bincount(x),
      {"minlength": 0}, error="shape")
    c("bincount/i64/minlength=-1/error", "bincount", [rnd([2], "int64", "nonneg"), None],
      lambda x, w: torch.bincount(x, minlength=-1), {"minlength": -1}, error="value")
    c("bincount/i64/weights[2]/error", "bincount", [rnd([3], "int64", "nonneg"), rnd([2], "float32")],
      lambda x, w: torch.bincount(x, w), {"minlength": 0}, error="shape")

    for dt in FLOATS:
        s = SHORT[dt]
        x = rnd([4, 5], dt, "wide")
        plans = ((10, -3.0, 3.0), (4, 0.0, 0.0), (1, -1.0, 1.0), (7, -0.5, 2.0), (5, 0.25, 0.25))
        for bins, lo, hi in plans if dt == "float32" else plans[:2]:
            c(f"histc/{s}/[4,5]/bins={bins},min={lo},max={hi}", "histc", [x],
              lambda x, b=bins, lo=lo, hi=hi: torch.histc(x, b, lo, hi), {"bins": bins, "min": lo, "max": hi})
        c(f"histc/{s}/edges", "histc", [vals([0.0, 3.0, 1.0, 2.0, 2.9999999, -1e-8, 3.0000001, 1.5], dt)],
          lambda x: torch.histc(x, 3, 0.0, 3.0), {"bins": 3, "min": 0.0, "max": 3.0, "float64_only": dt == "float64"})
        c(f"histc/{s}/nan,inf", "histc", [vals([1.0, NAN, INF, -INF, NAN, 2.0], dt)],
          lambda x: torch.histc(x, 4, -5.0, 3.0), {"bins": 4, "min": -5.0, "max": 3.0})
        c(f"histc/{s}/same", "histc", [vals([2.0, 2.0, 2.0], dt)], lambda x: torch.histc(x, 4), {"bins": 4, "min": 0.0,
                                                                                                 "max": 0.0})
    c("histc/f32/empty", "histc", [rnd([0], "float32")], lambda x: torch.histc(x, 3), {"bins": 3, "min": 0.0, "max": 0.0})
    c("histc/f32/0d", "histc", [vals(1.0, "float32")], lambda x: torch.histc(x, 3), {"bins": 3, "min": 0.0, "max": 0.0})
    c("histc/f32/transposed[3,4]", "histc", [L(rnd([3, 4], "float32"), "transposed")],
      lambda x: torch.histc(x, 5, -1.0, 1.0), {"bins": 5, "min": -1.0, "max": 1.0})
    c("histc/f32/nan-range/error", "histc", [vals([1.0, NAN], "float32")], lambda x: torch.histc(x, 4),
      {"bins": 4, "min": 0.0, "max": 0.0}, error="value")
    c("histc/f32/inf-max/error", "histc", [vals([1.0, 2.0], "float32")], lambda x: torch.histc(x, 4, 0.0, INF),
      {"bins": 4, "min": 0.0, "max": INF}, error="value")
    c("histc/f32/min>max/error", "histc", [vals([1.0, 2.0], "float32")], lambda x: torch.histc(x, 4, 3.0, 1.0),
      {"bins": 4, "min": 3.0, "max": 1.0}, error="value")
    c("histc/f32/bins=0/error", "histc", [vals([1.0, 2.0], "float32")], lambda x: torch.histc(x, 0),
      {"bins": 0, "min": 0.0, "max": 0.0}, error="value")
    c("histc/i64/error", "histc", [vals([1, 2], "int64")], lambda x: torch.histc(x, 4),
      {"bins": 4, "min": 0.0, "max": 0.0}, error="dtype")


def group3(fam):
    c = fam.case
    for dt in ["float32", "int64", "bool"]:
        s = SHORT[dt]
        a, b, d = rnd([2], dt), rnd([3], dt), rnd([4], dt)
        for ix in ("ij", "xy"):
            c(f"meshgrid/{s}/[2],[3]/{ix}", "meshgrid", [a, b], lambda *t, ix=ix: torch.meshgrid(*t, indexing=ix),
              {"indexing": ix})
            if dt != "float32":
                continue
            c(f"meshgrid/{s}/[2],[3],[4]/{ix}", "meshgrid", [a, b, d], lambda *t, ix=ix: torch.meshgrid(*t, indexing=ix),
              {"indexing": ix})
        c(f"cartesian_prod/{s}/[2],[3]", "cartesian_prod", [a, b], torch.cartesian_prod)
        c(f"cartesian_prod/{s}/[2],[3],[4]", "cartesian_prod", [a, b, d], torch.cartesian_prod)
        c(f"argwhere/{s}/[3,4]", "argwhere", [rnd([3, 4], dt, "small") if dt in INTS else rnd([3, 4], dt, "halves")],
          torch.argwhere)
    c("meshgrid/f32/0d,[3]/ij", "meshgrid", [rnd([], "float32"), rnd([3], "float32")],
      lambda *t: torch.meshgrid(*t, indexing="ij"), {"indexing": "ij"})
    c("meshgrid/f32/[3]/xy", "meshgrid", [rnd([3], "float32")], lambda *t: torch.meshgrid(*t, indexing="xy"),
      {"indexing": "xy"})
    c("meshgrid/f32/[0],[2]/xy", "meshgrid", [rnd([0], "float32"), rnd([2], "float32")],
      lambda *t: torch.meshgrid(*t, indexing="xy"), {"indexing": "xy"})
    c("meshgrid/f32/strided/ij", "meshgrid", [L(rnd([3], "float32"), "strided"), rnd([2], "float32")],
      lambda *t: torch.meshgrid(*t, indexing="ij"), {"indexing": "ij"})
    c("meshgrid/f32xi64/error", "meshgrid", [rnd([2], "float32"), rnd([3], "int64")],
      lambda *t: torch.meshgrid(*t, indexing="ij"), {"indexing": "ij"}, error="dtype")
    c("meshgrid/f32/[2,2]/error", "meshgrid", [rnd([2, 2], "float32"), rnd([3], "float32")],
      lambda *t: torch.meshgrid(*t, indexing="ij"), {"indexing": "ij"}, error="shape")
    c("meshgrid/f32/indexing/error", "meshgrid", [rnd([2], "float32")], lambda *t: torch.meshgrid(*t, indexing="ji"),
      {"indexing": "ji"}, error="value")
    c("cartesian_prod/f32/[3]", "cartesian_prod", [rnd([3], "float32")], torch.cartesian_prod)
    c("cartesian_prod/f32/[2],[0]", "cartesian_prod", [rnd([2], "float32"), rnd([0], "float32")], torch.cartesian_prod)
    c("cartesian_prod/f32/0d/error", "cartesian_prod", [rnd([], "float32"), rnd([2], "float32")], torch.cartesian_prod,
      error="shape")
    c("cartesian_prod/f32xi32/error", "cartesian_prod", [rnd([2], "float32"), rnd([2], "int32")], torch.cartesian_prod,
      error="dtype")
    dev = vals(0.0, "float32")  # the device's carrier
    for row, col, off in ((3, 4, 0), (3, 4, 1), (4, 3, -1), (3, 3, 10), (3, 3, -10), (0, 4, 0), (4, 0, 0), (5, 5, -2),
                          (1, 6, 3)):
        a = {"row": row, "col": col, "offset": off}
        c(f"tril_indices/{row}x{col}/offset={off}", "tril_indices", [dev], lambda _, r=row, k=col, o=off:
          torch.tril_indices(r, k, o), a)
        c(f"triu_indices/{row}x{col}/offset={off}", "triu_indices", [dev], lambda _, r=row, k=col, o=off:
          torch.triu_indices(r, k, o), a)
    c("tril_indices/row=-1/error", "tril_indices", [dev], lambda _: torch.tril_indices(-1, 3),
      {"row": -1, "col": 3, "offset": 0}, error="value")
    c("triu_indices/col=-2/error", "triu_indices", [dev], lambda _: torch.triu_indices(2, -2),
      {"row": 2, "col": -2, "offset": 0}, error="value")
    c("argwhere/f32/special", "argwhere", [vals([[0.0, NAN], [-0.0, INF]], "float32")], torch.argwhere)
    c("argwhere/f32/0d", "argwhere", [vals(2.0, "float32")], torch.argwhere)
    c("argwhere/f32/0d-zero", "argwhere", [vals(0.0, "float32")], torch.argwhere)
    c("argwhere/f32/empty[0,3]", "argwhere", [rnd([0, 3], "float32")], torch.argwhere)
    c("argwhere/f32/transposed[3,4]", "argwhere", [L(rnd([3, 4], "float32", "halves"), "transposed")], torch.argwhere)


def grad_group3(fam):
    g = fam.gcase
    for dt in FLOATS:
        s = SHORT[dt]
        g(f"cartesian_prod/{s}/[2],[3]", "cartesian_prod", [rnd([2], dt), rnd([3], dt)], torch.cartesian_prod)
    g("cartesian_prod/f64/[2],[3],[2]/squared", "cartesian_prod_sq", [rnd([2], "float64"), rnd([3], "float64"),
                                                                        rnd([2], "float64")],
      lambda *t: torch.cartesian_prod(*t) ** 2, {}, hvp=True)
    for ix in ("ij", "xy"):
        g(f"meshgrid_sum/f64/[2],[3]/{ix}", "meshgrid_sum", [rnd([2], "float64"), rnd([3], "float64")],
          lambda a, b, ix=ix: sum(t * (k + 1) for k, t in enumerate(torch.meshgrid(a, b, indexing=ix))), {"indexing": ix})


def scan():
    fam = Family("scan", 85)
    group1(fam)
    group2(fam)
    group3(fam)
    return fam


def grad_scan():
    fam = GradFamily("grad_scan", 86)
    grad_group1(fam)
    grad_group3(fam)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (scan, grad_scan):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
