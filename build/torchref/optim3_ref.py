#!/usr/bin/python3
"""Reference values for nn's Rprop and ASGD, by PyTorch 1.13. Writes
nn/optim3_torchref_test.go:

    optim3Ref   each case's parameter after every step, from optimP0
                (optim_ref.py's start) with the gradients optim2G
                (optim2_ref.py's), in float64, float32 and bfloat16; the
                tests of optim2Ref (nn/optim_more_test.go) run these cases
                too (nn/optim_rprop_asgd_test.go adds them)
    optim3Ax    each ASGD case's state["ax"] after every step, by dtype
    optim3EtaMu each ASGD case's state["eta"] and state["mu"] after every
                step (float32 in torch whatever the parameter's dtype)

Run with /usr/bin/python3 build/torchref/optim3_ref.py (the system Python
that has torch). Output is deterministic.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from literals import gofloat, write  # noqa: E402
from optim_ref import P0  # noqa: E402
from optim2_ref import G, DTYPES  # noqa: E402

torch.set_num_threads(1)

O = torch.optim
# The names are the keys of optim3Cases in nn/optim_rprop_asgd_test.go.
OPTIM = [
    ("rprop", lambda p: O.Rprop([p])),
    ("rprop/etas/step_sizes", lambda p: O.Rprop([p], lr=0.02, etas=(0.3, 1.5), step_sizes=(0.005, 0.04))),
    ("rprop/maximize", lambda p: O.Rprop([p], lr=0.05, maximize=True)),
    ("asgd", lambda p: O.ASGD([p])),
    ("asgd/lambd/alpha/t0/wd", lambda p: O.ASGD([p], lr=0.05, lambd=0.5, alpha=0.6, t0=2, weight_decay=0.1)),
    ("asgd/maximize/t0", lambda p: O.ASGD([p], lr=0.02, t0=3.5, maximize=True)),
]


def row(vals):
    return "{" + ", ".join(gofloat(v) for v in vals) + "},"


def refs():
    par = ["// optim3Ref holds each case's parameter after every step, by dtype.",
           "var optim3Ref = map[string]map[string][][]float64{"]
    ax = ["// optim3Ax holds each ASGD case's ax after every step, by dtype.",
          "var optim3Ax = map[string]map[string][][]float64{"]
    etamu = ["// optim3EtaMu holds each ASGD case's eta and mu after every step.",
             "var optim3EtaMu = map[string][][2]float64{"]
    for name, make in OPTIM:
        asgd = name.startswith("asgd")
        par.append('\t"%s": {' % name)
        if asgd:
            ax.append('\t"%s": {' % name)
        for dt, dname in DTYPES:
            p = torch.tensor(P0, dtype=dt).reshape(2, 3).requires_grad_()
            opt = make(p)
            par.append('\t\t"%s": {' % dname)
            if asgd:
                ax.append('\t\t"%s": {' % dname)
            em = []
            for g in G:
                opt.zero_grad()
                p.grad = torch.tensor(g, dtype=dt).reshape(2, 3)
                opt.step()
                par.append("\t\t\t" + row(p.detach().double().flatten().tolist()))
                if asgd:
                    st = opt.state[p]
                    ax.append("\t\t\t" + row(st["ax"].double().flatten().tolist()))
                    em.append((float(st["eta"]), float(st["mu"])))
            par.append("\t\t},")
            if asgd:
                ax.append("\t\t},")
                if dname == "float64":
                    etamu.append('\t"%s": {%s},' % (name, ", ".join("{%s, %s}" % (gofloat(e), gofloat(m)) for e, m in em)))
        par.append("\t},")
        if asgd:
            ax.append("\t},")
    return ["\n".join(par + ["}\n"]), "\n".join(ax + ["}\n"]), "\n".join(etamu + ["}\n"])]


def main():
    intro = ("// Rprop's and ASGD's reference values, from\n"
             "// build/torchref/optim3_ref.py.\n")
    write("nn/optim3_torchref_test.go", "nn", intro, refs(), "build/torchref/optim3_ref.py")


if __name__ == "__main__":
    main()
