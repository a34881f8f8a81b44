"""Cases for pooling: avg, max (with indices), adaptive avg and max, and
max unpooling, over 1, 2 and 3 spatial dims (pool.json), and their
gradients with second-order cases (grad_pool.json).

Attributes are torch's argument names (internal/conformance/ops_pool.go
reads them). Max pooling's gradient cases use inputs with no two values
equal, so no window has a tie and a finite difference is meaningful.
Second-order cases square the pooling (attribute "square"): the pooling is
piecewise linear, so L = sum(pool(x) * w) has a zero Hessian, while
sum(pool(x)^2 * w) has one that runs through the backward ops' own
gradients (avg_pool2d_backward's, max_pool2d_with_indices_backward's, ...).
"""

import torch
import torch.nn.functional as F

from grad import GradFamily, distinct
from refcase import FLOATS, INF, NAN, SHORT, Family, L, idx, rnd, shp, vals

AVG = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}
MAX = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
ADAPTIVE_AVG = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}


def pool_fn(kind, nd, a, indices=False):
    """The torch call of a case's op and attributes."""
    kw = {"kernel_size": a["kernel"], "stride": a.get("stride"), "padding": a.get("padding", 0),
          "ceil_mode": a.get("ceil_mode", False)}
    if kind == "avg":
        kw["count_include_pad"] = a.get("count_include_pad", True)
        if nd > 1:
            kw["divisor_override"] = a.get("divisor")
        f = lambda x: AVG[nd](x, **kw)
    else:
        kw["dilation"] = a.get("dilation", 1)
        f = lambda x: MAX[nd](x, return_indices=indices, **kw)
    if a.get("square"):
        return lambda x: f(x) ** 2
    return f


def adaptive_fn(kind, nd, a):
    size = a["output_size"]
    if isinstance(size, list) and len(size) == 1:
        size = size[0]  # torch takes one int for all dims, not a list of one
    f = (lambda x: ADAPTIVE_AVG[nd](x, size)) if kind == "avg" else (lambda x: F.adaptive_max_pool2d(x, size))
    if a.get("square"):
        return lambda x: f(x) ** 2
    return f


def unpool_fn(a):
    pair = lambda v: v * 2 if isinstance(v, list) and len(v) == 1 else v  # F.max_unpool2d wants two values
    f = lambda x, i: F.max_unpool2d(x, i, pair(a["kernel"]), pair(a.get("stride")), pair(a.get("padding", 0)),
                                    a.get("output_size"))
    if a.get("square"):
        return lambda x, i: f(x, i) ** 2
    return f


def name_of(a):
    return "/".join(f"{k}{shp(v) if isinstance(v, list) else '' if v is True else v}" for k, v in a.items())


# Window plans per number of spatial dims: (input shape, attributes).
AVG_PLANS = {
    1: [([2, 3, 7], {"kernel": [3]}), ([1, 2, 8], {"kernel": [3], "stride": [2], "padding": [1]}),
        ([1, 2, 8], {"kernel": [3], "stride": [2], "padding": [1], "ceil_mode": True, "count_include_pad": False})],
    2: [([2, 3, 6, 6], {"kernel": [2]}), ([1, 2, 7, 5], {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1]}),
        ([1, 2, 7, 5], {"kernel": [3], "stride": [2], "padding": [1], "count_include_pad": False}),
        ([1, 2, 6, 7], {"kernel": [3], "stride": [2], "ceil_mode": True}),
        ([1, 2, 6, 7], {"kernel": [3], "stride": [2], "padding": [1], "ceil_mode": True}),
        ([1, 2, 6, 7], {"kernel": [3], "stride": [2], "padding": [1], "ceil_mode": True, "count_include_pad": False}),
        ([1, 2, 5, 5], {"kernel": [2], "stride": [1], "padding": [1], "divisor": 3}),
        ([2, 5, 5], {"kernel": [2], "stride": [1]})],
    3: [([1, 2, 4, 5, 4], {"kernel": [2]}),
        ([1, 1, 5, 4, 5], {"kernel": [3, 2, 3], "stride": [2, 1, 2], "padding": [1, 0, 1], "ceil_mode": True}),
        ([1, 1, 4, 4, 4], {"kernel": [2], "stride": [1], "padding": [1], "count_include_pad": False})],
}
MAX_PLANS = {
    1: [([2, 3, 7], {"kernel": [3]}), ([1, 2, 9], {"kernel": [3], "stride": [2], "padding": [1], "dilation": [2]}),
        ([1, 2, 8], {"kernel": [2], "stride": [3], "ceil_mode": True})],
    2: [([2, 3, 6, 6], {"kernel": [2]}), ([1, 2, 7, 5], {"kernel": [3], "stride": [2], "padding": [1]}),
        ([1, 2, 7, 7], {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 0], "dilation": [2, 1]}),
        ([1, 2, 6, 7], {"kernel": [3], "stride": [2], "padding": [1], "ceil_mode": True}),
        ([1, 1, 8, 8], {"kernel": [2], "stride": [2], "dilation": [3], "ceil_mode": True}),
        ([2, 5, 5], {"kernel": [3], "stride": [1]})],
    3: [([1, 2, 4, 5, 4], {"kernel": [2]}),
        ([1, 1, 5, 4, 5], {"kernel": [3, 2, 3], "stride": [2, 1, 2], "padding": [1, 0, 1], "ceil_mode": True}),
        ([1, 1, 6, 5, 5], {"kernel": [2], "stride": [1], "dilation": [2, 1, 2], "padding": [1]})],
}
ADAPTIVE_PLANS = {
    1: [([2, 3, 7], [3]), ([1, 2, 5], [5]), ([1, 2, 4], [7])],
    2: [([2, 3, 7, 5], [3, 2]), ([1, 2, 6, 6], [1]), ([1, 2, 5, 7], [4]), ([2, 5, 6], [2, 3])],
    3: [([1, 2, 5, 4, 6], [2, 3, 4]), ([1, 1, 4, 4, 4], [1])],
}


def pool():
    fam = Family("pool", 20)
    for nd in (1, 2, 3):
        for dt in FLOATS:
            s = SHORT[dt]
            for shape, a in AVG_PLANS[nd]:
                fam.case(f"avg_pool{nd}d/{s}/{shp(shape)}/{name_of(a)}", f"avg_pool{nd}d", [rnd(shape, dt)],
                         pool_fn("avg", nd, a), a)
            for shape, a in MAX_PLANS[nd]:
                # Ties (few distinct values) check that the first maximum's index wins.
                x = rnd(shape, dt, "halves" if shape[-1] == 5 else "any")
                if a is MAX_PLANS[nd][0][1]:  # the values alone once; the cases with indices have them too
                    fam.case(f"max_pool{nd}d/{s}/{shp(shape)}/{name_of(a)}", f"max_pool{nd}d", [x],
                             pool_fn("max", nd, a), a)
                fam.case(f"max_pool{nd}d_with_indices/{s}/{shp(shape)}/{name_of(a)}", f"max_pool{nd}d_with_indices",
                         [x], pool_fn("max", nd, a, indices=True), a)
            for shape, size in ADAPTIVE_PLANS[nd]:
                a = {"output_size": size[0] if nd == 1 else size}
                fam.case(f"adaptive_avg_pool{nd}d/{s}/{shp(shape)}/to{shp(size)}", f"adaptive_avg_pool{nd}d",
                         [rnd(shape, dt)], adaptive_fn("avg", nd, {"output_size": size}), a)
        s = "f64"
        fam.case(f"avg_pool{nd}d/f64/transposed", f"avg_pool{nd}d", [L(rnd([1, 2] + [5] * nd, "float64"), "transposed")],
                 pool_fn("avg", nd, {"kernel": [2], "stride": [1]}), {"kernel": [2], "stride": [1]})
    for dt in FLOATS:
        s = SHORT[dt]
        for shape, size in ADAPTIVE_PLANS[2]:
            x = rnd(shape, dt, "halves")
            fam.case(f"adaptive_max_pool2d/{s}/{shp(shape)}/to{shp(size)}", "adaptive_max_pool2d", [x],
                     adaptive_fn("max", 2, {"output_size": size}), {"output_size": size})
            fam.case(f"adaptive_max_pool2d_with_indices/{s}/{shp(shape)}/to{shp(size)}",
                     "adaptive_max_pool2d_with_indices", [x],
                     lambda x, size=size: F.adaptive_max_pool2d(x, size[0] if len(size) == 1 else size, return_indices=True), {"output_size": size})
        # max_unpool2d of a max pooling's values and indices.
        for shape, a in (([1, 2, 6, 6], {"kernel": [2]}), ([2, 1, 7, 5], {"kernel": [3], "stride": [2], "padding": [1]}),
                         ([1, 2, 5, 5], {"kernel": [2], "stride": [2], "output_size": [5, 5]}),
                         ([2, 6, 6], {"kernel": [3], "stride": [3]})):
            pa = {k: v for k, v in a.items() if k != "output_size"}
            v, i = pool_fn("max", 2, pa, indices=True)(rnd(shape, dt))
            fam.case(f"max_unpool2d/{s}/{shp(shape)}/{name_of(a)}", "max_unpool2d", [v, i], unpool_fn(a), a)
    # NaN is a window's maximum; -inf is kept; the padding never wins.
    special = vals([[[[NAN, 1.0, 2.0, -INF], [0.5, -1.0, INF, 3.0], [-INF, -INF, -2.0, -INF], [1.0, NAN, 0.0, 4.0]]]],
                   "float64")
    for a in ({"kernel": [2]}, {"kernel": [3], "stride": [1], "padding": [1]}):
        fam.case(f"max_pool2d_with_indices/f64/specials/{name_of(a)}", "max_pool2d_with_indices", [special],
                 pool_fn("max", 2, a, indices=True), a)
        fam.case(f"avg_pool2d/f64/specials/{name_of(a)}", "avg_pool2d", [special], pool_fn("avg", 2, a), a)
    fam.case("adaptive_max_pool2d_with_indices/f64/specials", "adaptive_max_pool2d_with_indices", [special],
             lambda x: F.adaptive_max_pool2d(x, [3, 2], return_indices=True), {"output_size": [3, 2]})
    errors(fam)
    # Ceil mode counts a window longer than the padded input when it starts
    # inside (torch's pooling_output_shape: the ceiling of a negative room),
    # clipped to the input and, for the average's count, to the right
    # padding; without ceil mode the input is too small.
    for dt in FLOATS:
        s = SHORT[dt]
        for nd, shape, a in LONG_WINDOWS:
            kind = "avg" if a.get("avg") or "count_include_pad" in a or "divisor" in a else "max"
            a = {k: v for k, v in a.items() if k != "avg"}
            op = f"{kind}_pool{nd}d" + ("_with_indices" if kind == "max" else "")
            fam.case(f"{op}/{s}/{shp(shape)}/long/{name_of(a)}", op, [rnd(shape, dt)], pool_fn(kind, nd, a, kind == "max"), a)
    a = {"kernel": [4]}
    fam.case("avg_pool1d/long_without_ceil/error", "avg_pool1d", [rnd([1, 1, 3], "float32")], pool_fn("avg", 1, a), a,
             error="shape")
    # lathe-only: torch's max_pool1d gives an empty result for an output size of 0.
    fam.case("max_pool1d/long_without_ceil/error", "max_pool1d", [rnd([1, 1, 3], "float32")], attrs=a, error="shape")
    return fam


# Windows longer than the padded input, in ceil mode: (dims, input shape,
# attributes; "avg": True marks an average pooling plan).
LONG_WINDOWS = [
    (1, [1, 2, 3], {"kernel": [4], "ceil_mode": True, "avg": True}),
    (1, [1, 2, 3], {"kernel": [4], "ceil_mode": True}),
    (1, [1, 1, 3], {"kernel": [10], "ceil_mode": True, "avg": True}),
    (1, [1, 1, 3], {"kernel": [6], "padding": [1], "ceil_mode": True, "avg": True}),
    (1, [1, 1, 3], {"kernel": [6], "padding": [1], "ceil_mode": True, "count_include_pad": False}),
    (1, [1, 1, 3], {"kernel": [6], "padding": [1], "ceil_mode": True}),
    (1, [1, 2, 3], {"kernel": [2], "dilation": [3], "ceil_mode": True}),
    (2, [1, 2, 2, 3], {"kernel": [3], "ceil_mode": True, "avg": True}),
    (2, [1, 2, 2, 3], {"kernel": [3], "ceil_mode": True}),
    (2, [1, 1, 2, 3], {"kernel": [5, 3], "padding": [2, 1], "ceil_mode": True, "avg": True}),
    (2, [1, 1, 2, 3], {"kernel": [5, 3], "padding": [2, 1], "ceil_mode": True, "count_include_pad": False}),
    (2, [1, 1, 2, 3], {"kernel": [3], "ceil_mode": True, "divisor": 2}),
    (2, [1, 1, 2, 3], {"kernel": [2], "dilation": [2], "ceil_mode": True}),
    (2, [1, 2, 5, 2], {"kernel": [2, 3], "stride": [2, 3], "dilation": [1, 2], "padding": [0, 1], "ceil_mode": True}),
    (3, [1, 1, 2, 2, 2], {"kernel": [3], "ceil_mode": True}),
]


def errors(fam):
    x = rnd([1, 2, 4, 4], "float32")
    e = lambda name, op, inputs, fn, a, kind: fam.case(f"{op}/{name}/error", op, inputs, fn, a, error=kind)
    for kind in ("avg", "max"):
        op = f"{kind}_pool2d"
        for name, a, err in (("padding_over_half", {"kernel": [2], "padding": [2]}, "value"),
                             ("stride0", {"kernel": [2], "stride": [0]}, "value"),
                             ("kernel0", {"kernel": [0]}, "value"),
                             ("kernel_3_values", {"kernel": [2, 2, 2]}, "value"),
                             ("too_small", {"kernel": [5]}, "shape")):
            e(name, op, [x], pool_fn(kind, 2, a), a, err)
        e("rank2", op, [rnd([4, 4], "float32")], pool_fn(kind, 2, {"kernel": [2]}), {"kernel": [2]}, "shape")
        e("rank5", op, [rnd([1, 1, 2, 4, 4], "float32")], pool_fn(kind, 2, {"kernel": [2]}), {"kernel": [2]}, "shape")
    e("divisor0", "avg_pool2d", [x], pool_fn("avg", 2, {"kernel": [2], "divisor": 0}), {"kernel": [2], "divisor": 0},
      "value")
    e("i64", "max_pool2d", [rnd([1, 1, 4, 4], "int64")], pool_fn("max", 2, {"kernel": [2]}), {"kernel": [2]}, "dtype")
    # lathe-only: torch averages integers (truncating), lathe pools floats.
    fam.case("avg_pool2d/i64/error", "avg_pool2d", [rnd([1, 1, 4, 4], "int64")], attrs={"kernel": [2]}, error="dtype")
    # lathe-only: average pooling has no dilation (torch has no such argument).
    fam.case("avg_pool2d/dilation/error", "avg_pool2d", [x], attrs={"kernel": [2], "dilation": [2]}, error="value")
    # lathe-only: a dilated window that reads only padding has no maximum;
    # torch returns -inf with an index outside the input.
    fam.case("max_pool2d/window_in_padding/error", "max_pool2d", [rnd([1, 1, 2, 2], "float32")],
             attrs={"kernel": [2], "dilation": [3], "padding": [1]}, error="value")
    ad = lambda size: (lambda x: F.adaptive_avg_pool2d(x, size))
    e("3_values", "adaptive_avg_pool2d", [x], ad([1, 2, 3]), {"output_size": [1, 2, 3]}, "value")
    e("empty_input", "adaptive_avg_pool2d", [rnd([1, 1, 0, 4], "float32")], ad([2]), {"output_size": [2]}, "shape")
    e("rank2", "adaptive_max_pool2d", [rnd([4, 4], "float32")], lambda x: F.adaptive_max_pool2d(x, 2),
      {"output_size": [2]}, "shape")
    # lathe-only: torch gives an empty result for an output size of 0.
    fam.case("adaptive_avg_pool2d/size0/error", "adaptive_avg_pool2d", [x], attrs={"output_size": [0, 2]}, error="value")
    v, i = F.max_pool2d(x, 2, return_indices=True)
    a = {"kernel": [2]}
    e("output_size_too_large", "max_unpool2d", [v, i], unpool_fn({"kernel": [2], "output_size": [6, 4]}),
      {"kernel": [2], "output_size": [6, 4]}, "value")
    e("index_out_of_range", "max_unpool2d", [v, i + 16], unpool_fn(a), a, "index")
    e("i32_indices", "max_unpool2d", [v, i.int()], unpool_fn(a), a, "dtype")
    e("indices_shape", "max_unpool2d", [v, i[:, :, :1]], unpool_fn(a), a, "shape")


def small(plans):
    """plans with one channel of one batch, for gradient cases (which hold
    five tensors each)."""
    return [([1, 1] + shape[2:], a) for shape, a in plans]


def grad_pool():
    fam = GradFamily("grad_pool", 21)
    g = fam.gcase
    for nd in (1, 2, 3):
        for shape, a in small(AVG_PLANS[nd][:3]):
            g(f"avg_pool{nd}d/f64/{shp(shape)}/{name_of(a)}", f"avg_pool{nd}d", [rnd(shape, "float64")],
              pool_fn("avg", nd, a), a)
            sq = dict(a, square=True)
            g(f"avg_pool{nd}d/f64/{shp(shape)}/{name_of(sq)}", f"avg_pool{nd}d", [rnd(shape, "float64")],
              pool_fn("avg", nd, sq), sq, hvp=True)
        for shape, a in small(MAX_PLANS[nd][:3]):
            g(f"max_pool{nd}d/f64/{shp(shape)}/{name_of(a)}", f"max_pool{nd}d", [distinct(shape, "float64")],
              pool_fn("max", nd, a), a)
            sq = dict(a, square=True)
            g(f"max_pool{nd}d/f64/{shp(shape)}/{name_of(sq)}", f"max_pool{nd}d", [distinct(shape, "float64")],
              pool_fn("max", nd, sq), sq, hvp=True)
        for shape, size in small(ADAPTIVE_PLANS[nd][:2]):
            a = {"output_size": size[0] if nd == 1 else size}
            g(f"adaptive_avg_pool{nd}d/f64/{shp(shape)}/to{shp(size)}", f"adaptive_avg_pool{nd}d",
              [rnd(shape, "float64")], adaptive_fn("avg", nd, {"output_size": size}), a)
            g(f"adaptive_avg_pool{nd}d/f64/{shp(shape)}/to{shp(size)}/square", f"adaptive_avg_pool{nd}d",
              [rnd(shape, "float64")], adaptive_fn("avg", nd, {"output_size": size, "square": True}),
              dict(a, square=True), hvp=True)
    for shape, size in small(ADAPTIVE_PLANS[2][:3]):
        a = {"output_size": size}
        g(f"adaptive_max_pool2d/f64/{shp(shape)}/to{shp(size)}", "adaptive_max_pool2d", [distinct(shape, "float64")],
          adaptive_fn("max", 2, a), a)
        g(f"adaptive_max_pool2d/f64/{shp(shape)}/to{shp(size)}/square", "adaptive_max_pool2d",
          [distinct(shape, "float64")], adaptive_fn("max", 2, dict(a, square=True)), dict(a, square=True), hvp=True)
    for shape, a in (([1, 2, 6, 6], {"kernel": [2]}), ([2, 1, 7, 5], {"kernel": [3], "stride": [3], "padding": [1], "output_size": [7, 5]})):
        _, i = F.max_pool2d(distinct(shape, "float64"), return_indices=True,
                            **{"kernel_size": a["kernel"], "stride": a.get("stride"), "padding": a.get("padding", 0)})
        v = rnd(list(i.shape), "float64")
        g(f"max_unpool2d/f64/{shp(shape)}/{name_of(a)}", "max_unpool2d", [v, i], unpool_fn(a), a)
        sq = dict(a, square=True)
        g(f"max_unpool2d/f64/{shp(shape)}/{name_of(sq)}", "max_unpool2d", [rnd(list(i.shape), "float64"), i],
          unpool_fn(sq), sq, hvp=True)
    # float32: one first- and one second-order case per family.
    f32 = lambda shape: rnd(shape, "float32")
    a = {"kernel": [3], "stride": [2], "padding": [1], "square": True}
    g("avg_pool2d/f32/[1,2,7,5]/square", "avg_pool2d", [f32([1, 2, 7, 5])], pool_fn("avg", 2, a), a, hvp=True)
    g("max_pool2d/f32/[1,2,7,5]/square", "max_pool2d", [distinct([1, 2, 7, 5], "float32")], pool_fn("max", 2, a), a,
      hvp=True)
    a = {"output_size": [3, 2], "square": True}
    g("adaptive_avg_pool2d/f32/[1,2,7,5]/square", "adaptive_avg_pool2d", [f32([1, 2, 7, 5])], adaptive_fn("avg", 2, a),
      a, hvp=True)
    g("adaptive_max_pool2d/f32/[1,2,7,5]/square", "adaptive_max_pool2d", [distinct([1, 2, 7, 5], "float32")],
      adaptive_fn("max", 2, a), a)
    g("avg_pool2d/f64/transposed[1,2,5,6]", "avg_pool2d", [L(rnd([1, 2, 5, 6], "float64"), "transposed")],
      pool_fn("avg", 2, {"kernel": [2], "stride": [1]}), {"kernel": [2], "stride": [1]})
    # Windows longer than the padded input, in ceil mode.
    for a in ({"kernel": [4], "ceil_mode": True}, {"kernel": [6], "padding": [1], "ceil_mode": True}):
        g(f"avg_pool1d/f64/[1,1,3]/long/{name_of(a)}", "avg_pool1d", [rnd([1, 1, 3], "float64")], pool_fn("avg", 1, a), a)
        g(f"max_pool1d/f64/[1,1,3]/long/{name_of(a)}", "max_pool1d", [distinct([1, 1, 3], "float64")],
          pool_fn("max", 1, a), a)
    a = {"kernel": [5, 3], "padding": [2, 1], "ceil_mode": True, "square": True}
    g(f"avg_pool2d/f64/[1,1,2,3]/long/{name_of(a)}", "avg_pool2d", [rnd([1, 1, 2, 3], "float64")], pool_fn("avg", 2, a),
      a, hvp=True)
    a = {"kernel": [3], "ceil_mode": True, "square": True}
    g(f"max_pool2d/f64/[1,1,2,3]/long/{name_of(a)}", "max_pool2d", [distinct([1, 1, 2, 3], "float64")],
      pool_fn("max", 2, a), a, hvp=True)
    return fam
