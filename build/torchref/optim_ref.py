#!/usr/bin/python3
"""Reference values for nn's optimizers and learning-rate schedulers, by
PyTorch 1.13. Writes nn/optim_torchref_test.go:

    optimRef   each optimizer case's parameter after every step, from the
               start optimP0 with the gradients optimG, in float64 and in
               float32 (torch computing in float32), read by
               TestOptimizersMatchTorch (nn/optim_test.go)
    schedRef   each scheduler case's learning rate (get_last_lr) after
               construction and after each of its steps, read by
               TestSchedulersMatchTorch (nn/lrsched_test.go)

Run with /usr/bin/python3 build/torchref/optim_ref.py (the system Python
that has torch). Output is deterministic.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from literals import gofloat, write  # noqa: E402

torch.set_num_threads(1)

P0 = [0.5, -1.2, 2.0, 0.3, -0.7, 1.1]
G = [
    [0.1, -0.2, 0.3, -0.4, 0.5, -0.6],
    [-0.3, 0.1, 0.2, 0.7, -0.5, 0.05],
    [0.25, 0.25, -0.1, -0.2, 0.0, 0.9],
    [0.05, -0.6, 0.4, 0.1, -0.15, -0.3],
    [-0.2, 0.3, -0.35, 0.45, 0.6, 0.0],
]
O = torch.optim
# The names are the keys of optimCases in nn/optim_test.go.
OPTIM = [
    ("sgd", lambda p: O.SGD([p], lr=0.1)),
    ("sgd/momentum/dampening/wd", lambda p: O.SGD([p], lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("sgd/nesterov/wd", lambda p: O.SGD([p], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("adam", lambda p: O.Adam([p], lr=0.01)),
    ("adam/wd", lambda p: O.Adam([p], lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("adamw", lambda p: O.AdamW([p], lr=0.01, weight_decay=0.1)),
    ("rmsprop", lambda p: O.RMSprop([p], lr=0.01)),
    ("rmsprop/alpha/eps", lambda p: O.RMSprop([p], lr=0.01, alpha=0.9, eps=1e-3)),
    ("rmsprop/wd", lambda p: O.RMSprop([p], lr=0.01, weight_decay=0.1)),
    ("rmsprop/momentum", lambda p: O.RMSprop([p], lr=0.01, momentum=0.9)),
    ("rmsprop/centered", lambda p: O.RMSprop([p], lr=0.01, centered=True)),
    ("rmsprop/centered/momentum/wd", lambda p: O.RMSprop([p], lr=0.02, alpha=0.95, momentum=0.5, centered=True, weight_decay=0.05)),
    ("adagrad", lambda p: O.Adagrad([p], lr=0.1)),
    ("adagrad/lr_decay", lambda p: O.Adagrad([p], lr=0.1, lr_decay=0.5)),
    ("adagrad/wd", lambda p: O.Adagrad([p], lr=0.1, weight_decay=0.1)),
    ("adagrad/initial_accumulator_value/eps", lambda p: O.Adagrad([p], lr=0.1, initial_accumulator_value=0.3, eps=1e-3)),
]


def optim_ref():
    lines = ["// optimRef holds each case's parameter after every step, by dtype.",
             "var optimRef = map[string]map[string][][]float64{"]
    for name, make in OPTIM:
        lines.append('\t"%s": {' % name)
        for dt, dname in ((torch.float64, "float64"), (torch.float32, "float32")):
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
# The metric ReduceLROnPlateau's cases see each epoch: falls, stalls, dips
# by less than the threshold, falls again, rises.
PLATEAU_METRICS = [1.0, 0.9, 0.8, 0.8, 0.8, 0.8, 0.79995, 0.8, 0.7, 0.7,
                   0.7, 0.7, 0.7, 0.69, 0.69, 0.69, 0.69, 0.69, 0.6, 0.6,
                   0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]


def sgd(lr=0.1, **kw):
    return O.SGD([torch.zeros(2, requires_grad=True)], lr=lr, **kw)


def adam(lr=0.1):
    return O.Adam([torch.zeros(2, requires_grad=True)], lr=lr)


def sequential(opt):
    a = S.ExponentialLR(opt, gamma=0.9)
    b = S.StepLR(opt, step_size=3, gamma=0.5)
    c = S.CosineAnnealingLR(opt, T_max=10, eta_min=0.001)
    return S.SequentialLR(opt, [a, b, c], milestones=[4, 12])


def warmup_cosine(opt):
    warm = S.LinearLR(opt, start_factor=0.1, end_factor=1.0, total_iters=5)
    cos = S.CosineAnnealingLR(opt, T_max=25, eta_min=1e-4)
    return S.SequentialLR(opt, [warm, cos], milestones=[5])


# The names are the keys of schedCases in nn/lrsched_test.go; each makes
# an optimizer and a scheduler on it.
SCHED = [
    ("step/3/0.5", lambda: S.StepLR(sgd(), step_size=3, gamma=0.5)),
    ("multistep/[5,10,10,20]/0.3", lambda: S.MultiStepLR(sgd(), milestones=[20, 5, 10, 10], gamma=0.3)),
    ("exponential/0.9", lambda: S.ExponentialLR(sgd(), gamma=0.9)),
    ("cosine/10", lambda: S.CosineAnnealingLR(sgd(), T_max=10)),
    ("cosine/7/eta_min", lambda: S.CosineAnnealingLR(sgd(0.5), T_max=7, eta_min=0.01)),
    ("linear/warmup", lambda: S.LinearLR(sgd(), start_factor=0.25, end_factor=1.0, total_iters=8)),
    ("linear/decay", lambda: S.LinearLR(sgd(), start_factor=1.0, end_factor=0.1, total_iters=5)),
    ("sequential/exp+step+cosine", lambda: sequential(sgd())),
    ("warmup_cosine", lambda: warmup_cosine(sgd())),
    ("onecycle/sgd", lambda: S.OneCycleLR(sgd(momentum=0.9), max_lr=1.0, total_steps=EPOCHS)),
    ("onecycle/adam/linear/three_phase", lambda: S.OneCycleLR(adam(), max_lr=0.5, total_steps=EPOCHS, pct_start=0.25,
                                                              anneal_strategy="linear", three_phase=True,
                                                              div_factor=10.0, final_div_factor=100.0)),
    ("onecycle/sgd/no_momentum", lambda: S.OneCycleLR(sgd(), max_lr=0.3, total_steps=EPOCHS, cycle_momentum=False)),
    ("plateau/min/rel", lambda: S.ReduceLROnPlateau(sgd(), patience=2)),
    ("plateau/min/abs/cooldown/min_lr", lambda: S.ReduceLROnPlateau(sgd(), factor=0.5, patience=1, threshold=0.05,
                                                                   threshold_mode="abs", cooldown=2, min_lr=0.02)),
    ("plateau/max/rel", lambda: S.ReduceLROnPlateau(sgd(), mode="max", factor=0.5, patience=0, threshold=0.01)),
]


def momentum(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def sched_ref():
    lines = ["// schedRef holds each scheduler case's learning rate after construction",
             "// and after each of its steps (ReduceLROnPlateau: after each step on",
             "// plateauMetrics); a OneCycleLR case's \"/momentum\" entry holds the",
             "// optimizer's momentum (SGD's momentum, Adam's beta1) alike.",
             "var schedRef = map[string][]float64{"]
    for name, make in SCHED:
        sch = make()
        opt = sch.optimizer
        plateau = isinstance(sch, S.ReduceLROnPlateau)
        lrs = [] if plateau else [opt.param_groups[0]["lr"]]
        moms = [momentum(opt.param_groups[0])]
        for e in range(EPOCHS):
            opt.step()
            if plateau:
                sch.step(PLATEAU_METRICS[e])
            else:
                sch.step()
            lrs.append(opt.param_groups[0]["lr"])
            moms.append(momentum(opt.param_groups[0]))
        lines.append('\t"%s": {%s},' % (name, ", ".join(gofloat(v) for v in lrs)))
        if name.startswith("onecycle"):
            lines.append('\t"%s/momentum": {%s},' % (name, ", ".join(gofloat(v) for v in moms)))
    lines.append("}\n")
    return "\n".join(lines)


def main():
    decls = [
        "var optimP0 = []float64{" + ", ".join(gofloat(v) for v in P0) + "}\n",
        "var optimG = [][]float64{\n" + "".join("\t{" + ", ".join(gofloat(v) for v in g) + "},\n" for g in G) + "}\n",
        optim_ref(),
        "var plateauMetrics = []float64{" + ", ".join(gofloat(v) for v in PLATEAU_METRICS) + "}\n",
        sched_ref(),
    ]
    intro = ("// The optimizers' and schedulers' reference values, from\n"
             "// build/torchref/optim_ref.py.\n")
    write("nn/optim_torchref_test.go", "nn", intro, decls, "build/torchref/optim_ref.py")


if __name__ == "__main__":
    main()
