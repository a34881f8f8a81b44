"""Cases of the losses and distances lathe builds as composites
(losses.json) and their gradients (grad_losses.json):

1. l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy (with a
   weight, an attribute: torch takes no gradient for it) and kl_div
   (batchmean, log_target);
2. cosine_similarity, pairwise_distance and normalize;
3. the margin losses and the likelihood losses: margin_ranking_loss,
   hinge_embedding_loss, soft_margin_loss, multilabel_soft_margin_loss,
   cosine_embedding_loss, triplet_margin_loss, poisson_nll_loss and
   gaussian_nll_loss;
4. multi_margin_loss (class weights as an attribute);
5. cross_entropy against class probabilities (soft labels), label
   smoothing and class weights too.

Run it from the repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/losses.py

(gen.py runs it too, with every other family.) Op keys and attributes are
listed with the Go table, internal/conformance/ops_losses.go.

Where lathe refuses what torch takes (a target of another shape, which
torch broadcasts with a warning), the error case has no torch function.
Gradient cases keep inputs off the kinks (|x - target| = beta, a margin
hinge at 0) and off the ends where lathe's gradient is documented to
differ from torch's (binary_cross_entropy at x = 0 or 1, kl_div at a
target of 0).
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily, off  # noqa: E402
from refcase import FLOATS, INF, NAN, SHORT, Family, L, rnd, shp, vals  # noqa: E402

REDS = ("mean", "sum", "none")


def prob(shape, dt, lo=0.02, hi=0.98):
    """Seeded probabilities in [lo, hi], to three decimals."""
    x = torch.rand(shape, dtype=torch.float64) * (hi - lo) + lo
    return (torch.round(x * 1000) / 1000).to(getattr(torch, dt))


def logprob(shape, dt):
    """Seeded log-probabilities along the last dim."""
    return rnd(shape, "float64").log_softmax(-1).to(getattr(torch, dt))


def pm1(shape, dt="float32"):
    """Seeded labels of ±1."""
    return (torch.randint(0, 2, shape) * 2 - 1).to(getattr(torch, dt))


def with_red(fn, red, **kw):
    return lambda *a: fn(*a, reduction=red, **kw)


# (key, torch function, attributes beyond reduction) of the losses of x
# against a target of x's shape.
PAIR = [
    ("l1_loss", F.l1_loss, {}),
    ("smooth_l1_loss", F.smooth_l1_loss, {}),
    ("smooth_l1_loss", lambda x, t, **kw: F.smooth_l1_loss(x, t, beta=0.5, **kw), {"beta": 0.5}),
    ("smooth_l1_loss", lambda x, t, **kw: F.smooth_l1_loss(x, t, beta=0.0, **kw), {"beta": 0.0}),
    ("huber_loss", F.huber_loss, {}),
    ("huber_loss", lambda x, t, **kw: F.huber_loss(x, t, delta=0.7, **kw), {"delta": 0.7}),
]


def name_of(op, attrs):
    return op + ("/" + ",".join(f"{k}={v}" for k, v in attrs.items()) if attrs else "")


def group1(fam):
    for op, fn, attrs in PAIR:
        n = name_of(op, attrs)
        for dt in FLOATS:
            s = SHORT[dt]
            for red in REDS if dt == "float32" else ("mean",):
                fam.case(f"{n}/{s}/{red}/[3,4]", op, [rnd([3, 4], dt), rnd([3, 4], dt)], with_red(fn, red),
                         dict(attrs, reduction=red))
        sp = vals([0.0, 1.0, -2.0, INF, NAN, 0.3, -0.0, 5.0], "float32")
        tg = vals([0.0, 1.5, INF, 1.0, 2.0, NAN, 0.0, -5.0], "float32")
        fam.case(f"{n}/f32/none/special", op, [sp, tg], with_red(fn, "none"), dict(attrs, reduction="none"))
        if op not in ("l1_loss", "huber_loss"):
            continue  # layouts, dtypes, empty and 0-d inputs: one of each kind of kernel
        fam.case(f"{n}/f32/mean/transposed[3,4]", op, [L(rnd([3, 4], "float32"), "transposed"), rnd([3, 4], "float32")],
                 with_red(fn, "mean"), dict(attrs, reduction="mean"))
        fam.case(f"{n}/f32xf64/mean/[2,3]", op, [rnd([2, 3], "float32"), rnd([2, 3], "float64")], with_red(fn, "mean"),
                 dict(attrs, reduction="mean"))
        for red in REDS if op == "l1_loss" else ("mean",):
            fam.case(f"{n}/f32/{red}/empty[0,3]", op, [rnd([0, 3], "float32"), rnd([0, 3], "float32")],
                     with_red(fn, red), dict(attrs, reduction=red))
        fam.case(f"{n}/f32/mean/0d", op, [rnd([], "float32"), rnd([], "float32")], with_red(fn, "mean"),
                 dict(attrs, reduction="mean"))
        fam.case(f"{n}/i64/mean/error", op, [rnd([3], "int64"), rnd([3], "int64")], with_red(fn, "mean"),
                 dict(attrs, reduction="mean"), error="dtype")
        # torch broadcasts with a warning; lathe refuses, as its mse_loss.
        fam.case(f"{n}/f32/mean/[2,3]x[3]/error", op, [rnd([2, 3], "float32"), rnd([3], "float32")], None,
                 dict(attrs, reduction="mean"), error="shape")
    x = rnd([3], "float32")
    fam.case("smooth_l1_loss/beta=-1.0/error", "smooth_l1_loss", [x, x],
             lambda a, b: F.smooth_l1_loss(a, b, beta=-1.0), {"reduction": "mean", "beta": -1.0}, error="value")
    for d in (0.0, -1.0):
        fam.case(f"huber_loss/delta={d}/error", "huber_loss", [x, x], lambda a, b, d=d: F.huber_loss(a, b, delta=d),
                 {"reduction": "mean", "delta": d}, error="value")

    # binary_cross_entropy: probabilities, the clamped ends, a weight.
    for dt in FLOATS:
        s = SHORT[dt]
        for red in REDS if dt == "float32" else ("mean",):
            fam.case(f"binary_cross_entropy/{s}/{red}/[3,4]", "binary_cross_entropy", [prob([3, 4], dt), prob([3, 4], dt)],
                     with_red(F.binary_cross_entropy, red), {"reduction": red})
            w = [0.5, 2.0, 1.0, 0.0]
            fam.case(f"binary_cross_entropy/{s}/{red}/weight[4]", "binary_cross_entropy",
                     [prob([3, 4], dt), prob([3, 4], dt)],
                     lambda x, t, r=red, w=w: F.binary_cross_entropy(x, t, weight=torch.tensor(w, dtype=x.dtype), reduction=r),
                     {"reduction": red, "weight": w, "weight_shape": [4]})
        ends = vals([0.0, 1.0, 0.0, 1.0, 0.5, 1e-30, 1.0 - 2.0 ** -12], dt)
        fam.case(f"binary_cross_entropy/{s}/none/ends", "binary_cross_entropy",
                 [ends, vals([0.0, 1.0, 1.0, 0.0, 0.25, 1.0, 0.0], dt)], with_red(F.binary_cross_entropy, "none"),
                 {"reduction": "none"})
    fam.case("binary_cross_entropy/f32/mean/weight[3,1]", "binary_cross_entropy", [prob([3, 4], "float32"),
                                                                                   prob([3, 4], "float32")],
             lambda x, t: F.binary_cross_entropy(x, t, weight=torch.tensor([[1.0], [0.5], [3.0]])),
             {"reduction": "mean", "weight": [1.0, 0.5, 3.0], "weight_shape": [3, 1]})
    fam.case("binary_cross_entropy/f32/mean/transposed[3,4]", "binary_cross_entropy",
             [L(prob([3, 4], "float32"), "transposed"), prob([3, 4], "float32")], F.binary_cross_entropy,
             {"reduction": "mean"})
    for red in REDS:
        fam.case(f"binary_cross_entropy/f32/{red}/empty[0]", "binary_cross_entropy", [rnd([0], "float32"),
                                                                                      rnd([0], "float32")],
                 with_red(F.binary_cross_entropy, red), {"reduction": red})
    fam.case("binary_cross_entropy/f32/mean/0d", "binary_cross_entropy", [prob([], "float32"), prob([], "float32")],
             F.binary_cross_entropy, {"reduction": "mean"})
    for v in (1.5, -0.25, NAN):
        fam.case(f"binary_cross_entropy/f32/x={v}/error", "binary_cross_entropy",
                 [vals([0.5, v, 0.25], "float32"), vals([0.5, 0.5, 0.5], "float32")], F.binary_cross_entropy,
                 {"reduction": "mean"}, error="value")
    p3 = prob([3], "float32")
    fam.case("binary_cross_entropy/f32xf64/error", "binary_cross_entropy", [p3, p3.double()], F.binary_cross_entropy,
             {"reduction": "mean"}, error="dtype")
    fam.case("binary_cross_entropy/i64/error", "binary_cross_entropy", [vals([0, 1], "int64"), vals([0, 1], "int64")],
             F.binary_cross_entropy, {"reduction": "mean"}, error="dtype")
    fam.case("binary_cross_entropy/[3]x[1]/error", "binary_cross_entropy", [p3, prob([1], "float32")],
             F.binary_cross_entropy, {"reduction": "mean"}, error="shape")
    fam.case("binary_cross_entropy/weight[2]/error", "binary_cross_entropy", [p3, p3],
             lambda x, t: F.binary_cross_entropy(x, t, weight=torch.ones(2)),
             {"reduction": "mean", "weight": [1.0, 1.0], "weight_shape": [2]}, error="shape")

    # kl_div: log-probabilities against probabilities or log-probabilities.
    for dt in FLOATS:
        s = SHORT[dt]
        for red in REDS + ("batchmean",) if dt == "float32" else ("batchmean",):
            fam.case(f"kl_div/{s}/{red}/[3,4]", "kl_div", [logprob([3, 4], dt), logprob([3, 4], dt).exp()],
                     with_red(F.kl_div, red), {"reduction": red})
            fam.case(f"kl_div/{s}/{red}/log_target[3,4]", "kl_div", [logprob([3, 4], dt), logprob([3, 4], dt)],
                     with_red(F.kl_div, red, log_target=True), {"reduction": red, "log_target": True})
    fam.case("kl_div/f32/none/special", "kl_div", [vals([1.0, 1.0, -INF, 0.5, NAN, -1.0], "float32"),
                                                   vals([0.0, -1.0, 0.5, INF, 0.5, 0.0], "float32")],
             with_red(F.kl_div, "none"), {"reduction": "none"})
    fam.case("kl_div/f32/none/log_target/special", "kl_div", [vals([1.0, 1.0, -INF, 0.5, NAN], "float32"),
                                                              vals([0.0, -INF, 0.5, INF, 0.5], "float32")],
             with_red(F.kl_div, "none", log_target=True), {"reduction": "none", "log_target": True})
    for red in ("mean", "batchmean", "sum"):
        fam.case(f"kl_div/f32/{red}/empty[0,3]", "kl_div", [rnd([0, 3], "float32"), rnd([0, 3], "float32")],
                 with_red(F.kl_div, red), {"reduction": red})
        fam.case(f"kl_div/f32/{red}/0d", "kl_div", [rnd([], "float32"), prob([], "float32")], with_red(F.kl_div, red),
                 {"reduction": red})
    fam.case("kl_div/f32xf64/batchmean/[2,3]", "kl_div", [logprob([2, 3], "float32"), logprob([2, 3], "float64").exp()],
             with_red(F.kl_div, "batchmean"), {"reduction": "batchmean"})
    fam.case("kl_div/i64/error", "kl_div", [vals([1, 2], "int64"), vals([1, 2], "int64")], F.kl_div,
             {"reduction": "mean"}, error="dtype")
    fam.case("kl_div/f32/[2,3]x[3]/error", "kl_div", [rnd([2, 3], "float32"), rnd([3], "float32")], None,
             {"reduction": "mean"}, error="shape")


def grad_group1(fam):
    g = fam.gcase
    for op, fn, attrs in PAIR:
        n = name_of(op, attrs)
        for red in REDS:
            # Off the grid: no |x - target| on a kink (0, beta, delta).
            g(f"{n}/f64/{red}/[3,4]", op, [off(rnd([3, 4], "float64")), rnd([3, 4], "float64")], with_red(fn, red),
              dict(attrs, reduction=red), hvp=red == "sum" and op != "l1_loss")
        g(f"{n}/f32/mean/[3,4]", op, [off(rnd([3, 4], "float32")), rnd([3, 4], "float32")], with_red(fn, "mean"),
          dict(attrs, reduction="mean"))
    for red in REDS:
        g(f"binary_cross_entropy/f64/{red}/[3,4]", "binary_cross_entropy", [prob([3, 4], "float64"),
                                                                            prob([3, 4], "float64")],
          with_red(F.binary_cross_entropy, red), {"reduction": red}, hvp=red != "none")
    w = [0.5, 2.0, 1.0, 0.25]
    g("binary_cross_entropy/f64/mean/weight[4]", "binary_cross_entropy", [prob([3, 4], "float64"),
                                                                          prob([3, 4], "float64")],
      lambda x, t: F.binary_cross_entropy(x, t, weight=torch.tensor(w, dtype=x.dtype)),
      {"reduction": "mean", "weight": w, "weight_shape": [4]}, hvp=True)
    g("binary_cross_entropy/f32/sum/[3,4]", "binary_cross_entropy", [prob([3, 4], "float32"), prob([3, 4], "float32")],
      with_red(F.binary_cross_entropy, "sum"), {"reduction": "sum"})
    for red in REDS + ("batchmean",):
        g(f"kl_div/f64/{red}/[3,4]", "kl_div", [logprob([3, 4], "float64"), logprob([3, 4], "float64").exp()],
          with_red(F.kl_div, red), {"reduction": red}, hvp=red == "batchmean")
        g(f"kl_div/f64/{red}/log_target[3,4]", "kl_div", [logprob([3, 4], "float64"), logprob([3, 4], "float64")],
          with_red(F.kl_div, red, log_target=True), {"reduction": red, "log_target": True}, hvp=red == "mean")
    g("kl_div/f32/batchmean/[3,4]", "kl_div", [logprob([3, 4], "float32"), logprob([3, 4], "float32").exp()],
      with_red(F.kl_div, "batchmean"), {"reduction": "batchmean"})


def cos(dim, eps=1e-8):
    return lambda a, b: F.cosine_similarity(a, b, dim=dim, eps=eps)


def pdist(p, eps=1e-6, keep=False):
    return lambda a, b: F.pairwise_distance(a, b, p=p, eps=eps, keepdim=keep)


def normalize(p, dim, eps=1e-12):
    return lambda x: F.normalize(x, p=p, dim=dim, eps=eps)


def group2(fam):
    for dt in FLOATS:
        s = SHORT[dt]
        for dim in (1, 0, -1) if dt == "float32" else (1,):
            fam.case(f"cosine_similarity/{s}/[3,4]/dim={dim}", "cosine_similarity", [rnd([3, 4], dt), rnd([3, 4], dt)],
                     cos(dim), {"dim": dim, "eps": 1e-8})
        for p in (2.0, 1.0, 3.0, INF, 0.0) if dt == "float32" else (2.0,):
            for keep in (False, True) if dt == "float32" else (False,):
                fam.case(f"pairwise_distance/{s}/[3,4]/p={p}/keep={keep}", "pairwise_distance",
                         [rnd([3, 4], dt), rnd([3, 4], dt)], pdist(p, keep=keep), {"p": p, "eps": 1e-6, "keepdim": keep})
            fam.case(f"normalize/{s}/[3,4]/p={p}/dim=1", "normalize", [rnd([3, 4], dt)], normalize(p, 1),
                     {"p": p, "dim": 1, "eps": 1e-12})
        fam.case(f"normalize/{s}/[2,3,4]/p=2.0/dim=-1", "normalize", [rnd([2, 3, 4], dt)], normalize(2.0, -1),
                 {"p": 2.0, "dim": -1, "eps": 1e-12})
    fam.case("cosine_similarity/f32/bcast[3,4]x[1,4]", "cosine_similarity", [rnd([3, 4], "float32"), rnd([1, 4], "float32")],
             cos(1), {"dim": 1, "eps": 1e-8})
    fam.case("cosine_similarity/f32/[2,3,4]/dim=2", "cosine_similarity", [rnd([2, 3, 4], "float32"),
                                                                          rnd([2, 3, 4], "float32")],
             cos(2), {"dim": 2, "eps": 1e-8})
    tiny = vals([[1e-9, 0.0], [0.0, 0.0], [3.0, 4.0]], "float32")
    fam.case("cosine_similarity/f32/tiny-and-zero/eps=1e-8", "cosine_similarity", [tiny, vals([[1e-9, 0.0], [1.0, 2.0],
                                                                                              [0.0, 0.0]], "float32")],
             cos(1), {"dim": 1, "eps": 1e-8})
    fam.case("cosine_similarity/f32/[3,4]/eps=0.5", "cosine_similarity", [rnd([3, 4], "float32") / 4,
                                                                         rnd([3, 4], "float32")],
             cos(1, 0.5), {"dim": 1, "eps": 0.5})
    fam.case("cosine_similarity/i64xf32/[2,3]", "cosine_similarity", [rnd([2, 3], "int64"), rnd([2, 3], "float32")],
             cos(1), {"dim": 1, "eps": 1e-8})
    fam.case("cosine_similarity/f32xf64/[2,3]", "cosine_similarity", [rnd([2, 3], "float32"), rnd([2, 3], "float64")],
             cos(1), {"dim": 1, "eps": 1e-8})
    fam.case("cosine_similarity/f32/0d", "cosine_similarity", [rnd([], "float32"), rnd([], "float32")], cos(0),
             {"dim": 0, "eps": 1e-8})
    fam.case("cosine_similarity/f32/empty[2,0]", "cosine_similarity", [rnd([2, 0], "float32"), rnd([2, 0], "float32")],
             cos(1), {"dim": 1, "eps": 1e-8})
    fam.case("cosine_similarity/f32/transposed[3,4]", "cosine_similarity",
             [L(rnd([3, 4], "float32"), "transposed"), L(rnd([3, 4], "float32"), "strided")], cos(1),
             {"dim": 1, "eps": 1e-8})
    fam.case("cosine_similarity/i64/error", "cosine_similarity", [rnd([2, 3], "int64"), rnd([2, 3], "int64")], cos(1),
             {"dim": 1, "eps": 1e-8}, error="dtype")
    fam.case("cosine_similarity/f32/dim=2/error", "cosine_similarity", [rnd([2, 3], "float32"), rnd([2, 3], "float32")],
             cos(2), {"dim": 2, "eps": 1e-8}, error="index")
    fam.case("cosine_similarity/f32/[3]x[4]/error", "cosine_similarity", [rnd([3], "float32"), rnd([4], "float32")],
             cos(0), {"dim": 0, "eps": 1e-8}, error="shape")
    fam.case("pairwise_distance/f32/bcast[3,4]x[4]", "pairwise_distance", [rnd([3, 4], "float32"), rnd([4], "float32")],
             pdist(2.0), {"p": 2.0, "eps": 1e-6, "keepdim": False})
    fam.case("pairwise_distance/f32/bcast[4]x[2,4]/keep", "pairwise_distance", [rnd([4], "float32"),
                                                                                rnd([2, 4], "float32")],
             pdist(2.0, keep=True), {"p": 2.0, "eps": 1e-6, "keepdim": True})
    fam.case("pairwise_distance/f32/[4]/p=1.5", "pairwise_distance", [rnd([4], "float32"), rnd([4], "float32")],
             pdist(1.5), {"p": 1.5, "eps": 1e-6, "keepdim": False})
    fam.case("pairwise_distance/f32/[2,4]/p=-1.0", "pairwise_distance", [rnd([2, 4], "float32"), rnd([2, 4], "float32")],
             pdist(-1.0), {"p": -1.0, "eps": 1e-6, "keepdim": False})
    fam.case("pairwise_distance/f32/[2,3]/eps=0.1", "pairwise_distance", [rnd([2, 3], "float32"), rnd([2, 3], "float32")],
             pdist(2.0, eps=0.1), {"p": 2.0, "eps": 0.1, "keepdim": False})
    fam.case("pairwise_distance/f32/0d", "pairwise_distance", [rnd([], "float32"), rnd([], "float32")], pdist(2.0),
             {"p": 2.0, "eps": 1e-6, "keepdim": False})
    fam.case("pairwise_distance/f32/empty[0,3]", "pairwise_distance", [rnd([0, 3], "float32"), rnd([0, 3], "float32")],
             pdist(2.0), {"p": 2.0, "eps": 1e-6, "keepdim": False})
    fam.case("pairwise_distance/f32/empty[2,0]", "pairwise_distance", [rnd([2, 0], "float32"), rnd([2, 0], "float32")],
             pdist(2.0), {"p": 2.0, "eps": 1e-6, "keepdim": False})
    fam.case("pairwise_distance/i64/[2,3]", "pairwise_distance", [rnd([2, 3], "int64"), rnd([2, 3], "int64")],
             pdist(2.0), {"p": 2.0, "eps": 1e-6, "keepdim": False})
    fam.case("pairwise_distance/f32/special", "pairwise_distance", [vals([[INF, 1.0], [NAN, 0.0]], "float32"),
                                                                   vals([[0.0, 1.0], [1.0, 0.0]], "float32")],
             pdist(2.0), {"p": 2.0, "eps": 1e-6, "keepdim": False})
    fam.case("pairwise_distance/f32/transposed[3,4]", "pairwise_distance",
             [L(rnd([3, 4], "float32"), "transposed"), rnd([3, 4], "float32")], pdist(2.0),
             {"p": 2.0, "eps": 1e-6, "keepdim": False})
    fam.case("pairwise_distance/f32/[3]x[4]/error", "pairwise_distance", [rnd([3], "float32"), rnd([4], "float32")],
             pdist(2.0), {"p": 2.0, "eps": 1e-6, "keepdim": False}, error="shape")
    fam.case("normalize/f32/zero-rows", "normalize", [vals([[0.0, 0.0], [3.0, -4.0], [1e-13, 0.0]], "float32")],
             normalize(2.0, 1), {"p": 2.0, "dim": 1, "eps": 1e-12})
    fam.case("normalize/f32/[3,4]/eps=2.0", "normalize", [rnd([3, 4], "float32")], normalize(2.0, 1, 2.0),
             {"p": 2.0, "dim": 1, "eps": 2.0})
    fam.case("normalize/f32/[4]/dim=0", "normalize", [rnd([4], "float32")], normalize(2.0, 0),
             {"p": 2.0, "dim": 0, "eps": 1e-12})
    fam.case("normalize/f32/0d", "normalize", [rnd([], "float32")], normalize(2.0, 0), {"p": 2.0, "dim": 0, "eps": 1e-12})
    fam.case("normalize/f32/empty[0,3]", "normalize", [rnd([0, 3], "float32")], normalize(2.0, 1),
             {"p": 2.0, "dim": 1, "eps": 1e-12})
    fam.case("normalize/f32/transposed[3,4]/dim=0", "normalize", [L(rnd([3, 4], "float32"), "transposed")],
             normalize(2.0, 0), {"p": 2.0, "dim": 0, "eps": 1e-12})
    fam.case("normalize/i64/error", "normalize", [rnd([2, 3], "int64")], normalize(2.0, 1),
             {"p": 2.0, "dim": 1, "eps": 1e-12}, error="dtype")
    fam.case("normalize/f32/dim=2/error", "normalize", [rnd([2, 3], "float32")], normalize(2.0, 2),
             {"p": 2.0, "dim": 2, "eps": 1e-12}, error="index")


def grad_group2(fam):
    g = fam.gcase
    for dim in (1, 0):
        g(f"cosine_similarity/f64/[3,4]/dim={dim}", "cosine_similarity", [rnd([3, 4], "float64"), rnd([3, 4], "float64")],
          cos(dim), {"dim": dim, "eps": 1e-8}, hvp=True)
    g("cosine_similarity/f64/bcast[3,4]x[1,4]", "cosine_similarity", [rnd([3, 4], "float64"), rnd([1, 4], "float64")],
      cos(1), {"dim": 1, "eps": 1e-8})
    g("cosine_similarity/f64/zero-row", "cosine_similarity", [vals([[0.0, 0.0], [1.0, 2.0]], "float64"),
                                                            vals([[1.0, 2.0], [3.0, -1.0]], "float64")],
      cos(1), {"dim": 1, "eps": 1e-8}, nonsmooth=True)
    g("cosine_similarity/f32/[3,4]", "cosine_similarity", [rnd([3, 4], "float32"), rnd([3, 4], "float32")], cos(1),
      {"dim": 1, "eps": 1e-8})
    for p in (2.0, 1.0, 3.0, INF):
        g(f"pairwise_distance/f64/[3,4]/p={p}", "pairwise_distance", [off(rnd([3, 4], "float64")), rnd([3, 4], "float64")],
          pdist(p), {"p": p, "eps": 1e-6, "keepdim": False}, hvp=p in (2.0, 3.0))
        g(f"normalize/f64/[3,4]/p={p}", "normalize", [off(rnd([3, 4], "float64"))], normalize(p, 1),
          {"p": p, "dim": 1, "eps": 1e-12}, hvp=p == 2.0)
    g("pairwise_distance/f64/bcast[3,4]x[4]/keep", "pairwise_distance", [rnd([3, 4], "float64"), rnd([4], "float64")],
      pdist(2.0, keep=True), {"p": 2.0, "eps": 1e-6, "keepdim": True})
    g("normalize/f64/[2,3,4]/dim=0", "normalize", [rnd([2, 3, 4], "float64")], normalize(2.0, 0),
      {"p": 2.0, "dim": 0, "eps": 1e-12})
    g("normalize/f64/[3,4]/eps=2.0", "normalize", [rnd([3, 4], "float64")], normalize(2.0, 1, 2.0),
      {"p": 2.0, "dim": 1, "eps": 2.0}, nonsmooth=True)
    g("normalize/f32/[3,4]", "normalize", [rnd([3, 4], "float32")], normalize(2.0, 1), {"p": 2.0, "dim": 1, "eps": 1e-12})


def reduce_as(loss, red):
    return loss.mean() if red == "mean" else loss.sum() if red == "sum" else loss


def group3(fam):
    for dt in ("float32",):  # float64: the gradient cases
        s = SHORT[dt]
        for red in REDS:
            r = {"reduction": red}
            fam.case(f"margin_ranking_loss/{s}/{red}/[6]", "margin_ranking_loss", [rnd([6], dt), rnd([6], dt), pm1([6], dt)],
                     lambda a, b, y, r=red: F.margin_ranking_loss(a, b, y, reduction=r), r)
            fam.case(f"margin_ranking_loss/{s}/{red}/margin=0.5/[2,3]", "margin_ranking_loss",
                     [rnd([2, 3], dt), rnd([2, 3], dt), pm1([2, 3], dt)],
                     lambda a, b, y, r=red: F.margin_ranking_loss(a, b, y, margin=0.5, reduction=r), dict(r, margin=0.5))
            fam.case(f"hinge_embedding_loss/{s}/{red}/[3,4]", "hinge_embedding_loss", [rnd([3, 4], dt), pm1([3, 4], dt)],
                     lambda x, y, r=red: F.hinge_embedding_loss(x, y, reduction=r), r)
            fam.case(f"hinge_embedding_loss/{s}/{red}/margin=0.3/[3,4]", "hinge_embedding_loss",
                     [rnd([3, 4], dt), pm1([3, 4], dt)],
                     lambda x, y, r=red: F.hinge_embedding_loss(x, y, margin=0.3, reduction=r), dict(r, margin=0.3))
            fam.case(f"soft_margin_loss/{s}/{red}/[3,4]", "soft_margin_loss", [rnd([3, 4], dt, "wide"), pm1([3, 4], dt)],
                     lambda x, y, r=red: F.soft_margin_loss(x, y, reduction=r), r)
            fam.case(f"multilabel_soft_margin_loss/{s}/{red}/[3,4]", "multilabel_soft_margin_loss",
                     [rnd([3, 4], dt, "wide"), (torch.rand(3, 4) < 0.5).to(getattr(torch, dt))],
                     lambda x, y, r=red: F.multilabel_soft_margin_loss(x, y, reduction=r), r)
            w = [0.5, 2.0, 1.0, 0.0]
            fam.case(f"multilabel_soft_margin_loss/{s}/{red}/weight[4]", "multilabel_soft_margin_loss",
                     [rnd([3, 4], dt, "wide"), prob([3, 4], dt)],
                     lambda x, y, r=red: F.multilabel_soft_margin_loss(x, y, weight=torch.tensor(w, dtype=x.dtype),
                                                                       reduction=r),
                     dict(r, weight=w, weight_shape=[4]))
            fam.case(f"cosine_embedding_loss/{s}/{red}/[3,4]", "cosine_embedding_loss",
                     [rnd([3, 4], dt), rnd([3, 4], dt), vals([1, -1, 1], "int64")],
                     lambda a, b, y, r=red: F.cosine_embedding_loss(a, b, y, reduction=r), r)
            fam.case(f"cosine_embedding_loss/{s}/{red}/margin=-0.2/[4,3]", "cosine_embedding_loss",
                     [rnd([4, 3], dt), rnd([4, 3], dt), vals([-1.0, -1, 1, 0], dt)],
                     lambda a, b, y, r=red: F.cosine_embedding_loss(a, b, y, margin=-0.2, reduction=r), dict(r, margin=-0.2))
            fam.case(f"triplet_margin_loss/{s}/{red}/[3,4]", "triplet_margin_loss",
                     [rnd([3, 4], dt), rnd([3, 4], dt), rnd([3, 4], dt)],
                     lambda a, p, n, r=red: F.triplet_margin_loss(a, p, n, reduction=r), r)
            fam.case(f"poisson_nll_loss/{s}/{red}/[3,4]", "poisson_nll_loss", [rnd([3, 4], dt), prob([3, 4], dt) * 4],
                     lambda x, y, r=red: F.poisson_nll_loss(x, y, reduction=r), r)
            fam.case(f"gaussian_nll_loss/{s}/{red}/[3,4]", "gaussian_nll_loss",
                     [rnd([3, 4], dt), rnd([3, 4], dt), prob([3, 4], dt)],
                     lambda x, y, v, r=red: F.gaussian_nll_loss(x, y, v, reduction=r), r)
    f32 = "float32"
    for m, p, eps, swap in ((0.5, 1.0, 1e-6, False), (1.0, 2.0, 1e-6, True), (2.0, 3.0, 0.1, True), (1.0, INF, 1e-6, False)):
        a = {"reduction": "none", "margin": m, "p": p, "eps": eps, "swap": swap}
        fam.case(f"triplet_margin_loss/f32/none/margin={m},p={p},eps={eps},swap={swap}", "triplet_margin_loss",
                 [rnd([4, 3], f32), rnd([4, 3], f32), rnd([4, 3], f32)],
                 lambda x, y, z, m=m, p=p, e=eps, sw=swap: F.triplet_margin_loss(x, y, z, m, p, e, sw, reduction="none"), a)
    fam.case("triplet_margin_loss/f32/mean/[4]", "triplet_margin_loss", [rnd([4], f32), rnd([4], f32), rnd([4], f32)],
             F.triplet_margin_loss, {"reduction": "mean"})
    fam.case("triplet_margin_loss/f32/none/[2,3,4]", "triplet_margin_loss",
             [rnd([2, 3, 4], f32), rnd([2, 3, 4], f32), rnd([2, 3, 4], f32)],
             lambda a, p, n: F.triplet_margin_loss(a, p, n, reduction="none"), {"reduction": "none"})
    fam.case("triplet_margin_loss/f32/[2,3]x[3]/error", "triplet_margin_loss", [rnd([2, 3], f32), rnd([3], f32),
                                                                               rnd([2, 3], f32)],
             F.triplet_margin_loss, {"reduction": "mean"}, error="shape")
    for log_input, full in ((True, True), (False, False), (False, True)):
        a = {"reduction": "none", "log_input": log_input, "full": full}
        y = vals([[0.0, 1.0, 2.0, 3.5], [0.5, 1.5, 10.0, 0.0]], f32)
        x = prob([2, 4], f32) * 3 if not log_input else rnd([2, 4], f32)
        fam.case(f"poisson_nll_loss/f32/none/log_input={log_input},full={full}", "poisson_nll_loss", [x, y],
                 lambda x, y, li=log_input, fu=full: F.poisson_nll_loss(x, y, li, fu, reduction="none"), a)
    fam.case("poisson_nll_loss/f32/none/log_input=False,eps=0.5", "poisson_nll_loss",
             [vals([0.0, 1.0, 2.0], f32), vals([1.0, 2.0, 0.0], f32)],
             lambda x, y: F.poisson_nll_loss(x, y, False, eps=0.5, reduction="none"),
             {"reduction": "none", "log_input": False, "eps": 0.5})
    fam.case("poisson_nll_loss/i64/mean", "poisson_nll_loss", [vals([1, 2], "int64"), vals([1, 3], "int64")],
             F.poisson_nll_loss, {"reduction": "mean"})
    for vs, name in (([3, 4], "full"), ([3], "per-sample"), ([3, 1], "per-sample-1")):
        fam.case(f"gaussian_nll_loss/f32/none/var={name}", "gaussian_nll_loss",
                 [rnd([3, 4], f32), rnd([3, 4], f32), prob(vs, f32)],
                 lambda x, y, v: F.gaussian_nll_loss(x, y, v, reduction="none"), {"reduction": "none"})
    fam.case("gaussian_nll_loss/f32/mean/full,eps=0.1", "gaussian_nll_loss",
             [rnd([3, 4], f32), rnd([3, 4], f32), vals([0.0, 0.05, 2.0], f32)],
             lambda x, y, v: F.gaussian_nll_loss(x, y, v, full=True, eps=0.1), {"reduction": "mean", "full": True, "eps": 0.1})
    fam.case("gaussian_nll_loss/f32/mean/[4]/var=0d", "gaussian_nll_loss", [rnd([4], f32), rnd([4], f32), prob([], f32)],
             F.gaussian_nll_loss, {"reduction": "mean"})
    fam.case("gaussian_nll_loss/f32/var[4]/error", "gaussian_nll_loss", [rnd([3, 4], f32), rnd([3, 4], f32), prob([4], f32)],
             F.gaussian_nll_loss, {"reduction": "mean"}, error="shape")
    fam.case("gaussian_nll_loss/f32/var<0/error", "gaussian_nll_loss",
             [rnd([3], f32), rnd([3], f32), vals([1.0, -0.5, 1.0], f32)], F.gaussian_nll_loss, {"reduction": "mean"},
             error="value")
    # Edges: empty (mean NaN), 0-d, special values, labels other than ±1.
    for op, ins, fn in (
            ("margin_ranking_loss", [rnd([0], f32), rnd([0], f32), rnd([0], f32)], F.margin_ranking_loss),
            ("hinge_embedding_loss", [rnd([0, 2], f32), rnd([0, 2], f32)], F.hinge_embedding_loss),
            ("soft_margin_loss", [rnd([0], f32), rnd([0], f32)], F.soft_margin_loss),
            ("multilabel_soft_margin_loss", [rnd([0, 3], f32), rnd([0, 3], f32)], F.multilabel_soft_margin_loss),
            ("multilabel_soft_margin_loss", [rnd([2, 0], f32), rnd([2, 0], f32)], F.multilabel_soft_margin_loss),
            ("cosine_embedding_loss", [rnd([0, 3], f32), rnd([0, 3], f32), rnd([0], f32)], F.cosine_embedding_loss),
            ("triplet_margin_loss", [rnd([0, 3], f32), rnd([0, 3], f32), rnd([0, 3], f32)], F.triplet_margin_loss),
            ("poisson_nll_loss", [rnd([0], f32), rnd([0], f32)], F.poisson_nll_loss),
            ("gaussian_nll_loss", [rnd([0, 2], f32), rnd([0, 2], f32), rnd([0, 2], f32)], F.gaussian_nll_loss)):
        fam.case(f"{op}/f32/mean/empty{shp(list(ins[0].shape))}", op, ins, fn, {"reduction": "mean"})
    fam.case("hinge_embedding_loss/f32/none/labels", "hinge_embedding_loss",
             [vals([0.5, 2.0, -1.0, 0.3, INF, NAN], f32), vals([0.0, 2.0, -1.0, 1.0, -1.0, 1.0], f32)],
             with_red(F.hinge_embedding_loss, "none"), {"reduction": "none"})
    fam.case("hinge_embedding_loss/f32xi64/none", "hinge_embedding_loss", [rnd([4], f32), vals([1, -1, -1, 1], "int64")],
             with_red(F.hinge_embedding_loss, "none"), {"reduction": "none"})
    fam.case("soft_margin_loss/f32/none/special", "soft_margin_loss",
             [vals([0.0, 30.0, -30.0, INF, NAN, 80.0], f32), vals([1.0, 1.0, 1.0, -1.0, 1.0, 1.0], f32)],
             with_red(F.soft_margin_loss, "none"), {"reduction": "none"})
    fam.case("multilabel_soft_margin_loss/f32/none/[4]", "multilabel_soft_margin_loss",
             [rnd([4], f32), vals([1.0, 0.0, 1.0, 0.0], f32)], with_red(F.multilabel_soft_margin_loss, "none"),
             {"reduction": "none"})
    fam.case("multilabel_soft_margin_loss/f32/none/[2,3,4]", "multilabel_soft_margin_loss",
             [rnd([2, 3, 4], f32), prob([2, 3, 4], f32)], with_red(F.multilabel_soft_margin_loss, "none"),
             {"reduction": "none"})
    fam.case("multilabel_soft_margin_loss/f32xi64/mean", "multilabel_soft_margin_loss",
             [rnd([2, 3], f32), vals([[1, 0, 1], [0, 0, 1]], "int64")], F.multilabel_soft_margin_loss, {"reduction": "mean"})
    fam.case("cosine_embedding_loss/f32/none/[4]", "cosine_embedding_loss",
             [rnd([4], f32), rnd([4], f32), vals(-1.0, f32)], with_red(F.cosine_embedding_loss, "none"),
             {"reduction": "none"})
    fam.case("cosine_embedding_loss/f32/none/zero-rows", "cosine_embedding_loss",
             [vals([[0.0, 0.0], [1.0, 2.0]], f32), vals([[1.0, 1.0], [0.0, 0.0]], f32), vals([1.0, -1.0], f32)],
             with_red(F.cosine_embedding_loss, "none"), {"reduction": "none"})
    fam.case("cosine_embedding_loss/f32/[3,4]x[2]/error", "cosine_embedding_loss",
             [rnd([3, 4], f32), rnd([3, 4], f32), rnd([2], f32)], F.cosine_embedding_loss, {"reduction": "mean"},
             error="shape")
    fam.case("cosine_embedding_loss/f32/[4]x[1]/error", "cosine_embedding_loss",
             [rnd([4], f32), rnd([4], f32), rnd([1], f32)], F.cosine_embedding_loss, {"reduction": "mean"}, error="shape")
    fam.case("cosine_embedding_loss/f32/[2,3,4]/error", "cosine_embedding_loss",
             [rnd([2, 3, 4], f32), rnd([2, 3, 4], f32), rnd([2], f32)], F.cosine_embedding_loss, {"reduction": "mean"},
             error="shape")
    fam.case("margin_ranking_loss/i64/mean", "margin_ranking_loss",
             [vals([1, 2, 3], "int64"), vals([2, 1, 3], "int64"), vals([1, -1, 1], "int64")], F.margin_ranking_loss,
             {"reduction": "mean"})
    fam.case("margin_ranking_loss/f32/[3]x[4]/error", "margin_ranking_loss",
             [rnd([3], f32), rnd([4], f32), rnd([3], f32)], F.margin_ranking_loss, {"reduction": "mean"}, error="shape")
    fam.case("hinge_embedding_loss/i64/error", "hinge_embedding_loss", [vals([1, 2], "int64"), vals([1, -1], "int64")],
             F.hinge_embedding_loss, {"reduction": "mean"}, error="dtype")
    fam.case("multilabel_soft_margin_loss/f32/weight[3]/error", "multilabel_soft_margin_loss",
             [rnd([3, 4], f32), rnd([3, 4], f32)],
             lambda x, y: F.multilabel_soft_margin_loss(x, y, weight=torch.ones(3)),
             {"reduction": "mean", "weight": [1.0, 1.0, 1.0], "weight_shape": [3]}, error="shape")
    fam.case("soft_margin_loss/f32/[3]x[2]/error", "soft_margin_loss", [rnd([3], f32), rnd([2], f32)],
             F.soft_margin_loss, {"reduction": "mean"}, error="shape")


def grad_group3(fam):
    g = fam.gcase
    d = "float64"
    for red in ("mean", "sum"):
        r = {"reduction": red}
        h = red == "sum"
        g(f"margin_ranking_loss/f64/{red}/[6]", "margin_ranking_loss", [off(rnd([6], d)), rnd([6], d), pm1([6], d)],
          lambda a, b, y, r=red: F.margin_ranking_loss(a, b, y, margin=0.1, reduction=r), dict(r, margin=0.1))
        g(f"hinge_embedding_loss/f64/{red}/[3,4]", "hinge_embedding_loss", [off(rnd([3, 4], d)), pm1([3, 4], d)],
          lambda x, y, r=red: F.hinge_embedding_loss(x, y, reduction=r), r)
        # torch's soft_margin_loss takes no gradient for the target (it
        # raises); its formula in torch ops gives both.
        g(f"soft_margin_loss/f64/{red}/[3,4]", "soft_margin_loss", [rnd([3, 4], d, "wide"), rnd([3, 4], d)],
          lambda x, y, r=red: reduce_as(torch.log1p(torch.exp(-y * x)), r), r, hvp=h)
        g(f"multilabel_soft_margin_loss/f64/{red}/[3,4]", "multilabel_soft_margin_loss",
          [rnd([3, 4], d, "wide"), prob([3, 4], d)],
          lambda x, y, r=red: F.multilabel_soft_margin_loss(x, y, weight=torch.tensor([0.5, 2.0, 1.0, 3.0], dtype=x.dtype),
                                                            reduction=r),
          dict(r, weight=[0.5, 2.0, 1.0, 3.0], weight_shape=[4]), hvp=h)
        g(f"cosine_embedding_loss/f64/{red}/[4,3]", "cosine_embedding_loss",
          [rnd([4, 3], d), rnd([4, 3], d), vals([1.0, -1.0, -1.0, 1.0], d)],
          lambda a, b, y, r=red: F.cosine_embedding_loss(a, b, y, margin=-0.9, reduction=r), dict(r, margin=-0.9), hvp=h)
        g(f"triplet_margin_loss/f64/{red}/[3,4]", "triplet_margin_loss", [rnd([3, 4], d), rnd([3, 4], d), rnd([3, 4], d)],
          lambda a, p, n, r=red: F.triplet_margin_loss(a, p, n, margin=3.0, swap=True, reduction=r),
          dict(r, margin=3.0, swap=True), hvp=h)
        g(f"poisson_nll_loss/f64/{red}/[3,4]", "poisson_nll_loss", [rnd([3, 4], d), prob([3, 4], d) * 4],
          lambda x, y, r=red: F.poisson_nll_loss(x, y, reduction=r), r, hvp=h)
        g(f"gaussian_nll_loss/f64/{red}/[3,4]", "gaussian_nll_loss", [rnd([3, 4], d), rnd([3, 4], d), prob([3, 4], d)],
          lambda x, y, v, r=red: F.gaussian_nll_loss(x, y, v, reduction=r), r, hvp=h)
    g("poisson_nll_loss/f64/none/log_input=False,full", "poisson_nll_loss",
      [prob([2, 4], d) * 3, vals([[0.5, 1.5, 2.0, 3.5], [0.25, 1.25, 10.0, 4.0]], d)],
      lambda x, y: F.poisson_nll_loss(x, y, False, True, reduction="none"),
      {"reduction": "none", "log_input": False, "full": True}, hvp=True)
    g("gaussian_nll_loss/f64/mean/var=per-sample,full", "gaussian_nll_loss", [rnd([3, 4], d), rnd([3, 4], d), prob([3], d)],
      lambda x, y, v: F.gaussian_nll_loss(x, y, v, full=True), {"reduction": "mean", "full": True}, hvp=True)
    g("gaussian_nll_loss/f64/none/var-clamped", "gaussian_nll_loss", [rnd([3], d), rnd([3], d), vals([1e-8, 0.5, 2.0], d)],
      lambda x, y, v: F.gaussian_nll_loss(x, y, v, reduction="none"), {"reduction": "none"}, nonsmooth=True)
    g("triplet_margin_loss/f64/none/p=1,margin=2", "triplet_margin_loss",
      [off(rnd([3, 4], d)), rnd([3, 4], d), rnd([3, 4], d)],
      lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=2.0, p=1.0, reduction="none"),
      {"reduction": "none", "margin": 2.0, "p": 1.0})
    g("cosine_embedding_loss/f32/mean/[4,3]", "cosine_embedding_loss",
      [rnd([4, 3], "float32"), rnd([4, 3], "float32"), vals([1.0, -1.0, -1.0, 1.0], "float32")],
      lambda a, b, y: F.cosine_embedding_loss(a, b, y, margin=-0.9), {"reduction": "mean", "margin": -0.9})


# The 16-bit floats: the losses whose torch 1.13 cpu kernels take them
# (binary_cross_entropy, cosine_similarity and those with exp do not), on
# [3, 4], mean and none.
HALF_CASES = [
    ("l1_loss", F.l1_loss, {}, "pair"),
    ("smooth_l1_loss", F.smooth_l1_loss, {}, "pair"),
    ("huber_loss", lambda x, t, **kw: F.huber_loss(x, t, delta=0.7, **kw), {"delta": 0.7}, "pair"),
    ("kl_div", F.kl_div, {}, "kl"),
    ("soft_margin_loss", F.soft_margin_loss, {}, "sign"),
    ("multilabel_soft_margin_loss", F.multilabel_soft_margin_loss, {}, "prob"),
    ("hinge_embedding_loss", F.hinge_embedding_loss, {}, "sign"),
    ("poisson_nll_loss", F.poisson_nll_loss, {}, "prob"),
]


def group_half(fam):
    for dt in ("float16", "bfloat16"):
        s = SHORT[dt]
        for op, fn, attrs, kind in HALF_CASES:
            x = logprob([3, 4], dt) if kind == "kl" else rnd([3, 4], dt)
            t = {"pair": lambda: rnd([3, 4], dt), "kl": lambda: logprob([3, 4], "float64").exp().to(getattr(torch, dt)),
                 "sign": lambda: pm1([3, 4], dt), "prob": lambda: prob([3, 4], dt)}[kind]()
            try:
                fn(x, t)
            except RuntimeError:  # no cpu kernel for dt ("exp_vml_cpu" of Half)
                continue
            for red in ("mean",):
                fam.case(f"{name_of(op, attrs)}/{s}/{red}/[3,4]", op, [x, t], with_red(fn, red), dict(attrs, reduction=red))


def mm(p=1, margin=1.0, w=None, red="mean"):
    return lambda x, y: F.multi_margin_loss(x, y, p, margin, None if w is None else torch.tensor(w, dtype=x.dtype),
                                            reduction=red)


def group4(fam):
    t = vals([2, 0, 3], "int64")
    for dt in FLOATS:
        s = SHORT[dt]
        for red in REDS if dt == "float32" else ("mean",):
            fam.case(f"multi_margin_loss/{s}/{red}/[3,4]", "multi_margin_loss", [rnd([3, 4], dt), t], mm(red=red),
                     {"reduction": red})
    f32 = "float32"
    for p, m, w in ((2, 1.0, None), (1, 0.5, [0.5, 2.0, 1.0, 3.0]), (2, 2.0, [0.5, 2.0, 1.0, 3.0])):
        a = {"reduction": "none", "p": float(p), "margin": m}
        if w is not None:
            a["weight"] = w
        fam.case(f"multi_margin_loss/f32/none/p={p},margin={m},weight={w is not None}", "multi_margin_loss",
                 [rnd([3, 4], f32), t], mm(p, m, w, "none"), a)
    fam.case("multi_margin_loss/f32/none/[4]", "multi_margin_loss", [rnd([4], f32), vals(1, "int64")], mm(red="none"),
             {"reduction": "none"})
    fam.case("multi_margin_loss/f32/mean/[4]x[1]", "multi_margin_loss", [rnd([4], f32), vals([3], "int64")], mm(),
             {"reduction": "mean"})
    # torch 1.13 returns uninitialised memory for no samples; lathe gives
    # the mean of nothing, NaN, as torch's other losses.
    fam.case("multi_margin_loss/f32/mean/empty[0,4]", "multi_margin_loss", [rnd([0, 4], f32), vals([], "int64")],
             lambda x, y: torch.tensor(NAN), {"reduction": "mean"})
    fam.case("multi_margin_loss/f32/none/special", "multi_margin_loss",
             [vals([[INF, 0.0, 1.0], [NAN, 1.0, 2.0]], f32), vals([1, 2], "int64")], mm(red="none"), {"reduction": "none"})
    fam.case("multi_margin_loss/f32/target=4/error", "multi_margin_loss", [rnd([3, 4], f32), vals([0, 4, 1], "int64")],
             mm(), {"reduction": "mean"}, error="index")
    fam.case("multi_margin_loss/f32/target=-1/error", "multi_margin_loss", [rnd([3, 4], f32), vals([0, -1, 1], "int64")],
             mm(), {"reduction": "mean"}, error="index")
    fam.case("multi_margin_loss/f32/p=3/error", "multi_margin_loss", [rnd([3, 4], f32), t], mm(p=3),
             {"reduction": "mean", "p": 3.0}, error="value")
    fam.case("multi_margin_loss/f32/target[2]/error", "multi_margin_loss", [rnd([3, 4], f32), vals([0, 1], "int64")],
             mm(), {"reduction": "mean"}, error="shape")
    # torch 1.13 does not check the weight's size (it reads past a short
    # one); lathe refuses it.
    fam.case("multi_margin_loss/f32/weight[3]/error", "multi_margin_loss", [rnd([3, 4], f32), t],
             None, {"reduction": "mean", "weight": [1.0, 1.0, 1.0]}, error="shape")
    fam.case("multi_margin_loss/f32/i32-target/error", "multi_margin_loss", [rnd([3, 4], f32), vals([2, 0, 3], "int32")],
             mm(), {"reduction": "mean"}, error="dtype")


def grad_group4(fam):
    g = fam.gcase
    t = vals([2, 0, 3], "int64")
    for p, red in ((1, "mean"), (1, "none"), (2, "sum")):
        g(f"multi_margin_loss/f64/{red}/p={p}", "multi_margin_loss", [off(rnd([3, 4], "float64")), t],
          mm(p, 1.0, [0.5, 2.0, 1.0, 3.0], red),
          {"reduction": red, "p": float(p), "margin": 1.0, "weight": [0.5, 2.0, 1.0, 3.0]})
    g("multi_margin_loss/f32/mean/[3,4]", "multi_margin_loss", [off(rnd([3, 4], "float32")), t], mm(),
      {"reduction": "mean"})


def soft_targets(shape, dt, dim=1):
    """Seeded class probabilities along dim."""
    return rnd(shape, "float64").softmax(dim).to(getattr(torch, dt))


W5 = [0.5, 2.0, 1.0, 3.0, 0.25]


def ce(red="mean", w=None, smoothing=0.0, ignore=-100):
    return lambda x, t: F.cross_entropy(x, t, None if w is None else torch.tensor(w, dtype=x.dtype), reduction=red,
                                        label_smoothing=smoothing, ignore_index=ignore)


def group5(fam):
    """cross_entropy against class probabilities (soft labels)."""
    for dt in FLOATS:
        s = SHORT[dt]
        for red in REDS:
            fam.case(f"cross_entropy/probs/{s}/{red}/[4,5]", "cross_entropy", [rnd([4, 5], dt), soft_targets([4, 5], dt)],
                     ce(red), {"reduction": red})
        fam.case(f"cross_entropy/probs/{s}/mean/weight", "cross_entropy", [rnd([4, 5], dt), soft_targets([4, 5], dt)],
                 ce(w=W5), {"reduction": "mean", "weight": W5})
    f32 = "float32"
    fam.case("cross_entropy/probs/f32/none/[2,5,3]", "cross_entropy", [rnd([2, 5, 3], f32), soft_targets([2, 5, 3], f32)],
             ce("none"), {"reduction": "none"})
    fam.case("cross_entropy/probs/f32/mean/[2,5,3]", "cross_entropy", [rnd([2, 5, 3], f32), soft_targets([2, 5, 3], f32)],
             ce(), {"reduction": "mean"})
    fam.case("cross_entropy/probs/f32/none/[5]", "cross_entropy", [rnd([5], f32), soft_targets([5], f32, 0)],
             ce("none"), {"reduction": "none"})
    fam.case("cross_entropy/probs/f32/mean/smoothing", "cross_entropy", [rnd([4, 5], f32), soft_targets([4, 5], f32)],
             ce(smoothing=0.2, w=W5), {"reduction": "mean", "label_smoothing": 0.2, "weight": W5})
    fam.case("cross_entropy/probs/f32/none/smoothing[2,5,3]", "cross_entropy",
             [rnd([2, 5, 3], f32), soft_targets([2, 5, 3], f32)], ce("none", smoothing=0.1),
             {"reduction": "none", "label_smoothing": 0.1})
    fam.case("cross_entropy/probs/f32/mean/empty[0,5]", "cross_entropy", [rnd([0, 5], f32), soft_targets([0, 5], f32)],
             ce(), {"reduction": "mean"})
    # Errors: probabilities of another shape (torch reads them as
    # indices: "multi-target not supported"), and an ignore_index, which
    # class probabilities do not have.
    fam.case("cross_entropy/probs/f32/target[4,4]/error", "cross_entropy", [rnd([4, 5], f32), soft_targets([4, 4], f32)],
             ce(), {"reduction": "mean"}, error="shape")
    fam.case("cross_entropy/probs/f32/ignore_index/error", "cross_entropy",
             [rnd([4, 5], f32), soft_targets([4, 5], f32)], ce(ignore=1), {"reduction": "mean", "ignore_index": 1},
             error="value")


def grad_group5(fam):
    g = fam.gcase
    for red in REDS:
        g(f"cross_entropy/probs/f64/{red}/weight", "cross_entropy", [rnd([4, 5], "float64"), soft_targets([4, 5], "float64")],
          ce(red, W5), {"reduction": red, "weight": W5}, hvp=True)
    g("cross_entropy/probs/f64/mean/smoothing[2,5,3]", "cross_entropy",
      [rnd([2, 5, 3], "float64"), soft_targets([2, 5, 3], "float64")], ce(smoothing=0.1),
      {"reduction": "mean", "label_smoothing": 0.1}, hvp=True)
    g("cross_entropy/probs/f32/mean/[4,5]", "cross_entropy", [rnd([4, 5], "float32"), soft_targets([4, 5], "float32")],
      ce(), {"reduction": "mean"})


def losses():
    fam = Family("losses", 81)
    group1(fam)
    group2(fam)
    group3(fam)
    group_half(fam)
    group4(fam)
    group5(fam)
    return fam


def grad_losses():
    fam = GradFamily("grad_losses", 82)
    grad_group1(fam)
    grad_group2(fam)
    grad_group3(fam)
    grad_group4(fam)
    grad_group5(fam)
    return fam


if __name__ == "__main__":
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (losses, grad_losses):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")
