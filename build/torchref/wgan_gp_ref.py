"""Reference for nn's WGAN-GP test (nn/gradpenalty_test.go) by PyTorch 1.13.

A small conv critic (conv, leaky ReLU, average pooling, strided conv, max
pooling, linear) is trained for a few SGD steps on the WGAN-GP critic loss

    D(fake).mean() - D(real).mean() + λ · mean_i (‖∂D(x̂)/∂x̂_i‖₂ - 1)²,

x̂ = ε·real + (1-ε)·fake, whose gradient with respect to the critic's weights
needs second derivatives through conv and pooling. The script writes the
initial weights, the inputs, each step's loss and penalty, the first step's
weight gradients and the final weights to nn/testdata/wgan_gp.json, in
float64. Run from the repository root: /usr/bin/python3 build/torchref/wgan_gp_ref.py
"""
import json

import torch

torch.manual_seed(7)
torch.set_num_threads(1)
dt = torch.float64
critic = torch.nn.Sequential(
    torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.LeakyReLU(0.2), torch.nn.AvgPool2d(2),
    torch.nn.Conv2d(4, 8, 3, stride=2, padding=1), torch.nn.LeakyReLU(0.2), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(8, 1)).to(dt)
real = torch.rand(4, 1, 8, 8, dtype=dt)
fake = 0.5 * torch.randn(4, 1, 8, 8, dtype=dt)
eps = torch.rand(4, 1, 1, 1, dtype=dt)
LAMBDA, LR, STEPS = 10.0, 0.05, 3


def flat(t):
    return [float(v) for v in t.detach().flatten().tolist()]


def named(ts):
    return {name: {"shape": list(t.shape), "data": flat(t)} for name, t in ts}


out = {"lambda": LAMBDA, "lr": LR, "steps": STEPS,
       "init": named(critic.state_dict().items()),
       "real": flat(real), "fake": flat(fake), "eps": flat(eps), "shape": list(real.shape),
       "loss": [], "penalty": []}
opt = torch.optim.SGD(critic.parameters(), lr=LR)
for step in range(STEPS):
    xhat = (eps * real + (1 - eps) * fake).requires_grad_(True)
    g, = torch.autograd.grad(critic(xhat).sum(), xhat, create_graph=True)
    penalty = ((g.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
    loss = critic(fake).mean() - critic(real).mean() + LAMBDA * penalty
    opt.zero_grad()
    loss.backward()
    if step == 0:
        out["grads"] = named((n, p.grad) for n, p in critic.named_parameters())
    opt.step()
    out["loss"].append(loss.item())
    out["penalty"].append(penalty.item())
out["final"] = named(critic.state_dict().items())
with open("nn/testdata/wgan_gp.json", "w") as f:
    json.dump(out, f, indent=None, separators=(",", ":"))
    f.write("\n")
print("loss", out["loss"], "penalty", out["penalty"])
