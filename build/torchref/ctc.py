"""Cases of the CTC loss, torch.nn.functional.ctc_loss (ctc.json), and its
gradients (grad_ctc.json).

Run it from the repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/ctc.py

(gen.py runs it too, with every other family.) Op keys and attributes are
listed with the Go table, internal/conformance/ops_ctc.go: "ctc_loss" takes
log_probs, targets, input_lengths and target_lengths; "ctc_loss_logits"
takes logits and applies log_softmax over the classes first. Attributes:
blank, reduction and zero_infinity.

The gradient cases go through log_softmax: torch's ctc_loss_backward
returns exp(log_probs) minus the posteriors, the gradient with respect to
the logits of a log_softmax in front, which lathe's (the loss's own
derivative) equals only through that log_softmax. float16 and bfloat16,
which torch's cpu refuses, are torch's float32 loss rounded (lathe
computes them in float32). Cases that lathe refuses and torch computes (a
label that is the blank or out of range, a negative length, float
targets) are lathe-only error cases.
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily  # noqa: E402
from refcase import SHORT, Family, rnd, vals  # noqa: E402

RED = ("none", "sum", "mean")


def labels(n, s, c, blank):
    """Seeded labels [n, s] in [0, c), none the blank."""
    t = torch.randint(0, c - 1, (n, s))
    return torch.where(t >= blank, t + 1, t)


def ctc(blank, reduction, zero_inf):
    return lambda lp, tg, il, tl: F.ctc_loss(lp, tg, il, tl, blank, reduction, zero_inf)


def ctc16(blank, reduction, zero_inf, dt):
    return lambda lp, tg, il, tl: F.ctc_loss(lp.float(), tg, il, tl, blank, reduction, zero_inf).to(dt)


def attrs(blank, reduction, zero_inf):
    return {"blank": blank, "reduction": reduction, "zero_infinity": zero_inf}


def logprobs(shape, dt):
    return rnd(shape, "float64").log_softmax(-1).to({"float32": torch.float32, "float64": torch.float64}[dt])


def values(fam):
    # Batches of several sizes, every reduction, float32 and float64.
    for t, n, c, s, blank in ((5, 2, 4, 3, 0), (6, 3, 5, 2, 4), (1, 1, 2, 1, 0), (8, 2, 3, 4, 1), (4, 2, 6, 0, 0),
                              (7, 4, 5, 3, 2)):
        for dt in ("float32", "float64"):
            lp = logprobs([t, n, c], dt)
            tg = labels(n, s, c, blank)
            tl = torch.randint(0, s + 1, (n,))
            il = torch.randint(0, t + 1, (n,)).clamp_min(min(t, 2 * s + 1))
            for r in RED:
                fam.case(f"ctc/{SHORT[dt]}/[{t},{n},{c}]/S={s}/blank={blank}/{r}", "ctc_loss", [lp, tg, il, tl],
                         ctc(blank, r, False), attrs(blank, r, False))
    # Repeated labels need a blank between them: T = 3 fits [1, 1], T = 2
    # does not (+Inf, or 0 with zero_infinity).
    lp = logprobs([4, 3, 3], "float64")
    tg = vals([[1, 1, 2], [2, 2, 2], [1, 2, 1]], "int64")
    il, tl = vals([3, 4, 2], "int64"), vals([2, 3, 3], "int64")
    for r in RED:
        for zi in (False, True):
            fam.case(f"ctc/f64/repeats/{r}/zero_infinity={zi}", "ctc_loss", [lp, tg, il, tl], ctc(0, r, zi), attrs(0, r, zi))
    # A target longer than its input.
    lp = logprobs([3, 2, 4], "float32")
    tg, il, tl = vals([[1, 2, 3, 1], [3, 0, 0, 0]], "int64"), vals([3, 3], "int64"), vals([4, 1], "int64")
    for zi in (False, True):
        fam.case(f"ctc/f32/too-long/none/zero_infinity={zi}", "ctc_loss", [lp, tg, il, tl], ctc(0, "none", zi),
                 attrs(0, "none", zi))
    # Padding that holds the blank or any class is not read.
    lp = logprobs([5, 2, 4], "float32")
    tl, il = vals([2, 1], "int64"), vals([5, 5], "int64")
    fam.case("ctc/f32/padding=blank", "ctc_loss", [lp, vals([[1, 2, 0], [3, 0, 0]], "int64"), il, tl],
             ctc(0, "none", False), attrs(0, "none", False))
    # Concatenated targets, with an empty one among them.
    lp = logprobs([6, 3, 5], "float64")
    tg, il, tl = vals([1, 2, 2, 4, 3], "int64"), vals([6, 5, 6], "int64"), vals([3, 0, 2], "int64")
    for r in RED:
        fam.case(f"ctc/f64/concatenated/{r}", "ctc_loss", [lp, tg, il, tl], ctc(0, r, False), attrs(0, r, False))
    # Unbatched: [T, C] with [S] targets and 0-d or [1] lengths.
    lp = logprobs([5, 4], "float32")
    for r in RED:
        fam.case(f"ctc/f32/unbatched/{r}", "ctc_loss", [lp, vals([3, 1], "int64"), vals(5, "int64"), vals(2, "int64")],
                 ctc(0, r, False), attrs(0, r, False))
    fam.case("ctc/f32/unbatched/[1]lengths", "ctc_loss", [lp, vals([3, 1, 1], "int64"), vals([4], "int64"),
                                                          vals([3], "int64")], ctc(0, "none", False), attrs(0, "none", False))
    # No input steps (an input length of 0) are left out: torch reads
    # memory it never wrote there, and its loss changes from run to run;
    # ops_ctc_test.go checks lathe's (0 for an empty target, else +Inf).
    # int32 targets and lengths.
    lp = logprobs([5, 2, 4], "float32")
    fam.case("ctc/f32/int32", "ctc_loss", [lp, vals([[1, 2], [3, 3]], "int32"), vals([5, 4], "int32"),
                                           vals([2, 2], "int32")], ctc(0, "mean", False), attrs(0, "mean", False))
    # Classes of probability 0 (log_probs -Inf).
    lp = logprobs([5, 2, 4], "float32")
    lp[:, :, 3] = -float("inf")
    fam.case("ctc/f32/-inf-class", "ctc_loss", [lp, vals([[1, 2], [1, 1]], "int64"), vals([5, 4], "int64"),
                                                vals([2, 2], "int64")], ctc(0, "none", False), attrs(0, "none", False))
    fam.case("ctc/f32/-inf-class/zero_infinity", "ctc_loss", [lp, vals([[1, 3], [1, 1]], "int64"), vals([5, 4], "int64"),
                                                              vals([2, 2], "int64")], ctc(0, "sum", True), attrs(0, "sum", True))
    # An empty batch: the mean is NaN, the sum 0.
    lp = logprobs([4, 0, 3], "float32")
    for r in RED:
        fam.case(f"ctc/f32/empty-batch/{r}", "ctc_loss", [lp, torch.zeros(0, 2, dtype=torch.int64),
                                                          torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int64)],
                 ctc(0, r, False), attrs(0, r, False))
    # float16 and bfloat16: torch's float32 loss, rounded.
    for dt, tdt in (("float16", torch.float16), ("bfloat16", torch.bfloat16)):
        lp = logprobs([5, 2, 4], "float32").to(tdt)
        tg, il, tl = vals([[1, 2], [3, 1]], "int64"), vals([5, 3], "int64"), vals([2, 2], "int64")
        for r in RED:
            fam.case(f"ctc/{SHORT[dt]}/{r}", "ctc_loss", [lp, tg, il, tl], ctc16(0, r, False, tdt), attrs(0, r, False))

    # Errors torch raises too.
    lp = logprobs([5, 2, 4], "float32")
    tg, il, tl = vals([[1, 2, 3], [3, 1, 1]], "int64"), vals([5, 4], "int64"), vals([3, 1], "int64")
    err = [("input_length>T", [lp, tg, vals([6, 4], "int64"), tl], "value", 0),
           ("target_length>S", [lp, tg, il, vals([4, 1], "int64")], "value", 0),
           ("blank=C", [lp, tg, il, tl], "value", 4),
           ("blank=-1", [lp, tg, il, tl], "value", -1),
           ("concatenated/sum<len", [lp, vals([1, 2, 3, 1, 2], "int64"), il, tl], "value", 0),
           ("concatenated/sum>len", [lp, vals([1, 2, 3], "int64"), il, tl], "value", 0),
           ("input_lengths[1]", [lp, tg, vals([5], "int64"), tl], "shape", 0),
           ("target_lengths[3]", [lp, tg, il, vals([3, 1, 1], "int64")], "shape", 0),
           ("targets[1,3]", [lp, tg[:1], il, tl], "shape", 0),
           ("log_probs[4]", [lp[0, 0], tg, il, tl], "shape", 0),
           ("float-lengths", [lp, tg, il.float(), tl], "dtype", 0)]
    for name, ins, kind, blank in err:
        fam.case(f"ctc/error/{name}", "ctc_loss", ins, ctc(blank, "none", False), attrs(blank, "none", False), error=kind)
    # What lathe refuses and torch computes from (or reads past) memory.
    for name, ins, kind in (("label=blank", [lp, vals([[1, 0, 3], [3, 1, 1]], "int64"), il, tl], "value"),
                            ("label=C", [lp, vals([[1, 4, 3], [3, 1, 1]], "int64"), il, tl], "index"),
                            ("label=-1", [lp, vals([[1, 2, 3], [-1, 1, 1]], "int64"), il, tl], "index"),
                            ("input_length=-1", [lp, tg, vals([5, -1], "int64"), tl], "value"),
                            ("target_length=-1", [lp, tg, il, vals([3, -1], "int64")], "value"),
                            ("float-targets", [lp, tg.float(), il, tl], "dtype")):
        fam.case(f"ctc/error/lathe/{name}", "ctc_loss", ins, None, attrs(0, "none", False), error=kind)


def gctc(blank, reduction, zero_inf):
    return lambda x, tg, il, tl: F.ctc_loss(x.log_softmax(-1), tg, il, tl, blank, reduction, zero_inf)


def grads(fam):
    g = fam.gcase
    for t, n, c, s, blank in ((5, 2, 4, 3, 0), (6, 3, 5, 2, 4), (2, 1, 3, 1, 0), (7, 2, 3, 3, 1)):
        for dt in ("float32", "float64"):
            x = rnd([t, n, c], dt)
            tg = labels(n, s, c, blank)
            tl = torch.randint(1, s + 1, (n,))
            il = torch.full((n,), t)
            il[0] = max(t - 1, 1)
            for r in RED:
                g(f"ctc_logits/{SHORT[dt]}/[{t},{n},{c}]/S={s}/blank={blank}/{r}", "ctc_loss_logits", [x, tg, il, tl],
                  gctc(blank, r, False), attrs(blank, r, False))
    # zero_infinity: the infeasible sample's gradient is 0.
    x = rnd([4, 3, 3], "float64")
    tg = vals([[1, 1, 2], [2, 2, 2], [1, 2, 1]], "int64")
    il, tl = vals([3, 4, 2], "int64"), vals([2, 3, 3], "int64")
    for r in RED:
        g(f"ctc_logits/f64/repeats/{r}/zero_infinity", "ctc_loss_logits", [x, tg, il, tl], gctc(0, r, True),
          attrs(0, r, True))
    # Concatenated targets and one sample unbatched.
    x = rnd([6, 3, 5], "float64")
    tg, il, tl = vals([1, 2, 2, 4, 3], "int64"), vals([6, 5, 6], "int64"), vals([3, 0, 2], "int64")
    for r in RED:
        g(f"ctc_logits/f64/concatenated/{r}", "ctc_loss_logits", [x, tg, il, tl], gctc(0, r, False), attrs(0, r, False))
    x = rnd([5, 4], "float64")
    g("ctc_logits/f64/unbatched/none", "ctc_loss_logits", [x, vals([3, 1], "int64"), vals(4, "int64"), vals(2, "int64")],
      gctc(0, "none", False), attrs(0, "none", False))
    x = rnd([5, 4], "float32")
    g("ctc_logits/f32/unbatched/mean", "ctc_loss_logits", [x, vals([3, 3], "int64"), vals([5], "int64"),
                                                           vals([2], "int64")], gctc(1, "mean", False), attrs(1, "mean", False))


def ctc_values():
    fam = Family("ctc", 95)
    values(fam)
    return fam


def grad_ctc():
    fam = GradFamily("grad_ctc", 96)
    grads(fam)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (ctc_values, grad_ctc):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
