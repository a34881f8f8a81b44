"""Cases for softmax, log_softmax, the losses and layer_norm."""

import torch
import torch.nn.functional as F

from refcase import FLOATS, INF, SHORT, Family, L, idx, rnd, shp, vals


# ---- nn -------------------------------------------------------------------------

LARGE = [[1000.0, -1000.0, 0.0, 999.0], [-1000.0, -1000.0, -1000.0, -1000.0], [0.0, 1.0, 2.0, 3.0]]


def nn():
    fam = Family("nn", 7)
    for op, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
        for dt in FLOATS:
            p = f"{op}/{SHORT[dt]}"
            g = lambda d, fn=fn: (lambda x: fn(x, d))
            for shape, d in (([3, 4], 1), ([3, 4], 0), ([3, 4], -1), ([2, 3, 4], 1), ([], 0), ([1, 5], -1), ([0, 3], 1),
                             ([4, 16], 1)):
                fam.case(f"{p}/{shp(shape)}/dim{d}", op, [rnd(shape, dt, "wide")], g(d), {"dim": d})
            fam.case(f"{p}/large/dim1", op, [vals(LARGE, dt)], g(1), {"dim": 1})
            fam.case(f"{p}/-inf/dim1", op, [vals([[0.0, -INF, 1.0], [-INF, 2.0, -INF]], dt)], g(1), {"dim": 1})
            fam.case(f"{p}/transposed[3,4]/dim1", op, [L(rnd([3, 4], dt), "transposed")], g(1), {"dim": 1})
            fam.case(f"{p}/strided[3,4]/dim0", op, [L(rnd([3, 4], dt), "strided")], g(0), {"dim": 0})
        fam.case(f"{op}/f32/dim2/error", op, [rnd([3, 4], "float32")], lambda x, fn=fn: fn(x, 2), {"dim": 2}, error="index")
        fam.case(f"{op}/i32/error", op, [rnd([3, 4], "int32")], lambda x, fn=fn: fn(x, 1), {"dim": 1}, error="dtype")
    for red in ("mean", "sum", "none"):
        for dt in FLOATS:
            p = f"/{SHORT[dt]}/{red}"
            a = {"reduction": red}
            fam.case(f"cross_entropy{p}/[4,5]", "cross_entropy", [rnd([4, 5], dt, "wide"), idx([0, 4, 2, 2])],
                     lambda x, t, r=red: F.cross_entropy(x, t, reduction=r), a)
            fam.case(f"cross_entropy{p}/large", "cross_entropy", [vals(LARGE, dt), idx([1, 0, 3])],
                     lambda x, t, r=red: F.cross_entropy(x, t, reduction=r), a)
            fam.case(f"nll_loss{p}/[4,5]", "nll_loss", [F.log_softmax(rnd([4, 5], dt, "wide"), 1), idx([1, 1, 3, 0])],
                     lambda x, t, r=red: F.nll_loss(x, t, reduction=r), a)
            fam.case(f"mse_loss{p}/[3,4]", "mse_loss", [rnd([3, 4], dt), rnd([3, 4], dt)],
                     lambda x, t, r=red: F.mse_loss(x, t, reduction=r), a)
        fam.case(f"cross_entropy/f32/{red}/[1,3]", "cross_entropy", [rnd([1, 3], "float32"), idx([2])],
                 lambda x, t, r=red: F.cross_entropy(x, t, reduction=r), {"reduction": red})
        fam.case(f"mse_loss/f32/{red}/0d", "mse_loss", [rnd([], "float32"), rnd([], "float32")],
                 lambda x, t, r=red: F.mse_loss(x, t, reduction=r), {"reduction": red})
    f = lambda shape: rnd(shape, "float32")
    m = {"reduction": "mean"}
    fam.case("cross_entropy/f32/mean/transposed[5,3]", "cross_entropy", [L(f([3, 5]), "transposed"), idx([4, 0, 1])],
             F.cross_entropy, m)
    fam.case("cross_entropy/f32/mean/i32_target", "cross_entropy", [f([3, 4]), idx([3, 0, 1], "int32")],
             lambda x, t: F.cross_entropy(x, t.long()), m)
    fam.case("cross_entropy/f32/out_of_range/error", "cross_entropy", [f([2, 3]), idx([0, 3])], F.cross_entropy, m,
             error="index")
    fam.case("cross_entropy/f32/shape/error", "cross_entropy", [f([2, 3]), idx([0, 1, 2])], F.cross_entropy, m,
             error="shape")
    fam.case("cross_entropy/f32/target_f32/error", "cross_entropy", [f([2, 3]), f([2])], F.cross_entropy, m, error="dtype")
    fam.case("nll_loss/f32/out_of_range/error", "nll_loss", [f([2, 3]), idx([5, 0])], F.nll_loss, m, error="index")
    fam.case("mse_loss/f32xf64", "mse_loss", [f([3]), rnd([3], "float64")], F.mse_loss, m)
    fam.case("mse_loss/f32/mean/strided[2,3]", "mse_loss", [L(f([2, 3]), "strided"), f([2, 3])], F.mse_loss, m)
    for dt in FLOATS:
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        ln = lambda ns, eps: (lambda x, w, b: F.layer_norm(x, ns, w, b, eps))
        fam.case(f"layer_norm/{s}/[3,4]/[4]", "layer_norm", [x([3, 4]), x([4]), x([4])], ln([4], 1e-5),
                 {"normalized_shape": [4], "eps": 1e-5})
        fam.case(f"layer_norm/{s}/[3,4]/[4]/nil", "layer_norm", [x([3, 4]), None, None], ln([4], 1e-5),
                 {"normalized_shape": [4], "eps": 1e-5})
        fam.case(f"layer_norm/{s}/[3,4]/[4]/weight_only", "layer_norm", [x([3, 4]), x([4]), None], ln([4], 1e-5),
                 {"normalized_shape": [4], "eps": 1e-5})
        fam.case(f"layer_norm/{s}/[2,3,4]/[3,4]", "layer_norm", [x([2, 3, 4]), x([3, 4]), x([3, 4])], ln([3, 4], 1e-3),
                 {"normalized_shape": [3, 4], "eps": 1e-3})
        fam.case(f"layer_norm/{s}/constant_rows", "layer_norm", [vals([[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]], dt), None, None],
                 ln([3], 1e-5), {"normalized_shape": [3], "eps": 1e-5})
        fam.case(f"layer_norm/{s}/transposed[4,3]/[3]", "layer_norm", [L(x([4, 3]), "transposed"), x([3]), x([3])],
                 ln([3], 1e-5), {"normalized_shape": [3], "eps": 1e-5})
    fam.case("layer_norm/f32/shape/error", "layer_norm", [f([3, 4]), None, None],
             lambda x, w, b: F.layer_norm(x, [3], w, b), {"normalized_shape": [3], "eps": 1e-5}, error="shape")
    fam.case("layer_norm/f32/weight_shape/error", "layer_norm", [f([3, 4]), f([3]), None],
             lambda x, w, b: F.layer_norm(x, [4], w, b), {"normalized_shape": [4], "eps": 1e-5}, error="shape")
    ignored(fam)
    return fam


def ignored(fam):
    """Class losses with ignored targets: the default -100 mixed in, another
    ignore_index, every target ignored (a mean over nothing is nan), and
    targets of a [N, C, d] input."""
    ce = lambda ii=-100: (lambda x, t, r: F.cross_entropy(x, t, reduction=r, ignore_index=ii))
    nll = lambda ii=-100: (lambda x, t, r: F.nll_loss(x, t, reduction=r, ignore_index=ii))
    for red in ("mean", "sum", "none"):
        for dt in FLOATS:
            p = f"/{SHORT[dt]}/{red}"
            a = {"reduction": red}
            logits = lambda shape, dt=dt: rnd(shape, dt, "wide")
            logp = lambda shape, dt=dt: F.log_softmax(rnd(shape, dt, "wide"), 1)
            for op, make, fn in (("cross_entropy", logits, ce), ("nll_loss", logp, nll)):
                fam.case(f"{op}{p}/ignore-100[6,4]", op, [make([6, 4]), idx([1, -100, 3, -100, 0, 3])],
                         lambda x, t, r=red, fn=fn: fn()(x, t, r), a)
                fam.case(f"{op}{p}/ignore2[6,4]", op, [make([6, 4]), idx([2, 1, 2, 3, 0, 2])],
                         lambda x, t, r=red, fn=fn: fn(2)(x, t, r), dict(a, ignore_index=2))
                fam.case(f"{op}{p}/all_ignored[3,4]", op, [make([3, 4]), idx([-100, -100, -100])],
                         lambda x, t, r=red, fn=fn: fn()(x, t, r), a)
                fam.case(f"{op}{p}/ignore-100[2,3,4]", op, [make([2, 3, 4]), idx([[0, -100, 2, 1], [-100, -100, 1, 0]])],
                         lambda x, t, r=red, fn=fn: fn()(x, t, r), a)
    fam.case("cross_entropy/f32/mean/ignore-100/i32_target", "cross_entropy",
             [rnd([4, 3], "float32", "wide"), idx([2, -100, 0, -100], "int32")],
             lambda x, t: F.cross_entropy(x, t.long()), {"reduction": "mean"})
    # -100 is a class index like any other once ignore_index is another.
    fam.case("cross_entropy/f32/mean/ignore2/-100/error", "cross_entropy",
             [rnd([3, 4], "float32"), idx([1, -100, 2])], lambda x, t: F.cross_entropy(x, t, ignore_index=2),
             {"reduction": "mean", "ignore_index": 2}, error="index")
