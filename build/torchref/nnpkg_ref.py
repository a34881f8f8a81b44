"""Reference values for package nn's tests (nn/*_ref_test.go) by PyTorch 1.13,
and nn/testdata/torch_seq.safetensors. Run with /usr/bin/python3
build/torchref/nnpkg_ref.py from the repository root; it prints the values
the tests paste and rewrites the file."""
import json
import struct

import torch
import torch.nn.functional as F

def show(name, t):
    print(name, "=", "{" + ", ".join(repr(float(v)) for v in t.detach().flatten().tolist()) + "}")

# Linear forward with fixed weights.
W = torch.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], dtype=torch.float64)
b = torch.tensor([0.01, -0.02], dtype=torch.float64)
x = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25], [0.0, 0.0, 0.0], [2.0, -3.0, 1.5]], dtype=torch.float64)
show("linear", F.linear(x, W, b))
show("linear/nobias", F.linear(x, W))

# Cross entropy with label smoothing.
logits = torch.tensor([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0], [2.0, 2.0, 2.0], [-0.5, 0.3, 0.8]], dtype=torch.float64)
target = torch.tensor([1, 2, -100, 0])
for red in ["mean", "sum", "none"]:
    show("ce/ls0.1/" + red, F.cross_entropy(logits, target, label_smoothing=0.1, reduction=red))
show("ce/ls0.25/ignore0", F.cross_entropy(logits, torch.tensor([1, 2, 0, 0]), label_smoothing=0.25, ignore_index=0))
show("ce/ls0.1/rank1", F.cross_entropy(logits[0], torch.tensor(2), label_smoothing=0.1))
show("ce/plain", F.cross_entropy(logits, target))

# BCE with logits, including large logits where the naive formula overflows.
z = torch.tensor([0.5, -1.5, 3.0, -40.0, 60.0, 0.0], dtype=torch.float64)
y = torch.tensor([1.0, 0.0, 0.3, 1.0, 0.0, 0.5], dtype=torch.float64)
for red in ["mean", "sum", "none"]:
    show("bce/" + red, F.binary_cross_entropy_with_logits(z, y, reduction=red))

# A safetensors file written by hand (no safetensors package here) from a
# torch state dict: Sequential(Linear(3, 2), ReLU(), LayerNorm([2])).
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.LayerNorm([2]))
with torch.no_grad():
    m[2].weight.copy_(torch.tensor([1.5, -0.5]))
    m[2].bias.copy_(torch.tensor([0.25, 0.125]))
sd = m.state_dict()
header, blobs, at = {}, [], 0
for name in sorted(sd):
    t = sd[name].contiguous()
    raw = t.numpy().astype("<f4").tobytes()
    header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [at, at + len(raw)]}
    blobs.append(raw)
    at += len(raw)
header["__metadata__"] = {"format": "pt"}
js = json.dumps(header, separators=(",", ":")).encode()
js += b" " * (-len(js) % 8)
with open("nn/testdata/torch_seq.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(js)) + js + b"".join(blobs))
for name in sorted(sd):
    show("st/" + name, sd[name])
xin = torch.tensor([[1.0, -2.0, 0.5], [0.3, 0.2, 0.1]])
show("st/forward", m(xin))

# Gradients of the smoothed cross entropy and of BCE with logits (means).
lg = logits.clone().requires_grad_()
F.cross_entropy(lg, target, label_smoothing=0.1).backward()
show("grad/ce/ls0.1/mean", lg.grad)
zg = z.clone().requires_grad_()
F.binary_cross_entropy_with_logits(zg, y).backward()
show("grad/bce/mean", zg.grad)
