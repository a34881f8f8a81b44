"""Cases of convolution (conv1d/2d/3d, conv_transpose2d) and unfold/fold:
forward and error cases in conv.json, gradient cases (with second-order
Hessian-vector products) in grad_conv.json.

Attributes are lists, one value per spatial dim, as the Go table passes
them to lathe's options: stride, padding, dilation, output_padding,
kernel_size, output_size; groups an int; same: true for padding="same".
Inputs of the convolutions are always x, w and b (null for no bias).
"""

import torch
import torch.nn.functional as F

from grad import GradFamily
from refcase import FLOATS, INF, NAN, SHORT, Family, L, rnd, shp, vals

CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def conv_fn(nd, stride=1, padding=0, dilation=1, groups=1, same=False):
    pad = "same" if same else padding
    return lambda x, w, b: CONV[nd](x, w, b, stride, pad, dilation, groups)


def conv_attrs(nd, stride=1, padding=0, dilation=1, groups=1, same=False):
    full = lambda v: list(v) if isinstance(v, (list, tuple)) else [v] * nd
    a = {"stride": full(stride), "dilation": full(dilation), "groups": groups}
    if same:
        a["same"] = True
    else:
        a["padding"] = full(padding)
    return a


TCONV = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def tconv_fn(stride=1, padding=0, output_padding=0, groups=1, dilation=1, nd=2):
    return lambda x, w, b: TCONV[nd](x, w, b, stride, padding, output_padding, groups, dilation)


def tconv_attrs(stride=1, padding=0, output_padding=0, groups=1, dilation=1, nd=2):
    full = lambda v: list(v) if isinstance(v, (list, tuple)) else [v] * nd
    return {"stride": full(stride), "padding": full(padding), "output_padding": full(output_padding),
            "groups": groups, "dilation": full(dilation)}


def unfold_fn(k, stride=1, padding=0, dilation=1):
    return lambda x: F.unfold(x, k, dilation, padding, stride)


def fold_fn(size, k, stride=1, padding=0, dilation=1):
    return lambda x: F.fold(x, size, k, dilation, padding, stride)


def win_attrs(k, stride=1, padding=0, dilation=1, size=None):
    full = lambda v: list(v) if isinstance(v, (list, tuple)) else [v, v]
    a = {"kernel_size": full(k), "stride": full(stride), "padding": full(padding), "dilation": full(dilation)}
    if size is not None:
        a["output_size"] = full(size)
    return a


# (name, nd, x shape, w shape, bias, options): the convolution plans that
# both the forward and the gradient cases run.
PLANS = [
    ("conv1d", 1, [2, 3, 7], [4, 3, 3], True, {}),
    ("conv1d", 1, [1, 2, 9], [3, 2, 2], False, {"stride": 2, "padding": 1, "dilation": 2}),
    ("conv1d", 1, [1, 4, 6], [4, 2, 3], True, {"groups": 2, "same": True}),
    ("conv2d", 2, [2, 3, 5, 5], [4, 3, 3, 3], True, {}),
    ("conv2d", 2, [1, 2, 6, 5], [3, 2, 3, 3], True, {"stride": 2, "padding": 1}),
    ("conv2d", 2, [1, 2, 7, 7], [2, 2, 3, 3], False, {"dilation": 2, "padding": 1}),
    ("conv2d", 2, [1, 4, 4, 4], [6, 2, 3, 3], True, {"groups": 2, "padding": 1}),
    ("conv2d", 2, [2, 3, 4, 4], [6, 1, 3, 3], False, {"groups": 3, "padding": 1}),  # depthwise, multiplier 2
    ("conv2d", 2, [1, 2, 5, 6], [3, 2, 2, 3], True, {"stride": [2, 1], "padding": [1, 0], "dilation": [1, 2]}),
    ("conv2d", 2, [1, 2, 4, 4], [2, 2, 3, 3], False, {"same": True}),
    ("conv2d", 2, [1, 2, 4, 5], [2, 2, 2, 4], True, {"same": True}),  # odd totals: the extra unit on the right
    ("conv2d", 2, [1, 2, 5, 5], [2, 2, 2, 2], False, {"same": True, "dilation": 2}),
    ("conv2d", 2, [2, 3, 3, 4], [5, 3, 1, 1], True, {}),  # pointwise
    ("conv3d", 3, [1, 2, 4, 4, 4], [3, 2, 2, 2, 2], True, {}),
    ("conv3d", 3, [1, 2, 4, 5, 4], [2, 2, 3, 2, 3], False, {"stride": 2, "padding": 1}),
]

TPLANS = [
    ([1, 4, 3, 3], [4, 2, 3, 3], True, {"stride": 2, "padding": 1, "output_padding": 1}),
    ([2, 2, 3, 4], [2, 3, 2, 2], False, {}),
    ([1, 4, 3, 3], [4, 1, 3, 3], True, {"stride": [2, 3], "padding": [0, 1], "output_padding": [1, 2], "groups": 2}),
    ([1, 2, 3, 3], [2, 2, 2, 2], False, {"dilation": 2, "stride": 2, "padding": 1}),
    ([2, 3, 4], [3, 2, 3], True, {"nd": 1, "stride": 2, "padding": 1, "output_padding": 1}),
    ([1, 2, 2, 3, 2], [2, 2, 2, 2, 2], True, {"nd": 3, "stride": [2, 1, 2], "output_padding": [1, 0, 0]}),
]

UPLANS = [
    ([2, 3, 4, 5], [2, 3], {}),
    ([1, 2, 5, 5], [3, 3], {"stride": 2, "padding": 1}),
    ([1, 2, 6, 5], [2, 2], {"dilation": 2, "stride": [1, 2]}),
]


def plan_name(op, x, w, bias, o):
    opts = "".join(f"/{k}{shp(v) if isinstance(v, list) else v}" for k, v in o.items() if k not in ("same", "nd"))
    return f"{shp(x)}x{shp(w)}{'' if bias else '/nobias'}{'/same' if o.get('same') else ''}{opts}"


def fold_input(x, k, o):
    """A column tensor of the size fold takes back to image x's shape."""
    return F.unfold(torch.zeros(x), k, o.get("dilation", 1), o.get("padding", 0), o.get("stride", 1)).shape


def conv():
    fam = Family("conv", 11)
    for dt in FLOATS:
        s = SHORT[dt]
        for op, nd, x, w, bias, o in PLANS:
            fam.case(f"{op}/{s}/{plan_name(op, x, w, bias, o)}", op,
                     [rnd(x, dt), rnd(w, dt), rnd([w[0]], dt) if bias else None], conv_fn(nd, **o), conv_attrs(nd, **o))
        for x, w, bias, o in TPLANS:
            op = f"conv_transpose{len(x) - 2}d"
            fam.case(f"{op}/{s}/{plan_name('', x, w, bias, o)}", op,
                     [rnd(x, dt), rnd(w, dt), rnd([w[1] * o.get("groups", 1)], dt) if bias else None],
                     tconv_fn(**o), tconv_attrs(**o))
        for x, k, o in UPLANS:
            fam.case(f"unfold/{s}/{shp(x)}/k{shp(k)}{plan_name('', [], [], True, o)}", "unfold", [rnd(x, dt)],
                     unfold_fn(k, **o), win_attrs(k, **o))
            cols = list(fold_input(x, k, o))
            fam.case(f"fold/{s}/{shp(cols)}/to{shp(x[2:])}/k{shp(k)}{plan_name('', [], [], True, o)}", "fold",
                     [rnd(cols, dt)], fold_fn(x[2:], k, **o), win_attrs(k, size=x[2:], **o))
    f = lambda shape: rnd(shape, "float32")
    c2 = lambda **o: (conv_fn(2, **o), conv_attrs(2, **o))
    fam.case("conv2d/f32/transposed_x", "conv2d", [L(f([1, 2, 5, 4]), "transposed"), f([3, 2, 3, 3]), f([3])], *c2())
    fam.case("conv2d/f32/strided_w", "conv2d", [f([1, 2, 4, 4]), L(f([3, 2, 3, 3]), "strided"), None], *c2(padding=1))
    # Errors: torch refuses each as well, except where lathe is stricter.
    err = lambda name, kind, inputs, o=None, fn=True: fam.case(
        f"conv2d/f32/{name}/error", "conv2d", inputs, c2(**(o or {}))[0] if fn else None, c2(**(o or {}))[1], error=kind)
    err("channels", "shape", [f([1, 3, 5, 5]), f([2, 2, 3, 3]), None])
    err("groups", "value", [f([1, 3, 5, 5]), f([2, 1, 3, 3]), None], {"groups": 2})
    err("out_groups", "shape", [f([1, 4, 5, 5]), f([3, 2, 3, 3]), None], {"groups": 2})
    err("kernel_too_large", "shape", [f([1, 2, 3, 3]), f([2, 2, 4, 4]), None])
    err("stride0", "value", [f([1, 2, 5, 5]), f([2, 2, 3, 3]), None], {"stride": 0})
    err("negative_padding", "value", [f([1, 2, 5, 5]), f([2, 2, 3, 3]), None], {"padding": -1})
    err("bias_shape", "shape", [f([1, 2, 5, 5]), f([3, 2, 3, 3]), f([2])])
    err("same_strided", "value", [f([1, 2, 5, 5]), f([2, 2, 3, 3]), None], {"same": True, "stride": 2})
    err("f32xf64", "dtype", [f([1, 2, 5, 5]), rnd([2, 2, 3, 3], "float64"), None])
    # torch 1.13 convolves int32 on the cpu; lathe's convolutions are float only.
    err("int", "dtype", [rnd([1, 2, 5, 5], "int32"), rnd([2, 2, 3, 3], "int32"), None], fn=False)
    err("w_rank", "shape", [f([1, 2, 5, 5]), f([2, 2, 3]), None])
    # An unbatched (C, H, W) input, which torch 1.13 takes and lathe did not;
    # its place in the list keeps the random draws of the cases after it.
    fam.case("conv2d/f32/unbatched", "conv2d", [f([2, 5, 5]), f([2, 2, 3, 3]), None], *c2())
    fam.case("conv1d/f32/stride_count/error", "conv1d", [f([1, 2, 5]), f([2, 2, 3]), None],
             attrs={"stride": [1, 1], "padding": [0], "dilation": [1], "groups": 1}, error="value")
    t = tconv_attrs(stride=2, output_padding=2)
    fam.case("conv_transpose2d/f32/output_padding/error", "conv_transpose2d", [f([1, 2, 3, 3]), f([2, 2, 3, 3]), None],
             tconv_fn(stride=2, output_padding=2), t, error="value")
    fam.case("conv_transpose2d/f32/channels/error", "conv_transpose2d", [f([1, 3, 3, 3]), f([2, 2, 3, 3]), None],
             tconv_fn(), tconv_attrs(), error="shape")
    fam.case("unfold/f32/rank/error", "unfold", [f([2, 3, 4])], None, win_attrs([2, 2]), error="shape")
    fam.case("unfold/f32/kernel_too_large/error", "unfold", [f([1, 1, 3, 3])], unfold_fn([4, 4]), win_attrs([4, 4]),
             error="shape")
    fam.case("fold/f32/windows/error", "fold", [f([1, 4, 5])], fold_fn([3, 3], [2, 2]),
             win_attrs([2, 2], size=[3, 3]), error="shape")
    # A tap over the padding multiplies a zero, as torch's im2col does: a
    # NaN or infinite weight makes every output that it touches NaN, the
    # border included.
    for dt in FLOATS:
        s = SHORT[dt]
        w2 = [[[[NAN, 1, 1], [1, -2, 1], [1, 1, INF]]]]
        fam.case(f"conv2d/{s}/special_w/padding1", "conv2d", [rnd([1, 1, 3, 3], dt), vals(w2, dt), None], *c2(padding=1))
        fam.case(f"conv2d/{s}/special_w/padding2/dilation2", "conv2d", [rnd([1, 1, 3, 4], dt), vals(w2, dt), None],
                 *c2(padding=2, dilation=2))
        fam.case(f"conv1d/{s}/special_w/padding2/stride2", "conv1d", [rnd([1, 2, 5], dt), vals([[[1, INF, 1], [NAN, 1, 1]]], dt),
                                                                      None],
                 conv_fn(1, stride=2, padding=2), conv_attrs(1, stride=2, padding=2))
    return fam


def grad_conv():
    fam = GradFamily("grad_conv", 12)
    r = lambda s, dt="float64": rnd(s, dt)
    for i, (op, nd, x, w, bias, o) in enumerate(PLANS):
        fam.gcase(f"{op}/f64/{plan_name(op, x, w, bias, o)}", op, [r(x), r(w), r([w[0]]) if bias else None],
                  conv_fn(nd, **o), conv_attrs(nd, **o), hvp=i % 2 == 0)
    for i, (x, w, bias, o) in enumerate(TPLANS):
        op = f"conv_transpose{len(x) - 2}d"
        fam.gcase(f"{op}/f64/{plan_name('', x, w, bias, o)}", op,
                  [r(x), r(w), r([w[1] * o.get("groups", 1)]) if bias else None], tconv_fn(**o), tconv_attrs(**o),
                  hvp=i % 2 == 0)
    for x, k, o in UPLANS[:2]:
        fam.gcase(f"unfold/f64/{shp(x)}/k{shp(k)}{plan_name('', [], [], True, o)}", "unfold", [r(x)],
                  unfold_fn(k, **o), win_attrs(k, **o), hvp=True)
        cols = list(fold_input(x, k, o))
        fam.gcase(f"fold/f64/{shp(cols)}/to{shp(x[2:])}/k{shp(k)}{plan_name('', [], [], True, o)}", "fold", [r(cols)],
                  fold_fn(x[2:], k, **o), win_attrs(k, size=x[2:], **o), hvp=True)
    f = lambda s: r(s, "float32")
    fam.gcase("conv2d/f32/[1,2,5,5]x[3,2,3,3]/padding1", "conv2d", [f([1, 2, 5, 5]), f([3, 2, 3, 3]), f([3])],
              conv_fn(2, padding=1), conv_attrs(2, padding=1), hvp=True)
    fam.gcase("conv_transpose2d/f32/[1,2,3,3]x[2,3,3,3]/stride2", "conv_transpose2d",
              [f([1, 2, 3, 3]), f([2, 3, 3, 3]), f([3])], tconv_fn(stride=2, output_padding=1),
              tconv_attrs(stride=2, output_padding=1), hvp=True)
    # The weight gradient multiplies the padding's zeros too, as torch's
    # im2col product does: an infinite or NaN upstream value at the border
    # makes NaN every weight whose tap lies over the padding there.
    up = vals([[[[INF, 1, 1], [1, 1, 1], [1, 1, NAN]]]], "float32")
    fam.gcase("conv2d/f32/special_upstream/padding1", "conv2d", [f([1, 1, 3, 3]), f([1, 1, 3, 3]), None],
              conv_fn(2, padding=1), conv_attrs(2, padding=1), upstream=up)
    fam.gcase("conv1d/f32/special_upstream/padding2/stride2", "conv1d", [f([1, 2, 5]), f([2, 2, 3]), f([2])],
              conv_fn(1, stride=2, padding=2), conv_attrs(1, stride=2, padding=2),
              upstream=vals([[[1, 1, NAN, 1], [INF, 1, 1, -INF]]], "float32"))
    return fam
