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


def main():
    decls = [
        "var optimP0 = []float64{" + ", ".join(gofloat(v) for v in P0) + "}\n",
        "var optimG = [][]float64{\n" + "".join("\t{" + ", ".join(gofloat(v) for v in g) + "},\n" for g in G) + "}\n",
        optim_ref(),
    ]
    intro = ("// The optimizers' and schedulers' reference values, from\n"
             "// build/torchref/optim_ref.py.\n")
    write("nn/optim_torchref_test.go", "nn", intro, decls, "build/torchref/optim_ref.py")


if __name__ == "__main__":
    main()
