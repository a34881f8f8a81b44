#!/usr/bin/python3
"""Reference data for nn's transformer layers, by PyTorch 1.13. Writes one
safetensors file per case to nn/testdata/transformer/, which
nn/transformer_torchref_test.go loads:

    <torch's state-dict names>  the module's weights (float64), so that
                                nn.Load reads them into lathe's module
    ref.x, ref.memory, ...      the inputs (and ref.key, ref.value)
    ref.attn_mask, ...          the masks, under torch's argument names
    ref.u, ref.uw               the loss weights: L = Σ out·u (+ Σ weights·uw)
    ref.out, ref.weights        torch's output (and attention weights)
    ref.grad.<name>             ∂L/∂ every parameter and every float input

and the case's configuration as string __metadata__ (kind, norm_first,
activation, causal, need_weights, ...). The modules run in training mode
with dropout 0, so that torch takes its composite path, as lathe does.

Torch 1.13 has neither RMSNorm nor rotary embeddings: those cases are
written here from their formulas (torch 2.4's nn.RMSNorm; rotary as
GPT-NeoX and HF's LLaMA rotate halves). A causal case gives torch
generate_square_subsequent_mask and lathe its Causal flag.

The files are assembled by hand (the safetensors package is not needed):
an 8-byte little-endian header length, the JSON header with names sorted,
the raw little-endian data. Run with /usr/bin/python3
build/torchref/transformer_ref.py (gen.py runs it too); output is
deterministic. With --bench it times instead torch's encoder layer forward
and backward on one thread at the shapes of nn's
BenchmarkTransformerEncoderLayer.
"""
import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn.functional as F

f64 = torch.float64
B, L, S, E, H, FF = 2, 5, 4, 8, 2, 16
D = E // H
FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "nn", "testdata", "transformer")


def write_st(path, tensors, meta):
    header, data = {"__metadata__": meta}, b""
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        if t.dtype == torch.bool:
            raw, dt = t.numpy().astype("u1").tobytes(), "BOOL"
        else:
            raw, dt = t.to(f64).numpy().astype("<f8").tobytes(), "F64"
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    js = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    js += b" " * (-len(js) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js + data)


def set_weights(m):
    """Weights of about the scale training gives; norms' near 1."""
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(0.4 * torch.randn_like(p))


def bool_mask(shape):
    """True (masked) at about a third of the places, never in column 0, so
    that every query keeps a key."""
    m = torch.rand(shape) < 0.35
    m[..., 0] = False
    return m


def float_mask(shape):
    m = 0.5 * torch.randn(shape, dtype=f64)
    m[bool_mask(shape)] = -math.inf
    return m


def padding(s):
    """Batch 1's last two keys are padding."""
    m = torch.zeros(B, s, dtype=torch.bool)
    m[1, -2:] = True
    return m


def causal(n):
    return torch.nn.Transformer.generate_square_subsequent_mask(n).to(f64)


def rotary_tables(n, dim, offset, base):
    inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=f64) / dim)
    ang = torch.arange(offset, offset + n, dtype=f64)[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], -1)
    return ang.cos(), ang.sin()


def rotate(x, offset, base):
    cos, sin = rotary_tables(x.shape[-2], x.shape[-1], offset, base)
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos + rot * sin


def mha_rotary(m, x, base, is_causal):
    """torch's MultiheadAttention with q and k rotated after the projection."""
    q, k, v = F.linear(x, m.in_proj_weight, m.in_proj_bias).chunk(3, -1)
    q, k, v = [t.reshape(B, L, H, D).transpose(1, 2) for t in (q, k, v)]
    q, k = rotate(q, 0, base), rotate(k, 0, base)
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    if is_causal:
        scores = scores + causal(L)
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, L, E)
    return m.out_proj(out)


class RMSNorm(torch.nn.Module):
    """torch 2.4's nn.RMSNorm: x / sqrt(mean(x²) + eps) · weight, eps the
    dtype's machine epsilon when None."""

    def __init__(self, shape, eps=None):
        super().__init__()
        self.shape, self.eps = tuple(shape), eps
        self.weight = torch.nn.Parameter(torch.ones(self.shape, dtype=f64))

    def forward(self, x):
        dims = tuple(range(-len(self.shape), 0))
        eps = torch.finfo(x.dtype).eps if self.eps is None else self.eps
        return x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps) * self.weight


def run_stack(kind, cfg, meta, inputs):
    """TransformerEncoder, TransformerDecoder (num_layers copies of a layer
    and an optional final LayerNorm) or nn.Transformer, in the layout of
    cfg's seq_first. Returns the module and its output."""
    n, seq_first, norm_first = cfg.get("num_layers", 2), cfg.get("seq_first", False), cfg.get("norm_first", False)
    act = cfg.get("activation", "relu")
    meta.update(num_layers=str(n), seq_first=str(int(seq_first)), norm_first=str(int(norm_first)), activation=act,
                eps=repr(1e-5), norm=str(int(cfg.get("norm", True))))

    def seq(t, name):
        shape = (t, B, E) if seq_first else (B, t, E)
        inputs[name] = torch.randn(shape, dtype=f64, requires_grad=True)
        return inputs[name]
    masks = cfg.get("masks", {})
    layer_args = (E, H, FF, 0.0, act)
    layer_kw = dict(batch_first=not seq_first, norm_first=norm_first, dtype=f64)
    norm = torch.nn.LayerNorm(E, dtype=f64) if cfg.get("norm", True) else None
    if kind == "encoder_stack":
        m = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(*layer_args, **layer_kw), n, norm,
                                        enable_nested_tensor=False)
        mask = masks.get("mask")
        if cfg.get("causal"):
            meta["causal"] = "1"
            mask = causal(L)
        src = seq(L, "x")
        set_weights(m)
        out = m(src, mask=mask, src_key_padding_mask=masks.get("src_key_padding_mask"))
    elif kind == "decoder_stack":
        m = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(*layer_args, **layer_kw), n, norm)
        tgt_mask = masks.get("tgt_mask")
        if cfg.get("causal"):
            meta["causal"] = "1"
            tgt_mask = causal(L)
        tgt, memory = seq(L, "x"), seq(S, "memory")
        set_weights(m)
        out = m(tgt, memory, tgt_mask=tgt_mask, memory_mask=masks.get("memory_mask"),
                tgt_key_padding_mask=masks.get("tgt_key_padding_mask"),
                memory_key_padding_mask=masks.get("memory_key_padding_mask"))
    else:
        m = torch.nn.Transformer(E, H, n, cfg.get("num_decoder_layers", n), FF, 0.0, act,
                                 batch_first=not seq_first, norm_first=norm_first, dtype=f64)
        meta["num_decoder_layers"] = str(cfg.get("num_decoder_layers", n))
        tgt_mask = masks.get("tgt_mask")
        if cfg.get("square_mask"):  # lathe makes it with GenerateSquareSubsequentMask
            meta["square_mask"] = "1"
            tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(S)
        src, tgt = seq(L, "x"), seq(S, "tgt")
        set_weights(m)
        out = m(src, tgt, src_mask=masks.get("src_mask"), tgt_mask=tgt_mask, memory_mask=masks.get("memory_mask"),
                src_key_padding_mask=masks.get("src_key_padding_mask"),
                tgt_key_padding_mask=masks.get("tgt_key_padding_mask"),
                memory_key_padding_mask=masks.get("memory_key_padding_mask"))
    return m, out


def run_case(name, seed, kind, **cfg):
    torch.manual_seed(seed)
    meta = {"kind": kind, "d_model": str(E), "nhead": str(H), "dim_feedforward": str(FF)}
    inputs, masks = {}, {}
    x = torch.randn(B, L, E, dtype=f64, requires_grad=True)
    inputs["x"] = x
    weights = None
    if kind == "encoder":
        m = torch.nn.TransformerEncoderLayer(E, H, FF, 0.0, cfg["activation"], layer_norm_eps=cfg.get("eps", 1e-5),
                                             batch_first=True, norm_first=cfg["norm_first"], dtype=f64)
        meta.update(norm_first=str(int(cfg["norm_first"])), activation=cfg["activation"], eps=repr(cfg.get("eps", 1e-5)))
        masks = cfg.get("masks", {})
        src_mask = masks.get("src_mask")
        if cfg.get("causal"):
            meta["causal"] = "1"
            src_mask = causal(L)
        set_weights(m)
        out = m(x, src_mask=src_mask, src_key_padding_mask=masks.get("src_key_padding_mask"))
    elif kind == "decoder":
        m = torch.nn.TransformerDecoderLayer(E, H, FF, 0.0, cfg["activation"], batch_first=True,
                                             norm_first=cfg["norm_first"], dtype=f64)
        meta.update(norm_first=str(int(cfg["norm_first"])), activation=cfg["activation"], eps=repr(1e-5))
        memory = torch.randn(B, S, E, dtype=f64, requires_grad=True)
        inputs["memory"] = memory
        masks = cfg.get("masks", {})
        tgt_mask = masks.get("tgt_mask")
        if cfg.get("causal"):
            meta["causal"] = "1"
            tgt_mask = causal(L)
        set_weights(m)
        out = m(x, memory, tgt_mask=tgt_mask, memory_mask=masks.get("memory_mask"),
                tgt_key_padding_mask=masks.get("tgt_key_padding_mask"),
                memory_key_padding_mask=masks.get("memory_key_padding_mask"))
    elif kind == "mha":
        kdim, vdim, seq_first = cfg.get("kdim", E), cfg.get("vdim", E), cfg.get("seq_first", False)
        m = torch.nn.MultiheadAttention(E, H, batch_first=not seq_first, kdim=kdim, vdim=vdim,
                                        add_bias_kv=cfg.get("add_bias_kv", False),
                                        add_zero_attn=cfg.get("add_zero_attn", False), dtype=f64)
        for k in ("kdim", "vdim", "seq_first", "add_bias_kv", "add_zero_attn"):  # only where given: older cases keep their bytes
            if k in cfg:
                meta[k] = str(int(cfg[k]))

        def seq(n, d):  # an input of n positions and d features in the module's layout
            shape = (n, B, d) if seq_first else (B, n, d)
            return torch.randn(shape, dtype=f64, requires_grad=True)
        if seq_first:
            x = inputs["x"] = seq(L, E)
        key = value = x
        if cfg.get("cross"):
            key = seq(S, kdim)
            inputs["key"] = key
            value = key
            if cfg.get("distinct_value"):
                value = seq(S, vdim)
                inputs["value"] = value
        need = cfg.get("need_weights", "none")
        meta["need_weights"] = need
        masks = cfg.get("masks", {})
        attn_mask = masks.get("attn_mask")
        if cfg.get("causal"):
            meta["causal"] = "1"
            attn_mask = causal(L)
        set_weights(m)
        out, weights = m(x, key, value, key_padding_mask=masks.get("key_padding_mask"), need_weights=need != "none",
                         attn_mask=attn_mask, average_attn_weights=need == "avg")
    elif kind in ("encoder_stack", "decoder_stack", "transformer"):
        m, out = run_stack(kind, cfg, meta, inputs)
        masks = cfg.get("masks", {})
    elif kind == "mha_rotary":
        m = torch.nn.MultiheadAttention(E, H, batch_first=True, dtype=f64)
        meta.update(rotary_base=repr(cfg["base"]), causal=str(int(cfg["causal"])))
        set_weights(m)
        out = mha_rotary(m, x, cfg["base"], cfg["causal"])
    elif kind == "rms_norm":
        m = RMSNorm(cfg["shape"], cfg.get("eps"))
        meta.update(shape=",".join(map(str, cfg["shape"])), eps=repr(cfg.get("eps") or 0.0))
        set_weights(m)
        out = m(x)
    u = torch.randn(out.shape, dtype=f64)
    loss = (out * u).sum()
    refs = {"u": u, "out": out}
    if weights is not None:
        uw = torch.randn(weights.shape, dtype=f64)
        loss = loss + (weights * uw).sum()
        refs.update(uw=uw, weights=weights)
    params = dict(m.named_parameters())
    grads = torch.autograd.grad(loss, list(params.values()) + list(inputs.values()))
    tensors = {n: p for n, p in params.items()}
    for n, g in zip(list(params) + list(inputs), grads):
        tensors["ref.grad." + n] = g
    for n, t in list(inputs.items()) + list(masks.items()) + list(refs.items()):
        tensors["ref." + n] = t
    write_st(os.path.join(FOLDER, name.replace("/", "_") + ".safetensors"), tensors, meta)
    return name


def cases():
    torch.manual_seed(1000)  # the masks
    kpm = padding(L)
    yield "encoder/post/relu", "encoder", dict(norm_first=False, activation="relu")
    yield "encoder/pre/gelu", "encoder", dict(norm_first=True, activation="gelu", eps=1e-6)
    yield "encoder/post/gelu/src_mask_bool", "encoder", dict(norm_first=False, activation="gelu",
                                                             masks=dict(src_mask=bool_mask((L, L))))
    yield "encoder/pre/relu/src_mask_float_3d", "encoder", dict(norm_first=True, activation="relu",
                                                                masks=dict(src_mask=float_mask((B * H, L, L))))
    yield "encoder/post/relu/key_padding", "encoder", dict(norm_first=False, activation="relu",
                                                          masks=dict(src_key_padding_mask=kpm))
    yield "encoder/pre/relu/causal", "encoder", dict(norm_first=True, activation="relu", causal=True)
    yield "encoder/post/gelu/causal/key_padding", "encoder", dict(norm_first=False, activation="gelu", causal=True,
                                                                 masks=dict(src_key_padding_mask=kpm))
    yield "encoder/pre/gelu/src_mask_float/key_padding", "encoder", dict(
        norm_first=True, activation="gelu", masks=dict(src_mask=float_mask((L, L)), src_key_padding_mask=kpm))
    yield "encoder/post/relu/src_mask_bool_3d/key_padding", "encoder", dict(
        norm_first=False, activation="relu", masks=dict(src_mask=bool_mask((B * H, L, L)), src_key_padding_mask=kpm))
    yield "decoder/post/relu/causal/memory_key_padding", "decoder", dict(
        norm_first=False, activation="relu", causal=True, masks=dict(memory_key_padding_mask=padding(S)))
    yield "decoder/pre/gelu/masks", "decoder", dict(
        norm_first=True, activation="gelu",
        masks=dict(tgt_mask=bool_mask((B * H, L, L)), memory_mask=float_mask((L, S)), tgt_key_padding_mask=kpm))
    yield "mha/self", "mha", {}
    yield "mha/self/bool_mask/weights_avg", "mha", dict(need_weights="avg", masks=dict(attn_mask=bool_mask((L, L))))
    yield "mha/cross/key_padding/weights_per_head", "mha", dict(cross=True, need_weights="per_head",
                                                              masks=dict(key_padding_mask=padding(S)))
    yield "mha/cross/distinct_value/float_mask_3d", "mha", dict(cross=True, distinct_value=True,
                                                              masks=dict(attn_mask=float_mask((B * H, L, S))))
    yield "mha/cross/float_mask/key_padding/weights_avg", "mha", dict(
        cross=True, need_weights="avg", masks=dict(attn_mask=float_mask((L, S)), key_padding_mask=padding(S)))
    yield "mha_rotary/causal", "mha_rotary", dict(base=10000.0, causal=True)
    yield "mha_rotary/base100", "mha_rotary", dict(base=100.0, causal=False)
    yield "rms_norm/default_eps", "rms_norm", dict(shape=[E])
    yield "rms_norm/two_dims", "rms_norm", dict(shape=[L, E], eps=1e-3)
    # MultiheadAttention's options
    yield "mha/kdim_vdim/seq_first/float_mask/key_padding/weights_avg", "mha", dict(
        cross=True, distinct_value=True, kdim=6, vdim=5, seq_first=True, need_weights="avg",
        masks=dict(attn_mask=float_mask((L, S)), key_padding_mask=padding(S)))
    yield "mha/kdim_vdim_equal/bias_kv", "mha", dict(cross=True, kdim=6, vdim=6, add_bias_kv=True)
    yield "mha/bias_kv/zero_attn/bool_mask_3d/key_padding/weights_per_head", "mha", dict(
        cross=True, add_bias_kv=True, add_zero_attn=True, need_weights="per_head",
        masks=dict(attn_mask=bool_mask((B * H, L, S)), key_padding_mask=padding(S)))
    yield "mha/self/bias_kv/causal", "mha", dict(add_bias_kv=True, causal=True)
    yield "mha/self/zero_attn/seq_first/key_padding", "mha", dict(add_zero_attn=True, seq_first=True,
                                                                masks=dict(key_padding_mask=kpm))
    # the stacks and nn.Transformer
    yield "encoder_stack/post/norm/causal/key_padding", "encoder_stack", dict(
        num_layers=3, causal=True, masks=dict(src_key_padding_mask=kpm))
    yield "encoder_stack/pre/gelu/no_norm/mask_float_3d/seq_first", "encoder_stack", dict(
        norm_first=True, activation="gelu", norm=False, seq_first=True, masks=dict(mask=float_mask((B * H, L, L))))
    yield "decoder_stack/post/norm/masks", "decoder_stack", dict(masks=dict(
        tgt_mask=bool_mask((L, L)), memory_mask=float_mask((L, S)), tgt_key_padding_mask=kpm,
        memory_key_padding_mask=padding(S)))
    yield "decoder_stack/pre/causal/seq_first/memory_key_padding", "decoder_stack", dict(
        norm_first=True, causal=True, seq_first=True, masks=dict(memory_key_padding_mask=padding(S)))
    yield "transformer/post/square_mask/key_padding", "transformer", dict(
        num_layers=2, num_decoder_layers=3, square_mask=True,
        masks=dict(src_key_padding_mask=kpm, memory_key_padding_mask=kpm))
    yield "transformer/pre/gelu/seq_first/masks", "transformer", dict(
        norm_first=True, activation="gelu", seq_first=True,
        masks=dict(src_mask=bool_mask((L, L)), memory_mask=float_mask((S, L)), tgt_key_padding_mask=padding(S)))


def bench():
    """Median forward+backward time of torch's encoder layer at nn's
    BenchmarkTransformerEncoderLayer shapes (float32, one thread)."""
    b, n, e, h, ff = 8, 128, 256, 8, 1024
    torch.set_num_threads(1)
    torch.manual_seed(0)
    m = torch.nn.TransformerEncoderLayer(e, h, ff, 0.0, batch_first=True)
    x = torch.randn(b, n, e, requires_grad=True)
    times = []
    for i in range(23):
        t0 = time.perf_counter()
        m(x).sum().backward()
        if i >= 3:
            times.append(time.perf_counter() - t0)
    times.sort()
    print(f"torch TransformerEncoderLayer [{b},{n},{e}] h={h} ff={ff} f32 fwd+bwd, 1 thread: "
          f"median {times[len(times) // 2] * 1e3:.2f} ms over {len(times)} runs")


def main():
    torch.set_num_threads(1)
    os.makedirs(FOLDER, exist_ok=True)
    for seed, (name, kind, cfg) in enumerate(list(cases())):  # every mask first, from one seed
        run_case(name, 100 + seed, kind, **cfg)
    print(f"{os.path.relpath(FOLDER)}: {seed + 1} transformer cases")


if __name__ == "__main__":
    bench() if "--bench" in sys.argv else main()
