#!/usr/bin/python3
"""Reference values for nn's activation, pooling, padding and rearranging
modules (nn/activation.go, pool.go, pad.go, reshape.go, distance.go,
localnorm.go) by PyTorch 1.13. Writes nn/nnmods_ref_test.go, which
nn/nnmods_torchref_test.go reads: per case the module's output y in
float64 and the gradient of L = Σ y·w with respect to its input (and the
second input of a pair), for inputs the Go test builds the same way:

    x[i]  = scale · ((7i mod 23) - 11) / 8
    x2[i] = ((5i mod 17) - 8) / 8           (the pair modules' second input)
    w[i]  = ((5i mod 13) - 6) / 4           (over y's elements)

all exact in binary. Run with /usr/bin/python3 build/torchref/nnmods_ref.py;
the output is deterministic.
"""
import os
import subprocess

import torch
import torch.nn as nn

# The cases run in float64: the modules below are made, and main runs,
# with it as the default dtype, which is put back after each, since gen.py
# imports this module beside the families that rely on float32's default.
_default = torch.get_default_dtype()
torch.set_default_dtype(torch.float64)


def inp(shape, scale=1.0):
    n = 1
    for d in shape:
        n *= d
    return torch.tensor([scale * (((7 * i) % 23) - 11) / 8 for i in range(n)]).reshape(shape)


def inp2(shape):
    n = 1
    for d in shape:
        n *= d
    return torch.tensor([(((5 * i) % 17) - 8) / 8 for i in range(n)]).reshape(shape)


def weights(y):
    return torch.tensor([(((5 * i) % 13) - 6) / 4 for i in range(y.numel())]).reshape(y.shape)


def unpool(pool, unpool, size=None):
    def f(x):
        v, i = pool(x)
        return unpool(v, i, output_size=size)
    return f


def channel_shuffle(g):
    # torch 1.13's channel_shuffle has no derivative: the same view,
    # transpose and copy, checked against it, give the gradient.
    def f(x):
        s = x.shape
        y = x.reshape(s[0], g, s[1] // g, *s[2:]).transpose(1, 2).reshape(s)
        assert torch.equal(y, nn.ChannelShuffle(g)(x.detach()))
        return y
    return f


# name: (module (a function of x), input shape, scale)
ACT = [2, 3, 4]
CASES = {
    "elu": (nn.ELU(), ACT, 2),
    "elu/alpha=0.5": (nn.ELU(alpha=0.5), ACT, 2),
    "selu": (nn.SELU(), ACT, 2),
    "celu": (nn.CELU(), ACT, 2),
    "celu/alpha=2": (nn.CELU(alpha=2.0), ACT, 2),
    "softplus": (nn.Softplus(), ACT, 2),
    "softplus/beta=2,threshold=1": (nn.Softplus(beta=2, threshold=1), ACT, 2),
    "softsign": (nn.Softsign(), ACT, 2),
    "hardtanh": (nn.Hardtanh(), ACT, 2),
    "hardtanh/-0.5,2": (nn.Hardtanh(-0.5, 2), ACT, 2),
    "relu6": (nn.ReLU6(), ACT, 5),
    "hardsigmoid": (nn.Hardsigmoid(), ACT, 3),
    "hardswish": (nn.Hardswish(), ACT, 3),
    "mish": (nn.Mish(), ACT, 2),
    "logsigmoid": (nn.LogSigmoid(), ACT, 2),
    "softmax/dim=1": (nn.Softmax(dim=1), ACT, 2),
    "logsoftmax/dim=-1": (nn.LogSoftmax(dim=-1), ACT, 2),
    "softmin/dim=0": (nn.Softmin(dim=0), ACT, 2),
    "softshrink": (nn.Softshrink(), ACT, 2),
    "softshrink/lambda=1": (nn.Softshrink(1.0), ACT, 2),
    "hardshrink": (nn.Hardshrink(), ACT, 2.5),
    "tanhshrink": (nn.Tanhshrink(), ACT, 2),
    "threshold/0.1,20": (nn.Threshold(0.1, 20), ACT, 2),
    "glu": (nn.GLU(), ACT, 2),
    "glu/dim=1": (nn.GLU(dim=1), [2, 4, 3], 2),
    # pools
    "maxpool1d/3,s2,p1": (nn.MaxPool1d(3, stride=2, padding=1), [2, 3, 9], 1),
    "maxpool1d/2,d2,ceil": (nn.MaxPool1d(2, dilation=2, ceil_mode=True), [2, 3, 9], 1),
    "maxpool3d/2": (nn.MaxPool3d(2), [1, 2, 4, 4, 4], 1),
    "maxpool3d/3,s2,p1": (nn.MaxPool3d(3, stride=2, padding=1), [1, 2, 5, 4, 4], 1),
    "avgpool1d/3,s2,p1,exclude": (nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False), [2, 3, 9], 1),
    "avgpool1d/2,ceil": (nn.AvgPool1d(2, ceil_mode=True), [2, 3, 9], 1),
    "avgpool3d/2,s1": (nn.AvgPool3d(2, stride=1), [1, 2, 3, 4, 3], 1),
    "avgpool3d/3,s2,p1,div5": (nn.AvgPool3d(3, stride=2, padding=1, divisor_override=5), [1, 2, 5, 4, 4], 1),
    "adaptiveavgpool1d/4": (nn.AdaptiveAvgPool1d(4), [2, 3, 9], 1),
    "adaptiveavgpool3d/2,3,1": (nn.AdaptiveAvgPool3d((2, 3, 1)), [1, 2, 5, 4, 3], 1),
    "adaptivemaxpool2d/3,2": (nn.AdaptiveMaxPool2d((3, 2)), [2, 2, 7, 5], 1),
    "maxunpool2d/2": (unpool(nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)), [1, 2, 4, 6], 1),
    "maxunpool2d/2,size5": (unpool(nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2), [5, 5]), [1, 1, 5, 5], 1),
    # padding
    "zeropad2d/1,2,0,1": (nn.ZeroPad2d((1, 2, 0, 1)), [1, 2, 3, 4], 1),
    "constantpad1d/2,3.5": (nn.ConstantPad1d(2, 3.5), [2, 3, 4], 1),
    "constantpad2d/1,0,2,1,-1": (nn.ConstantPad2d((1, 0, 2, 1), -1.0), [2, 3, 4], 1),
    "constantpad2d/crop": (nn.ConstantPad2d((-1, 1, 0, -1), 2.0), [1, 2, 3, 4], 1),
    "constantpad3d/1,0.5": (nn.ConstantPad3d(1, 0.5), [1, 2, 2, 3, 3], 1),
    "reflectionpad1d/2,1": (nn.ReflectionPad1d((2, 1)), [2, 3, 4], 1),
    "reflectionpad2d/1": (nn.ReflectionPad2d(1), [1, 2, 3, 4], 1),
    "reflectionpad3d/1,0,1,1,0,1": (nn.ReflectionPad3d((1, 0, 1, 1, 0, 1)), [1, 1, 3, 3, 3], 1),
    "replicationpad1d/2,1": (nn.ReplicationPad1d((2, 1)), [2, 3, 4], 1),
    "replicationpad2d/1": (nn.ReplicationPad2d(1), [1, 2, 3, 4], 1),
    "replicationpad3d/1,0,1,1,0,2": (nn.ReplicationPad3d((1, 0, 1, 1, 0, 2)), [1, 1, 3, 3, 3], 1),
    # rearranging
    "pixelshuffle/2": (nn.PixelShuffle(2), [1, 8, 2, 3], 1),
    "pixelunshuffle/2": (nn.PixelUnshuffle(2), [1, 2, 4, 6], 1),
    "channelshuffle/3": (channel_shuffle(3), [2, 6, 2, 2], 1),
    "unfold/2x3,p1,s1x2": (nn.Unfold((2, 3), padding=1, stride=(1, 2)), [2, 2, 4, 5], 1),
    "fold/4x5,k2": (nn.Fold((4, 5), 2), [2, 8, 12], 1),
    "fold/5x5,k3,s2,p1,d1": (nn.Fold((5, 5), 3, stride=2, padding=1), [1, 9, 9], 1),
    "localresponsenorm/3": (nn.LocalResponseNorm(3), [2, 5, 3, 2], 2),
    "localresponsenorm/2,0.1,0.5,2": (nn.LocalResponseNorm(2, alpha=0.1, beta=0.5, k=2.0), [2, 4, 3], 2),
    "localresponsenorm/4,5d": (nn.LocalResponseNorm(4, alpha=0.5), [1, 6, 2, 2, 2], 2),
}

PAIRS = {
    "cosinesimilarity": (nn.CosineSimilarity(), [3, 4]),
    "cosinesimilarity/dim=-1": (nn.CosineSimilarity(dim=-1, eps=1e-6), [2, 3, 4]),
    "pairwisedistance": (nn.PairwiseDistance(), [3, 4]),
    "pairwisedistance/p=1,keepdim": (nn.PairwiseDistance(p=1, keepdim=True), [2, 3, 4]),
}
torch.set_default_dtype(_default)


def go(v):
    return "[]float64{" + ", ".join(repr(float(a)) for a in v.detach().flatten().tolist()) + "}"


def main():
    torch.set_default_dtype(torch.float64)
    try:
        write()
    finally:
        torch.set_default_dtype(_default)


def write():
    lines = [
        "// Code generated by build/torchref/nnmods_ref.py from PyTorch " + torch.__version__ + "; DO NOT EDIT.",
        "",
        "package nn",
        "",
        "// nnmodsRef holds torch's output and input gradients for the cases of",
        "// nnmods_torchref_test.go (the inputs as nnmods_ref.py's docstring says).",
        "var nnmodsRef = map[string]nnmodsRefCase{",
    ]
    for name, (m, shape, scale) in CASES.items():
        x = inp(shape, scale).requires_grad_(True)
        y = m(x)
        (g,) = torch.autograd.grad((y * weights(y)).sum(), x)
        shp = "[]int{" + ", ".join(str(d) for d in y.shape) + "}"
        lines.append(f'\t"{name}": {{in: []int{{{", ".join(map(str, shape))}}}, scale: {scale!r}, shape: {shp}, out: {go(y)}, grad: {go(g)}}},')
    for name, (m, shape) in PAIRS.items():
        x = inp(shape).requires_grad_(True)
        x2 = inp2(shape).requires_grad_(True)
        y = m(x, x2)
        g, g2 = torch.autograd.grad((y * weights(y)).sum(), (x, x2))
        shp = "[]int{" + ", ".join(str(d) for d in y.shape) + "}"
        lines.append(f'\t"{name}": {{in: []int{{{", ".join(map(str, shape))}}}, scale: 1, shape: {shp}, out: {go(y)}, grad: {go(g)}, grad2: {go(g2)}}},')
    lines.append("}")
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "nn", "nnmods_ref_test.go")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run(["gofmt", "-w", out], check=False)


if __name__ == "__main__":
    main()
