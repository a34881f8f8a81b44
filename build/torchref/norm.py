"""Cases for batch_norm, group_norm, pixel_shuffle and pixel_unshuffle:
forward ones (norm.json) and gradient ones (grad_norm.json).

batch_norm's running statistics are attributes (`running_mean`,
`running_var`: lists of numbers, absent for none), not inputs: torch treats
them as non-differentiable and updates them in place, so as inputs they
would need gradients the format has no place for. The Go table builds them
in the input's dtype. Op key `batch_norm_stats` runs the same call and
returns the two running statistics after it (the update of a training step).
"""

import torch
import torch.nn.functional as F

from grad import GradFamily
from refcase import DTYPES, INF, NAN, SHORT, Family, L, rnd, shp


def running(c):
    """Seeded running statistics for c channels, as attribute lists."""
    mean = rnd([c], "float64")
    var = rnd([c], "float64", "pos")
    return [float(v) for v in mean], [float(v) for v in var]


def bn_attrs(training, momentum=0.1, eps=1e-5, stats=None):
    a = {"training": training, "momentum": momentum, "eps": eps}
    if stats is not None:
        a["running_mean"], a["running_var"] = stats
    return a


def bn_fn(a, stats_out=False):
    """torch's batch_norm for attributes a; with stats_out, the running
    statistics after the call instead of the output."""
    def f(x, w=None, b=None):
        dt = x.dtype if x.is_floating_point() else torch.float64
        m = torch.tensor(a["running_mean"], dtype=dt) if "running_mean" in a else None
        v = torch.tensor(a["running_var"], dtype=dt) if "running_var" in a else None
        y = F.batch_norm(x, m, v, w, b, a["training"], a["momentum"], a["eps"])
        return (m, v) if stats_out else y
    return f


def gn_fn(groups, eps):
    return lambda x, w=None, b=None: F.group_norm(x, groups, w, b, eps)


def norm():
    fam = Family("norm", 21)
    c = fam.case
    for dt in ("float64", "float32"):
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        for shape in ([4, 3], [2, 3, 4], [2, 3, 2, 3], [2, 3, 2, 1, 2]):
            for training in (True, False):
                a = bn_attrs(training, stats=running(3))
                mode = "train" if training else "eval"
                name = f"{s}/{mode}/{shp(shape)}"
                ins = [x(shape), x([3]), x([3])]
                c(f"batch_norm/{name}", "batch_norm", ins, bn_fn(a), a)
                if training:
                    c(f"batch_norm_stats/{name}", "batch_norm_stats", ins, bn_fn(a, True), a)
        a = bn_attrs(True, 0.3, 1e-3, running(2))
        ins = [x([3, 2, 2, 2]), None, None]
        c(f"batch_norm/{s}/train/nil/momentum0.3", "batch_norm", ins, bn_fn(a), a)
        c(f"batch_norm_stats/{s}/train/nil/momentum0.3", "batch_norm_stats", ins, bn_fn(a, True), a)
    x = lambda shape: rnd(shape, "float64")
    a = bn_attrs(True)
    c("batch_norm/f64/train/no_stats", "batch_norm", [x([2, 3, 2, 2]), x([3]), x([3])], bn_fn(a), a)
    c("batch_norm/f64/train/weight_only", "batch_norm", [x([2, 3, 2]), x([3]), None], bn_fn(a), a)
    c("batch_norm/f64/train/bias_only", "batch_norm", [x([2, 3, 2]), None, x([3])], bn_fn(a), a)
    c("batch_norm/f64/train/transposed[2,3,3,2]", "batch_norm", [L(x([2, 3, 3, 2]), "transposed"), x([3]), x([3])],
      bn_fn(a), a)
    a = bn_attrs(True, 0.0, 1e-5, running(3))
    c("batch_norm_stats/f64/train/momentum0", "batch_norm_stats", [x([2, 3, 2]), None, None], bn_fn(a, True), a)
    a = bn_attrs(True, 1.0, 1e-5, running(3))
    c("batch_norm_stats/f64/train/momentum1", "batch_norm_stats", [x([2, 3, 2]), None, None], bn_fn(a, True), a)
    a = bn_attrs(False, stats=running(3))
    c("batch_norm/f64/eval/nil", "batch_norm", [x([2, 3, 2]), None, None], bn_fn(a), a)
    # Errors: torch refuses each of these too.
    st3 = running(3)
    c("batch_norm/f64/err/rank1", "batch_norm", [x([3]), None, None], bn_fn(bn_attrs(False, stats=st3)),
      bn_attrs(False, stats=st3), error="shape")
    c("batch_norm/f64/err/weight[4]", "batch_norm", [x([2, 3, 2]), x([4]), None],
      bn_fn(bn_attrs(True, stats=st3)), bn_attrs(True, stats=st3), error="shape")
    c("batch_norm/f64/err/bias[1]", "batch_norm", [x([2, 3, 2]), x([3]), x([1])],
      bn_fn(bn_attrs(True)), bn_attrs(True), error="shape")
    st4 = running(4)
    c("batch_norm/f64/err/running_mean[4]", "batch_norm", [x([2, 3, 2]), None, None],
      bn_fn(bn_attrs(False, stats=st4)), bn_attrs(False, stats=st4), error="shape")
    c("batch_norm/f64/err/one_value_per_channel", "batch_norm", [x([1, 3]), None, None],
      bn_fn(bn_attrs(True, stats=st3)), bn_attrs(True, stats=st3), error="shape")
    c("batch_norm/f64/err/eval_without_stats", "batch_norm", [x([2, 3, 2]), None, None],
      bn_fn(bn_attrs(False)), bn_attrs(False), error="value")
    c("batch_norm/i64/err/dtype", "batch_norm", [torch.ones([2, 3], dtype=torch.int64), None, None],
      bn_fn(bn_attrs(True)), bn_attrs(True), error="dtype")

    for dt in ("float64", "float32"):
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        for shape, g in (([2, 6], 3), ([2, 6, 4], 2), ([2, 4, 3, 3], 4), ([2, 4, 3, 3], 1), ([1, 6, 2, 2, 2], 3)):
            c(f"group_norm/{s}/{shp(shape)}/groups{g}", "group_norm", [x(shape), x([shape[1]]), x([shape[1]])],
              gn_fn(g, 1e-5), {"groups": g, "eps": 1e-5})
    x = lambda shape: rnd(shape, "float64")
    c("group_norm/f64/[2,4,3]/groups2/nil", "group_norm", [x([2, 4, 3]), None, None], gn_fn(2, 1e-3),
      {"groups": 2, "eps": 1e-3})
    c("group_norm/f64/[2,4,3]/groups2/weight_only", "group_norm", [x([2, 4, 3]), x([4]), None], gn_fn(2, 1e-5),
      {"groups": 2, "eps": 1e-5})
    c("group_norm/f64/transposed[2,4,2,3]/groups2", "group_norm", [L(x([2, 4, 2, 3]), "transposed"), x([4]), x([4])],
      gn_fn(2, 1e-5), {"groups": 2, "eps": 1e-5})
    # One value per group: zeros, but torch refuses it where that is also
    # the whole batch (N = 1), as for batch norm in training.
    c("group_norm/f64/one_per_group", "group_norm", [x([2, 4, 1]), None, None], gn_fn(4, 1e-5),
      {"groups": 4, "eps": 1e-5})
    c("group_norm/f64/err/one_value", "group_norm", [x([1, 4, 1]), None, None], gn_fn(4, 1e-5),
      {"groups": 4, "eps": 1e-5}, error="shape")
    c("group_norm/f64/err/groups4_of_6", "group_norm", [x([2, 6, 2]), None, None], gn_fn(4, 1e-5),
      {"groups": 4, "eps": 1e-5}, error="shape")
    c("group_norm/f64/err/rank1", "group_norm", [x([6]), None, None], gn_fn(3, 1e-5),
      {"groups": 3, "eps": 1e-5}, error="shape")
    c("group_norm/f64/err/weight[3]", "group_norm", [x([2, 6, 2]), x([3]), None], gn_fn(3, 1e-5),
      {"groups": 3, "eps": 1e-5}, error="shape")
    c("group_norm/f64/err/groups0", "group_norm", [x([2, 6, 2]), None, None], gn_fn(0, 1e-5),
      {"groups": 0, "eps": 1e-5}, error="value")

    for dt in ("float64", "float32"):
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        for shape, r in (([1, 8, 2, 3], 2), ([8, 2, 2], 2), ([2, 3, 9, 2, 2], 3), ([2, 4, 2, 3], 1)):
            c(f"pixel_shuffle/{s}/{shp(shape)}/r{r}", "pixel_shuffle", [x(shape)],
              lambda t, r=r: F.pixel_shuffle(t, r), {"r": r})
        for shape, r in (([1, 2, 4, 6], 2), ([3, 6, 6], 3), ([2, 1, 2, 4, 2], 2)):
            c(f"pixel_unshuffle/{s}/{shp(shape)}/r{r}", "pixel_unshuffle", [x(shape)],
              lambda t, r=r: F.pixel_unshuffle(t, r), {"r": r})
    x = lambda shape: rnd(shape, "float64")
    c("pixel_shuffle/f64/transposed[1,4,3,2]/r2", "pixel_shuffle", [L(x([1, 4, 3, 2]), "transposed")],
      lambda t: F.pixel_shuffle(t, 2), {"r": 2})
    c("pixel_shuffle/i64/[1,4,1,2]/r2", "pixel_shuffle", [torch.arange(8).reshape(1, 4, 1, 2)],
      lambda t: F.pixel_shuffle(t, 2), {"r": 2})
    c("pixel_shuffle/f64/err/channels6_r2", "pixel_shuffle", [x([1, 6, 2, 2])], lambda t: F.pixel_shuffle(t, 2),
      {"r": 2}, error="shape")
    c("pixel_shuffle/f64/err/rank2", "pixel_shuffle", [x([8, 2])], lambda t: F.pixel_shuffle(t, 2),
      {"r": 2}, error="shape")
    c("pixel_shuffle/f64/err/r0", "pixel_shuffle", [x([1, 4, 2, 2])], lambda t: F.pixel_shuffle(t, 0),
      {"r": 0}, error="value")
    c("pixel_unshuffle/f64/err/height3_r2", "pixel_unshuffle", [x([1, 1, 3, 4])], lambda t: F.pixel_unshuffle(t, 2),
      {"r": 2}, error="shape")
    vector_norm(fam)
    return fam


def grad_norm():
    fam = GradFamily("grad_norm", 22)
    g = fam.gcase
    x = lambda shape, dt="float64": rnd(shape, dt)
    for shape, h in (([4, 3], True), ([2, 3, 2, 2], True), ([2, 3, 3], False)):
        a = bn_attrs(True)
        g(f"batch_norm/f64/train/{shp(shape)}", "batch_norm", [x(shape), x([3]), x([3])], bn_fn(a), a, hvp=h)
    a = bn_attrs(True, 0.1, 1e-5, running(3))
    g("batch_norm/f64/train/stats/[2,3,2]", "batch_norm", [x([2, 3, 2]), x([3]), x([3])], bn_fn(a), a)
    a = bn_attrs(True, 0.1, 1e-3)
    g("batch_norm/f64/train/nil/[2,3,2,2]", "batch_norm", [x([2, 3, 2, 2]), None, None], bn_fn(a), a, hvp=True)
    g("batch_norm/f64/train/transposed[2,3,2,3]", "batch_norm", [L(x([2, 3, 2, 3]), "transposed"), x([3]), x([3])],
      bn_fn(a), a)
    a = bn_attrs(False, stats=running(3))
    g("batch_norm/f64/eval/[2,3,2,2]", "batch_norm", [x([2, 3, 2, 2]), x([3]), x([3])], bn_fn(a), a, hvp=True)
    a = bn_attrs(True)
    g("batch_norm/f32/train/[2,3,2,2]", "batch_norm", [x([2, 3, 2, 2], "float32"), x([3], "float32"),
                                                        x([3], "float32")], bn_fn(a), a, hvp=True)

    gn = lambda shape, w=True, dt="float64": [x(shape, dt)] + (
        [x([shape[1]], dt), x([shape[1]], dt)] if w else [None, None])
    for shape, groups, h in (([2, 6, 2], 3, True), ([2, 4, 2, 2], 4, False), ([2, 4, 3], 1, True)):
        g(f"group_norm/f64/{shp(shape)}/groups{groups}", "group_norm", gn(shape), gn_fn(groups, 1e-5),
          {"groups": groups, "eps": 1e-5}, hvp=h)
    g("group_norm/f64/[2,4,3]/groups2/nil", "group_norm", gn([2, 4, 3], False), gn_fn(2, 1e-3),
      {"groups": 2, "eps": 1e-3}, hvp=True)
    g("group_norm/f32/[2,6,2]/groups3", "group_norm", gn([2, 6, 2], dt="float32"), gn_fn(3, 1e-5),
      {"groups": 3, "eps": 1e-5}, hvp=True)

    g("pixel_shuffle/f64/[1,8,2,2]/r2", "pixel_shuffle", [x([1, 8, 2, 2])], lambda t: F.pixel_shuffle(t, 2), {"r": 2},
      hvp=True)
    g("pixel_shuffle/f64/[2,9,1,2]/r3", "pixel_shuffle", [x([2, 9, 1, 2])], lambda t: F.pixel_shuffle(t, 3), {"r": 3})
    g("pixel_shuffle/f32/[1,4,2,3]/r2", "pixel_shuffle", [x([1, 4, 2, 3], "float32")], lambda t: F.pixel_shuffle(t, 2),
      {"r": 2})
    g("pixel_unshuffle/f64/[1,2,4,4]/r2", "pixel_unshuffle", [x([1, 2, 4, 4])], lambda t: F.pixel_unshuffle(t, 2),
      {"r": 2}, hvp=True)
    g("pixel_unshuffle/f64/[2,1,3,6]/r3", "pixel_unshuffle", [x([2, 1, 3, 6])], lambda t: F.pixel_unshuffle(t, 3),
      {"r": 3})
    grad_vector_norm(fam)
    return fam


# ---- vector_norm (appended after the cases above, so that their inputs stay
# as they were) ---------------------------------------------------------------

PS = [("p2", 2.0), ("p1", 1.0), ("inf", INF), ("-inf", -INF), ("p0", 0.0), ("p3", 3.0), ("p0.5", 0.5),
      ("p1.5", 1.5), ("p-1", -1.0)]


def vn_attrs(p, dims=None, keepdim=False):
    a = {"p": float(p), "keepdim": keepdim}
    if dims is not None:
        a["dims"] = list(dims)
    return a


def vn_fn(p, dims=None, keepdim=False):
    return lambda t: torch.linalg.vector_norm(t, p, dims, keepdim)


def vector_norm(fam):
    """torch.linalg.vector_norm's values: each p over all dims, some dims
    (negative ones too), keepdim, zeros, ties, empty tensors, overflow and
    the errors torch raises."""
    c = fam.case
    for dt in ("float64", "float32"):
        s = SHORT[dt]
        for pn, p in PS:
            for shape, dims, keep in (([5], None, False), ([3, 4], [1], False), ([3, 4], [-2], True),
                                      ([2, 3, 4], [0, 2], False), ([2, 3, 4], [-1, 0], True), ([2, 3], None, True)):
                d = "all" if dims is None else ",".join(map(str, dims))
                k = "/keepdim" if keep else ""
                c(f"vector_norm/{s}/{pn}/{shp(shape)}/dims{d}{k}", "vector_norm", [rnd(shape, dt)],
                  vn_fn(p, dims, keep), vn_attrs(p, dims, keep))
        # Zeros: a zero row, and zero elements among others.
        z = rnd([3, 4], dt)
        z[1] = 0
        z[0, 2] = 0
        for pn, p in PS:
            c(f"vector_norm/{s}/{pn}/zeros[3,4]/dims1", "vector_norm", [z.clone()], vn_fn(p, [1]), vn_attrs(p, [1]))
    # torch does not rescale: the squares overflow float32 and the norm is inf.
    c("vector_norm/f32/p2/overflow", "vector_norm", [torch.tensor([1e30, 1e30, 1.0], dtype=torch.float32)],
      vn_fn(2.0), vn_attrs(2.0))
    x = lambda shape: rnd(shape, "float64")
    c("vector_norm/f64/p2/transposed[3,4]/dims0", "vector_norm", [L(x([3, 4]), "transposed")], vn_fn(2.0, [0]),
      vn_attrs(2.0, [0]))
    c("vector_norm/f64/p2/0d", "vector_norm", [torch.tensor(-2.5, dtype=torch.float64)], vn_fn(2.0), vn_attrs(2.0))
    ties = torch.tensor([[3.0, -3.0, 1.0], [-2.0, 2.0, 2.0]], dtype=torch.float64)
    c("vector_norm/f64/inf/ties", "vector_norm", [ties], vn_fn(INF, [1]), vn_attrs(INF, [1]))
    c("vector_norm/f64/nan", "vector_norm", [torch.tensor([1.0, NAN, -2.0], dtype=torch.float64)],
      vn_fn(2.0), vn_attrs(2.0))
    for pn, p in (("p2", 2.0), ("p1", 1.0), ("p0", 0.0), ("p3", 3.0), ("p0.5", 0.5)):
        c(f"vector_norm/f64/{pn}/empty[0]", "vector_norm", [x([0])], vn_fn(p), vn_attrs(p))
        c(f"vector_norm/f64/{pn}/empty[2,0]/dims1", "vector_norm", [x([2, 0])], vn_fn(p, [1]), vn_attrs(p, [1]))
    for pn, p in (("inf", INF), ("-inf", -INF), ("p-1", -1.0)):
        c(f"vector_norm/f64/{pn}/err/empty[0]", "vector_norm", [x([0])], vn_fn(p), vn_attrs(p), error="shape")
        c(f"vector_norm/f64/{pn}/err/empty[0,3]/dims0", "vector_norm", [x([0, 3])], vn_fn(p, [0]),
          vn_attrs(p, [0]), error="shape")
    c("vector_norm/f64/inf/empty[0,3]/dims1", "vector_norm", [x([0, 3])], vn_fn(INF, [1]), vn_attrs(INF, [1]))
    c("vector_norm/i64/err/dtype", "vector_norm", [torch.arange(4)], vn_fn(2.0), vn_attrs(2.0), error="dtype")
    c("vector_norm/f64/err/dim2_of_rank2", "vector_norm", [x([2, 3])], vn_fn(2.0, [2]), vn_attrs(2.0, [2]),
      error="index")


def grad_vector_norm(fam):
    """vector_norm's gradients, against torch's norm_backward: every p, dims
    and keepdim, zero rows and zero elements (masked to 0), ties of the ±Inf
    norms (shared evenly), and Hessian-vector products away from zeros
    where the Hessian is not 0 (torch's is an unallocated zero tensor for
    p = 0, 1 and ±Inf, which the format cannot hold)."""
    g = fam.gcase
    for pn, p in PS:
        smooth = p not in (0.0, 1.0, INF, -INF)
        for shape, dims, keep, h in (([5], None, False, True), ([3, 4], [-1], False, True),
                                     ([2, 3, 4], [0, 2], True, False)):
            d = "all" if dims is None else ",".join(map(str, dims))
            k = "/keepdim" if keep else ""
            g(f"vector_norm/f64/{pn}/{shp(shape)}/dims{d}{k}", "vector_norm", [rnd(shape, "float64")],
              vn_fn(p, dims, keep), vn_attrs(p, dims, keep), hvp=h and smooth)
        z = rnd([3, 4], "float64")
        z[1] = 0
        z[0, 2] = 0
        g(f"vector_norm/f64/{pn}/zeros[3,4]/dims1", "vector_norm", [z], vn_fn(p, [1]), vn_attrs(p, [1]))
        g(f"vector_norm/f32/{pn}/[3,4]/dims1", "vector_norm", [rnd([3, 4], "float32")], vn_fn(p, [1]),
          vn_attrs(p, [1]), hvp=smooth)
    ties = torch.tensor([[3.0, -3.0, 1.0], [-2.0, 2.0, 2.0], [0.5, -4.0, 4.0]], dtype=torch.float64)
    for pn, p in (("inf", INF), ("-inf", -INF)):
        g(f"vector_norm/f64/{pn}/ties/dims1", "vector_norm", [ties.clone()], vn_fn(p, [1]), vn_attrs(p, [1]),
          nonsmooth=True)
        g(f"vector_norm/f64/{pn}/ties/all", "vector_norm", [ties.clone()], vn_fn(p), vn_attrs(p), nonsmooth=True)
    # No Hessian here: torch's is NaN at a zero 2-norm (its double backward
    # divides the masked 0 by the norm), lathe's 0.
    g("vector_norm/f64/p2/zeros[4]", "vector_norm", [torch.zeros(4, dtype=torch.float64)], vn_fn(2.0),
      vn_attrs(2.0))
    g("vector_norm/f64/p2/empty[2,0]/dims1", "vector_norm", [rnd([2, 0], "float64")], vn_fn(2.0, [1]),
      vn_attrs(2.0, [1]))
