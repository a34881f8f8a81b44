#!/usr/bin/python3
"""Reference values for nn's later optimizers and learning-rate schedulers
(Adamax, NAdam, RAdam, Adadelta, Adam's amsgrad, maximize of all; LambdaLR,
MultiplicativeLR, ConstantLR, PolynomialLR, CosineAnnealingWarmRestarts,
CyclicLR, ChainedScheduler), by PyTorch 1.13. Writes
nn/optim2_torchref_test.go:

    optim2Ref   each optimizer case's parameter after every step, from
                optimP0 (optim_ref.py's start) with the gradients optim2G,
                in float64, float32 and bfloat16 (torch computing in that
                dtype; torch's cpu has no float16 addcmul), read by
                TestMoreOptimizersMatchTorch (nn/optim_more_test.go)
    sched2Ref   each scheduler case's learning rate after construction and
                after each of its steps (a CyclicLR case's "/momentum" entry:
                SGD's momentum), read by TestMoreSchedulersMatchTorch
    lbfgsRef    each LBFGS case's returned loss and parameters after each of
                three steps on lbfgsObjective, in float64 and float32, read
                by TestLBFGSMatchesTorch (nn/optim_lbfgs_test.go)

Run with /usr/bin/python3 build/torchref/optim2_ref.py (the system Python
that has torch). Output is deterministic.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from literals import gofloat, write  # noqa: E402
from optim_ref import P0  # noqa: E402

torch.set_num_threads(1)

# Eight steps, so that RAdam (β2 = 0.999) reaches its rectified update.
G = [
    [0.1, -0.2, 0.3, -0.4, 0.5, -0.6],
    [-0.3, 0.1, 0.2, 0.7, -0.5, 0.05],
    [0.25, 0.25, -0.1, -0.2, 0.0, 0.9],
    [0.05, -0.6, 0.4, 0.1, -0.15, -0.3],
    [-0.2, 0.3, -0.35, 0.45, 0.6, 0.0],
    [0.4, -0.1, 0.05, -0.25, 0.3, 0.2],
    [-0.15, 0.45, -0.5, 0.0, -0.05, 0.35],
    [0.3, 0.2, 0.1, -0.6, 0.25, -0.45],
]
O = torch.optim
# The names are the keys of optim2Cases in nn/optim_more_test.go.
OPTIM = [
    ("adam/amsgrad", lambda p: O.Adam([p], lr=0.01, amsgrad=True)),
    ("adam/maximize", lambda p: O.Adam([p], lr=0.01, maximize=True)),
    ("adamw/amsgrad/maximize/wd", lambda p: O.AdamW([p], lr=0.01, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("adamax", lambda p: O.Adamax([p], lr=0.02)),
    ("adamax/betas/eps/wd", lambda p: O.Adamax([p], lr=0.02, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1)),
    ("adamax/maximize", lambda p: O.Adamax([p], lr=0.02, maximize=True)),
    ("nadam", lambda p: O.NAdam([p], lr=0.02)),
    ("nadam/betas/wd/momentum_decay", lambda p: O.NAdam([p], lr=0.02, betas=(0.8, 0.95), weight_decay=0.1, momentum_decay=0.1)),
    ("radam", lambda p: O.RAdam([p], lr=0.01)),
    ("radam/betas/eps/wd", lambda p: O.RAdam([p], lr=0.01, betas=(0.8, 0.9), eps=1e-4, weight_decay=0.1)),
    ("adadelta", lambda p: O.Adadelta([p])),
    ("adadelta/rho/eps/wd", lambda p: O.Adadelta([p], lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    ("adadelta/maximize", lambda p: O.Adadelta([p], maximize=True)),
    ("sgd/momentum/wd/maximize", lambda p: O.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01, maximize=True)),
    ("rmsprop/centered/maximize", lambda p: O.RMSprop([p], lr=0.01, centered=True, maximize=True)),
    ("adagrad/wd/maximize", lambda p: O.Adagrad([p], lr=0.1, weight_decay=0.1, maximize=True)),
]
DTYPES = ((torch.float64, "float64"), (torch.float32, "float32"), (torch.bfloat16, "bfloat16"))


def optim_ref():
    lines = ["// optim2Ref holds each case's parameter after every step, by dtype.",
             "var optim2Ref = map[string]map[string][][]float64{"]
    for name, make in OPTIM:
        lines.append('\t"%s": {' % name)
        for dt, dname in DTYPES:
            p = torch.tensor(P0, dtype=dt).reshape(2, 3).requires_grad_()
            opt = make(p)
            lines.append('\t\t"%s": {' % dname)
            for g in G:
                opt.zero_grad()
                p.grad = torch.tensor(g, dtype=dt).reshape(2, 3)  # exactly G rounded to dt
                opt.step()
                vals = [gofloat(v) for v in p.detach().double().flatten().tolist()]
                lines.append("\t\t\t{" + ", ".join(vals) + "},")
            lines.append("\t\t},")
        lines.append("\t},")
    lines.append("}\n")
    return "\n".join(lines)


S = torch.optim.lr_scheduler
EPOCHS = 30


def sgd(lr=0.1, **kw):
    return O.SGD([torch.zeros(2, requires_grad=True)], lr=lr, **kw)


def chained(opt):
    return S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=4), S.ExponentialLR(opt, gamma=0.9)])


def chained_cyclic(opt):
    return S.ChainedScheduler([S.CyclicLR(opt, 0.01, 0.1, step_size_up=3, mode="triangular2"),
                               S.MultiplicativeLR(opt, lambda e: 0.97)])


def sequential_warm(opt):
    a = S.LambdaLR(opt, lambda e: (e + 1) / 5)
    b = S.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2, eta_min=0.001)
    return S.SequentialLR(opt, [a, b], milestones=[5])


# The names are the keys of sched2Cases in nn/lrsched_more_test.go; each
# makes an optimizer and a scheduler on it. The lambdas are the Go cases'
# funcs, in the same float64 operations.
SCHED = [
    ("lambda/inverse", lambda: S.LambdaLR(sgd(), lambda e: 1 / (1 + 0.5 * e))),
    ("lambda/warmup_steps", lambda: S.LambdaLR(sgd(0.2), lambda e: min(1.0, (e + 1) / 8))),
    ("multiplicative/0.9", lambda: S.MultiplicativeLR(sgd(), lambda e: 0.9)),
    ("multiplicative/alternating", lambda: S.MultiplicativeLR(sgd(), lambda e: 1.1 if e % 3 == 0 else 0.8)),
    ("constant/default", lambda: S.ConstantLR(sgd())),
    ("constant/0.25/7", lambda: S.ConstantLR(sgd(), factor=0.25, total_iters=7)),
    ("polynomial/default", lambda: S.PolynomialLR(sgd())),
    ("polynomial/12/2.5", lambda: S.PolynomialLR(sgd(), total_iters=12, power=2.5)),
    ("polynomial/10/0.5", lambda: S.PolynomialLR(sgd(0.3), total_iters=10, power=0.5)),
    ("warm_restarts/5", lambda: S.CosineAnnealingWarmRestarts(sgd(), T_0=5)),
    ("warm_restarts/3/2/eta_min", lambda: S.CosineAnnealingWarmRestarts(sgd(0.5), T_0=3, T_mult=2, eta_min=0.01)),
    ("cyclic/triangular", lambda: S.CyclicLR(sgd(momentum=0.9), 0.01, 0.1, step_size_up=4)),
    ("cyclic/triangular2/down", lambda: S.CyclicLR(sgd(momentum=0.9), 0.001, 0.05, step_size_up=3, step_size_down=5,
                                                   mode="triangular2", base_momentum=0.7, max_momentum=0.95)),
    ("cyclic/exp_range/no_momentum", lambda: S.CyclicLR(sgd(), 0.02, 0.2, step_size_up=5, mode="exp_range", gamma=0.95,
                                                        cycle_momentum=False)),
    ("chained/constant+exponential", lambda: chained(sgd())),
    ("chained/cyclic+multiplicative", lambda: chained_cyclic(sgd(momentum=0.9))),
    ("sequential/lambda+warm_restarts", lambda: sequential_warm(sgd())),
]


def sched_ref():
    lines = ["// sched2Ref holds each scheduler case's learning rate after construction",
             "// and after each of its steps; a CyclicLR case's \"/momentum\" entry",
             "// holds SGD's momentum alike.",
             "var sched2Ref = map[string][]float64{"]
    for name, make in SCHED:
        sch = make()
        opt = sch.optimizer
        lrs = [opt.param_groups[0]["lr"]]
        moms = [opt.param_groups[0]["momentum"]]
        for e in range(EPOCHS):
            opt.step()
            sch.step()
            lrs.append(opt.param_groups[0]["lr"])
            moms.append(opt.param_groups[0]["momentum"])
        lines.append('\t"%s": {%s},' % (name, ", ".join(gofloat(v) for v in lrs)))
        if "cyclic" in name and "no_momentum" not in name:
            lines.append('\t"%s/momentum": {%s},' % (name, ", ".join(gofloat(v) for v in moms)))
    # CosineAnnealingWarmRestarts stepped at fractional epochs.
    opt = sgd()
    sch = S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=3, eta_min=0.005)
    lrs = [opt.param_groups[0]["lr"]]
    for e in WARM_EPOCHS:
        sch.step(e)
        lrs.append(opt.param_groups[0]["lr"])
    lines.append('\t"warm_restarts/step_at": {%s},' % ", ".join(gofloat(v) for v in lrs))
    lines.append("}\n")
    return "\n".join(lines)


WARM_EPOCHS = [0.25, 0.5, 1.75, 2.0, 3.5, 7.9, 8.0, 8.5, 25.0, 26.25, 80.0, 3.0, 0.0]


# LBFGS minimizes Rosenbrock's function of p plus a weighted quadratic of
# b, both parameters; the Go test's objective is the same op for op.
LBFGS_P0 = [-1.2, 1.0]
LBFGS_B0 = [0.5, -0.3, 0.8]
LBFGS_C = [1.0, 2.0, -1.0]
LBFGS_K = [1.0, 0.5, 2.0]
LBFGS = [
    ("none", dict(lr=1, max_iter=5, history_size=3)),
    ("strong_wolfe", dict(lr=1, max_iter=5, history_size=3, line_search_fn="strong_wolfe")),
    ("strong_wolfe/defaults", dict(lr=0.5, line_search_fn="strong_wolfe")),
    ("none/lr/tolerance_change/max_eval", dict(lr=0.1, max_iter=8, max_eval=6, tolerance_change=1e-4)),
]


def lbfgs_ref():
    lines = ["// lbfgsRef holds each LBFGS case's loss and parameters (p, then b) after",
             "// each step, by dtype.",
             "var lbfgsRef = map[string]map[string][][]float64{"]
    for name, kw in LBFGS:
        lines.append('\t"%s": {' % name)
        for dt, dname in DTYPES[:2]:
            p = torch.tensor(LBFGS_P0, dtype=dt, requires_grad=True)
            b = torch.tensor(LBFGS_B0, dtype=dt, requires_grad=True)
            c = torch.tensor(LBFGS_C, dtype=dt)
            k = torch.tensor(LBFGS_K, dtype=dt)
            opt = O.LBFGS([p, b], **kw)

            def closure():
                opt.zero_grad()
                x, y = p[0:1], p[1:2]
                loss = ((1 - x) ** 2 + 100 * (y - x ** 2) ** 2 + ((b - c) ** 2 * k).sum()).sum()
                loss.backward()
                return loss
            lines.append('\t\t"%s": {' % dname)
            for _ in range(3):
                loss = float(opt.step(closure))
                vals = [gofloat(v) for v in [loss] + p.detach().double().tolist() + b.detach().double().tolist()]
                lines.append("\t\t\t{" + ", ".join(vals) + "},")
            lines.append("\t\t},")
        lines.append("\t},")
    lines.append("}\n")
    return "\n".join(lines)


def main():
    decls = [
        "var optim2G = [][]float64{\n" + "".join("\t{" + ", ".join(gofloat(v) for v in g) + "},\n" for g in G) + "}\n",
        optim_ref(),
        "var warmEpochs = []float64{" + ", ".join(gofloat(v) for v in WARM_EPOCHS) + "}\n",
        sched_ref(),
        lbfgs_ref(),
    ]
    intro = ("// The later optimizers' and schedulers' reference values, from\n"
             "// build/torchref/optim2_ref.py.\n")
    write("nn/optim2_torchref_test.go", "nn", intro, decls, "build/torchref/optim2_ref.py")


if __name__ == "__main__":
    main()
