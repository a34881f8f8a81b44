#!/usr/bin/python3
"""Reference values for nn's Embedding and EmbeddingBag with
scale_grad_by_freq and max_norm, by PyTorch 1.13. Writes
nn/embedding_freq_torchref_test.go:

    embW0        the weight every case starts from, [5, 3]
    embFreqRef   each case's inputs and options, its output, its weight
                 after the forward (max_norm renormalises rows in place)
                 and the weight's gradient of sum(out · c), c[k] =
                 (k mod 7)/4 - 1/2 over out's elements in order; read by
                 TestEmbeddingFreqMatchesTorch (nn/embedding_freq_test.go)

EmbeddingBag's scale_grad_by_freq is computed as torch's Embedding with
scale_grad_by_freq reduced by bags (its meaning), because torch 1.13's cpu
embedding_bag backward divides some rows by another index's count.

Run with /usr/bin/python3 build/torchref/embedfreq_ref.py (the system
Python that has torch). Output is deterministic.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from literals import gofloat, write  # noqa: E402

torch.set_num_threads(1)

W0 = [0.5, -1.25, 2.0, 1.5, 0.75, -0.25, -0.3, 0.2, 0.1, 2.5, -2.0, 1.0, 0.05, -0.4, 0.9]

# name, bag, mode, x, x shape, offsets (None: 2-D x), per-sample weights,
# padding_idx (None), max_norm (None), norm_type, scale_grad_by_freq,
# include_last_offset
CASES = [
    ("emb/scale", False, "", [1, 1, 3, 3, 2, 1], [2, 3], None, None, None, None, 2.0, True, False),
    ("emb/scale/padding", False, "", [1, 4, 3, 4, 4, 1, 0], [7], None, None, 4, None, 2.0, True, False),
    ("emb/scale/max_norm", False, "", [3, 1, 3, 0], [2, 2], None, None, None, 1.5, 2.0, True, False),
    ("emb/max_norm/norm_type1", False, "", [3, 1, 4], [3], None, None, None, 2.0, 1.0, False, False),
    ("bag/sum/scale", True, "sum", [1, 1, 2, 0, 1, 3, 3], [7], [0, 3, 5], None, None, None, 2.0, True, False),
    ("bag/mean/scale", True, "mean", [1, 1, 2, 0, 1, 3, 3], [7], [0, 3, 5], None, None, None, 2.0, True, False),
    ("bag/mean/scale/padding/2d", True, "mean", [1, 3, 1, 3, 2, 2], [2, 3], None, None, 3, None, 2.0, True, False),
    ("bag/sum/scale/psw", True, "sum", [4, 1, 4, 2, 1], [5], [0, 2], [0.5, -1.0, 2.0, 1.5, 0.25], None, None, 2.0, True, False),
    ("bag/sum/max_norm", True, "sum", [3, 1, 3, 0, 4], [5], [0, 2, 2], None, None, 1.0, 2.0, False, False),
    ("bag/mean/max_norm/norm_type3/scale", True, "mean", [3, 1, 3, 0, 4], [5], [0, 3], None, None, 1.2, 3.0, True, False),
    ("bag/max/max_norm", True, "max", [3, 1, 3, 0, 4, 2], [2, 3], None, None, None, 1.1, 2.0, False, False),
]


def coeffs(n):
    return torch.tensor([(k % 7) / 4 - 0.5 for k in range(n)], dtype=torch.float64)


def bags_of(xf, shape, offsets, include_last):
    if offsets is None:
        cols = shape[1]
        return [list(range(r * cols, (r + 1) * cols)) for r in range(shape[0])]
    bounds = list(offsets) + ([] if include_last else [len(xf)])
    return [list(range(bounds[i], bounds[i + 1])) for i in range(len(bounds) - 1)]


def run(case):
    name, bag, mode, x, shape, offsets, psw, pad, max_norm, norm_type, scale, include_last = case
    w = torch.tensor(W0, dtype=torch.float64).reshape(5, 3).requires_grad_()
    xt = torch.tensor(x).reshape(shape)
    if not bag:
        out = F.embedding(xt, w, padding_idx=pad, max_norm=max_norm, norm_type=norm_type, scale_grad_by_freq=scale)
    elif not scale:
        out = F.embedding_bag(xt, w, None if offsets is None else torch.tensor(offsets), max_norm=max_norm,
                              norm_type=norm_type, mode=mode, padding_idx=pad,
                              per_sample_weights=None if psw is None else torch.tensor(psw, dtype=torch.float64))
    else:
        if max_norm is not None:
            with torch.no_grad():
                torch.embedding_renorm_(w, xt, max_norm, norm_type)
        xf = xt.flatten()
        rows = F.embedding(xf, w, scale_grad_by_freq=True)
        if psw is not None:
            rows = rows * torch.tensor(psw, dtype=torch.float64).unsqueeze(1)
        outs = []
        for b in bags_of(x, shape, offsets, include_last):
            keep = [p for p in b if pad is None or x[p] != pad]
            if not keep:
                outs.append(torch.zeros(3, dtype=torch.float64))
                continue
            r = rows[keep]
            outs.append(r.sum(0) if mode == "sum" else r.mean(0))
        out = torch.stack(outs)
    (out * coeffs(out.numel()).reshape(out.shape)).sum().backward()
    return out, w.detach(), w.grad


def fl(v):
    return "[]float64{" + ", ".join(gofloat(a) for a in v) + "}"


def il(v):
    return "[]int64{" + ", ".join(str(a) for a in v) + "}"


def main():
    lines = ["var embW0 = " + fl(W0) + "\n",
             "// embFreqRef holds each case's inputs, options and torch's results.",
             "var embFreqRef = []embFreqCase{"]
    for case in CASES:
        name, bag, mode, x, shape, offsets, psw, pad, max_norm, norm_type, scale, include_last = case
        out, w, g = run(case)
        lines.append("\t{Name: %s, Bag: %s, Mode: %s, X: %s, Shape: []int{%s}, Offsets: %s, PSW: %s, Padding: %d, MaxNorm: %s, NormType: %s, Scale: %s," % (
            '"%s"' % name, str(bag).lower(), '"%s"' % mode, il(x), ", ".join(map(str, shape)),
            "nil" if offsets is None else il(offsets), "nil" if psw is None else fl(psw),
            -1 if pad is None else pad, gofloat(max_norm or 0), gofloat(norm_type), str(scale).lower()))
        lines.append("\t\tOut: %s, OutShape: []int{%s}," % (fl(out.detach().flatten().tolist()), ", ".join(map(str, out.shape))))
        lines.append("\t\tWeight: %s," % fl(w.flatten().tolist()))
        lines.append("\t\tGrad: %s}," % fl(g.flatten().tolist()))
    lines.append("}\n")
    intro = ("// Embedding's and EmbeddingBag's scale_grad_by_freq and max_norm\n"
             "// reference values, from build/torchref/embedfreq_ref.py.\n")
    write("nn/embedding_freq_torchref_test.go", "nn", intro, ["\n".join(lines)], "build/torchref/embedfreq_ref.py")


if __name__ == "__main__":
    main()
