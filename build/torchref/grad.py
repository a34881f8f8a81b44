"""Gradient cases: for each differentiable op key of the forward cases, the
gradients torch.autograd.grad gives for a random upstream gradient, and for
a representative set of smooth ops a Hessian-vector product.

A gradient case is a forward case (name, op, attrs, inputs, output) plus:

- `upstream`: the gradient of the output (its shape and dtype), the `w` of
  the scalar L = sum(output * w) whose gradient the case holds.
- `grads`: one entry per input, torch's dL/d input for every float input,
  null for an index, a mask or an absent (null) input.
- `v` and `hvp` (second-order cases only): a random direction per float
  input and the Hessian-vector product of L: with g = grad(L, inputs,
  create_graph=True), hvp = grad(sum_i (g_i * v_i).sum(), inputs). An op
  that is linear in its inputs has hvp zero.
- `nonsmooth: true` where an input sits on a kink of the op (a tie of max or
  maximum): torch's gradient there is its convention, and a finite
  difference means nothing.

Inputs are kept off the kinks of the piecewise ops (relu, abs, clamp,
maximum, max ...) unless the case says nonsmooth: the generator shifts them
off the three-decimal grid, or checks that no two compared values tie.
"""

import torch
import torch.nn.functional as F

from elementwise import TRIG, UNARY
from refcase import INF, SHORT, Family, L, enc_attr, enc_tensor, rnd, vals

# Unary ops whose second derivative is worth checking (smooth and not linear).
SMOOTH = {"square", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh",
          "sigmoid", "silu", "softplus", "erf", "gelu", "gelu_tanh",
          "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"}


def off(t):
    """t moved off the three-decimal grid, so no value lies on a kink at a
    round number (0, ±0.5, 0.3) or ties with a value on the grid."""
    return t + torch.tensor(0.0005, dtype=t.dtype)


def distinct(shape, dt, domain="any"):
    """Seeded values with no two equal, so max and min have no ties."""
    while True:
        t = rnd(shape, dt, domain)
        if t.numel() == torch.unique(t).numel():
            return t


class GradFamily(Family):
    def gcase(self, name, op, inputs, fn, attrs=None, hvp=False, nonsmooth=False, upstream=None, nograd=()):
        """nograd lists the float inputs torch refuses to differentiate
        (igamma's a): their gradient is recorded as zeros, though the
        others' gradients may depend on them (their Hessian-vector
        product is the mixed one)."""
        assert name not in self.seen, name
        self.seen.add(name)
        ts = [i.t if isinstance(i, L) else i for i in inputs]
        leaves = [t.detach().clone().requires_grad_(True) if t is not None and t.is_floating_point() else t
                  for t in ts]
        diff = [t for t in leaves if t is not None and t.requires_grad]
        out = fn(*leaves)
        w = upstream if upstream is not None else rnd(list(out.shape), {torch.float32: "float32", torch.float64: "float64"}[out.dtype])
        asked = [x for i, x in enumerate(leaves) if x is not None and x.requires_grad and i not in nograd]
        got = dict(zip(map(id, asked), torch.autograd.grad(out, asked, w, create_graph=hvp, allow_unused=True)))
        gs = [got.get(id(x)) for x in diff]
        gs = [torch.zeros_like(x) if g is None else g for x, g in zip(diff, gs)]
        c = {"name": name, "op": op, "attrs": {k: enc_attr(v) for k, v in (attrs or {}).items()},
             "inputs": [None if i is None else enc_tensor(i.t, i.layout) if isinstance(i, L) else enc_tensor(i)
                        for i in inputs],
             "output": enc_tensor(out.detach().contiguous()), "upstream": enc_tensor(w),
             "grads": self.aligned(leaves, gs)}
        if hvp:
            vs = [rnd(list(x.shape), {torch.float32: "float32", torch.float64: "float64"}[x.dtype]) for x in diff]
            terms = [(g * v).sum() for g, v in zip(gs, vs) if g.requires_grad]
            hs = None
            if terms:
                hs = torch.autograd.grad(sum(terms), diff, allow_unused=True)
            hs = [torch.zeros_like(x) if hs is None or h is None else h for x, h in zip(diff, hs or [None] * len(diff))]
            c["v"] = self.aligned(leaves, vs)
            c["hvp"] = self.aligned(leaves, hs)
        if nonsmooth:
            c["nonsmooth"] = True
        if nograd:
            c["nograd"] = list(nograd)
        self.cases.append(c)

    @staticmethod
    def aligned(leaves, ts):
        """ts (one per float input) as a list with one entry per input."""
        it = iter(ts)
        return [enc_tensor(next(it).detach().contiguous()) if x is not None and x.requires_grad else None
                for x in leaves]


def trig(fam):
    """The inverse and hyperbolic trigonometric functions' gradients and
    Hessian-vector products (a part of its own, last, so that the other
    parts' inputs stay as they were)."""
    for op, fn, _, domain in TRIG:
        r = lambda s, d, domain=domain: rnd(s, d, domain)
        fam.gcase(f"{op}/f64/[3,4]", op, [r([3, 4], "float64")], fn, hvp=True)
        fam.gcase(f"{op}/f64/0d", op, [r([], "float64")], fn, hvp=True)
        fam.gcase(f"{op}/f64/transposed[3,4]", op, [L(r([3, 4], "float64"), "transposed")], fn)
        fam.gcase(f"{op}/f32/[3,4]", op, [r([3, 4], "float32")], fn, hvp=True)
    for beta, thr in ((2.0, 20.0), (0.5, 3.0), (-1.5, 10.0)):
        f = lambda x, beta=beta, thr=thr: F.softplus(x, beta, thr)
        a = {"beta": beta, "threshold": thr}
        fam.gcase(f"softplus_with/f64/beta={beta},threshold={thr}/[3,4]", "softplus_with",
                  [off(rnd([3, 4], "float64", "wide"))], f, a, hvp=True)
        fam.gcase(f"softplus_with/f32/beta={beta},threshold={thr}/[3,4]", "softplus_with",
                  [off(rnd([3, 4], "float32", "wide"))], f, a)


def remainder(fam):
    """remainder's and fmod's gradients, 1 and -floor(x/y) or -trunc(x/y)
    (a part of its own, last, so that the other parts' inputs stay as they
    were). The lhs is off the three-decimal grid, so no quotient sits on a
    jump. Piecewise linear: no Hessian-vector product."""
    for op, fn in (("remainder", torch.remainder), ("fmod", torch.fmod)):
        r = lambda s, d="float64": off(rnd(s, d, "wide"))
        q = lambda s, d="float64": rnd(s, d, "nonzero")
        fam.gcase(f"{op}/f64/same[3,4]", op, [r([3, 4]), q([3, 4])], fn)
        fam.gcase(f"{op}/f64/bcast[3,1]x[1,4]", op, [r([3, 1]), q([1, 4])], fn)
        fam.gcase(f"{op}/f64/0dx[2,3]", op, [r([]), q([2, 3])], fn)
        fam.gcase(f"{op}/f64/transposed[3,4]", op, [L(r([3, 4]), "transposed"), q([3, 4])], fn)
        fam.gcase(f"{op}/f32/same[3,4]", op, [r([3, 4], "float32"), q([3, 4], "float32")], fn)
        fam.gcase(f"{op}_scalar/f64/s=-1.5/[3,4]", f"{op}_scalar", [r([3, 4])], lambda x, fn=fn: fn(x, -1.5),
                  {"s": -1.5})


def elementwise(fam):
    kinked = {"abs", "sign", "relu", "floor", "ceil", "round"}
    for op, fn, domain, _ in UNARY:
        h = op in SMOOTH
        r = (lambda s, d: off(rnd(s, d, domain))) if op in kinked else (lambda s, d: rnd(s, d, domain))
        fam.gcase(f"{op}/f64/[3,4]", op, [r([3, 4], "float64")], fn, hvp=h)
        fam.gcase(f"{op}/f64/0d", op, [r([], "float64")], fn, hvp=h)
        fam.gcase(f"{op}/f64/empty[0,3]", op, [r([0, 3], "float64")], fn)
        fam.gcase(f"{op}/f64/transposed[3,4]", op, [L(r([3, 4], "float64"), "transposed")], fn)
        fam.gcase(f"{op}/f32/[3,4]", op, [r([3, 4], "float32")], fn, hvp=h)
    fam.gcase("softplus/f64/large", "softplus", [vals([21.0, 25.0, -30.0, 19.5], "float64")], F.softplus)
    for slope in (0.01, 0.2):
        for dt in ("float64", "float32"):
            fam.gcase(f"leaky_relu/{SHORT[dt]}/slope={slope}", "leaky_relu", [off(rnd([3, 4], dt))],
                      lambda x, s=slope: F.leaky_relu(x, s), {"slope": slope})
    for lo, hi in ((-0.5, 0.5), (-INF, 0.3), (0.2, INF)):
        fn = (lambda x, lo=lo, hi=hi: torch.clamp(x, None if lo == -INF else lo, None if hi == INF else hi))
        for dt in ("float64", "float32"):
            fam.gcase(f"clamp/{SHORT[dt]}/[{lo},{hi}]", "clamp", [off(rnd([3, 4], dt))], fn, {"lo": lo, "hi": hi})

    binary = [("add", torch.add, "any", "any"), ("sub", torch.sub, "any", "any"), ("mul", torch.mul, "any", "any"),
              ("div", torch.div, "any", "nonzero"), ("pow", torch.pow, "pos", "any"),
              ("maximum", torch.maximum, "any", "any"), ("minimum", torch.minimum, "any", "any"),
              ("atan2", torch.atan2, "any", "any")]
    for op, fn, ld, rd in binary:
        h = op in ("mul", "div", "pow", "atan2")
        # lhs off the grid, rhs on it: maximum and minimum never tie.
        r = lambda s, d="float64", ld=ld: off(rnd(s, d, ld))
        q = lambda s, d="float64", rd=rd: rnd(s, d, rd)
        fam.gcase(f"{op}/f64/same[3,4]", op, [r([3, 4]), q([3, 4])], fn, hvp=h)
        fam.gcase(f"{op}/f64/bcast[3,1]x[1,4]", op, [r([3, 1]), q([1, 4])], fn, hvp=h and op == "mul")
        fam.gcase(f"{op}/f64/bcast[2,3,4]x[4]", op, [r([2, 3, 4]), q([4])], fn)
        fam.gcase(f"{op}/f64/0dx[2,3]", op, [r([]), q([2, 3])], fn)
        fam.gcase(f"{op}/f64/transposed[3,4]", op, [L(r([3, 4]), "transposed"), q([3, 4])], fn)
        fam.gcase(f"{op}/f64/strided[2,3]", op, [r([2, 3]), L(q([2, 3]), "strided")], fn)
        fam.gcase(f"{op}/f32/same[3,4]", op, [r([3, 4], "float32"), q([3, 4], "float32")], fn, hvp=h)
    for op, fn in (("maximum", torch.maximum), ("minimum", torch.minimum)):
        # Ties split the gradient evenly between the two arguments.
        fam.gcase(f"{op}/f64/ties", op, [vals([1.0, 2.0, -0.5, 3.0], "float64"), vals([1.0, 1.5, -0.5, 3.5], "float64")],
                  fn, nonsmooth=True)
    scalars = [("add_scalar", lambda x, s: x + s, 1.5), ("sub_scalar", lambda x, s: x - s, 1.5),
               ("mul_scalar", lambda x, s: x * s, -2.5), ("div_scalar", lambda x, s: x / s, 4.0),
               ("pow_scalar", torch.pow, 2.0), ("pow_scalar", torch.pow, 0.5), ("pow_scalar", torch.pow, -1.0),
               ("pow_scalar", torch.pow, 3.0),
               ("maximum_scalar", lambda x, s: torch.maximum(x, torch.tensor(s, dtype=x.dtype)), 0.5),
               ("minimum_scalar", lambda x, s: torch.minimum(x, torch.tensor(s, dtype=x.dtype)), 0.5)]
    for op, fn, s in scalars:
        dom = "pos" if op == "pow_scalar" else "any"
        fam.gcase(f"{op}/f64/s={s}/[3,4]", op, [off(rnd([3, 4], "float64", dom))], lambda x, s=s, fn=fn: fn(x, s),
                  {"s": s}, hvp=op == "pow_scalar")
    for dt in ("float64", "float32"):
        p = f"where/{SHORT[dt]}"
        fam.gcase(f"{p}/[3,4]", "where", [rnd([3, 4], "bool"), rnd([3, 4], dt), rnd([3, 4], dt)], torch.where)
        fam.gcase(f"{p}/bcast[3,1]x[1,4]x[]", "where", [rnd([3, 1], "bool"), rnd([1, 4], dt), rnd([], dt)], torch.where)
    fam.gcase("where/f64/strided", "where", [rnd([2, 3], "bool"), L(rnd([2, 3], "float64"), "strided"),
                                             L(rnd([2, 3], "float64"), "transposed")], torch.where)
    fam.gcase("cast/f32tof64/[3,4]", "cast", [rnd([3, 4], "float32")], lambda x: x.double(), {"dtype": "float64"})
    fam.gcase("cast/f32tof64/transposed[2,3]", "cast", [L(rnd([2, 3], "float32"), "transposed")], lambda x: x.double(),
              {"dtype": "float64"})
    fam.gcase("cast/f64tof32/[3,4]", "cast", [rnd([3, 4], "float64")], lambda x: x.float(), {"dtype": "float32"})
    for dt in ("float64", "float32"):
        fam.gcase(f"contiguous/{SHORT[dt]}/transposed[3,4]", "contiguous", [L(rnd([3, 4], dt), "transposed")],
                  lambda x: x.contiguous())
