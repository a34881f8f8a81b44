#!/usr/bin/python3
"""Checkpoint interoperability references for package nn, by PyTorch 1.13:
nn/interop_torchref_test.go loads them.

For each case this builds a torch module with a fixed seed and writes

    nn/testdata/interop/<case>.safetensors
        the module's state_dict, buffers included (running_mean,
        running_var, num_batches_tracked), exactly as torch names and
        shapes it: float tensors in F32, or F16 / BF16 for the cases
        that say so, integer buffers as torch holds them (I64);

and into one file of references, nn/testdata/interop/refs.safetensors,
the case's inputs and torch's outputs as F32 under "<case>/<key>"
(integer inputs as I64), with each case's configuration as a JSON string
in the __metadata__ under the case's name. The test loads each state
dict strictly into lathe's module, compares the forward outputs (eval
mode; BatchNorm also one training-mode step and the running statistics
after it), and checks that lathe's Save of the loaded module writes the
same names, dtypes, shapes and bytes as the torch file.

The files are assembled by hand (the safetensors package is not needed):
an 8-byte little-endian header length, the JSON header with names sorted,
the raw little-endian data. Run with /usr/bin/python3
build/torchref/interop.py from the repository root; output is
deterministic.
"""
import json
import os
import struct

import torch
import torch.nn as nn

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "nn", "testdata", "interop")

ST = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64", torch.float64: "F64"}


def raw_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype in (torch.float16, torch.bfloat16):
        # The bits as torch holds them (bf16 rounded to nearest even by .to).
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    if t.dtype == torch.float32:
        return t.numpy().astype("<f4").tobytes()
    if t.dtype == torch.int64:
        return t.numpy().astype("<i8").tobytes()
    if t.dtype == torch.float64:
        return t.numpy().astype("<f8").tobytes()
    raise ValueError(t.dtype)


def write_st(path, tensors, meta=None):
    header, data = {}, b""
    if meta:
        header["__metadata__"] = meta
    for name in sorted(tensors):
        t = tensors[name]
        raw = raw_bytes(t)
        header[name] = {"dtype": ST[t.dtype], "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    js = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    js += b" " * (-len(js) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js + data)


def randomize(m):
    """Weights away from their initial values (norms' near 1), and running
    statistics and step counts that a trained model would have."""
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("weight") and p.dim() == 1:  # a norm's scale
                p.copy_(1 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(0.5 * torch.randn_like(p))
        for mod in m.modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm):
                mod.running_mean.copy_(0.3 * torch.randn_like(mod.running_mean))
                mod.running_var.copy_(0.5 + torch.rand_like(mod.running_var))
                mod.num_batches_tracked.fill_(7)


refs, meta = {}, {}


def case(name, m, inputs, run, cfg, dtype=torch.float32, train_run=None, drop=(), as_1d=()):
    """Writes m's state_dict (in dtype) and the references of run (eval
    mode) and train_run (training mode, after which the buffers are
    recorded too). The names in drop are left out of the file, which
    torch's load_state_dict(strict=True) must still take: cfg["filled"]
    records the values torch gives them then. The 0-d tensors in as_1d
    are written with shape [1], which load_state_dict(strict=True) takes
    too (its backward compatibility with torch 0.3): cfg["as_1d"] lists
    them."""
    sd = {k: v.clone() for k, v in m.state_dict().items()}
    cfg = dict(cfg)
    cfg["names"] = [[k, ST[v.dtype], list(v.shape)] for k, v in sd.items()]  # torch's order
    if drop:
        sd = {k: v for k, v in sd.items() if k not in drop}
        m.load_state_dict(dict(sd), strict=True)  # a plain dict, as safetensors' load_file gives
        cfg["filled"] = {k: m.state_dict()[k].tolist() for k in drop}
    if as_1d:
        sd = {k: (v.reshape(1) if k in as_1d else v) for k, v in sd.items()}
        m.load_state_dict(dict(sd), strict=True)
        cfg["as_1d"] = list(as_1d)
    if dtype != torch.float32:
        # The checkpoint holds the weights in dtype, and torch's float32
        # model has the rounded values: what a cast load gives.
        sd = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in sd.items()}
        m.load_state_dict({k: v.to(torch.float32) if v.is_floating_point() else v for k, v in sd.items()})
    write_st(os.path.join(FOLDER, name + ".safetensors"), sd)
    for n in cfg["names"]:
        if n[0] in sd:
            n[1] = ST[sd[n[0]].dtype]
    for k, v in inputs.items():
        assert k not in ("out", "hn", "cn", "h", "c"), k  # the outputs' keys
        refs[name + "/" + k] = v
    m.eval()
    with torch.no_grad():
        for k, v in run(m).items():
            refs[name + "/" + k] = v.detach().to(torch.float32)
    if train_run is not None:
        m.train()
        with torch.no_grad():
            for k, v in train_run(m).items():
                refs[name + "/train." + k] = v.detach().to(torch.float32)
        for k, v in m.state_dict().items():
            if not k.endswith("weight") and not k.endswith("bias"):
                refs[name + "/train." + k] = v.detach().clone() if v.dtype == torch.int64 else v.detach().to(torch.float32)
    meta[name] = json.dumps(cfg, sort_keys=True)


def seed(n):
    torch.manual_seed(n)


def main():
    os.makedirs(FOLDER, exist_ok=True)
    for f in os.listdir(FOLDER):
        if f.endswith(".safetensors"):
            os.remove(os.path.join(FOLDER, f))

    # Linear, with and without a bias; F16 and BF16 checkpoints.
    for name, bias, dt in [("linear", True, torch.float32), ("linear_nobias", False, torch.float32),
                           ("linear_f16", True, torch.float16), ("linear_bf16", True, torch.bfloat16)]:
        seed(1)
        m = nn.Linear(5, 3, bias=bias)
        randomize(m)
        x = torch.randn(2, 4, 5)
        case(name, m, {"x": x}, lambda m, x=x: {"out": m(x)}, {"bias": bias}, dtype=dt)

    # Conv2d: a non-square kernel, stride, padding, dilation, groups.
    seed(2)
    m = nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
    randomize(m)
    x = torch.randn(2, 4, 7, 6)
    case("conv2d", m, {"x": x}, lambda m: {"out": m(x)}, {})
    seed(3)
    m = nn.Conv2d(3, 4, 3, padding="same", bias=False)
    randomize(m)
    x2 = torch.randn(1, 3, 5, 5)
    case("conv2d_nobias_same", m, {"x": x2}, lambda m: {"out": m(x2)}, {})
    seed(3)
    m = nn.Conv2d(2, 3, (2, 4), padding="same", dilation=(1, 2))  # torch pads the extra one after
    randomize(m)
    x4 = torch.randn(1, 2, 5, 6)
    case("conv2d_same_even", m, {"x": x4}, lambda m: {"out": m(x4)}, {})
    seed(4)
    m = nn.Conv2d(3, 4, 3, padding=1)
    randomize(m)
    x3 = torch.randn(1, 3, 4, 4)
    case("conv2d_bf16", m, {"x": x3}, lambda m: {"out": m(x3)}, {}, dtype=torch.bfloat16)

    # BatchNorm2d: eval with trained statistics; one training step.
    for name, mom, eps, dt in [("batchnorm2d", 0.1, 1e-5, torch.float32), ("batchnorm2d_mom_eps", 0.3, 1e-3, torch.float32),
                               ("batchnorm2d_f16", 0.1, 1e-5, torch.float16)]:
        seed(5)
        m = nn.BatchNorm2d(3, momentum=mom, eps=eps)
        randomize(m)
        x = torch.randn(4, 3, 3, 2)
        case(name, m, {"x": x}, lambda m, x=x: {"out": m(x)}, {"momentum": mom, "eps": eps}, dtype=dt,
             train_run=lambda m, x=x: {"out": m(x)})

    # A checkpoint without num_batches_tracked (converted from another
    # framework, or from torch before 0.4.1): torch's BatchNorm loads it
    # strictly, with the count 0, when the state dict has no version
    # metadata, as every safetensors file's has not.
    seed(5)
    m = nn.BatchNorm2d(3)
    randomize(m)
    x = torch.randn(4, 3, 3, 2)
    case("batchnorm2d_no_count", m, {"x": x}, lambda m: {"out": m(x)}, {}, train_run=lambda m: {"out": m(x)},
         drop=("num_batches_tracked",))

    # A checkpoint that holds the count with shape [1] (a converter that
    # has no 0-d tensors): torch loads it strictly into the 0-d buffer.
    seed(5)
    m = nn.BatchNorm2d(3)
    randomize(m)
    case("batchnorm2d_count_1d", m, {"x": x}, lambda m: {"out": m(x)}, {}, train_run=lambda m: {"out": m(x)},
         as_1d=("num_batches_tracked",))

    seed(6)
    m = nn.GroupNorm(2, 6, eps=1e-4)
    randomize(m)
    x = torch.randn(2, 6, 3, 3)
    case("groupnorm", m, {"x": x}, lambda m: {"out": m(x)}, {"groups": 2, "eps": 1e-4})

    seed(7)
    m = nn.LayerNorm([3, 4], eps=1e-6)
    randomize(m)
    x = torch.randn(2, 5, 3, 4)
    case("layernorm", m, {"x": x}, lambda m: {"out": m(x)}, {"eps": 1e-6})

    seed(8)
    m = nn.Embedding(10, 4)
    idx = torch.tensor([[0, 3, 9], [5, 5, 1]])
    case("embedding", m, {"idx": idx}, lambda m: {"out": m(idx)}, {})

    # Recurrent nets: layers, directions, bias, batch_first, nonlinearity.
    rnns = [
        ("rnn_l2_bidir", nn.RNN, dict(num_layers=2, bidirectional=True)),
        ("rnn_relu_nobias_bf", nn.RNN, dict(nonlinearity="relu", bias=False, batch_first=True)),
        ("lstm_l2_bidir_bf", nn.LSTM, dict(num_layers=2, bidirectional=True, batch_first=True)),
        ("lstm_nobias", nn.LSTM, dict(bias=False)),
        ("gru_l2_bidir", nn.GRU, dict(num_layers=2, bidirectional=True)),
        ("gru_nobias_bf", nn.GRU, dict(bias=False, batch_first=True)),
    ]
    for name, cls, kw in rnns:
        seed(9)
        m = cls(4, 3, **kw)
        randomize(m)
        x = torch.randn(2, 5, 4) if kw.get("batch_first") else torch.randn(5, 2, 4)
        D = 2 if kw.get("bidirectional") else 1
        h0 = 0.5 * torch.randn(kw.get("num_layers", 1) * D, 2, 3)
        inputs = {"x": x, "h0": h0}
        if cls is nn.LSTM:
            c0 = 0.5 * torch.randn(kw.get("num_layers", 1) * D, 2, 3)
            inputs["c0"] = c0

            def run(m, x=x, h0=h0, c0=c0):
                out, (hn, cn) = m(x, (h0, c0))
                return {"out": out, "hn": hn, "cn": cn}
        else:
            def run(m, x=x, h0=h0):
                out, hn = m(x, h0)
                return {"out": out, "hn": hn}
        cfg = {k: v for k, v in kw.items()}
        case(name, m, inputs, run, cfg)

    for name, cls in [("rnncell", nn.RNNCell), ("lstmcell", nn.LSTMCell), ("grucell", nn.GRUCell)]:
        seed(10)
        m = cls(4, 3)
        randomize(m)
        x, h = torch.randn(2, 4), 0.5 * torch.randn(2, 3)
        if cls is nn.LSTMCell:
            c = 0.5 * torch.randn(2, 3)
            case(name, m, {"x": x, "h0": h, "c0": c}, lambda m, x=x, h=h, c=c: dict(zip(["h", "c"], m(x, (h, c)))), {})
        else:
            case(name, m, {"x": x, "h0": h}, lambda m, x=x, h=h: {"h": m(x, h)}, {})

    # MultiheadAttention: packed in_proj, no bias, kdim/vdim, bias_kv.
    mhas = [
        ("mha", dict()),
        ("mha_nobias", dict(bias=False)),
        ("mha_kdim_vdim", dict(kdim=6, vdim=5)),
        ("mha_bias_kv", dict(add_bias_kv=True)),
    ]
    for name, kw in mhas:
        seed(11)
        m = nn.MultiheadAttention(8, 2, batch_first=True, **kw)
        randomize(m)
        q = torch.randn(2, 3, 8)
        k = torch.randn(2, 4, kw.get("kdim", 8))
        v = torch.randn(2, 4, kw.get("vdim", 8))
        case(name, m, {"q": q, "k": k, "v": v}, lambda m, q=q, k=k, v=v: {"out": m(q, k, v, need_weights=False)[0]}, kw)

    # Transformer layers, stacks and the whole model (eval mode).
    seed(12)
    m = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    randomize(m)
    x = torch.randn(2, 5, 8)
    case("encoder_layer", m, {"x": x}, lambda m: {"out": m(x)}, {"norm_first": False, "activation": "relu"})
    seed(13)
    m = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, activation="gelu", norm_first=True, layer_norm_eps=1e-6)
    randomize(m)
    xs = torch.randn(5, 2, 8)  # batch_first=False: lathe's SeqFirst
    case("encoder_layer_pre_gelu_seqfirst", m, {"x": xs}, lambda m: {"out": m(xs)},
         {"norm_first": True, "activation": "gelu", "layer_norm_eps": 1e-6})
    seed(14)
    m = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    randomize(m)
    tgt, mem = torch.randn(2, 4, 8), torch.randn(2, 5, 8)
    case("decoder_layer", m, {"tgt": tgt, "mem": mem}, lambda m: {"out": m(tgt, mem)}, {})
    seed(15)
    m = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True), 2,
                              norm=nn.LayerNorm(8), enable_nested_tensor=False)
    randomize(m)
    case("encoder", m, {"x": x}, lambda m: {"out": m(x)}, {"layers": 2})
    seed(16)
    m = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True), 2,
                              norm=nn.LayerNorm(8))
    randomize(m)
    case("decoder", m, {"tgt": tgt, "mem": mem}, lambda m: {"out": m(tgt, mem)}, {"layers": 2})
    seed(17)
    m = nn.Transformer(8, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16, dropout=0.0, batch_first=True)
    randomize(m)
    src = torch.randn(2, 5, 8)
    case("transformer", m, {"src": src, "tgt": tgt}, lambda m: {"out": m(src, tgt)}, {})

    # Sequential nesting, with a BatchNorm2d inside (its buffers under
    # "1.running_mean"), and a nested Sequential ("4.1.weight").
    seed(18)
    m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Sequential(nn.Flatten(), nn.Linear(16, 5), nn.GELU(approximate="tanh")), nn.LayerNorm(5))
    randomize(m)
    x = torch.randn(3, 3, 4, 4)
    case("sequential_nested", m, {"x": x}, lambda m: {"out": m(x)}, {}, train_run=lambda m: {"out": m(x)})

    # Layers without state: an empty state dict.
    seed(19)
    m = nn.Sequential(nn.AvgPool2d(2, stride=1, padding=1, count_include_pad=False),
                      nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
                      nn.AdaptiveAvgPool2d((3, 2)), nn.LeakyReLU(0.2), nn.SiLU(), nn.Tanh(), nn.Sigmoid(),
                      nn.Dropout(0.5), nn.GELU())
    x = torch.randn(2, 3, 4, 5)
    case("stateless", m, {"x": x}, lambda m: {"out": m(x)}, {})

    conv_layer_cases()
    norm_layer_cases()
    extra_layer_cases()

    write_st(os.path.join(FOLDER, "refs.safetensors"), refs, meta)


def grad_case(name, m, x):
    """One backward of sum(m(x)·r) for a fixed r (recorded as "<case>/r"),
    after case(): the gradients of x, the weight and the bias as
    "grad.x", "grad.weight", "grad.bias"."""
    x = x.clone().requires_grad_()
    m.zero_grad()
    with torch.enable_grad():
        out = m(x)
        r = torch.randn_like(out)
        (out * r).sum().backward()
    refs[name + "/r"] = r
    refs[name + "/grad.x"] = x.grad
    for k, p in m.named_parameters():
        refs[name + "/grad." + k] = p.grad.detach().clone()


def conv_layer_cases():
    """The convolution layers of any rank, transposed too, their padding
    modes, and PReLU: the forward on a batch and on one unbatched input
    ("xu", giving "out_unbatched"), and one backward (grad_case)."""

    def conv_case(name, seed_n, m, x, xu=None, cfg=None):
        seed(seed_n)
        randomize(m)
        inputs = {"x": x}
        if xu is not None:
            inputs["xu"] = xu

        def run(m):
            out = {"out": m(x)}
            if xu is not None:
                out["out_unbatched"] = m(xu)
            return out
        case(name, m, inputs, run, cfg or {})
        grad_case(name, m, x)

    seed(40)
    x = torch.randn(2, 4, 9)
    conv_case("conv1d", 41, nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2), x, x[1])
    seed(42)
    x = torch.randn(2, 3, 7)
    conv_case("conv1d_nobias_same_even", 43, nn.Conv1d(3, 2, 4, padding="same", bias=False), x)
    seed(44)
    x = torch.randn(2, 4, 5, 6, 3)
    conv_case("conv3d", 45, nn.Conv3d(4, 6, (2, 3, 1), stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2), x, x[0])
    seed(46)
    x = torch.randn(1, 2, 4, 3, 5)
    conv_case("conv3d_same", 47, nn.Conv3d(2, 3, (3, 2, 2), padding="same"), x)
    seed(48)
    x = torch.randn(2, 4, 5, 6)
    conv_case("conv2d_grad", 49, nn.Conv2d(4, 2, (2, 3), stride=(2, 1), padding=(0, 1), groups=2), x, x[1])

    # Transposed: weight [in, out/groups, k...], output_padding, and the
    # forward's output_size (which sets the output padding).
    seed(50)
    x = torch.randn(2, 4, 5)
    conv_case("convtranspose1d", 51, nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2), x, x[0])
    seed(52)
    x = torch.randn(2, 3, 4, 5)
    conv_case("convtranspose2d", 53, nn.ConvTranspose2d(3, 4, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(0, 2), dilation=(1, 2)),
              x, x[1])
    seed(54)
    x = torch.randn(1, 4, 3, 4, 3)
    conv_case("convtranspose3d", 55, nn.ConvTranspose3d(4, 2, (2, 2, 3), stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 1), groups=2),
              x, x[0])
    seed(56)
    m = nn.ConvTranspose2d(2, 2, 3, stride=2, bias=False)
    randomize(m)
    x = torch.randn(1, 2, 4, 4)
    case("convtranspose2d_nobias_size", m, {"x": x}, lambda m: {"out": m(x, output_size=[9, 10]), "out_unbatched": m(x[0], output_size=[2, 10, 9])},
         {"output_size": [9, 10]})

    # padding_mode: x padded by F.pad in that mode, then a convolution
    # without padding; 'same' pads the odd unit on the right. torch 1.13
    # pads circularly only batched inputs: those cases have no unbatched one.
    seed(57)
    x = torch.randn(2, 3, 5, 6)
    conv_case("conv2d_reflect", 58, nn.Conv2d(3, 4, 3, stride=(1, 2), padding=(1, 2), padding_mode="reflect"), x, x[1])
    seed(59)
    x = torch.randn(2, 2, 8)
    conv_case("conv1d_replicate_same", 60, nn.Conv1d(2, 3, 4, padding="same", dilation=1, padding_mode="replicate"), x, x[0])
    seed(61)
    x = torch.randn(1, 2, 4, 3, 5)
    conv_case("conv3d_circular", 62, nn.Conv3d(2, 2, (3, 1, 2), padding=(1, 0, 1), padding_mode="circular"), x)
    seed(63)
    x = torch.randn(1, 2, 4, 5)
    conv_case("conv2d_circular_same_even", 64, nn.Conv2d(2, 2, (2, 4), padding="same", dilation=(2, 1), padding_mode="circular", groups=2), x)

    # PReLU: a slope per channel (dim 1), or one for any input, 1-d and
    # 0-d included (torch 1.13 gives those no channel dim).
    seed(65)
    m = nn.PReLU(3)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([0.25, -0.5, 1.5]))
    x = torch.randn(2, 3, 4, 2)
    x2 = torch.randn(5, 3)
    case("prelu", m, {"x": x, "x2": x2}, lambda m: {"out": m(x), "out2": m(x2)}, {})
    grad_case("prelu", m, x)
    seed(66)
    m = nn.PReLU(init=0.1)
    x = torch.randn(2, 3, 4)
    x1, x0 = torch.randn(6), torch.tensor(-1.5)
    case("prelu_single", m, {"x": x, "x1": x1, "x0": x0}, lambda m: {"out": m(x), "out1": m(x1), "out0": m(x0)}, {"init": 0.1})
    grad_case("prelu_single", m, x)
def norm_layer_cases():
    """The normalisation layers' variants and Embedding's options, each
    named norm_*: BatchNorm1d/3d; in training mode one step, after which
    the buffers are recorded too."""
    def randomize(m):
        """As the global randomize, for layers without some of the
        parameters or buffers (affine=False, track_running_stats=False)
        and for InstanceNorm's."""
        with torch.no_grad():
            for name, p in m.named_parameters():
                p.copy_(1 + 0.2 * torch.randn_like(p) if name.endswith("weight") else 0.5 * torch.randn_like(p))
            for mod in m.modules():
                if isinstance(mod, nn.modules.batchnorm._NormBase) and mod.track_running_stats:
                    mod.running_mean.copy_(0.3 * torch.randn_like(mod.running_mean))
                    mod.running_var.copy_(0.5 + torch.rand_like(mod.running_var))
                    mod.num_batches_tracked.fill_(7)

    # BatchNorm1d over [N, C] and [N, C, L], BatchNorm3d over [N, C, D, H, W].
    for name, cls, shape in [("norm_bn1d_nc", nn.BatchNorm1d, (5, 3)), ("norm_bn1d_ncl", nn.BatchNorm1d, (4, 3, 5)),
                             ("norm_bn3d", nn.BatchNorm3d, (2, 3, 2, 3, 2))]:
        seed(30)
        m = cls(3, momentum=0.2)
        randomize(m)
        x = torch.randn(*shape)
        case(name, m, {"x": x}, lambda m, x=x: {"out": m(x)}, {"momentum": 0.2}, train_run=lambda m, x=x: {"out": m(x)})

    # affine=False (only the buffers), track_running_stats=False (no
    # buffers: the batch's statistics in eval too), both (an empty state
    # dict), and momentum=None (the cumulative average: two training steps,
    # the second weighted 1/9 after the checkpoint's 7 and the first's 1/8).
    for name, cls, shape, kw in [("norm_bn2d_noaffine", nn.BatchNorm2d, (4, 3, 3, 2), dict(affine=False)),
                                 ("norm_bn1d_nostats", nn.BatchNorm1d, (4, 3, 5), dict(track_running_stats=False)),
                                 ("norm_bn3d_bare", nn.BatchNorm3d, (2, 3, 2, 2, 3), dict(affine=False, track_running_stats=False)),
                                 ("norm_bn2d_cumulative", nn.BatchNorm2d, (4, 3, 3, 2), dict(momentum=None)),
                                 ("norm_bn1d_noaffine_cumulative", nn.BatchNorm1d, (6, 3), dict(affine=False, momentum=None))]:
        seed(31)
        m = cls(3, **kw)
        randomize(m)
        x, x2 = torch.randn(*shape), torch.randn(*shape)
        cfg = {k: v for k, v in kw.items() if k != "momentum"}
        cfg["cumulative"] = "momentum" in kw
        run = lambda m, x=x, x2=x2: {"out": (m(x), m(x2))[1]}
        case(name, m, {"x": x, "x2": x2}, run, cfg, train_run=run)

    seed(32)
    m = nn.GroupNorm(2, 6, affine=False, eps=1e-4)
    x = torch.randn(2, 6, 3, 3)
    case("norm_groupnorm_noaffine", m, {"x": x}, lambda m: {"out": m(x)}, {"eps": 1e-4, "affine": False})
    seed(33)
    m = nn.LayerNorm([3, 4], elementwise_affine=False)
    x = torch.randn(2, 5, 3, 4)
    case("norm_layernorm_noaffine", m, {"x": x}, lambda m: {"out": m(x)}, {"affine": False})

    # InstanceNorm1d/2d/3d: torch's defaults (no state), affine=True,
    # track_running_stats=True (running statistics averaged over the
    # samples; num_batches_tracked never moves), and single samples.
    for name, cls, shape, kw in [("norm_in1d", nn.InstanceNorm1d, (2, 3, 5), dict()),
                                 ("norm_in2d_affine_stats", nn.InstanceNorm2d, (2, 3, 3, 4), dict(affine=True, track_running_stats=True)),
                                 ("norm_in3d_stats", nn.InstanceNorm3d, (2, 3, 2, 2, 3), dict(track_running_stats=True, momentum=0.3)),
                                 ("norm_in1d_unbatched_affine", nn.InstanceNorm1d, (3, 6), dict(affine=True)),
                                 ("norm_in2d_unbatched_stats", nn.InstanceNorm2d, (3, 4, 4), dict(track_running_stats=True, affine=True))]:
        seed(34)
        m = cls(3, **kw)
        randomize(m)
        x = torch.randn(*shape)
        case(name, m, {"x": x}, lambda m, x=x: {"out": m(x)}, kw, train_run=lambda m, x=x: {"out": m(x)})

    # Embedding's padding_idx (negative: from the end): the row is looked
    # up as the checkpoint holds it, and gets no gradient ("wgrad", the
    # weight's gradient of sum(out * u)).
    seed(35)
    m = nn.Embedding(10, 4, padding_idx=-2)
    with torch.no_grad():
        m.weight[8] = torch.randn(4)  # a trained checkpoint's padding row need not be zeros
    idx = torch.tensor([[8, 3, 1], [5, 8, 3]])
    u = torch.randn(2, 3, 4)
    (m(idx) * u).sum().backward()
    wgrad = m.weight.grad.clone()
    m.weight.grad = None
    case("norm_embedding_pad", m, {"idx": idx, "u": u, "wgrad": wgrad}, lambda m: {"out": m(idx)}, {"padding_idx": -2})

    # max_norm (with the 2-norm, and the 1-norm with a padding row): the
    # rows looked up are renormalised in the weight first ("weight_after"),
    # the others left as they are.
    for name, kw in [("norm_embedding_maxnorm", dict(max_norm=1.5)),
                     ("norm_embedding_maxnorm_p1_pad", dict(max_norm=1.0, norm_type=1.0, padding_idx=0))]:
        seed(36)
        m = nn.Embedding(10, 4, **kw)
        idx = torch.tensor([[0, 3, 9, 3], [5, 5, 1, 0]])
        case(name, m, {"idx": idx}, lambda m, idx=idx: {"out": m(idx), "weight_after": m.weight.clone()}, kw)

    # register_buffer(persistent=False): the state dict leaves inv_freq
    # out, and lathe's module (Base.RegisterNonPersistentBuffer) loads it
    # strictly and saves it back without it.
    class Freq(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 3)
            self.register_buffer("scale", torch.tensor([1.0, 2.0, 3.0]))
            self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, 4, 2).float() / 4)), persistent=False)

        def forward(self, x):
            return self.proj(x) * self.scale + self.inv_freq.sum()

    seed(37)
    m = Freq()
    randomize(m)
    x = torch.randn(2, 4)
    case("norm_nonpersistent", m, {"x": x}, lambda m: {"out": m(x)}, {})



def extra_layer_cases():
    """LSTM with proj_size, Bilinear, and Identity, Flatten and Unflatten
    (nn/interop_extras_test.go): the forward and one backward of
    sum(out·r), whose gradients of the inputs and the parameters are
    recorded as "grad.<input>" and "grad.<parameter>"."""

    def with_grads(name, m, inputs, run):
        """run(m, inputs) gives the outputs; the first is "out"."""
        ins = {k: v.clone().requires_grad_() for k, v in inputs.items()}
        m.zero_grad()
        with torch.enable_grad():
            out = run(m, ins)["out"]
            r = torch.randn_like(out)
            (out * r).sum().backward()
        refs[name + "/r"] = r
        for k, v in ins.items():
            refs[name + "/grad." + k] = v.grad
        for k, p in m.named_parameters():
            refs[name + "/grad." + k] = p.grad.detach().clone()

    # LSTM with a projection: one layer, two bidirectional layers
    # (batch first), unbatched.
    for name, kw in [("lstm_proj", dict(proj_size=2)),
                     ("lstm_proj_l2_bidir_bf", dict(proj_size=2, num_layers=2, bidirectional=True, batch_first=True)),
                     ("lstm_proj_nobias", dict(proj_size=1, bias=False))]:
        seed(30)
        m = nn.LSTM(4, 3, **kw)
        randomize(m)
        L, D = kw.get("num_layers", 1), 2 if kw.get("bidirectional") else 1
        x = torch.randn(2, 5, 4) if kw.get("batch_first") else torch.randn(5, 2, 4)
        h0 = 0.5 * torch.randn(L * D, 2, kw["proj_size"])
        c0 = 0.5 * torch.randn(L * D, 2, 3)
        xu = torch.randn(3, 4)

        def run(m, ins):
            out, (hn, cn) = m(ins["x"], (ins["h0"], ins["c0"]))
            return {"out": out, "hn": hn, "cn": cn}

        def run_all(m, x=x, h0=h0, c0=c0, xu=xu):
            res = run(m, {"x": x, "h0": h0, "c0": c0})
            out, (hn, cn) = m(xu)
            res.update({"out_unbatched": out, "hn_unbatched": hn, "cn_unbatched": cn})
            return res
        case(name, m, {"x": x, "h0": h0, "c0": c0, "xu": xu}, run_all, dict(kw))
        with_grads(name, m, {"x": x, "h0": h0, "c0": c0}, run)

    # Bilinear, with and without a bias; a batch of [2, 3] rows.
    for name, bias in [("bilinear", True), ("bilinear_nobias", False)]:
        seed(31)
        m = nn.Bilinear(4, 3, 5, bias=bias)
        randomize(m)
        x1, x2 = torch.randn(2, 3, 4), torch.randn(2, 3, 3)
        x1u, x2u = torch.randn(4), torch.randn(3)

        def run(m, ins):
            return {"out": m(ins["x1"], ins["x2"])}
        case(name, m, {"x1": x1, "x2": x2, "x1u": x1u, "x2u": x2u},
             lambda m, x1=x1, x2=x2, x1u=x1u, x2u=x2u: {"out": m(x1, x2), "out_unbatched": m(x1u, x2u)}, {"bias": bias})
        with_grads(name, m, {"x1": x1, "x2": x2}, run)

    # Identity, Flatten(start_dim, end_dim) and Unflatten around a Linear.
    seed(32)
    m = nn.Sequential(nn.Identity(), nn.Flatten(0, 1), nn.Linear(5, 6), nn.Unflatten(1, (2, -1)), nn.Flatten(-2), nn.Identity(54),
                      nn.Unflatten(0, (2, 3)), nn.Flatten())
    randomize(m)
    x = torch.randn(2, 3, 5)

    def run(m, ins):
        return {"out": m(ins["x"])}
    case("shape_modules", m, {"x": x}, lambda m, x=x: {"out": m(x)}, {})
    with_grads("shape_modules", m, {"x": x}, run)

    # EmbeddingBag: sum with offsets (an empty bag) and per-sample
    # weights; mean of a 2-D input with a padding row (one bag all
    # padding); max with include_last_offset (entries past the last
    # offset left out) and an empty bag. "grad.psw" is the per-sample
    # weights' gradient.
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0])
    bags = [
        ("embbag_sum_psw", dict(mode="sum"), idx, torch.tensor([0, 3, 3, 7]), True),
        ("embbag_mean_pad_2d", dict(mode="mean", padding_idx=2), torch.tensor([[1, 2, 4], [2, 2, 2], [4, 2, 0]]), None, False),
        # Where the last offset is below the input's length, torch 1.13's
        # max mode corrupts the heap and its mean divides the last bag's
        # sum by the count to the input's end: only sum leaves the
        # entries after it out consistently (lathe does in every mode).
        ("embbag_max_last_offset", dict(mode="max", include_last_offset=True), idx, torch.tensor([0, 2, 2, 6, 9]), False),
        ("embbag_sum_last_offset", dict(mode="sum", include_last_offset=True), idx, torch.tensor([0, 2, 2, 6, 8]), False),
        ("embbag_sum_pad_psw", dict(mode="sum", padding_idx=-1), idx, torch.tensor([0, 5]), True),
    ]
    for name, kw, ix, off, psw in bags:
        seed(33)
        m = nn.EmbeddingBag(10, 3, **kw)
        randomize(m)
        inputs = {"idx": ix}
        if off is not None:
            inputs["offsets"] = off
        if psw:
            inputs["psw"] = torch.randn(ix.shape)

        def run(m, ins):
            return {"out": m(ins["idx"], ins.get("offsets"), per_sample_weights=ins.get("psw"))}
        case(name, m, inputs, lambda m, ins=inputs: run(m, ins), dict(kw))
        ins = dict(inputs)
        m.zero_grad()
        p = ins.get("psw")
        if p is not None:
            p = p.clone().requires_grad_()
        with torch.enable_grad():
            out = m(ins["idx"], ins.get("offsets"), per_sample_weights=p)
            r = torch.randn_like(out)
            (out * r).sum().backward()
        refs[name + "/r"] = r
        refs[name + "/grad.weight"] = m.weight.grad.detach().clone()
        if p is not None:
            refs[name + "/grad.psw"] = p.grad


if __name__ == "__main__":
    main()

