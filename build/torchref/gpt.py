#!/usr/bin/python3
"""Reference values for examples/gpt/model, by PyTorch 1.13 in float64.

The same GPT as the Go package (token embeddings, learned or rotary
positions, pre-norm blocks of causal self-attention and a GELU MLP, a final
LayerNorm, the head tied to the token embeddings), under the same parameter
names. For each variant it writes to examples/gpt/model/testdata/:

    gpt_<variant>.safetensors  the weights, float64, torch's state-dict names
                               (written by hand: Debian's torch has no
                               safetensors package)
    gpt_<variant>.json         the config, tokens and targets, the logits, the
                               loss, the gradient of the loss for every
                               parameter, and the losses of 20 AdamW steps
                               from those weights

model_torchref_test.go loads the weights with nn.Load and compares.
build/bench_torch.py imports GPT from here for lathe-bench's GPT rows. Torch
1.13 has no scaled_dot_product_attention, so attention here is its
definition: softmax(q·kᵀ/√d with the future masked to -inf)·v. Run with
/usr/bin/python3 build/torchref/gpt.py (gen.py runs it too); the output is
deterministic.
"""
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

f64 = torch.float64

# The config of the reference: small enough that the testdata stays a few
# hundred kB, with two heads, two layers and a sequence shorter than the
# context, so that the position table is sliced.
CONFIG = dict(vocab=13, context=8, layers=2, heads=2, dim=8)
BATCH, LENGTH = 2, 7
ADAMW = dict(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
STEPS = 20


def rotate_half(x):
    d = x.shape[-1] // 2
    return torch.cat([-x[..., d:], x[..., :d]], dim=-1)


def rotary_tables(length, d):
    inv = torch.tensor([10000.0 ** (-2 * i / d) for i in range(d // 2)], dtype=f64)
    ang = torch.arange(length, dtype=f64)[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, rope):
        b, l, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (t.reshape(b, l, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        if rope is not None:
            cos, sin = rope
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        future = torch.ones(l, l, dtype=torch.bool, device=x.device).triu(1)
        y = scores.masked_fill(future, float("-inf")).softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, l, d))


class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, h, rope):
        h = h + self.attn(self.ln_1(h), rope)
        return h + self.mlp(self.ln_2(h))


class GPT(nn.Module):
    def __init__(self, vocab, context, layers, heads, dim, rotary):
        super().__init__()
        self.rotary, self.heads = rotary, heads
        self.tok_emb = nn.Embedding(vocab, dim)
        if not rotary:
            self.pos_emb = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)

    def forward(self, tokens):
        l = tokens.shape[1]
        h = self.tok_emb(tokens)
        rope = None
        if self.rotary:
            rope = tuple(t.to(h.device) for t in rotary_tables(l, h.shape[-1] // self.heads))
        else:
            h = h + self.pos_emb(torch.arange(l, device=tokens.device))
        for b in self.blocks:
            h = b(h, rope)
        return F.linear(self.ln_f(h), self.tok_emb.weight)


def loss_of(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def write_safetensors(path, named):
    """The safetensors layout: an 8-byte little-endian header length, the
    JSON header (name → dtype, shape, data offsets), then the raw data."""
    header, blobs, offset = {}, [], 0
    for name, t in named:
        data = t.detach().contiguous().numpy().astype("<f8").tobytes()
        header[name] = {"dtype": "F64", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the format pads the header to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def variant(rotary, seed):
    torch.manual_seed(seed)
    model = GPT(**CONFIG, rotary=rotary).to(f64)
    # Weights well away from the identity and from zero, so that every
    # term of every gradient is exercised (GPT-2's 0.02 would leave the
    # attention almost uniform).
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
                p.copy_(1 + 0.2 * torch.randn(p.shape, dtype=f64))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, dtype=f64))
            else:
                p.copy_(0.4 * torch.randn(p.shape, dtype=f64))
    named = list(model.named_parameters())
    tokens = torch.randint(0, CONFIG["vocab"], (BATCH, LENGTH + 1))
    x, y = tokens[:, :-1], tokens[:, 1:]

    logits = model(x)
    loss = loss_of(logits, y)
    grads = torch.autograd.grad(loss, [p for _, p in named])

    ref = dict(config=dict(CONFIG, rotary=rotary), adamw=dict(ADAMW, betas=list(ADAMW["betas"])),
               tokens=x.flatten().tolist(), targets=y.flatten().tolist(), shape=[BATCH, LENGTH],
               logits=logits.detach().flatten().tolist(), loss=loss.item(),
               names=[n for n, _ in named], grads={n: g.flatten().tolist() for (n, _), g in zip(named, grads)})

    weights = [(n, p.detach().clone()) for n, p in named]
    opt = torch.optim.AdamW(model.parameters(), **ADAMW)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_of(model(x), y)
        losses.append(loss.item())
        loss.backward()
        opt.step()
    losses.append(loss_of(model(x), y).item())
    ref["adamw_losses"] = losses
    return weights, ref


def main():
    torch.set_num_threads(1)
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "examples", "gpt", "model", "testdata")
    os.makedirs(folder, exist_ok=True)
    for name, rotary, seed in (("learned", False, 18), ("rotary", True, 19)):
        weights, ref = variant(rotary, seed)
        st = os.path.join(folder, "gpt_%s.safetensors" % name)
        js = os.path.join(folder, "gpt_%s.json" % name)
        write_safetensors(st, weights)
        with open(js, "w") as f:
            json.dump(ref, f, separators=(",", ":"))
            f.write("\n")
        print("%s: %d bytes, %s: %d bytes" % (os.path.relpath(st, root), os.path.getsize(st),
                                              os.path.relpath(js, root), os.path.getsize(js)))


if __name__ == "__main__":
    main()
