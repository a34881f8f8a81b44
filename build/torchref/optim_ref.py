"""Reference values for nn/optim_test.go: three optimizer steps from the same
start with fixed gradients, in float64, by PyTorch 1.13. Run with
/usr/bin/python3 build/torchref/optim_ref.py and paste the output into
nn/optim_ref_test.go."""
import torch

torch.set_default_dtype(torch.float64)
P0 = [0.5, -1.2, 2.0, 0.3, -0.7, 1.1]
G = [
    [0.1, -0.2, 0.3, -0.4, 0.5, -0.6],
    [-0.3, 0.1, 0.2, 0.7, -0.5, 0.05],
    [0.25, 0.25, -0.1, -0.2, 0.0, 0.9],
]
CASES = [
    ("sgd", lambda p: torch.optim.SGD([p], lr=0.1)),
    ("sgd/momentum/dampening/wd", lambda p: torch.optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("sgd/nesterov/wd", lambda p: torch.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("adam", lambda p: torch.optim.Adam([p], lr=0.01, betas=(0.9, 0.999), eps=1e-8)),
    ("adam/wd", lambda p: torch.optim.Adam([p], lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("adamw", lambda p: torch.optim.AdamW([p], lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)),
]

for name, make in CASES:
    p = torch.tensor(P0).reshape(2, 3).requires_grad_()
    opt = make(p)
    steps = []
    for g in G:
        opt.zero_grad()
        (p * torch.tensor(g).reshape(2, 3)).sum().backward()
        opt.step()
        steps.append(p.detach().flatten().tolist())
    print('\t"%s": {' % name)
    for s in steps:
        print("\t\t{" + ", ".join(repr(v) for v in s) + "},")
    print("\t},")
