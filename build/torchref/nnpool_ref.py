"""Reference values for nn/pool_test.go by PyTorch 1.13: the pooling
modules in a Sequential, forward and the gradient of its input. Run with
/usr/bin/python3 build/torchref/nnpool_ref.py; it prints the values the
test pastes."""
import torch


def show(name, t):
    print(name, "=", "{" + ", ".join(repr(float(v)) for v in t.detach().flatten().tolist()) + "}")


# x[i] = ((7i mod 23) - 11) / 8, exact in binary, as the Go test builds it.
x = torch.tensor([((7 * i) % 23 - 11) / 8 for i in range(2 * 3 * 6 * 7)], dtype=torch.float64).reshape(2, 3, 6, 7)
x.requires_grad_(True)
m = torch.nn.Sequential(torch.nn.MaxPool2d(3, stride=1, padding=1), torch.nn.AvgPool2d(2, ceil_mode=True),
                        torch.nn.AdaptiveAvgPool2d((2, 1)))
y = m(x)
show("seq", y)
w = torch.arange(y.numel(), dtype=torch.float64).reshape(y.shape) / 4 - 1
(g,) = torch.autograd.grad((y * y * w).sum(), x)
show("seq/grad", g)

# The gradient of a gradient norm (a WGAN-GP penalty's shape): with
# g = d sum(y^2 w)/dx, the gradient of sum(g^2) with respect to x.
(g,) = torch.autograd.grad((m(x) ** 2 * w).sum(), x, create_graph=True)
(gg,) = torch.autograd.grad((g * g).sum(), x)
show("seq/gradnorm", gg)
