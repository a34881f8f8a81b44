"""Cases of pad's reflect, replicate and circular modes (pad.json) and
their gradients, some of second order (grad_pad.json).

The op key is pad, with torch's argument names as attributes (pads, value,
mode). torch 1.13 pads in these modes only 2-D..5-D inputs, in their last
1..3 dims (circular: every dim but the first two), and reflect and
replicate only floats; lathe pads any dims of any rank and dtype. Cases
beyond torch's limits get torch's values through a reshape that torch does
pad ("via" in the name). Second-order cases square the padded tensor
(attribute "square"), since pad is linear and its own Hessian is zero.
"""

import torch
import torch.nn.functional as F

from grad import GradFamily
from refcase import FLOATS, SHORT, Family, L, rnd, shp

MODES = ("reflect", "replicate", "circular")

# (shape, pads) that torch pads in every mode: circular needs pads for
# every dim but the first two, reflect and replicate allow that too.
COMMON = [([1, 2, 5], [2, 1]), ([2, 1, 4], [-1, 2]), ([2, 3, 4], [3, 3]), ([1, 2, 3, 4], [1, 2, 2, 0]),
          ([2, 1, 3, 4], [-1, 3, 1, -1]), ([1, 1, 2, 3, 4], [1, 1, 1, 2, 0, 1]), ([2, 2, 4], [-2, -1])]
# Reflect and replicate also pad the last dims of a batch of one fewer dim.
UNBATCHED = [([3, 5], [2, 2]), ([2, 3, 4], [1, 2, 2, 1]), ([2, 3, 4, 3], [1, 1, 0, 2, 2, 1])]
# Past torch's limits: lathe's result is torch's on a reshape that torch pads.
VIA = [("reflect", [5], [2, 1], lambda x, p: F.pad(x[None], p, mode="reflect")[0]),
       ("replicate", [2, 3, 4], [1, 1, 1, 2, 0, 1], lambda x, p: F.pad(x[None, None], p, mode="replicate")[0, 0]),
       ("circular", [2, 3, 4], [1, 2], lambda x, p: F.pad(x.reshape(6, 1, 4), p, mode="circular").reshape(2, 3, 7)),
       ("circular", [3, 4], [2, 1, 1, 0], lambda x, p: F.pad(x[None, None], p, mode="circular")[0, 0]),
       ("reflect", [2, 3, 4, 5], [1, 1], lambda x, p: F.pad(x.reshape(24, 5), p, mode="reflect").reshape(2, 3, 4, 7))]


def fn(mode, pads, square=False):
    f = lambda x: F.pad(x, pads, mode=mode)
    return (lambda x: f(x) ** 2) if square else f


def attrs(mode, pads, **more):
    return {"pads": pads, "value": 0.0, "mode": mode, **more}


def pad():
    fam = Family("pad", 31)
    for mode in MODES:
        plans = COMMON + (UNBATCHED if mode != "circular" else [])
        for dt in FLOATS:
            for shape, pads in plans:
                fam.case(f"pad/{mode}/{SHORT[dt]}/{shp(shape)}/{shp(pads)}", "pad", [rnd(shape, dt)], fn(mode, pads),
                         attrs(mode, pads))
        fam.case(f"pad/{mode}/f32/transposed[1,4,3]/[2,1]", "pad", [L(rnd([1, 4, 3], "float32"), "transposed")],
                 fn(mode, [2, 1]), attrs(mode, [2, 1]))
        fam.case(f"pad/{mode}/f32/empty[0,2,3]/[1,2]", "pad", [rnd([0, 2, 3], "float32")], fn(mode, [1, 2]),
                 attrs(mode, [1, 2]))
        # Errors that torch raises too.
        fam.case(f"pad/{mode}/f32/odd/error", "pad", [rnd([1, 2, 3], "float32")], fn(mode, [1]), attrs(mode, [1]),
                 error="value")
        fam.case(f"pad/{mode}/f32/value1/error", "pad", [rnd([1, 2, 3], "float32")],
                 lambda x, m=mode: F.pad(x, [1, 1], mode=m, value=1.0), attrs(mode, [1, 1], value=1.0), error="value")
    fam.case("pad/circular/i32/[1,2,4]/[2,1]", "pad", [rnd([1, 2, 4], "int32")], fn("circular", [2, 1]),
             attrs("circular", [2, 1]))
    for mode, shape, pads, f in VIA:
        fam.case(f"pad/{mode}/f32/{shp(shape)}/{shp(pads)}/via", "pad", [rnd(shape, "float32")],
                 lambda x, p=pads, f=f: f(x, p), attrs(mode, pads))
    # Integer dtypes, which torch 1.13's reflection and replication pads
    # lack: the reference is the same pad of the values as float32.
    for mode in ("reflect", "replicate"):
        fam.case(f"pad/{mode}/i32/[1,2,4]/[2,1]/via", "pad", [rnd([1, 2, 4], "int32")],
                 lambda x, m=mode: F.pad(x.float(), [2, 1], mode=m).int(), attrs(mode, [2, 1]))
    fam.case("pad/reflect/f32/pad=size/error", "pad", [rnd([1, 2, 4], "float32")], fn("reflect", [4, 0]),
             attrs("reflect", [4, 0]), error="shape")
    fam.case("pad/reflect/f32/right=size/error", "pad", [rnd([1, 2, 4], "float32")], fn("reflect", [0, 4]),
             attrs("reflect", [0, 4]), error="shape")
    fam.case("pad/circular/f32/pad>size/error", "pad", [rnd([1, 2, 4], "float32")], fn("circular", [5, 0]),
             attrs("circular", [5, 0]), error="shape")
    fam.case("pad/replicate/f32/empty-dim/error", "pad", [rnd([1, 2, 0], "float32")], fn("replicate", [1, 1]),
             attrs("replicate", [1, 1]), error="shape")
    fam.case("pad/reflect/f32/crop-below-0/error", "pad", [rnd([1, 2, 4], "float32")], fn("reflect", [-3, -2]),
             attrs("reflect", [-3, -2]), error="shape")
    # torch copies from memory it never wrote here (all of the dim cropped,
    # then padded): lathe refuses.
    fam.case("pad/circular/f32/crop-all-then-pad/error", "pad", [rnd([1, 2, 4], "float32")],
             attrs=attrs("circular", [-4, 1]), error="shape")
    fam.case("pad/f32/mode-bogus/error", "pad", [rnd([1, 2, 3], "float32")],
             lambda x: F.pad(x, [1, 1], mode="bogus"), attrs("bogus", [1, 1]), error="value")
    return fam


def grad_pad():
    fam = GradFamily("grad_pad", 32)
    g = fam.gcase
    for mode in MODES:
        for shape, pads in COMMON[:6]:
            g(f"pad/{mode}/f64/{shp(shape)}/{shp(pads)}", "pad", [rnd(shape, "float64")], fn(mode, pads),
              attrs(mode, pads))
        g(f"pad/{mode}/f32/[1,2,5]/[2,1]", "pad", [rnd([1, 2, 5], "float32")], fn(mode, [2, 1]), attrs(mode, [2, 1]))
        g(f"pad/{mode}/f64/transposed[1,4,3]/[2,1]", "pad", [L(rnd([1, 4, 3], "float64"), "transposed")],
          fn(mode, [2, 1]), attrs(mode, [2, 1]))
        for shape, pads in (([1, 2, 5], [2, 1]), ([1, 2, 3, 4], [1, 2, 2, 0])):
            g(f"pad/{mode}/f64/{shp(shape)}/{shp(pads)}/squared", "pad", [rnd(shape, "float64")],
              fn(mode, pads, square=True), attrs(mode, pads, square=True), hvp=True)
    return fam
