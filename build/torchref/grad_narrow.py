"""Gradient cases of float16 and bfloat16 (grad_narrow.json).

Inputs and the upstream gradient are 16-bit values. The reference is the op
and its gradients computed by torch in float32 on those values, each
rounded once to the dtype (torch 1.13's cpu lacks most float16 kernels, and
its bfloat16 ones round partial sums): what lathe's forward computes, and
what its backward approaches, whose rule is several ops that each round to
the dtype. GradTolerance's 16-bit rows say how far apart the two may be.
No Hessian-vector products: a second derivative through ops that each
round to 8 or 11 bits says little.
"""

import torch
import torch.nn.functional as F

from attention import attrs, sdpa
from grad import GradFamily, off
from narrow import half
from refcase import DTYPES, HALVES, NAMES, SHORT, enc_attr, enc_tensor, idx


class NarrowGradFamily(GradFamily):
    def gcase16(self, name, op, inputs, fn, attrs=None):
        """A case of 16-bit inputs (index tensors as they are) whose
        reference is fn in float32, rounded once."""
        assert name not in self.seen, name
        self.seen.add(name)
        dt = next(t.dtype for t in inputs if t is not None and t.is_floating_point())
        wide = [t.float().requires_grad_(True) if t is not None and t.is_floating_point() else t for t in inputs]
        diff = [t for t in wide if t is not None and t.requires_grad]
        out32 = fn(*wide)
        w = half(list(out32.shape), NAMES[dt])
        gs = torch.autograd.grad(out32, diff, w.float(), allow_unused=True)
        gs = [torch.zeros_like(x) if g is None else g for x, g in zip(diff, gs)]
        it = iter(gs)
        grads = [enc_tensor(next(it).detach().to(dt).contiguous()) if t is not None and t.is_floating_point() else None
                 for t in inputs]
        self.cases.append({"name": name, "op": op, "attrs": {k: enc_attr(v) for k, v in (attrs or {}).items()},
                           "inputs": [None if t is None else enc_tensor(t) for t in inputs],
                           "output": enc_tensor(out32.detach().to(dt).contiguous()), "upstream": enc_tensor(w),
                           "grads": grads, "reference": "float32"})


def grad_narrow():
    fam = NarrowGradFamily("grad_narrow", 19)
    g = fam.gcase16
    for dt in HALVES:
        s = SHORT[dt]
        h = lambda shape, domain="any", dt=dt: half(shape, dt, domain)
        for op, fn, dom in [("exp", torch.exp, "any"), ("log", torch.log, "pos"), ("sqrt", torch.sqrt, "pos"),
                            ("sin", torch.sin, "any"), ("tanh", torch.tanh, "any"), ("sigmoid", torch.sigmoid, "any"),
                            ("gelu", F.gelu, "any"), ("silu", F.silu, "any"), ("softplus", F.softplus, "any"),
                            ("square", torch.square, "any"), ("reciprocal", torch.reciprocal, "pos")]:
            g(f"{op}/{s}/[3,4]", op, [h([3, 4], dom)], fn)
        g(f"relu/{s}/[3,4]", "relu", [off(h([3, 4]).float()).to(DTYPES[dt])], torch.relu)
        for op, fn, rd in [("add", torch.add, "any"), ("sub", torch.sub, "any"), ("mul", torch.mul, "any"),
                           ("div", torch.div, "nonzero")]:
            g(f"{op}/{s}/same[3,4]", op, [h([3, 4]), h([3, 4], rd)], fn)
            g(f"{op}/{s}/bcast[3,1]x[1,4]", op, [h([3, 1]), h([1, 4], rd)], fn)
        g(f"pow/{s}/same[3,4]", "pow", [h([3, 4], "pos"), h([3, 4])], torch.pow)
        g(f"sum/{s}/dims[1][4,16]", "sum", [h([4, 16])], lambda x: x.sum(1), {"dims": [1]})
        g(f"mean/{s}/dims[0][4,16]", "mean", [h([4, 16])], lambda x: x.mean(0), {"dims": [0]})
        g(f"matmul/{s}/[5,16]x[16,3]", "matmul", [h([5, 16]), h([16, 3])], torch.matmul)
        g(f"matmul/{s}/batched[2,3,8]x[8,4]", "matmul", [h([2, 3, 8]), h([8, 4])], torch.matmul)
        for op, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
            g(f"{op}/{s}/[3,7]/dim1", op, [h([3, 7], "wide")], lambda x, fn=fn: fn(x, 1), {"dim": 1})
        g(f"cross_entropy/{s}/mean/[4,5]", "cross_entropy", [h([4, 5], "wide"), idx([0, 4, 2, 2])],
          lambda x, t: F.cross_entropy(x, t), {"reduction": "mean"})
        g(f"mse_loss/{s}/mean/[3,4]", "mse_loss", [h([3, 4]), h([3, 4])], lambda x, t: F.mse_loss(x, t),
          {"reduction": "mean"})
        g(f"layer_norm/{s}/[3,8]/[8]", "layer_norm", [h([3, 8]), h([8]), h([8])],
          lambda x, w, b: F.layer_norm(x, [8], w, b, 1e-5), {"normalized_shape": [8], "eps": 1e-5})
        g(f"group_norm/{s}/[2,4,3]/groups2", "group_norm", [h([2, 4, 3]), h([4]), h([4])],
          lambda x, w, b: F.group_norm(x, 2, w, b, 1e-5), {"groups": 2, "eps": 1e-5})
    # Attention: attention.py's definition, on the float32 values of the
    # 16-bit inputs (a float mask of the inputs' dtype takes a gradient).
    for dt in HALVES:
        s = SHORT[dt]
        h = lambda shape, dt=dt: half(shape, dt)
        for label, qs, ks, vs, mk, a in [
            ("[2,3,4]x[2,5,4]", [2, 3, 4], [2, 5, 4], [2, 5, 4], None, attrs()),
            ("gqa/[1,4,3,4]x[1,2,5,4]", [1, 4, 3, 4], [1, 2, 5, 4], [1, 2, 5, 4], None, attrs()),
            ("causal/lq4_lk6", [2, 4, 3], [2, 6, 3], [2, 6, 3], None, attrs(True)),
            ("scale0.3", [2, 3, 4], [2, 5, 4], [2, 5, 4], None, attrs(scale=0.3)),
            ("float_mask[3,5]", [2, 3, 4], [2, 5, 4], [2, 5, 4], "float", attrs()),
            ("bool_mask[3,5]", [2, 3, 4], [2, 5, 4], [2, 5, 4], "bool", attrs()),
        ]:
            mask = None
            if mk == "float":
                mask = h([3, 5])
            elif mk == "bool":
                mask = torch.rand(3, 5) < 0.6
                mask[:, 0] = True
            g(f"sdpa/{s}/{label}", "sdpa", [h(qs), h(ks), h(vs), mask],
              lambda q, k, v, m=None, a=a: sdpa(q, k, v, m, a["causal"], a.get("scale")), a)
    return fam
