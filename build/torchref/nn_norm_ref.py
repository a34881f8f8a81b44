"""Reference values for nn/batchnorm_test.go by PyTorch 1.13: a BatchNorm2d
trained two SGD steps and then evaluated, and a GroupNorm with its weight
gradient. Run with /usr/bin/python3 build/torchref/nn_norm_ref.py; it prints
the values that the tests paste. The inputs are functions of arange, which
the Go test builds the same way."""
import torch

torch.set_num_threads(1)
f64 = torch.float64


def show(name, t):
    print(name, "=", "[]float64{" + ", ".join(repr(float(v)) for v in t.detach().flatten().tolist()) + "}")


def seq(shape, scale, shift=0.0):
    """sin(scale·i + shift) over arange, in the given shape."""
    n = 1
    for s in shape:
        n *= s
    return torch.sin(torch.arange(n, dtype=f64) * scale + shift).reshape(shape)


# BatchNorm2d(3): two training steps of SGD(lr=0.5) on L = Σ y·u, then eval.
bn = torch.nn.BatchNorm2d(3).to(f64)
opt = torch.optim.SGD(bn.parameters(), lr=0.5)
u = seq([2, 3, 2, 2], 0.3, 1.0)
for step, shift in ((1, 0.0), (2, 0.5)):
    x = seq([2, 3, 2, 2], 0.7, shift) * 2 + 0.5
    opt.zero_grad()
    y = bn(x)
    (y * u).sum().backward()
    opt.step()
    if step == 2:
        show("bn/train2/y", y)
show("bn/running_mean", bn.running_mean)
show("bn/running_var", bn.running_var)
show("bn/weight", bn.weight)
show("bn/bias", bn.bias)
print("bn/num_batches_tracked =", int(bn.num_batches_tracked), bn.num_batches_tracked.dtype, list(bn.state_dict()))
bn.eval()
show("bn/eval/y", bn(seq([1, 3, 2, 3], 1.1)))

# GroupNorm(2, 4) with set weight and bias; the weight's gradient of Σ y·u.
gn = torch.nn.GroupNorm(2, 4).to(f64)
with torch.no_grad():
    gn.weight.copy_(torch.tensor([0.5, 1.0, -1.5, 2.0], dtype=f64))
    gn.bias.copy_(torch.tensor([0.1, 0.0, -0.2, 0.3], dtype=f64))
x = seq([2, 4, 3], 0.9) * 3
y = gn(x)
(y * seq([2, 4, 3], 0.4, 2.0)).sum().backward()
show("gn/y", y)
show("gn/weight_grad", gn.weight.grad)
show("gn/bias_grad", gn.bias.grad)
