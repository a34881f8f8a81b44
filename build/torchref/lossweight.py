"""Cases of cross_entropy and nll_loss with class weights, alone and with
label smoothing and an ignored class (loss_weight.json), and their
gradients, some of second order (grad_loss_weight.json).

The weight is an attribute (a list), not an input: torch 1.13 takes no
gradient for it. torch's formula (cross_entropy_loss_label_smoothing):
(1-ε)·nll + ε/C·Σ_c -w_c·log p_c per target, zero where ignored, the mean
dividing both terms by Σ w[target] over the targets kept.
"""

import torch
import torch.nn.functional as F

from grad import GradFamily
from refcase import FLOATS, SHORT, Family, idx, rnd

W4 = [0.5, 2.0, 1.0, 3.0]
T5 = [0, 3, -100, 1, 3]
# A spatial case: [N, C, d1, d2] with class 1 ignored.
W3 = [1.5, 0.25, 2.0]
TS = [[[0, 1], [2, 2]], [[1, 1], [0, 2]]]


def ce(red, w, eps=0.0, ignore=-100):
    return lambda x, t: F.cross_entropy(x, t, weight=torch.tensor(w, dtype=x.dtype), reduction=red,
                                        ignore_index=ignore, label_smoothing=eps)


def nll(red, w, ignore=-100):
    return lambda x, t: F.nll_loss(x.log_softmax(1 if x.dim() > 1 else 0), t, weight=torch.tensor(w, dtype=x.dtype),
                                   reduction=red, ignore_index=ignore)


def attrs(red, w, eps=None, ignore=None):
    a = {"reduction": red, "weight": w}
    if eps is not None:
        a["label_smoothing"] = eps
    if ignore is not None:
        a["ignore_index"] = ignore
    return a


def logp(x):
    return x.log_softmax(1 if x.dim() > 1 else 0)


def loss_weight():
    fam = Family("loss_weight", 41)
    for dt in FLOATS:
        s = SHORT[dt]
        for red in ("mean", "sum", "none"):
            fam.case(f"cross_entropy/{s}/{red}/weight[5,4]", "cross_entropy", [rnd([5, 4], dt, "wide"), idx(T5)],
                     ce(red, W4), attrs(red, W4))
            fam.case(f"cross_entropy/{s}/{red}/weight+smoothing[5,4]", "cross_entropy",
                     [rnd([5, 4], dt, "wide"), idx(T5)], ce(red, W4, 0.2), attrs(red, W4, 0.2))
            fam.case(f"cross_entropy/{s}/{red}/weight+smoothing+ignore1[2,3,2,2]", "cross_entropy",
                     [rnd([2, 3, 2, 2], dt, "wide"), idx(TS)], ce(red, W3, 0.3, 1), attrs(red, W3, 0.3, 1))
            x = rnd([5, 4], dt, "wide")
            fam.case(f"nll_loss/{s}/{red}/weight[5,4]", "nll_loss", [logp(x), idx(T5)],
                     lambda x, t, r=red: F.nll_loss(x, t, weight=torch.tensor(W4, dtype=x.dtype), reduction=r),
                     attrs(red, W4))
            x = rnd([2, 3, 2, 2], dt, "wide")
            fam.case(f"nll_loss/{s}/{red}/weight+ignore1[2,3,2,2]", "nll_loss", [logp(x), idx(TS)],
                     lambda x, t, r=red: F.nll_loss(x, t, weight=torch.tensor(W3, dtype=x.dtype), reduction=r,
                                                    ignore_index=1), attrs(red, W3, ignore=1))
        fam.case(f"cross_entropy/{s}/mean/weight+smoothing[4]", "cross_entropy", [rnd([4], dt, "wide"), idx(2)],
                 ce("mean", W4, 0.1), attrs("mean", W4, 0.1))
    # Every target ignored: the weighted mean is 0/0, NaN, as in torch.
    fam.case("nll_loss/f64/mean/weight/all-ignored", "nll_loss", [logp(rnd([2, 4], "float64")), idx([-100, -100])],
             lambda x, t: F.nll_loss(x, t, weight=torch.tensor(W4, dtype=x.dtype)), attrs("mean", W4))
    fam.case("cross_entropy/f32/mean/weight[3]/error", "cross_entropy", [rnd([5, 4], "float32"), idx(T5)],
             ce("mean", W4[:3]), attrs("mean", W4[:3]), error="shape")
    fam.case("cross_entropy/f32/mean/weight[3]+smoothing/error", "cross_entropy", [rnd([5, 4], "float32"), idx(T5)],
             ce("mean", W4[:3], 0.1), attrs("mean", W4[:3], 0.1), error="shape")
    fam.case("nll_loss/f32/mean/weight[5]/error", "nll_loss", [rnd([5, 4], "float32"), idx(T5)],
             nll("mean", W4 + [1.0]), attrs("mean", W4 + [1.0]), error="shape")
    return fam


def grad_loss_weight():
    fam = GradFamily("grad_loss_weight", 42)
    g = fam.gcase
    for red in ("mean", "sum", "none"):
        g(f"cross_entropy/f64/{red}/weight+smoothing[5,4]", "cross_entropy", [rnd([5, 4], "float64", "wide"), idx(T5)],
          ce(red, W4, 0.2), attrs(red, W4, 0.2), hvp=red == "mean")
        g(f"cross_entropy/f64/{red}/weight[5,4]", "cross_entropy", [rnd([5, 4], "float64", "wide"), idx(T5)],
          ce(red, W4), attrs(red, W4), hvp=red == "sum")
        g(f"nll_loss/f64/{red}/weight[5,4]", "nll_loss", [rnd([5, 4], "float64", "wide"), idx(T5)],
          lambda x, t, r=red: F.nll_loss(x, t, weight=torch.tensor(W4, dtype=x.dtype), reduction=r), attrs(red, W4))
    g("cross_entropy/f64/mean/weight+smoothing+ignore1[2,3,2,2]", "cross_entropy",
      [rnd([2, 3, 2, 2], "float64", "wide"), idx(TS)], ce("mean", W3, 0.3, 1), attrs("mean", W3, 0.3, 1), hvp=True)
    g("cross_entropy/f32/mean/weight+smoothing[5,4]", "cross_entropy", [rnd([5, 4], "float32", "wide"), idx(T5)],
      ce("mean", W4, 0.2), attrs("mean", W4, 0.2))
    g("nll_loss/f64/mean/weight+ignore1[2,3,2,2]", "nll_loss", [rnd([2, 3, 2, 2], "float64", "wide"), idx(TS)],
      lambda x, t: F.nll_loss(x, t, weight=torch.tensor(W3, dtype=x.dtype), ignore_index=1), attrs("mean", W3, ignore=1))
    return fam
