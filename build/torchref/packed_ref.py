#!/usr/bin/python3
"""Reference values for nn's packed sequences (nn/rnn_packed.go), by
PyTorch 1.13. Writes nn/rnn_packed_torchref_test.go:

    packedRef       per case of packedCases (nn/rnn_packed_test.go): the
                    packed output's data, its padded form
                    (pad_packed_sequence), the final states, and the
                    gradients of L = Σ out.data·u + Σ hn·v (+ Σ cn·w) with
                    respect to the padded input, the initial states and every
                    parameter
    packedOrderRef  per case: the batch sizes, then the sorted indices (empty
                    where torch's are None)

Every tensor is a function of arange, as in rnn_ref.py. Run with
/usr/bin/python3 build/torchref/packed_ref.py.
"""
import os
import sys

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from literals import floats, ints, write  # noqa: E402
from rnn_ref import seq, set_weights  # noqa: E402

torch.set_num_threads(1)
f64 = torch.float64

# name: (mode, input_size, hidden, steps, lengths, kwargs, initial states, enforce_sorted)
# The names are the keys of packedCases in nn/rnn_packed_test.go.
CASES = [
    ("lstm/unsorted/h0", "lstm", 3, 4, 5, [3, 5, 2], {}, True, False),
    ("lstm/l2/bidir/sorted", "lstm", 2, 3, 4, [4, 3, 3, 1], dict(num_layers=2, bidirectional=True), False, True),
    ("lstm/bidir/proj/batch_first/h0", "lstm", 3, 4, 4, [2, 4, 1], dict(bidirectional=True, proj_size=2, batch_first=True), True, False),
    ("gru/l2/bidir/ties/h0", "gru", 3, 4, 4, [2, 4, 4, 1], dict(num_layers=2, bidirectional=True), True, False),
    ("gru/l1/sorted", "gru", 2, 3, 3, [3, 3], {}, False, True),
    ("rnn/relu/bidir/h0", "rnn", 3, 4, 5, [1, 5, 3], dict(nonlinearity="relu", bidirectional=True), True, False),
    ("rnn/l2/nobias", "rnn", 3, 3, 4, [4, 2, 3], dict(num_layers=2, bias=False), False, False),
]


def case(name, mode, inp, hidden, steps, lengths, kw, with_h0, enforce):
    cls = dict(lstm=torch.nn.LSTM, gru=torch.nn.GRU, rnn=torch.nn.RNN)[mode]
    m = cls(inp, hidden, **kw).to(f64)
    set_weights(m)
    dirs = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1)
    batch = len(lengths)
    hsize = kw.get("proj_size", 0) or hidden
    bf = kw.get("batch_first", False)
    xshape = [batch, steps, inp] if bf else [steps, batch, inp]
    x = (seq(xshape, 0.5, 0.3) * 1.5).requires_grad_()
    inputs = [x]
    states = None
    if with_h0:
        h0 = (seq([layers * dirs, batch, hsize], 0.41, 1.0) * 0.5).requires_grad_()
        inputs.append(h0)
        states = h0
        if mode == "lstm":
            c0 = (seq([layers * dirs, batch, hidden], 0.29, 2.0) * 0.5).requires_grad_()
            inputs.append(c0)
            states = (h0, c0)
    p = pack_padded_sequence(x, torch.tensor(lengths), batch_first=bf, enforce_sorted=enforce)
    out, st = m(p, states)
    hn, cn = (st if mode == "lstm" else (st, None))
    padded, plens = pad_packed_sequence(out, batch_first=bf)
    assert plens.tolist() == lengths
    loss = (out.data * seq(list(out.data.shape), 0.23, 0.7)).sum() + (hn * seq(list(hn.shape), 0.31, 1.3)).sum()
    if cn is not None:
        loss = loss + (cn * seq(list(cn.shape), 0.17, 0.4)).sum()
    names = [n for n, _ in m.named_parameters()]
    grads = torch.autograd.grad(loss, inputs + [q for _, q in m.named_parameters()])
    entries = [("out", out.data), ("padded", padded), ("hn", hn)]
    if cn is not None:
        entries.append(("cn", cn))
    for n, g in zip(["x", "h0", "c0"][:len(inputs)] + names, grads):
        entries.append(("grad/" + n, g))
    lines = ['\t"%s": {' % name, '\t\tnames: []string{%s},' % ", ".join('"%s"' % n for n in names), "\t\tv: map[string][]float64{"]
    lines += ['\t\t\t"%s": %s,' % (k, floats(t)) for k, t in entries]
    lines += ["\t\t},", "\t},"]
    sorted_idx = [] if out.sorted_indices is None else out.sorted_indices.tolist()
    order = '\t"%s": {%s, %s},' % (name, ints(out.batch_sizes.tolist()), ints(sorted_idx))
    return lines, order


def main():
    lines = ["var packedRef = map[string]rnnRefCase{"]
    order = ["var packedOrderRef = map[string][2][]int{"]
    for c in CASES:
        a, b = case(*c)
        lines += a
        order.append(b)
    lines.append("}\n")
    order.append("}\n")
    intro = "// Packed sequences' reference values, from build/torchref/packed_ref.py.\n"
    write("nn/rnn_packed_torchref_test.go", "nn", intro, ["\n".join(lines), "\n".join(order)], "build/torchref/packed_ref.py")


if __name__ == "__main__":
    main()
