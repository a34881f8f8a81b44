#!/usr/bin/python3
"""Reference values for nn's RNN, LSTM and GRU, by PyTorch 1.13. Writes
nn/rnn_torchref_test.go:

    rnnRef    per case of rnnCases (nn/rnn_test.go): the output, the final
              states, the gradients of L = Σ out·u + Σ hn·v (+ Σ cn·w) with
              respect to the input, the initial states and every parameter,
              the gradients of Σ (∂L/∂x)² with respect to every parameter
              (second order), and the state-dict names
    rnnLMRef  an Embedding → LSTM → Linear language model: its logits, its
              cross-entropy loss and the gradients of the loss

Every tensor is a function of arange that the Go test builds the same way:
seq(shape, scale, shift) = sin(scale·i + shift); the k-th parameter in
state-dict order is 0.5·seq(shape, 0.37, 0.2 + 0.1·k). Run with
/usr/bin/python3 build/torchref/rnn_ref.py (the system Python that has
torch). Output is deterministic.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from literals import floats, write  # noqa: E402

torch.set_num_threads(1)
f64 = torch.float64


def seq(shape, scale, shift=0.0):
    n = 1
    for s in shape:
        n *= s
    return torch.sin(torch.arange(n, dtype=f64) * scale + shift).reshape(shape)


def set_weights(m, offset=0):
    with torch.no_grad():
        for k, (_, p) in enumerate(m.named_parameters()):
            p.copy_(seq(list(p.shape), 0.37, 0.2 + 0.1 * (k + offset)) * 0.5)


# name: (mode, input_size, hidden, seq, batch (0: unbatched), kwargs, initial states)
# The names are the keys of rnnCases in nn/rnn_test.go.
CASES = [
    ("lstm/l1", "lstm", 3, 4, 5, 2, {}, False),
    ("lstm/l2/h0", "lstm", 3, 4, 4, 2, dict(num_layers=2), True),
    ("lstm/bidir/batch_first/h0", "lstm", 3, 4, 4, 3, dict(bidirectional=True, batch_first=True), True),
    ("lstm/l2/bidir/nobias", "lstm", 2, 3, 4, 2, dict(num_layers=2, bidirectional=True, bias=False), False),
    ("lstm/l2/bidir/unbatched/h0", "lstm", 3, 2, 3, 0, dict(num_layers=2, bidirectional=True), True),
    ("gru/l1", "gru", 3, 4, 5, 2, {}, False),
    ("gru/l2/h0", "gru", 3, 4, 4, 2, dict(num_layers=2), True),
    ("gru/bidir/batch_first/h0", "gru", 3, 4, 4, 3, dict(bidirectional=True, batch_first=True), True),
    ("gru/l2/bidir/nobias", "gru", 2, 3, 4, 2, dict(num_layers=2, bidirectional=True, bias=False), False),
    ("gru/l2/bidir/unbatched/h0", "gru", 3, 2, 3, 0, dict(num_layers=2, bidirectional=True), True),
    ("lstm_cell/h0", "lstm_cell", 3, 4, 1, 2, {}, True),
    ("lstm_cell/nobias", "lstm_cell", 3, 4, 1, 2, dict(bias=False), False),
    ("lstm_cell/unbatched/h0", "lstm_cell", 3, 4, 1, 0, {}, True),
    ("gru_cell/h0", "gru_cell", 3, 4, 1, 2, {}, True),
    ("gru_cell/nobias", "gru_cell", 3, 4, 1, 2, dict(bias=False), False),
    ("gru_cell/unbatched/h0", "gru_cell", 3, 4, 1, 0, {}, True),
    ("rnn/l1", "rnn", 3, 4, 5, 2, {}, False),
    ("rnn/relu/l2/h0", "rnn", 3, 4, 4, 2, dict(nonlinearity="relu", num_layers=2), True),
    ("rnn/bidir/batch_first/h0", "rnn", 3, 4, 4, 3, dict(bidirectional=True, batch_first=True), True),
    ("rnn/relu/l2/bidir/nobias", "rnn", 2, 3, 4, 2, dict(nonlinearity="relu", num_layers=2, bidirectional=True, bias=False), False),
    ("rnn/l2/bidir/unbatched/h0", "rnn", 3, 2, 3, 0, dict(num_layers=2, bidirectional=True), True),
    ("rnn_cell/h0", "rnn_cell", 3, 4, 1, 2, {}, True),
    ("rnn_cell/relu/nobias", "rnn_cell", 3, 4, 1, 2, dict(nonlinearity="relu", bias=False), False),
    ("rnn_cell/relu/unbatched/h0", "rnn_cell", 3, 4, 1, 0, dict(nonlinearity="relu"), True),
]


def case(name, mode, inp, hidden, steps, batch, kw, with_h0):
    """A cell (steps 1) takes x of (batch, in) and states of (batch, hidden),
    without the seq dim and the layers' dim, and returns no output beside
    its states."""
    if mode.endswith("_cell"):
        return cell_case(name, mode, inp, hidden, batch, kw, with_h0)
    cls = dict(lstm=torch.nn.LSTM, gru=torch.nn.GRU, rnn=torch.nn.RNN)[mode]
    m = cls(inp, hidden, **kw).to(f64)
    set_weights(m)
    dirs = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1)
    if batch == 0:
        xshape, sshape = [steps, inp], [layers * dirs, hidden]
    elif kw.get("batch_first"):
        xshape, sshape = [batch, steps, inp], [layers * dirs, batch, hidden]
    else:
        xshape, sshape = [steps, batch, inp], [layers * dirs, batch, hidden]
    x = (seq(xshape, 0.5, 0.3) * 1.5).requires_grad_()
    inputs = [x]
    states = None
    if with_h0:
        h0 = (seq(sshape, 0.41, 1.0) * 0.5).requires_grad_()
        inputs.append(h0)
        states = h0
        if mode == "lstm":
            c0 = (seq(sshape, 0.29, 2.0) * 0.5).requires_grad_()
            inputs.append(c0)
            states = (h0, c0)
    out, st = m(x, states)
    hn, cn = (st if mode == "lstm" else (st, None))
    return finish(name, m, inputs, out, hn, cn)


def cell_case(name, mode, inp, hidden, batch, kw, with_h0):
    cls = dict(lstm_cell=torch.nn.LSTMCell, gru_cell=torch.nn.GRUCell, rnn_cell=torch.nn.RNNCell)[mode]
    m = cls(inp, hidden, **kw).to(f64)
    set_weights(m)
    xshape, sshape = ([batch, inp], [batch, hidden]) if batch else ([inp], [hidden])
    x = (seq(xshape, 0.5, 0.3) * 1.5).requires_grad_()
    inputs = [x]
    states = None
    if with_h0:
        h0 = (seq(sshape, 0.41, 1.0) * 0.5).requires_grad_()
        c0 = (seq(sshape, 0.29, 2.0) * 0.5).requires_grad_()
        inputs += [h0, c0] if mode == "lstm_cell" else [h0]
        states = (h0, c0) if mode == "lstm_cell" else h0
    st = m(x, states)
    hn, cn = (st if mode == "lstm_cell" else (st, None))
    return finish(name, m, inputs, None, hn, cn)


def finish(name, m, inputs, out, hn, cn):
    """The entries of L = Σ out·u + Σ hn·v (+ Σ cn·w) (no out for a cell)."""
    loss = (hn * seq(list(hn.shape), 0.31, 1.3)).sum()
    if out is not None:
        loss = (out * seq(list(out.shape), 0.23, 0.7)).sum() + loss
    if cn is not None:
        loss = loss + (cn * seq(list(cn.shape), 0.17, 0.4)).sum()
    names = [n for n, _ in m.named_parameters()]
    params = [p for _, p in m.named_parameters()]
    grads = torch.autograd.grad(loss, inputs + params, create_graph=True)
    gx = grads[0]
    grads2 = torch.autograd.grad((gx * gx).sum(), params)
    entries = ([] if out is None else [("out", out)]) + [("hn", hn)]
    if cn is not None:
        entries.append(("cn", cn))
    for n, g in zip(["x", "h0", "c0"][:len(inputs)] + names, grads):
        entries.append(("grad/" + n, g))
    for n, g in zip(names, grads2):
        entries.append(("grad2/" + n, g))
    assert list(m.state_dict()) == names
    lines = ['\t"%s": {' % name, '\t\tnames: []string{%s},' % ", ".join('"%s"' % n for n in names), "\t\tv: map[string][]float64{"]
    lines += ['\t\t\t"%s": %s,' % (k, floats(t)) for k, t in entries]
    lines += ["\t\t},", "\t},"]
    return lines


def lm():
    """Embedding(7, 4) → LSTM(4, 5, 2 layers, batch_first) → Linear(5, 7),
    cross-entropy over (2, 3) tokens. The parameters are numbered across the
    model in state-dict order, as in set_weights."""
    emb = torch.nn.Embedding(7, 4).to(f64)
    lstm = torch.nn.LSTM(4, 5, num_layers=2, batch_first=True).to(f64)
    lin = torch.nn.Linear(5, 7).to(f64)
    model = torch.nn.Sequential(emb, lstm, lin)  # named as Seq names them
    set_weights(model)
    tokens = torch.tensor([(3 * i + 1) % 7 for i in range(6)]).reshape(2, 3)
    target = torch.tensor([(5 * i + 2) % 7 for i in range(6)])
    out, _ = lstm(emb(tokens))
    logits = lin(out)
    loss = torch.nn.functional.cross_entropy(logits.reshape(6, 7), target)
    names = [n for n, _ in model.named_parameters()]
    grads = torch.autograd.grad(loss, [p for _, p in model.named_parameters()])
    lines = ["var rnnLMRef = map[string][]float64{",
             '\t"logits": %s,' % floats(logits), '\t"loss": %s,' % floats(loss.reshape(1))]
    lines += ['\t"grad/%s": %s,' % (n, floats(g)) for n, g in zip(names, grads)]
    lines.append("}\n")
    return "\n".join(lines)


def main():
    lines = ["var rnnRef = map[string]rnnRefCase{"]
    for c in CASES:
        lines += case(*c)
    lines.append("}\n")
    intro = ("// RNN's, LSTM's and GRU's reference values, from build/torchref/rnn_ref.py.\n")
    write("nn/rnn_torchref_test.go", "nn", intro, ["\n".join(lines), lm()], "build/torchref/rnn_ref.py")


if __name__ == "__main__":
    main()
