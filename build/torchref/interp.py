"""Interpolation cases (torch.nn.functional.interpolate): interp.json, the
forward cases and the errors, and grad_interp.json, the gradient cases.

The attrs are `mode`, one of `size` or `scale_factor` (a list: one value
for every spatial dim, or one per dim), and `align_corners` and
`recompute_scale_factor` when set. Op keys:

- `interpolate`: F.interpolate(x, ...).
- `interpolate_sq`: F.interpolate(x, ...) ** 2, so that the Hessian-vector
  product is not zero and runs through the backward op's own gradient (the
  forward op again).
- `interpolate_vjp`: the gradient of F.interpolate(x, ...) with respect to
  x for the upstream gradient w, as a function of (x, w): the backward op
  itself, whose gradient with respect to w is the forward op.

Nearest with a scale factor follows UpSample.h's nearest_idx: an output
of the input's size copies it, one of twice its size halves the index
(H = 3 with scale 1.25 is a copy, 5 with 2.1 reads 0 0 1 1 2 ...), and
other sizes read floor(j / scale). torch 1.13's cpu applies that rule in
its backward and in its channels-last forward, but its contiguous forward
kernel (and so every 1-d forward) applies floor(j / scale) to those sizes
too, so that its gradient is not the derivative of its output there. lathe
follows nearest_idx in both directions, and the reference of a nearest
forward with a scale factor is torch's channels-last kernel's (a 1-d input
taken as (N, C, L, 1)).
"""

import torch
import torch.nn.functional as F

from grad import GradFamily
from refcase import SHORT, Family, L, rnd, shp

SHAPES = {3: [1, 2, 5], 4: [1, 2, 4, 5], 5: [1, 1, 3, 4, 2]}
MODES = [("nearest", (3, 4, 5)), ("nearest-exact", (3, 4, 5)), ("linear", (3,)), ("bilinear", (4,)),
         ("bicubic", (4,)), ("trilinear", (5,))]
# Output plans per rank: (what, attrs).
PLANS = {
    3: [("size_up", {"size": [8]}), ("size_down", {"size": [3]}), ("size1", {"size": [1]}),
        ("scale2", {"scale_factor": [2.0]}), ("scale1.7", {"scale_factor": [1.7]}),
        ("scale0.6", {"scale_factor": [0.6]}), ("scale1.1", {"scale_factor": [1.1]}),
        ("scale1.7_recompute", {"scale_factor": [1.7], "recompute_scale_factor": True})],
    4: [("size_up", {"size": [7, 9]}), ("size_down", {"size": [3, 2]}), ("size_mixed", {"size": [6, 3]}),
        ("scale2", {"scale_factor": [2.0]}), ("scale[1.5,2.3]", {"scale_factor": [1.5, 2.3]}),
        ("scale0.6", {"scale_factor": [0.6]}),
        ("scale1.7_recompute", {"scale_factor": [1.7], "recompute_scale_factor": True})],
    5: [("size_up", {"size": [4, 5, 3]}), ("size_down", {"size": [2, 3, 1]}),
        ("scale[1.5,0.8,2]", {"scale_factor": [1.5, 0.8, 2.0]}),
        ("scale1.7_recompute", {"scale_factor": [1.7], "recompute_scale_factor": True})],
}
# The subsets for float32 and for the gradient cases.
F32_PLANS = {"size_up", "scale1.7", "scale[1.5,2.3]", "scale[1.5,0.8,2]"}
GRAD_PLANS = {"size_down", "scale1.7", "scale[1.5,2.3]", "scale[1.5,0.8,2]", "size1"}


def interp(attrs):
    """F.interpolate with a case's attrs."""
    def fn(x):
        kw = {"mode": attrs["mode"]}
        if "size" in attrs:
            s = attrs["size"]
            kw["size"] = s[0] if len(s) == 1 else tuple(s)
        if "scale_factor" in attrs:
            s = attrs["scale_factor"]
            kw["scale_factor"] = s[0] if len(s) == 1 else tuple(s)
        if "align_corners" in attrs:
            kw["align_corners"] = attrs["align_corners"]
        if "recompute_scale_factor" in attrs:
            kw["recompute_scale_factor"] = attrs["recompute_scale_factor"]
        if kw["mode"] == "nearest" and "scale_factor" in kw and not kw.get("recompute_scale_factor"):
            return nearest_idx_forward(x, kw)
        return F.interpolate(x, **kw)
    return fn


def nearest_idx_forward(x, kw):
    """F.interpolate(x, **kw) in nearest mode with a scale factor, through
    torch's channels-last kernel, whose indices are nearest_idx's."""
    scale = kw["scale_factor"]
    if x.dim() == 3:
        kw = dict(kw, scale_factor=(scale, 1.0))
        return F.interpolate(x.unsqueeze(-1).contiguous(memory_format=torch.channels_last), **kw).squeeze(-1)
    fmt = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
    return F.interpolate(x.contiguous(memory_format=fmt), **kw)


def variants():
    """(name, rank, attrs) of every mode × align_corners × plan."""
    for mode, ranks in MODES:
        for rank in ranks:
            for ac in (False, True) if not mode.startswith("nearest") else (False,):
                for what, plan in PLANS[rank]:
                    a = dict({"mode": mode}, **plan)
                    if ac:
                        a["align_corners"] = True
                    yield f"{mode}{'/ac' if ac else ''}/{what}", rank, what, a


# Nearest with scale factors whose output is the input's size or twice it,
# in some dims: (input shape, scale factors).
NEAREST_SPECIAL = [([1, 2, 3], [1.25]), ([1, 2, 5], [2.1]), ([1, 2, 3, 4], [1.25]), ([1, 2, 5, 3], [2.1, 1.2]),
                   ([1, 2, 3, 3, 4], [1.25, 2.2, 1.25])]


def interp_cases():
    fam = Family("interp", 21)
    for name, rank, what, a in variants():
        shape = SHAPES[rank]
        for dt in ("float64", "float32"):
            if dt == "float32" and what not in F32_PLANS:
                continue
            fam.case(f"interpolate/{SHORT[dt]}/{name}{shp(shape)}", "interpolate", [rnd(shape, dt)], interp(a), a)
    # A non-contiguous input, and sizes that are not multiples.
    for mode in ("bilinear", "bicubic", "nearest"):
        a = {"mode": mode, "size": [5, 6]}
        fam.case(f"interpolate/f64/{mode}/transposed[1,2,3,4]", "interpolate",
                 [L(rnd([1, 2, 3, 4], "float64"), "transposed")], interp(a), a)
    a = {"mode": "bicubic", "size": [9, 4], "align_corners": True}
    fam.case("interpolate/f64/bicubic/ac/size[9,4][2,1,3,7]", "interpolate", [rnd([2, 1, 3, 7], "float64")], interp(a), a)
    a = {"mode": "nearest", "scale_factor": [3.0]}
    fam.case("interpolate/f32/nearest/scale3[1,1,3,3]", "interpolate", [rnd([1, 1, 3, 3], "float32")], interp(a), a)

    errors = [
        ("bilinear_on_3d", [2, 2, 5], {"mode": "bilinear", "size": [4]}, "shape"),
        ("linear_on_4d", [1, 2, 4, 5], {"mode": "linear", "size": [4, 4]}, "shape"),
        ("trilinear_on_4d", [1, 2, 4, 5], {"mode": "trilinear", "size": [4, 4]}, "shape"),
        ("bicubic_on_5d", [1, 1, 2, 3, 4], {"mode": "bicubic", "size": [4, 4, 4]}, "shape"),
        ("nearest_on_2d", [2, 5], {"mode": "nearest", "size": [4]}, "shape"),
        ("align_corners_nearest", [2, 2, 5], {"mode": "nearest", "size": [4], "align_corners": True}, "value"),
        ("align_corners_nearest-exact", [1, 2, 4, 5], {"mode": "nearest-exact", "size": [4], "align_corners": True},
         "value"),
        ("size_and_scale", [2, 2, 5], {"mode": "linear", "size": [4], "scale_factor": [2.0]}, "value"),
        ("neither", [2, 2, 5], {"mode": "linear"}, "value"),
        ("size_count", [1, 2, 4, 5], {"mode": "bilinear", "size": [4, 4, 4]}, "value"),
        ("scale_count", [1, 2, 4, 5], {"mode": "bilinear", "scale_factor": [2.0, 2.0, 2.0]}, "value"),
        ("size0", [1, 2, 4, 5], {"mode": "bilinear", "size": [0, 3]}, "value"),
        ("size_negative", [2, 2, 5], {"mode": "nearest", "size": [-2]}, "value"),
        ("scale_to_0", [2, 2, 5], {"mode": "linear", "scale_factor": [0.1]}, "value"),
        ("scale_negative", [1, 2, 4, 5], {"mode": "bicubic", "scale_factor": [-2.0]}, "value"),
        ("unknown_mode", [1, 2, 4, 5], {"mode": "cubic", "size": [4, 4]}, "value"),
    ]
    for what, shape, a, kind in errors:
        fam.case(f"interpolate/f64/error/{what}", "interpolate", [rnd(shape, "float64")], interp(a), a, error=kind)
    # lathe interpolates floats only (torch's nearest also takes integers).
    fam.case("interpolate/i64/error/dtype", "interpolate", [rnd([2, 2, 5], "int64")], None,
             {"mode": "nearest", "size": [4]}, error="dtype")
    # Scale factors that give the input's size, or twice it.
    for shape, scale in NEAREST_SPECIAL:
        a = {"mode": "nearest", "scale_factor": scale}
        fam.case(f"interpolate/f64/nearest/scale{shp(scale)}{shp(shape)}", "interpolate", [rnd(shape, "float64")],
                 interp(a), a)
    return fam


def vjp(a):
    """(x, w) -> the gradient of interpolate at x for upstream w."""
    def fn(x, w):
        return torch.autograd.grad(interp(a)(x), x, w, create_graph=True)[0]
    return fn


def grad_interp():
    fam = GradFamily("grad_interp", 22)
    for name, rank, what, a in variants():
        shape = SHAPES[rank]
        if what in GRAD_PLANS:
            fam.gcase(f"interpolate/f64/{name}{shp(shape)}", "interpolate", [rnd(shape, "float64")], interp(a), a,
                      hvp=what == "size_down")
        if what == "size_up" or what == "scale0.6" and rank < 5:
            fam.gcase(f"interpolate_sq/f64/{name}{shp(shape)}", "interpolate_sq", [rnd(shape, "float64")],
                      lambda x, a=a: interp(a)(x) ** 2, a, hvp=True)
        if what == "scale1.7" or (what == "size_down" and rank == 5):
            x = rnd(shape, "float64")
            w = rnd(list(interp(a)(x).shape), "float64")
            fam.gcase(f"interpolate_vjp/f64/{name}{shp(shape)}", "interpolate_vjp", [x, w], vjp(a), a, hvp=True)
    for mode, rank in (("bilinear", 4), ("bicubic", 4), ("nearest", 3), ("trilinear", 5)):
        a = {"mode": mode, "size": PLANS[rank][0][1]["size"]}
        shape = SHAPES[rank]
        fam.gcase(f"interpolate/f32/{mode}/size_up{shp(shape)}", "interpolate", [rnd(shape, "float32")], interp(a), a)
        fam.gcase(f"interpolate_sq/f32/{mode}/size_up{shp(shape)}", "interpolate_sq", [rnd(shape, "float32")],
                  lambda x, a=a: interp(a)(x) ** 2, a, hvp=True)
    a = {"mode": "bicubic", "size": [5, 6], "align_corners": True}
    fam.gcase("interpolate/f64/bicubic/ac/transposed[1,2,3,4]", "interpolate",
              [L(rnd([1, 2, 3, 4], "float64"), "transposed")], interp(a), a)
    for shape, scale in NEAREST_SPECIAL:
        a = {"mode": "nearest", "scale_factor": scale}
        fam.gcase(f"interpolate/f64/nearest/scale{shp(scale)}{shp(shape)}", "interpolate", [rnd(shape, "float64")],
                  interp(a), a)
    return fam
