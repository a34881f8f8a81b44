"""Gradient cases of the reductions, matmul, views and copies, indexing and
the nn composites (grad.py has the format and the elementwise ones)."""

import torch
import torch.nn.functional as F

from grad import GradFamily, distinct, elementwise, off, remainder, trig
from reduce import rattrs, reduce_fn, rname
from refcase import SHORT, L, idx, rnd, shp, vals
from shape import slicer


def red_fn(op, dims, keepdim):
    # lathe's Max()/Min() over everything is torch.max(x)/min(x), which
    # splits the gradient evenly among ties; with dims it is amax/amin, which
    # does the same.
    if dims is None and not keepdim and op in ("max", "min"):
        return {"max": torch.max, "min": torch.min}[op]
    return reduce_fn(op, dims, keepdim)


def reductions(fam):
    plans = [([3, 4], None, False), ([3, 4], [1], False), ([2, 3, 4], [-1], True), ([2, 3, 4], [0, 2], False),
             ([2, 3], [0, 1], True), ([2, 3, 4], [], False)]
    smooth2 = {"sum", "mean", "prod", "logsumexp"}
    for op in ("sum", "mean", "prod", "max", "min", "logsumexp"):
        make = {"prod": lambda s, d: off(rnd(s, d, "unit")), "max": distinct, "min": distinct}.get(op, rnd)
        for shape, dims, kd in plans:
            if dims == [] and op not in ("sum", "mean"):
                continue
            fam.gcase(f"{op}/f64/{rname(dims, kd)}{shp(shape)}", op, [make(shape, "float64")], red_fn(op, dims, kd),
                      rattrs(dims, kd), hvp=op in smooth2 and dims == [1])
        fam.gcase(f"{op}/f64/0d", op, [make([], "float64")], red_fn(op, None, False))
        fam.gcase(f"{op}/f64/transposed[3,4]/dims[0]", op, [L(make([3, 4], "float64"), "transposed")],
                  red_fn(op, [0], False), rattrs([0], False))
        fam.gcase(f"{op}/f32/dims[1][3,4]", op, [make([3, 4], "float32")], red_fn(op, [1], False), rattrs([1], False))
    for op in ("sum", "mean", "logsumexp"):
        fam.gcase(f"{op}/f64/empty[0,3]/dims[1]", op, [rnd([0, 3], "float64")], red_fn(op, [1], False),
                  rattrs([1], False))
    # A zero in a product: its gradient is the product of the others.
    fam.gcase("prod/f64/zero/dims[1]", "prod", [vals([[0.5, 0.0, 2.0], [1.5, -1.0, 0.25]], "float64")],
              red_fn("prod", [1], False), rattrs([1], False))
    ties = [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, -1.0]]
    for op in ("max", "min"):
        fam.gcase(f"{op}/f64/ties/dims[1]", op, [vals(ties, "float64")], red_fn(op, [1], False), rattrs([1], False),
                  nonsmooth=True)
        fam.gcase(f"{op}/f64/ties/all", op, [vals(ties, "float64")], red_fn(op, None, False), nonsmooth=True)
    for op, fn in (("var", torch.var), ("std", torch.std)):
        for shape, dims, kd in (([3, 4], None, False), ([3, 4], [1], False), ([2, 3, 4], [0, 2], True)):
            for u in (True, False):
                f = (lambda x, u=u, fn=fn: fn(x, unbiased=u)) if dims is None else \
                    (lambda x, d=dims, u=u, kd=kd, fn=fn: fn(x, dim=tuple(d), unbiased=u, keepdim=kd))
                fam.gcase(f"{op}/f64/{rname(dims, kd)}/{'unbiased' if u else 'biased'}{shp(shape)}", op,
                          [rnd(shape, "float64")], f, rattrs(dims, kd, unbiased=u), hvp=dims == [1] and u)
        fam.gcase(f"{op}/f32/dims[1]/unbiased[3,4]", op, [rnd([3, 4], "float32")],
                  lambda x, fn=fn: fn(x, dim=1, unbiased=True), rattrs([1], False, unbiased=True))
        fam.gcase(f"{op}/f64/transposed[3,4]/dims[1]", op, [L(rnd([3, 4], "float64"), "transposed")],
                  lambda x, fn=fn: fn(x, dim=1, unbiased=True), rattrs([1], False, unbiased=True))
    cs = lambda d: (lambda x: torch.cumsum(x, d))
    fam.gcase("cumsum/f64/dim[1][3,4]", "cumsum", [rnd([3, 4], "float64")], cs(1), {"dim": 1})
    fam.gcase("cumsum/f64/dim[-2][2,3,4]", "cumsum", [rnd([2, 3, 4], "float64")], cs(-2), {"dim": -2})
    fam.gcase("cumsum/f64/0d/dim[0]", "cumsum", [rnd([], "float64")], cs(0), {"dim": 0})
    fam.gcase("cumsum/f64/strided[3,4]/dim[1]", "cumsum", [L(rnd([3, 4], "float64"), "strided")], cs(1), {"dim": 1})
    fam.gcase("cumsum/f32/dim[0][3,4]", "cumsum", [rnd([3, 4], "float32")], cs(0), {"dim": 0})


def matmul(fam):
    shapes = [([4], [4]), ([3], [3, 5]), ([2, 3], [3]), ([2, 3], [3, 4]), ([2, 2, 3], [2, 3, 4]),
              ([2, 1, 3, 4], [3, 4, 2]), ([2, 3, 4], [4]), ([4], [2, 4, 3]), ([3, 4], [2, 4, 2]),
              ([0, 3], [3, 2]), ([2, 0], [0, 3]), ([1, 1], [1, 1])]
    second = {(2, 3): True, (3,): True, (2, 2, 3): True, (4,): False}
    for a, b in shapes:
        fam.gcase(f"matmul/f64/{shp(a)}x{shp(b)}", "matmul", [rnd(a, "float64"), rnd(b, "float64")], torch.matmul,
                  hvp=second.get(tuple(a), False) and len(b) > 1 and 0 not in a)
    r = lambda s: rnd(s, "float64")
    fam.gcase("matmul/f64/transposed[3,4]x[4,2]", "matmul", [L(r([3, 4]), "transposed"), r([4, 2])], torch.matmul)
    fam.gcase("matmul/f64/[3,4]xtransposed[4,2]", "matmul", [r([3, 4]), L(r([4, 2]), "transposed")], torch.matmul)
    fam.gcase("matmul/f64/strided[2,3]x[3,2]", "matmul", [L(r([2, 3]), "strided"), r([3, 2])], torch.matmul)
    fam.gcase("matmul/f32/[3,4]x[4,2]", "matmul", [rnd([3, 4], "float32"), rnd([4, 2], "float32")], torch.matmul)
    fam.gcase("matmul/f32/[2,2,3]x[3]", "matmul", [rnd([2, 2, 3], "float32"), rnd([3], "float32")], torch.matmul)


def views(fam):
    r = lambda s: rnd(s, "float64")
    g = fam.gcase
    g("reshape/f64/[2,3]to[3,2]", "reshape", [r([2, 3])], lambda x: x.reshape(3, 2), {"shape": [3, 2]})
    g("reshape/f64/transposed[3,4]to[-1]", "reshape", [L(r([3, 4]), "transposed")], lambda x: x.reshape(-1),
      {"shape": [-1]})
    g("reshape/f32/[2,3]to[6]", "reshape", [rnd([2, 3], "float32")], lambda x: x.reshape(6), {"shape": [6]})
    g("permute/f64/[2,3,4]/[2,0,1]", "permute", [r([2, 3, 4])], lambda x: x.permute(2, 0, 1), {"dims": [2, 0, 1]})
    g("transpose/f64/[2,3,4]/0,2", "transpose", [r([2, 3, 4])], lambda x: x.transpose(0, 2), {"d0": 0, "d1": 2})
    g("mt/f64/[2,3,4]", "mt", [r([2, 3, 4])], lambda x: x.mT)
    for dims, out in (([], [3, 2]), ([0], [3, 1, 2])):
        g(f"squeeze/f64/[1,3,1,2]/dims{shp(dims)}", "squeeze", [r([1, 3, 1, 2])], lambda x, o=out: x.reshape(o),
          {"dims": dims})
    g("unsqueeze/f64/[3,4]/dim1", "unsqueeze", [r([3, 4])], lambda x: x.unsqueeze(1), {"dim": 1})
    g("unsqueeze/f64/0d/dim0", "unsqueeze", [r([])], lambda x: x.unsqueeze(0), {"dim": 0})
    for op in ("expand", "broadcast_to"):
        g(f"{op}/f64/[3,1]to[2,3,4]", op, [r([3, 1])], lambda x: x.expand(2, 3, 4), {"shape": [2, 3, 4]})
        g(f"{op}/f64/0dto[2,3]", op, [r([])], lambda x: x.expand(2, 3), {"shape": [2, 3]})
    g("narrow/f64/[4,5]/1,1,3", "narrow", [r([4, 5])], lambda x: x.narrow(1, 1, 3),
      {"dim": 1, "start": 1, "length": 3})
    for d, a, b, st in ((1, 1, 6, 2), (0, 1, 3, 1), (-1, 0, 5, 3)):
        g(f"slice/f64/[4,6]/{d},{a},{b},{st}", "slice", [r([4, 6])], slicer(d, a, b, st),
          {"dim": d, "start": a, "stop": b, "step": st})
    g("slice/f64/strided[2,4]/1,1,4,2", "slice", [L(r([2, 4]), "strided")], slicer(1, 1, 4, 2),
      {"dim": 1, "start": 1, "stop": 4, "step": 2})
    g("flatten/f64/[2,3,4]", "flatten", [r([2, 3, 4])], lambda x: x.flatten())
    g("flatten/f64/0d", "flatten", [r([])], lambda x: x.flatten())
    for shape, dims in (([3, 4], [0, 1]), ([2, 3, 4], [0, 2]), ([3, 4], [-1])):
        g(f"flip/f64/{shp(shape)}/{shp(dims)}", "flip", [r(shape)], lambda x, d=dims: x.flip(d), {"dims": dims})
    cat = lambda d: (lambda *t: torch.cat(t, d))
    stk = lambda d: (lambda *t: torch.stack(t, d))
    g("concat/f64/[2,3]+[2,1]/dim-1", "concat", [r([2, 3]), r([2, 1])], cat(-1), {"dim": -1})
    g("concat/f64/3x/dim1", "concat", [r([2, 1]), r([2, 2]), r([2, 3])], cat(1), {"dim": 1})
    g("concat/f64/empty/dim0", "concat", [r([0, 3]), r([2, 3])], cat(0), {"dim": 0})
    g("concat/f64/transposed/dim0", "concat", [L(r([3, 2]), "transposed"), r([1, 2])], cat(0), {"dim": 0})
    g("concat/f32/[2,3]+[1,3]/dim0", "concat", [rnd([2, 3], "float32"), rnd([1, 3], "float32")], cat(0), {"dim": 0})
    for d in (0, -1):
        g(f"stack/f64/2x[2,3]/dim{d}", "stack", [r([2, 3]), r([2, 3])], stk(d), {"dim": d})
    g("stack/f64/0d/dim0", "stack", [r([]), r([]), r([])], stk(0), {"dim": 0})
    for shape, pads, v in (([2, 3], [1, 2], 0.0), ([2, 3], [1, 1, 2, 0], 1.5), ([2, 3], [-1, 1], 0.0),
                           ([2, 2, 2], [0, 1, 1, 0, 1, 1], -1.0)):
        g(f"pad/f64/{shp(shape)}/{shp(pads)}/{v}", "pad", [r(shape)], lambda x, p=pads, v=v: F.pad(x, p, value=v),
          {"pads": pads, "value": v})
    g("pad/f32/[2,3]/[1,2]/0.0", "pad", [rnd([2, 3], "float32")], lambda x: F.pad(x, [1, 2]),
      {"pads": [1, 2], "value": 0.0})


def indexing(fam):
    g = fam.gcase
    for dt in ("float64", "float32"):
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        g(f"index_select/{s}/[4,3]/dim0/dup", "index_select", [x([4, 3]), idx([2, 0, 2])],
          lambda x, i: torch.index_select(x, 0, i), {"dim": 0})
        g(f"gather/{s}/[3,4]/dim1", "gather", [x([3, 4]), idx([[0, 3], [1, 1], [2, 0]])],
          lambda x, i: torch.gather(x, 1, i), {"dim": 1}, hvp=dt == "float64")
        # Scatter indices are distinct along dim: torch leaves which of two
        # writes to one place wins unspecified.
        g(f"scatter/{s}/[3,5]/dim0", "scatter", [x([3, 5]), idx([[0, 1, 2, 0, 1], [2, 0, 1, 1, 0]]), x([2, 5])],
          lambda x, i, src: torch.scatter(x, 0, i, src), {"dim": 0})
        g(f"scatter_add/{s}/[3,4]/dim0", "scatter_add", [x([3, 4]), idx([[0, 1, 2, 0], [0, 0, 2, 2], [1, 1, 1, 1]]),
                                                           x([3, 4])],
          lambda x, i, src: torch.scatter_add(x, 0, i, src), {"dim": 0})
        g(f"masked_fill/{s}/[3,4]/bcast[1,4]", "masked_fill", [x([3, 4]), rnd([1, 4], "bool")],
          lambda x, m: x.masked_fill(m, 1.0), {"value": 1.0})
        g(f"embedding/{s}/[2,3]x[5,4]", "embedding", [idx([[0, 4, 2], [2, 2, 1]]), x([5, 4])], F.embedding)
    x = lambda shape: rnd(shape, "float64")
    g("index_select/f64/[2,5]/dim-1/i32", "index_select", [x([2, 5]), idx([4, 0, 1, 4], "int32")],
      lambda x, i: torch.index_select(x, -1, i.long()), {"dim": -1})
    g("index_select/f64/transposed[3,4]/dim1", "index_select", [L(x([3, 4]), "transposed"), idx([3, 1])],
      lambda x, i: torch.index_select(x, 1, i), {"dim": 1})
    g("gather/f64/[2,3,2]/dim-2", "gather", [x([2, 3, 2]), idx([[[0, 2], [1, 1], [2, 0], [0, 0]],
                                                                  [[1, 2], [2, 2], [0, 1], [1, 0]]])],
      lambda x, i: torch.gather(x, -2, i), {"dim": -2})
    g("gather/f64/strided[3,4]/dim1", "gather", [L(x([3, 4]), "strided"), idx([[1], [0], [3]])],
      lambda x, i: torch.gather(x, 1, i), {"dim": 1})
    g("scatter/f64/[2,4]/dim1", "scatter", [x([2, 4]), idx([[3, 0], [1, 2]]), x([2, 2])],
      lambda x, i, src: torch.scatter(x, 1, i, src), {"dim": 1})
    g("scatter_add/f64/[2,5]/dim-1", "scatter_add", [x([2, 5]), idx([[4, 4, 0], [1, 1, 1]]), x([2, 3])],
      lambda x, i, src: torch.scatter_add(x, -1, i, src), {"dim": -1})
    g("masked_fill/f64/0d_mask", "masked_fill", [x([2, 3]), vals(True, "bool")], lambda x, m: x.masked_fill(m, 2.5),
      {"value": 2.5})
    g("embedding/f64/[3]x[4,2]/i32", "embedding", [idx([3, 0, 3], "int32"), x([4, 2])],
      lambda i, w: F.embedding(i.long(), w))
    g("embedding/f64/0dx[4,2]", "embedding", [vals(1, "int64"), x([4, 2])], F.embedding)


def nn(fam):
    g = fam.gcase
    for op, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
        for dt in ("float64", "float32"):
            for shape, d in (([3, 4], 1), ([3, 4], 0), ([2, 3, 4], 1), ([], 0)):
                if dt == "float32" and shape != [3, 4]:
                    continue
                g(f"{op}/{SHORT[dt]}/{shp(shape)}/dim{d}", op, [rnd(shape, dt, "wide")], lambda x, d=d, fn=fn: fn(x, d),
                  {"dim": d}, hvp=shape == [3, 4] and d == 1)
        g(f"{op}/f64/transposed[3,4]/dim1", op, [L(rnd([3, 4], "float64"), "transposed")],
          lambda x, fn=fn: fn(x, 1), {"dim": 1})
    for red in ("mean", "sum", "none"):
        for dt in ("float64", "float32"):
            if dt == "float32" and red != "mean":
                continue
            p = f"/{SHORT[dt]}/{red}"
            a = {"reduction": red}
            g(f"cross_entropy{p}/[4,5]", "cross_entropy", [rnd([4, 5], dt, "wide"), idx([0, 4, 2, 2])],
              lambda x, t, r=red: F.cross_entropy(x, t, reduction=r), a, hvp=dt == "float64")
            g(f"nll_loss{p}/[4,5]", "nll_loss", [F.log_softmax(rnd([4, 5], dt, "wide"), 1), idx([1, 1, 3, 0])],
              lambda x, t, r=red: F.nll_loss(x, t, reduction=r), a)
            g(f"mse_loss{p}/[3,4]", "mse_loss", [rnd([3, 4], dt), rnd([3, 4], dt)],
              lambda x, t, r=red: F.mse_loss(x, t, reduction=r), a, hvp=dt == "float64")
    g("cross_entropy/f64/mean/[5]", "cross_entropy", [rnd([5], "float64"), vals(3, "int64")],
      lambda x, t: F.cross_entropy(x, t), {"reduction": "mean"})
    ln = lambda ns, eps: (lambda x, w, b: F.layer_norm(x, ns, w, b, eps))
    for dt in ("float64", "float32"):
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        g(f"layer_norm/{s}/[3,4]/[4]", "layer_norm", [x([3, 4]), x([4]), x([4])], ln([4], 1e-5),
          {"normalized_shape": [4], "eps": 1e-5}, hvp=dt == "float64")
    x = lambda shape: rnd(shape, "float64")
    g("layer_norm/f64/[3,4]/[4]/nil", "layer_norm", [x([3, 4]), None, None], ln([4], 1e-5),
      {"normalized_shape": [4], "eps": 1e-5}, hvp=True)
    g("layer_norm/f64/[3,4]/[4]/weight_only", "layer_norm", [x([3, 4]), x([4]), None], ln([4], 1e-5),
      {"normalized_shape": [4], "eps": 1e-5})
    g("layer_norm/f64/[2,3,4]/[3,4]", "layer_norm", [x([2, 3, 4]), x([3, 4]), x([3, 4])], ln([3, 4], 1e-3),
      {"normalized_shape": [3, 4], "eps": 1e-3})
    g("layer_norm/f64/transposed[4,3]/[3]", "layer_norm", [L(x([4, 3]), "transposed"), x([3]), x([3])], ln([3], 1e-5),
      {"normalized_shape": [3], "eps": 1e-5})
    # Ignored targets get no gradient, and a mean divides by the others.
    for red in ("mean", "sum", "none"):
        g(f"cross_entropy/f64/{red}/ignore-100[5,4]", "cross_entropy", [rnd([5, 4], "float64", "wide"),
          idx([3, -100, 0, -100, 1])], lambda x, t, r=red: F.cross_entropy(x, t, reduction=r), {"reduction": red},
          hvp=red == "mean")
        g(f"nll_loss/f64/{red}/ignore2[5,4]", "nll_loss", [F.log_softmax(rnd([5, 4], "float64", "wide"), 1),
          idx([2, 1, 2, 0, 3])], lambda x, t, r=red: F.nll_loss(x, t, reduction=r, ignore_index=2),
          {"reduction": red, "ignore_index": 2})


def grad():
    fam = GradFamily("grad", 8)
    for part in (elementwise, reductions, matmul, views, indexing, nn, trig, remainder):
        part(fam)
    return fam
