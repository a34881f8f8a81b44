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

Trace of integers is int64, as torch's (and lathe's Sum). Kinks: a gradient case with an input on a kink
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


def sq(f, square):
    return (lambda *xs: f(*xs) ** 2) if square else f


# (shape, offset, dim1, dim2) of diagonal: square, wide, tall, batched,
# offsets past every edge, negative and swapped dims.
DIAGONAL_PLANS = [([3, 3], 0, 0, 1), ([3, 4], 1, 0, 1), ([3, 4], -1, 0, 1), ([4, 3], 2, 1, 0), ([3, 4], 5, 0, 1),
                  ([3, 4], -3, 0, 1), ([2, 3, 4], 0, 1, 2), ([2, 3, 4], -1, 0, 2), ([2, 3, 4], 1, -1, -3),
                  ([2, 1, 3, 3], 0, -2, -1), ([0, 3], 0, 0, 1), ([3, 0], -1, 0, 1), ([2, 2], -100, 0, 1)]
DIAG_PLANS = [([3], 0), ([3], 1), ([3], -2), ([1], 3), ([0], 0), ([0], -2), ([3, 3], 0), ([3, 4], 1), ([4, 3], -2),
              ([3, 4], 7), ([0, 2], 0)]
ROLL_PLANS = [([5], [2], []), ([5], [-7], []), ([2, 3], [1], []), ([2, 3], [1], [0]), ([2, 3], [-1], [1]),
              ([2, 3], [4, -5], [0, 1]), ([2, 3, 4], [1, 2], [-1, 0]), ([2, 3], [1, 1], [1, 1]), ([0, 3], [1], [0]),
              ([2, 0], [3], [1]), ([], [3], []), ([2, 3], [0], [1]), ([4], [400], [0])]


def diag_fn(k):
    """torch.diag; of a matrix, torch.diagonal, which torch.diag is, but for
    an offset past the matrix, where torch 1.13's diag fails ("numel:
    integer multiplication overflow") and diagonal gives the empty
    diagonal, as lathe's Diag does."""
    return lambda x: torch.diag(x, k) if x.dim() != 2 else torch.diagonal(x, k).clone()


def group2(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        for shapes in (([3, 4], [3, 4], [3, 4]), ([2, 1], [3], [1, 3]), ([3], [3], [])):
            ins = [rnd(shapes[0], dt), rnd(shapes[1], dt), rnd(shapes[2], dt, "wide")]
            fam.case(f"lerp/{s}/{'x'.join(shp(x) for x in shapes)}", "lerp", ins, torch.lerp)
        fam.case(f"lerp/{s}/special", "lerp",
                 [vals([0.0, 1, -2, INF, 1, NAN, 3, -0.0], dt), vals([1.0, 1, 5, 1, INF, 2, 3, 0.0], dt),
                  vals([0.3, 0.5, 0.49, 0.2, 0.7, 0.1, -3.0, 1.0], dt)], torch.lerp)
        for w in (0.0, 0.25, 0.5, 0.7, 1.0, -1.5, 2.5):
            fam.case(f"lerp_scalar/{s}/w={w}", "lerp_scalar", [rnd([3, 4], dt), rnd([4], dt)],
                     lambda x, e, w=w: torch.lerp(x, e, w), {"weight": w})
        fam.case(f"lerp_scalar/{s}/special", "lerp_scalar",
                 [vals([0.0, INF, NAN, -0.0], dt), vals([1.0, 1, 2, -0.0], dt)],
                 lambda x, e: torch.lerp(x, e, 0.75), {"weight": 0.75})
    fam.case("lerp/f32/transposed", "lerp", [L(rnd([3, 4], "float32"), "transposed"), rnd([3, 4], "float32"),
                                             L(rnd([3, 4], "float32"), "strided")], torch.lerp)
    fam.case("lerp/f32/empty[0,3]", "lerp", [rnd([0, 3], "float32"), rnd([3], "float32"), rnd([], "float32")], torch.lerp)
    fam.case("lerp/f32xf64/error", "lerp", [rnd([3], "float32"), rnd([3], "float64"), rnd([3], "float32")], torch.lerp,
             error="dtype")
    fam.case("lerp/f32/w-f64/error", "lerp", [rnd([3], "float32"), rnd([3], "float32"), rnd([], "float64")], torch.lerp,
             error="dtype")
    fam.case("lerp_scalar/i64/error", "lerp_scalar", [rnd([3], "int64"), rnd([3], "int64")],
             lambda x, e: torch.lerp(x, e, 0.5), {"weight": 0.5}, error="dtype")
    fam.case("lerp/f32/[2]x[3]/error", "lerp", [rnd([2], "float32"), rnd([3], "float32"), rnd([3], "float32")], torch.lerp,
             error="shape")
    for a, b in (("float32", "float32"), ("float64", "float64"), ("int32", "int32"), ("int64", "float32"),
                 ("int32", "int64"), ("bool", "bool"), ("float32", "float64"), ("bool", "int32")):
        fam.case(f"outer/{SHORT[a]}x{SHORT[b]}/[3]x[4]", "outer", [rnd([3], a), rnd([4], b)], torch.outer)
    fam.case("outer/f32/[0]x[3]", "outer", [rnd([0], "float32"), rnd([3], "float32")], torch.outer)
    fam.case("outer/f32/special", "outer", [vals([INF, 0.0, NAN], "float32"), vals([0.0, -1.0], "float32")], torch.outer)
    fam.case("outer/f32/strided", "outer", [L(rnd([3], "float32"), "strided"), rnd([2], "float32")], torch.outer)
    for shapes in (([2, 3], [3]), ([], [3]), ([3], [1, 3])):
        fam.case(f"outer/f32/{shp(shapes[0])}x{shp(shapes[1])}/error", "outer", [rnd(shapes[0], "float32"),
                                                                                rnd(shapes[1], "float32")],
                 torch.outer, error="shape")
    for dt in FLOATS + INTS + ["bool"]:
        for shape, off, d1, d2 in DIAGONAL_PLANS:
            fam.case(f"diagonal/{SHORT[dt]}/{shp(shape)}/off={off},dims={d1},{d2}", "diagonal", [rnd(shape, dt)],
                     lambda x, o=off, a=d1, b=d2: torch.diagonal(x, o, a, b), {"offset": off, "dim1": d1, "dim2": d2})
        for shape, k in DIAG_PLANS:
            fam.case(f"diag/{SHORT[dt]}/{shp(shape)}/k={k}", "diag", [rnd(shape, dt)], diag_fn(k), {"diagonal": k})
        for shape, shifts, dims in ROLL_PLANS:
            fam.case(f"roll/{SHORT[dt]}/{shp(shape)}/shifts={shp(shifts)},dims={shp(dims)}", "roll", [rnd(shape, dt)],
                     lambda x, s=shifts, d=dims: torch.roll(x, s, d), {"shifts": shifts, "dims": dims})
    for dt in FLOATS + INTS:
        for shape in ([3, 3], [2, 4], [4, 2], [0, 3], [1, 1]):
            fam.case(f"trace/{SHORT[dt]}/{shp(shape)}", "trace", [rnd(shape, dt)], torch.trace,
                     out_dtype=None if dt in INTS else dt)
    fam.case("trace/f32/special", "trace", [vals([[INF, 1], [2, -INF]], "float32")], torch.trace)
    fam.case("trace/f32/transposed[3,4]", "trace", [L(rnd([3, 4], "float32"), "transposed")], torch.trace)
    fam.case("trace/f32/[3]/error", "trace", [rnd([3], "float32")], torch.trace, error="shape")
    fam.case("trace/bool/error", "trace", [rnd([2, 2], "bool")], torch.trace, error="dtype")
    for layout in ("transposed", "strided"):
        fam.case(f"diagonal/f32/{layout}[3,4]/off=1", "diagonal", [L(rnd([3, 4], "float32"), layout)],
                 lambda x: torch.diagonal(x, 1), {"offset": 1, "dim1": 0, "dim2": 1})
        fam.case(f"diag/f32/{layout}[3,4]/k=-1", "diag", [L(rnd([3, 4], "float32"), layout)],
                 lambda x: torch.diag(x, -1), {"diagonal": -1})
        fam.case(f"roll/f32/{layout}[3,4]/shifts=[1,2],dims=[1,0]", "roll", [L(rnd([3, 4], "float32"), layout)],
                 lambda x: torch.roll(x, [1, 2], [1, 0]), {"shifts": [1, 2], "dims": [1, 0]})
    fam.case("diag/f32/strided[3]/k=1", "diag", [L(rnd([3], "float32"), "strided")], lambda x: torch.diag(x, 1),
             {"diagonal": 1})
    x = rnd([2, 3], "float32")
    for off, d1, d2, kind in ((0, 0, 0, "value"), (0, 1, -1, "value"), (0, 0, 2, "index"), (0, -3, 1, "index")):
        fam.case(f"diagonal/f32/[2,3]/off={off},dims={d1},{d2}/error", "diagonal", [x],
                 lambda x, o=off, a=d1, b=d2: torch.diagonal(x, o, a, b), {"offset": off, "dim1": d1, "dim2": d2},
                 error=kind)
    fam.case("diagonal/f32/[3]/error", "diagonal", [rnd([3], "float32")], lambda x: torch.diagonal(x),
             {"offset": 0, "dim1": 0, "dim2": 1}, error="index")
    for shape in ([], [2, 2, 2]):
        fam.case(f"diag/f32/{shp(shape)}/error", "diag", [rnd(shape, "float32")], torch.diag, {"diagonal": 0},
                 error="shape")
    for shifts, dims, kind in (([1, 2], [], "value"), ([1], [0, 1], "value"), ([], [], "value"), ([1], [2], "index")):
        fam.case(f"roll/f32/[2,3]/shifts={shp(shifts)},dims={shp(dims)}/error", "roll", [x],
                 lambda x, s=shifts, d=dims: torch.roll(x, s, d), {"shifts": shifts, "dims": dims}, error=kind)
    fam.case("roll/f32/0d/dims=[0]/error", "roll", [rnd([], "float32")], lambda x: torch.roll(x, 1, 0),
             {"shifts": [1], "dims": [0]}, error="index")


def grad_group2(fam):
    g = fam.gcase
    for dt in FLOATS:
        s = SHORT[dt]
        g(f"lerp/{s}/[3,4]", "lerp", [rnd([3, 4], dt), rnd([3, 4], dt), rnd([3, 4], dt, "wide")], torch.lerp, hvp=True)
        g(f"lerp/{s}/bcast[2,1]x[3]x[1,3]", "lerp", [rnd([2, 1], dt), rnd([3], dt), rnd([1, 3], dt, "wide")], torch.lerp,
          hvp=True)
        g(f"lerp_scalar/{s}/w=0.3", "lerp_scalar", [rnd([3, 4], dt), rnd([4], dt)], lambda x, e: torch.lerp(x, e, 0.3),
          {"weight": 0.3})
        g(f"lerp_scalar/{s}/w=0.8", "lerp_scalar", [rnd([3, 4], dt), rnd([3, 4], dt)], lambda x, e: torch.lerp(x, e, 0.8),
          {"weight": 0.8})
        g(f"outer/{s}/[3]x[4]", "outer", [rnd([3], dt), rnd([4], dt)], torch.outer, hvp=True)
    g("outer/f64/[0]x[2]", "outer", [rnd([0], "float64"), rnd([2], "float64")], torch.outer)
    for shape, off, d1, d2 in DIAGONAL_PLANS[:10] + DIAGONAL_PLANS[11:]:
        g(f"diagonal/f64/{shp(shape)}/off={off},dims={d1},{d2}", "diagonal", [rnd(shape, "float64")],
          lambda x, o=off, a=d1, b=d2: torch.diagonal(x, o, a, b), {"offset": off, "dim1": d1, "dim2": d2})
    g("diagonal/f64/transposed[2,3,4]/off=-1,dims=2,0/squared", "diagonal", [L(rnd([2, 3, 4], "float64"), "transposed")],
      sq(lambda x: torch.diagonal(x, -1, 2, 0), True), {"offset": -1, "dim1": 2, "dim2": 0, "square": True}, hvp=True)
    g("diagonal/f32/[3,4]/off=1,dims=0,1/squared", "diagonal", [rnd([3, 4], "float32")],
      sq(lambda x: torch.diagonal(x, 1), True), {"offset": 1, "dim1": 0, "dim2": 1, "square": True}, hvp=True)
    for shape, k in DIAG_PLANS:
        g(f"diag/f64/{shp(shape)}/k={k}", "diag", [rnd(shape, "float64")], diag_fn(k), {"diagonal": k})
    for shape, k in (([3], 1), ([3, 4], -1)):
        g(f"diag/f64/{shp(shape)}/k={k}/squared", "diag", [rnd(shape, "float64")],
          sq(lambda x, k=k: torch.diag(x, k), True), {"diagonal": k, "square": True}, hvp=True)
    for shape in ([3, 3], [2, 4], [0, 2]):
        g(f"trace/f64/{shp(shape)}", "trace", [rnd(shape, "float64")], torch.trace)
    g("trace/f32/[3,3]", "trace", [rnd([3, 3], "float32")], torch.trace)
    for shape, shifts, dims in ROLL_PLANS:
        g(f"roll/f64/{shp(shape)}/shifts={shp(shifts)},dims={shp(dims)}", "roll", [rnd(shape, "float64")],
          lambda x, s=shifts, d=dims: torch.roll(x, s, d), {"shifts": shifts, "dims": dims})
    g("roll/f64/[2,3]/shifts=[1,-1],dims=[0,1]/squared", "roll", [rnd([2, 3], "float64")],
      sq(lambda x: torch.roll(x, [1, -1], [0, 1]), True), {"shifts": [1, -1], "dims": [0, 1], "square": True}, hvp=True)


def hardsigmoid(x):
    """F.hardsigmoid, whose gradient is exactly 1/6 inside (-3, 3): torch
    1.13's float64 hardsigmoid_backward multiplies by 1.0f / 6.0f, 1/6
    rounded to float32, 7e-9 off; the values are torch's own."""
    return torch.where((x > -3) & (x < 3), (x + 3) / 6, F.hardsigmoid(x).detach())


# (key, torch function, attributes, float only, smooth): the activations,
# with parameters other than torch's defaults too.
SELU = lambda x: F.selu(x)  # noqa: E731
ACTIVATIONS = [
    ("elu", lambda x: F.elu(x), {"alpha": 1.0}, True, False),
    ("elu", lambda x: F.elu(x, 0.5), {"alpha": 0.5}, True, False),
    ("elu", lambda x: F.elu(x, -2.0), {"alpha": -2.0}, True, False),
    ("selu", SELU, {}, True, False),
    ("celu", lambda x: F.celu(x), {"alpha": 1.0}, True, False),
    ("celu", lambda x: F.celu(x, 2.5), {"alpha": 2.5}, True, False),
    ("celu", lambda x: F.celu(x, -0.5), {"alpha": -0.5}, True, False),
    ("hardtanh", lambda x: F.hardtanh(x), {"min_val": -1.0, "max_val": 1.0}, False, False),
    ("hardtanh", lambda x: F.hardtanh(x, -2.0, 3.0), {"min_val": -2.0, "max_val": 3.0}, False, False),
    ("hardtanh", lambda x: F.hardtanh(x, 1.0, 1.0), {"min_val": 1.0, "max_val": 1.0}, False, False),
    ("relu6", F.relu6, {}, False, False),
    ("hardsigmoid", lambda x: hardsigmoid(x), {}, True, False),
    ("hardswish", F.hardswish, {}, True, False),
    ("mish", F.mish, {}, True, True),
    ("softsign", F.softsign, {}, False, True),
    ("logsigmoid", F.logsigmoid, {}, True, True),
    ("threshold", lambda x: F.threshold(x, 1.0, 5.0), {"threshold": 1.0, "value": 5.0}, False, False),
    ("threshold", lambda x: F.threshold(x, -1.0, -3.0), {"threshold": -1.0, "value": -3.0}, False, False),
]
# Kinks and edges: 0, ±0.5, ±1, ±3, 6, large values of both signs. The
# kinks and NaN come first, so that torch's cpu kernels compute them in
# their vectorised loop (whose conventions lathe follows where its scalar
# tail differs: ops_activation.go), not in the tail.
KINKS = [NAN, INF, -INF, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 6.0, 25.0, -25.0, 50.0, -50.0,
         100.0, -100.0, 1e-7, -1e-7]


def act_name(op, attrs):
    return op + ("/" + ",".join(f"{k}={v}" for k, v in attrs.items()) if attrs else "")


def group3(fam):
    for op, fn, attrs, floats_only, _ in ACTIVATIONS:
        n = act_name(op, attrs)
        for dt in FLOATS:
            s = SHORT[dt]
            fam.case(f"{n}/{s}/special", op, [vals(KINKS, dt)], fn, attrs)
            fam.case(f"{n}/{s}/[3,4]", op, [rnd([3, 4], dt, "wide")], fn, attrs)
        fam.case(f"{n}/f32/transposed[3,4]", op, [L(rnd([3, 4], "float32", "wide"), "transposed")], fn, attrs)
        fam.case(f"{n}/f32/0d", op, [rnd([], "float32")], fn, attrs)
        fam.case(f"{n}/f32/empty[0,3]", op, [rnd([0, 3], "float32")], fn, attrs)
        for dt in INTS:
            if floats_only:
                fam.case(f"{n}/{SHORT[dt]}/error", op, [rnd([3], dt)], fn, attrs, error="dtype")
            else:
                fam.case(f"{n}/{SHORT[dt]}/[2,5]", op, [rnd([2, 5], dt)], fn, attrs)
        fam.case(f"{n}/bool/error", op, [rnd([3], "bool")], fn, attrs, error="dtype")
    x = rnd([3], "float32")
    fam.case("celu/alpha=0.0/f32/error", "celu", [x], lambda x: F.celu(x, 0.0), {"alpha": 0.0}, error="value")
    # torch computes max_val everywhere; lathe refuses, as its Clamp does.
    fam.case("hardtanh/min_val=2.0,max_val=1.0/f32/error", "hardtanh", [x], None, {"min_val": 2.0, "max_val": 1.0},
             error="value")
    fam.case("hardtanh/min_val=-1.5,max_val=1.0/i32/error", "hardtanh", [rnd([3], "int32")], None,
             {"min_val": -1.5, "max_val": 1.0}, error="dtype")
    fam.case("threshold/threshold=0.0,value=2.5/i64/error", "threshold", [rnd([3], "int64")], None,
             {"threshold": 0.0, "value": 2.5}, error="dtype")
    # torch truncates a threshold with a fraction for an integer x (-0.5
    # replaces 0); lathe refuses it.
    fam.case("threshold/threshold=-0.5,value=7.0/i64/error", "threshold", [rnd([3], "int64")], None,
             {"threshold": -0.5, "value": 7.0}, error="dtype")


def grad_group3(fam):
    g = fam.gcase
    for op, fn, attrs, _, smooth in ACTIVATIONS:
        n = act_name(op, attrs)
        for dt in FLOATS:
            s = SHORT[dt]
            # Off the grid, so no value sits on a kink (0, ±1, ±3, 6).
            g(f"{n}/{s}/[3,4]", op, [off(rnd([3, 4], dt, "wide"))], fn, attrs, hvp=smooth or op in ("elu", "selu", "celu"))
            g(f"{n}/{s}/kinks", op, [vals(KINKS, dt)], fn, attrs, nonsmooth=True)
        g(f"{n}/f64/transposed[3,4]", op, [L(off(rnd([3, 4], "float64", "wide")), "transposed")], fn, attrs)
        g(f"{n}/f64/0d", op, [off(rnd([], "float64"))], fn, attrs)


def stable_pick(x, dim, keep, k):
    """The index lathe gives for the k-th smallest (from 1) of each line of
    x along dim, or for its lower median (k 0, where a line with a NaN
    gives its first NaN): the place in a stable sort."""
    d = dim % max(x.dim(), 1)
    xx = x.reshape(1) if x.dim() == 0 else x
    n = xx.shape[d]
    order = torch.sort(xx, dim=d, stable=True)[1]
    if k:
        pos = torch.full_like(order.narrow(d, 0, 1), k - 1)
    else:
        pos = torch.full_like(order.narrow(d, 0, 1), (n - 1) // 2)
        if xx.is_floating_point():
            nans = xx.isnan().sum(d, keepdim=True)
            pos = torch.where(nans > 0, n - nans, pos)
    i = order.gather(d, pos)
    if x.dim() == 0:
        return i.reshape(())
    return i if keep else i.squeeze(d)


def order_fn(name, dim, keep, k=0):
    """torch.median(x, dim, keepdim) or torch.kthvalue(x, k, dim, keepdim):
    torch's values, and the stable sort's index (stable_pick), checked to be
    torch's own wherever the chosen value is unique in its line (torch does
    not say which of tied elements it returns)."""
    def f(x):
        v, i = torch.median(x, dim, keep) if name == "median" else torch.kthvalue(x, k, dim, keep)
        si = stable_pick(x, dim, keep, k)
        assert torch.equal(x.reshape(-1)[0:0], x.reshape(-1)[0:0])
        picked = torch.gather(x.reshape(1) if x.dim() == 0 else x, dim % max(x.dim(), 1),
                              si if keep or x.dim() == 0 else si.unsqueeze(dim % max(x.dim(), 1)))
        assert torch.allclose(picked.reshape(v.shape).double(), v.double(), equal_nan=True), (name, x, v, picked)
        same = (x.unsqueeze(-1) == x.unsqueeze(-2)) if False else None  # noqa: F841
        if x.dim() > 0 and x.numel():
            d = dim % x.dim()
            ties = (x.unsqueeze(d) == picked.reshape(v.shape if keep else v.unsqueeze(d).shape).unsqueeze(d)).sum(d + 1)
            unique = (ties == 1).reshape(si.shape)
            assert torch.equal(si[unique], i[unique]), (name, x, si, i)
        return v, si
    return f


MEDIAN_PLANS = [([3, 4], 1, False), ([3, 4], 0, True), ([3, 5], -1, False), ([2, 3, 4], 1, True), ([2, 3, 4], -3, False),
                ([1, 5], 1, False), ([0, 3], 1, False), ([4], 0, False), ([], 0, False), ([], -1, True)]
KTH_PLANS = [([3, 4], 1, 1, False), ([3, 4], 4, 1, True), ([3, 4], 2, 0, False), ([2, 3, 4], 3, -1, True),
             ([5], 5, 0, False), ([], 1, 0, False), ([0, 3], 2, 1, False)]
QUANTILE_PLANS = [([7], 0.5, []), ([8], 0.5, []), ([3, 4], 0.25, []), ([3, 4], 0.0, []), ([3, 4], 1.0, []),
                  ([3, 5], 0.4, [1]), ([4, 3], 0.9, [0]), ([2, 3, 4], 0.3, [-2]), ([2, 3, 5], 0.625, [2]), ([1], 0.7, []),
                  ([], 0.3, []), ([], 0.3, [0])]
INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]


def group4(fam):
    for dt in FLOATS + INTS:
        s = SHORT[dt]
        for shape in ([7], [3, 4], [2, 3, 2], [], [1]):
            fam.case(f"median/{s}/{shp(shape)}", "median", [rnd(shape, dt)], torch.median)
        fam.case(f"median/{s}/ties[3,4]", "median", [rnd([3, 4], dt, "halves" if dt in FLOATS else "small")],
                 torch.median)
        for shape, dim, keep in MEDIAN_PLANS:
            fam.case(f"median_dim/{s}/{shp(shape)}/dim={dim}/keep={keep}", "median_dim", [rnd(shape, dt)],
                     order_fn("median", dim, keep), {"dim": dim, "keepdim": keep})
        fam.case(f"median_dim/{s}/ties[4,5]/dim=1", "median_dim",
                 [rnd([4, 5], dt, "halves" if dt in FLOATS else "small")], order_fn("median", 1, False),
                 {"dim": 1, "keepdim": False})
        for shape, k, dim, keep in KTH_PLANS:
            fam.case(f"kthvalue/{s}/{shp(shape)}/k={k}/dim={dim}/keep={keep}", "kthvalue", [rnd(shape, dt)],
                     order_fn("kthvalue", dim, keep, k), {"k": k, "dim": dim, "keepdim": keep})
    for dt in FLOATS:
        s = SHORT[dt]
        spec = vals([[3.0, NAN, 1.0, 2.0], [INF, -INF, 0.0, -0.0], [NAN, 5.0, NAN, 1.0], [2.0, 2.0, 1.0, 1.0]], dt)
        fam.case(f"median/{s}/special", "median", [spec], torch.median)
        fam.case(f"median/{s}/special-no-nan", "median", [spec[1]], torch.median)
        fam.case(f"median/{s}/empty[0]", "median", [rnd([0], dt)], torch.median)
        fam.case(f"median_dim/{s}/special/dim=1", "median_dim", [spec], order_fn("median", 1, False),
                 {"dim": 1, "keepdim": False})
        fam.case(f"median_dim/{s}/special/dim=0", "median_dim", [spec], order_fn("median", 0, True),
                 {"dim": 0, "keepdim": True})
        for k in (1, 2, 3, 4):
            fam.case(f"kthvalue/{s}/special/k={k}", "kthvalue", [spec], order_fn("kthvalue", 1, False, k),
                     {"k": k, "dim": 1, "keepdim": False})
        for shape, q, dims in QUANTILE_PLANS:
            for interp in INTERPOLATIONS:
                for keep in (False, True):
                    fam.case(f"quantile/{s}/{shp(shape)}/q={q}/dims={shp(dims)}/{interp}/keep={keep}", "quantile",
                             [rnd(shape, dt)],
                             lambda x, q=q, d=dims, i=interp, k=keep: torch.quantile(x, q, d[0] if d else None, k, interpolation=i),
                             {"q": q, "dims": dims, "interpolation": interp, "keepdim": keep})
        for interp in INTERPOLATIONS:
            fam.case(f"quantile/{s}/special/q=0.6/dims=[1]/{interp}", "quantile", [spec],
                     lambda x, i=interp: torch.quantile(x, 0.6, 1, interpolation=i),
                     {"q": 0.6, "dims": [1], "interpolation": interp, "keepdim": False})
            fam.case(f"quantile/{s}/ties[5]/q=0.5/{interp}", "quantile", [vals([1.0, 2, 2, 2, 3], dt)],
                     lambda x, i=interp: torch.quantile(x, 0.5, interpolation=i),
                     {"q": 0.5, "dims": [], "interpolation": interp, "keepdim": False})
    fam.case("median_dim/f32/transposed[3,4]/dim=1", "median_dim", [L(rnd([3, 4], "float32"), "transposed")],
             order_fn("median", 1, False), {"dim": 1, "keepdim": False})
    fam.case("kthvalue/f32/strided[3,4]/k=2/dim=-1", "kthvalue", [L(rnd([3, 4], "float32"), "strided")],
             order_fn("kthvalue", -1, False, 2), {"k": 2, "dim": -1, "keepdim": False})
    fam.case("quantile/f32/transposed[3,4]/q=0.3/dims=[0]", "quantile", [L(rnd([3, 4], "float32"), "transposed")],
             lambda x: torch.quantile(x, 0.3, 0), {"q": 0.3, "dims": [0], "interpolation": "linear", "keepdim": False})
    # Refusals.
    x = rnd([3, 4], "float32")
    fam.case("median/bool/error", "median", [rnd([3], "bool")], torch.median, error="dtype")
    fam.case("median/i64/empty[0]/error", "median", [rnd([0], "int64")], None, error="shape")
    fam.case("median_dim/f32/[2,0]/dim=1/error", "median_dim", [rnd([2, 0], "float32")], lambda x: torch.median(x, 1),
             {"dim": 1, "keepdim": False}, error="index")
    fam.case("median_dim/f32/[3,4]/dim=2/error", "median_dim", [x], lambda x: torch.median(x, 2),
             {"dim": 2, "keepdim": False}, error="index")
    for k in (0, 5):
        fam.case(f"kthvalue/f32/[3,4]/k={k}/error", "kthvalue", [x], lambda x, k=k: torch.kthvalue(x, k, 1),
                 {"k": k, "dim": 1, "keepdim": False}, error="value")
    fam.case("kthvalue/bool/error", "kthvalue", [rnd([3], "bool")], lambda x: torch.kthvalue(x, 1),
             {"k": 1, "dim": 0, "keepdim": False}, error="dtype")
    q = {"q": 0.5, "dims": [], "interpolation": "linear", "keepdim": False}
    for name, inp, attrs, kind in (("i32", rnd([3], "int32"), q, "dtype"),
                                   ("q=1.5", x, dict(q, q=1.5), "value"), ("q=-0.1", x, dict(q, q=-0.1), "value"),
                                   ("q=nan", x, dict(q, q=NAN), "value"),
                                   ("interp=foo", x, dict(q, interpolation="foo"), "value"),
                                   ("empty[2,0]", rnd([2, 0], "float32"), dict(q, dims=[1]), "shape"),
                                   ("dims=[2]", x, dict(q, dims=[2]), "index")):
        fam.case(f"quantile/{name}/error", "quantile", [inp],
                 lambda x, a=attrs: torch.quantile(x, a["q"], a["dims"][0] if a["dims"] else None,
                                                   interpolation=a["interpolation"]), attrs, error=kind)
    fam.case("quantile/f32/dims=[0,1]/error", "quantile", [x], None, dict(q, dims=[0, 1]), error="value")


def grad_group4(fam):
    g = fam.gcase
    for dt in FLOATS:
        s = SHORT[dt]
        from grad import distinct
        g(f"median/{s}/[3,4]", "median", [distinct([3, 4], dt)], torch.median)
        g(f"median/{s}/[2,4]", "median", [distinct([2, 4], dt)], torch.median)
        g(f"median_dim_values/{s}/[3,5]/dim=1", "median_dim_values", [distinct([3, 5], dt)],
          lambda x: torch.median(x, 1)[0], {"dim": 1, "keepdim": False})
        g(f"kthvalue_values/{s}/[3,4]/k=3/dim=1", "kthvalue_values", [distinct([3, 4], dt)],
          lambda x: torch.kthvalue(x, 3, 1, True)[0], {"k": 3, "dim": 1, "keepdim": True})
        for interp in INTERPOLATIONS:
            g(f"quantile/{s}/[3,5]/q=0.3/dims=[1]/{interp}", "quantile", [distinct([3, 5], dt)],
              lambda x, i=interp: torch.quantile(x, 0.3, 1, interpolation=i),
              {"q": 0.3, "dims": [1], "interpolation": interp, "keepdim": False})
    # Ties: the whole median's gradient is spread over the equal elements,
    # the NaNs where it is NaN, as torch's evenly_distribute_backward.
    g("median/f64/ties[3,4]", "median", [vals([[1.0, 2, 2, 3], [2, 0, 5, 2], [4, 4, 1, -1]], "float64")],
      torch.median, nonsmooth=True)
    g("median/f64/nan[5]", "median", [vals([1.0, NAN, 2, NAN, 3], "float64")], torch.median, nonsmooth=True)
    g("median/f64/inf[4]", "median", [vals([INF, INF, INF, 1], "float64")], torch.median, nonsmooth=True)
    g("median/f64/0d", "median", [rnd([], "float64")], torch.median)
    g("median_dim_values/f64/nan[2,4]/dim=1", "median_dim_values", [vals([[1.0, NAN, 2, NAN], [3, 1, 2, 0]], "float64")],
      lambda x: torch.median(x, 1)[0], {"dim": 1, "keepdim": False}, nonsmooth=True)
    g("quantile/f64/nan[2,4]/q=0.4/dims=[1]", "quantile", [vals([[1.0, NAN, 2, 7], [3, 1, 2, 0]], "float64")],
      lambda x: torch.quantile(x, 0.4, 1), {"q": 0.4, "dims": [1], "interpolation": "linear", "keepdim": False},
      nonsmooth=True)
    from grad import distinct
    g("median_dim_values/f64/[3,4]/dim=0/squared", "median_dim_values", [distinct([3, 4], "float64")],
      lambda x: torch.median(x, 0)[0] ** 2, {"dim": 0, "keepdim": False, "square": True}, hvp=True)
    g("quantile/f64/[3,5]/q=0.7/dims=[]/squared", "quantile", [distinct([3, 5], "float64")],
      lambda x: torch.quantile(x, 0.7) ** 2, {"q": 0.7, "dims": [], "interpolation": "linear", "keepdim": False,
                                              "square": True}, hvp=True)


def moreops():
    fam = Family("moreops", 71)
    group1(fam)
    group2(fam)
    group3(fam)
    group4(fam)
    return fam


def grad_moreops():
    fam = GradFamily("grad_moreops", 72)
    grad_group1(fam)
    grad_group2(fam)
    grad_group3(fam)
    grad_group4(fam)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (moreops, grad_moreops):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
