"""Cases of the everyday ops lathe builds as composites of its own
(moreops.json) and their gradients (grad_moreops.json):

1. isnan, isinf, isposinf, isneginf, isfinite, nan_to_num, any and all;
2. lerp, outer, diagonal, diag, trace and roll;
3. the activations elu, selu, celu, hardtanh, relu6, hardsigmoid,
   hardswish, mish, softsign, logsigmoid and threshold;
4. median (whole and along a dim), kthvalue and quantile.

Run it from the repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/moreops.py

(gen.py runs it too, with every other family.) Op keys and attributes are
listed with the Go table, internal/conformance/ops_moreops.go.

Where lathe keeps a rule of its own, the case says so: trace of integers
keeps the dtype (lathe's Sum rule; torch gives int64), so those cases cast
torch's result (out_dtype). Kinks: a gradient case with an input on a kink
(hardtanh at its bounds, threshold at its threshold, elu at 0) says
nonsmooth, so that only torch's convention is compared there, not a finite
difference.
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily, off  # noqa: E402
from refcase import FLOATS, INF, INTS, NAN, SHORT, Family, L, rnd, shp, vals  # noqa: E402

SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 1.5, -2.5, 6.0, -3.0, 3.0, 1e30, -1e-30]

PREDICATES = (("isnan", torch.isnan), ("isinf", torch.isinf), ("isposinf", torch.isposinf),
              ("isneginf", torch.isneginf), ("isfinite", torch.isfinite))


def group1(fam):
    for op, fn in PREDICATES:
        for dt in FLOATS:
            fam.case(f"{op}/{SHORT[dt]}/special", op, [vals(SPECIAL, dt)], fn)
            fam.case(f"{op}/{SHORT[dt]}/transposed[3,4]", op, [L(rnd([3, 4], dt), "transposed")], fn)
        fam.case(f"{op}/f32/0d", op, [vals(NAN, "float32")], fn)
        fam.case(f"{op}/f32/empty[0,3]", op, [rnd([0, 3], "float32")], fn)
        for dt in INTS + ["bool"]:
            fam.case(f"{op}/{SHORT[dt]}/[2,3]", op, [rnd([2, 3], dt)], fn)
    for dt in FLOATS:
        # float64's largest value is no float32's: not narrowed on wgpu.
        fam.case(f"nan_to_num/{SHORT[dt]}/special", "nan_to_num", [vals(SPECIAL, dt)], torch.nan_to_num,
                 {"float64_only": True} if dt == "float64" else None)
        fam.case(f"nan_to_num/{SHORT[dt]}/special/nan=1.5,posinf=2,neginf=-1e300", "nan_to_num_with",
                 [vals(SPECIAL, dt)], lambda x: torch.nan_to_num(x, 1.5, 2.0, -1e300),
                 {"nan": 1.5, "posinf": 2.0, "neginf": -1e300})
    fam.case("nan_to_num/f32/strided[2,3]", "nan_to_num", [L(vals([[NAN, 1, INF], [-INF, 2, 3]], "float32"),
                                                                  "strided")], torch.nan_to_num)
    fam.case("nan_to_num/f32/0d", "nan_to_num", [vals(-INF, "float32")], torch.nan_to_num)
    fam.case("nan_to_num/f32/empty[2,0]", "nan_to_num", [rnd([2, 0], "float32")], torch.nan_to_num)
    for dt in INTS + ["bool"]:
        fam.case(f"nan_to_num/{SHORT[dt]}/[2,3]", "nan_to_num", [rnd([2, 3], dt)], torch.nan_to_num)
    # any and all: the whole tensor and along a dim, keepdim, over zeros,
    # NaN (nonzero, so true), -0 (zero), empty tensors and 0-d ones.
    for op, fn in (("any", torch.any), ("all", torch.all)):
        ins = {"f32": vals([[0.0, -0.0, 0.0], [0.0, 1.0, NAN], [2.0, 3.0, -1.0]], "float32"),
               "f64": vals([[0.0, 0.0], [0.0, 5.0], [NAN, 1.0]], "float64"),
               "i32": vals([[0, 0, 0], [0, 3, 0], [1, 2, -1]], "int32"),
               "i64": vals([[0, 0], [7, 1]], "int64"),
               "bool": vals([[False, False], [True, False], [True, True]], "bool")}
        for name, x in ins.items():
            fam.case(f"{op}/{name}/all", op, [x], fn, {"dims": []})
            for d in (0, 1, -1):
                for keep in (False, True):
                    fam.case(f"{op}/{name}/dim={d}/keep={keep}", op, [x], lambda x, d=d, k=keep: fn(x, d, keepdim=k),
                             {"dims": [d], "keepdim": keep})
        fam.case(f"{op}/f32/transposed[3,4]/dim=1", op, [L(vals([[0.0, 1, 0, 0], [0, 0, 0, 0], [2, 2, 2, 2]],
                                                                 "float32").t().contiguous(), "transposed")],
                 lambda x: fn(x, 1), {"dims": [1]})
        fam.case(f"{op}/f32/empty[0]/all", op, [rnd([0], "float32")], fn, {"dims": []})
        fam.case(f"{op}/f32/empty[2,0]/dim=1", op, [rnd([2, 0], "float32")], lambda x: fn(x, 1), {"dims": [1]})
        fam.case(f"{op}/f32/empty[0,3]/dim=1", op, [rnd([0, 3], "float32")], lambda x: fn(x, 1), {"dims": [1]})
        fam.case(f"{op}/f32/0d/dim=0", op, [vals(0.0, "float32")], lambda x: fn(x, 0), {"dims": [0]})
        fam.case(f"{op}/f32/0d/all", op, [vals(2.0, "float32")], fn, {"dims": []})
        fam.case(f"{op}/u8/[2,2]/all", op, [vals([[0, 3], [255, 1]], "uint8")], fn, {"dims": []})
        fam.case(f"{op}/u8/[2,2]/dim=0", op, [vals([[0, 3], [255, 1]], "uint8")], lambda x: fn(x, 0), {"dims": [0]})
        fam.case(f"{op}/f32/[2,3]/dim=2/error", op, [rnd([2, 3], "float32")], lambda x: fn(x, 2), {"dims": [2]},
                 error="index")


def grad_group1(fam):
    g = fam.gcase
    x = vals([1.5, NAN, INF, -INF, -2.0, 0.0], "float64")
    g("nan_to_num/f64/special", "nan_to_num", [x], torch.nan_to_num, {"float64_only": True}, nonsmooth=True)
    g("nan_to_num/f32/special/nan=1.5,posinf=2,neginf=-3", "nan_to_num_with", [vals([1.5, NAN, INF, -INF], "float32")],
      lambda x: torch.nan_to_num(x, 1.5, 2.0, -3.0), {"nan": 1.5, "posinf": 2.0, "neginf": -3.0}, nonsmooth=True)
    g("nan_to_num/f64/[3,4]", "nan_to_num", [rnd([3, 4], "float64")], torch.nan_to_num)


def moreops():
    fam = Family("moreops", 71)
    group1(fam)
    return fam


def grad_moreops():
    fam = GradFamily("grad_moreops", 72)
    grad_group1(fam)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (moreops, grad_moreops):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
