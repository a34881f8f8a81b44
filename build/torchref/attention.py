"""Cases for scaled dot-product attention: forward ones (attention.json) and
gradient ones (grad_attention.json).

torch 1.13 has no public F.scaled_dot_product_attention (torch 2.x's). The
reference is therefore the op's definition in torch, computed in float64
and rounded once to the case's dtype: softmax(q·kᵀ·scale + mask)·v, with a
Bool mask as -inf where false, is_causal as the top-left aligned lower
triangle of ones(Lq, Lk) (torch 2.x), and grouped-query attention as
torch 2.5's enable_gqa (k and v repeated with repeat_interleave over the
head dim). Where torch 1.13's private F._scaled_dot_product_attention can
run the case (no additive mask, the default scale, no grouped heads), the
script checks that it agrees with the definition.

Inputs: query, key, value and attn_mask (null for none). Attributes:
`causal` (bool) and `scale` (absent for the default 1/sqrt(E)).
"""

import math

import torch
import torch.nn.functional as F

from grad import GradFamily
from refcase import SHORT, Family, L, rnd

CHECKED = [0]  # cases checked against F._scaled_dot_product_attention


def sdpa(q, k, v, mask=None, causal=False, scale=None):
    """The definition, in float64, rounded to q's dtype (differentiable)."""
    dt = q.dtype
    q, k, v = q.double(), k.double(), v.double()
    if mask is not None and mask.dtype != torch.bool:
        mask = mask.double()
    e = q.shape[-1]
    s = scale if scale is not None else (1 / math.sqrt(e) if e > 0 else 1.0)
    if q.dim() >= 3 and k.dim() >= 3 and q.shape[-3] != k.shape[-3]:
        g = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(g, dim=-3), v.repeat_interleave(g, dim=-3)
    scores = (q * s) @ k.transpose(-1, -2)
    if causal:
        lq, lk = q.shape[-2], k.shape[-2]
        tri = torch.ones(lq, lk, dtype=torch.bool).tril()
        scores = scores.masked_fill(~tri, -math.inf)
    elif mask is not None and mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask, -math.inf)
    elif mask is not None:
        scores = scores + mask
    out = torch.softmax(scores, -1) @ v
    return out.to(dt)


def check_private(name, q, k, v, mask, causal, scale):
    """Compares with torch 1.13's F._scaled_dot_product_attention where it
    takes the case."""
    if scale is not None or (mask is not None and mask.dtype != torch.bool):
        return
    if q.dim() >= 3 and k.dim() >= 3 and q.shape[-3] != k.shape[-3]:
        return
    if q.shape[-1] == 0 or k.shape[-2] == 0 or q.dim() != k.dim() or q.dim() != v.dim():
        return
    if causal and q.shape[-2] != k.shape[-2]:
        return  # 1.13's is_causal is its own triangle; torch 2.x aligns at the top left
    d = lambda t: None if t is None else (t if t.dtype == torch.bool else t.double())
    got, _ = F._scaled_dot_product_attention(d(q), d(k), d(v), d(mask), 0.0, False, causal)
    want = sdpa(d(q), d(k), d(v), mask, causal, scale)
    ok = torch.allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert ok, f"{name}: F._scaled_dot_product_attention differs by {(got - want).abs().max()}"
    CHECKED[0] += 1


def attrs(causal=False, scale=None):
    a = {"causal": causal}
    if scale is not None:
        a["scale"] = float(scale)
    return a


def shapes():
    """(label, q, k, v, mask shape or None) for the forward cases."""
    return [
        ("[3,4]x[5,4]", [3, 4], [5, 4], [5, 4], None),
        ("[2,3,4]x[2,5,4]", [2, 3, 4], [2, 5, 4], [2, 5, 4], None),
        ("[2,2,3,4]x[2,2,5,4]", [2, 2, 3, 4], [2, 2, 5, 4], [2, 2, 5, 4], None),
        ("ev6/[2,2,3,4]x[2,2,5,4]", [2, 2, 3, 4], [2, 2, 5, 4], [2, 2, 5, 6], None),
        ("gqa/[2,4,3,4]x[2,2,5,4]", [2, 4, 3, 4], [2, 2, 5, 4], [2, 2, 5, 3], None),
        ("gqa/[1,6,2,3]x[1,1,4,3]", [1, 6, 2, 3], [1, 1, 4, 3], [1, 1, 4, 3], None),
        ("bcast/[2,1,2,3,4]x[1,3,2,5,4]", [2, 1, 2, 3, 4], [1, 3, 2, 5, 4], [1, 3, 2, 5, 4], None),
        ("bcast/[2,2,3,4]x[2,5,4]", [2, 2, 3, 4], [2, 5, 4], [2, 5, 4], None),
    ]


def attention():
    fam = Family("attention", 51)
    c = fam.case
    for dt in ("float64", "float32"):
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        for label, qs, ks, vs, _ in shapes():
            ins = [x(qs), x(ks), x(vs), None]
            c(f"sdpa/{s}/{label}", "sdpa", ins, fn(attrs()), attrs())
            c(f"sdpa/{s}/causal/{label}", "sdpa", ins, fn(attrs(True)), attrs(True))
        # Masks: bool and additive, full and broadcast.
        q, k, v = x([2, 2, 3, 4]), x([2, 2, 5, 4]), x([2, 2, 5, 4])
        for ml, mshape in (("[3,5]", [3, 5]), ("[2,1,3,5]", [2, 1, 3, 5]), ("[2,2,3,5]", [2, 2, 3, 5]), ("[5]", [5])):
            bm = torch.rand(mshape) < 0.7
            bm[..., 0] = True  # no row all false here
            c(f"sdpa/{s}/bool_mask{ml}", "sdpa", [q, k, v, bm], fn(attrs()), attrs())
            c(f"sdpa/{s}/float_mask{ml}", "sdpa", [q, k, v, x(mshape)], fn(attrs()), attrs())
        # Causal with Lq != Lk, both ways (top-left aligned, as torch 2.x).
        for lq, lk in ((5, 3), (3, 6), (1, 4), (4, 1)):
            ins = [x([2, 2, lq, 4]), x([2, 2, lk, 4]), x([2, 2, lk, 3]), None]
            c(f"sdpa/{s}/causal/lq{lq}_lk{lk}", "sdpa", ins, fn(attrs(True)), attrs(True))
        for sc in (0.1, 2.0):
            ins = [x([2, 3, 4]), x([2, 5, 4]), x([2, 5, 4]), None]
            c(f"sdpa/{s}/scale{sc}", "sdpa", ins, fn(attrs(scale=sc)), attrs(scale=sc))
        # Empty sequences and batches; an empty E (scores 0).
        for label, qs, ks, vs in (("lq0", [2, 0, 4], [2, 5, 4], [2, 5, 3]), ("lk0", [2, 3, 4], [2, 0, 4], [2, 0, 3]),
                                  ("batch0", [0, 2, 3, 4], [0, 2, 5, 4], [0, 2, 5, 4]),
                                  ("e0", [2, 3, 0], [2, 5, 0], [2, 5, 3])):
            c(f"sdpa/{s}/empty/{label}", "sdpa", [x(qs), x(ks), x(vs), None], fn(attrs()), attrs())
        # A query row that may attend to no key: NaN, as torch's math kernel.
        bm = torch.ones(3, 5, dtype=torch.bool)
        bm[1] = False
        c(f"sdpa/{s}/bool_mask/row_all_false", "sdpa", [x([2, 3, 4]), x([2, 5, 4]), x([2, 5, 4]), bm],
          fn(attrs()), attrs())
        am = x([3, 5])
        am[2] = -math.inf
        c(f"sdpa/{s}/float_mask/row_all_-inf", "sdpa", [x([2, 3, 4]), x([2, 5, 4]), x([2, 5, 4]), am],
          fn(attrs()), attrs())
    x = lambda shape: rnd(shape, "float64")
    c("sdpa/f64/transposed_key[2,5,4]", "sdpa", [x([2, 3, 4]), L(x([2, 5, 4]), "transposed"), x([2, 5, 4]), None],
      fn(attrs()), attrs())
    c("sdpa/f64/strided_query[2,3,4]", "sdpa", [L(x([2, 3, 4]), "strided"), x([2, 5, 4]), x([2, 5, 4]), None],
      fn(attrs()), attrs())
    # Errors (lathe's own checks; torch 2.x refuses these too).
    err = lambda name, ins, kind, a=None: c(f"sdpa/err/{name}", "sdpa", ins, attrs=a or attrs(), error=kind)
    err("e_mismatch", [x([2, 3, 4]), x([2, 5, 3]), x([2, 5, 4]), None], "shape")
    err("lk_mismatch", [x([2, 3, 4]), x([2, 5, 4]), x([2, 6, 4]), None], "shape")
    err("heads_not_dividing", [x([1, 4, 3, 4]), x([1, 3, 5, 4]), x([1, 3, 5, 4]), None], "shape")
    err("kv_heads_differ", [x([1, 4, 3, 4]), x([1, 2, 5, 4]), x([1, 1, 5, 4]), None], "shape")
    err("batch_mismatch", [x([2, 3, 4]), x([3, 5, 4]), x([3, 5, 4]), None], "shape")
    err("rank1", [x([4]), x([5, 4]), x([5, 4]), None], "shape")
    err("mask_shape", [x([2, 3, 4]), x([2, 5, 4]), x([2, 5, 4]), torch.ones(3, 4, dtype=torch.bool)], "shape")
    err("mask_enlarges", [x([2, 3, 4]), x([2, 5, 4]), x([2, 5, 4]), torch.ones(2, 2, 3, 5, dtype=torch.bool)], "shape")
    err("mask_and_causal", [x([2, 3, 4]), x([2, 5, 4]), x([2, 5, 4]), torch.ones(3, 5, dtype=torch.bool)], "value",
        attrs(True))
    err("mask_int", [x([2, 3, 4]), x([2, 5, 4]), x([2, 5, 4]), torch.ones(3, 5, dtype=torch.int64)], "dtype")
    err("mixed_dtypes", [x([2, 3, 4]), rnd([2, 5, 4], "float32"), x([2, 5, 4]), None], "dtype")
    err("int_inputs", [torch.ones(2, 3, 4, dtype=torch.int64)] * 3 + [None], "dtype")
    err("scale0", [x([2, 3, 4]), x([2, 5, 4]), x([2, 5, 4]), None], "value", attrs(scale=0.0))
    err("scale-1", [x([2, 3, 4]), x([2, 5, 4]), x([2, 5, 4]), None], "value", attrs(scale=-1.0))
    print(f"attention: {CHECKED[0]} cases agree with torch 1.13's F._scaled_dot_product_attention")
    return fam


def fn(a):
    """torch's value of a case with attributes a, checked against 1.13's
    private kernel where it applies."""
    def f(q, k, v, mask=None):
        check_private("case", q, k, v, mask, a["causal"], a.get("scale"))
        return sdpa(q, k, v, mask, a["causal"], a.get("scale"))
    return f


def grad_attention():
    fam = GradFamily("grad_attention", 52)
    g = fam.gcase
    for dt in ("float64", "float32"):
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        cases = [
            ("[2,3,4]x[2,5,4]", [2, 3, 4], [2, 5, 4], [2, 5, 4], None, attrs()),
            ("ev3/[2,2,3,4]x[2,2,5,4]", [2, 2, 3, 4], [2, 2, 5, 4], [2, 2, 5, 3], None, attrs()),
            ("gqa/[1,4,3,4]x[1,2,5,4]", [1, 4, 3, 4], [1, 2, 5, 4], [1, 2, 5, 4], None, attrs()),
            ("bcast/[2,2,3,4]x[2,5,4]", [2, 2, 3, 4], [2, 5, 4], [2, 5, 4], None, attrs()),
            ("causal/lq4_lk6", [2, 4, 3], [2, 6, 3], [2, 6, 3], None, attrs(True)),
            ("causal/lq5_lk3", [2, 5, 3], [2, 3, 3], [2, 3, 2], None, attrs(True)),
            ("scale0.3", [2, 3, 4], [2, 5, 4], [2, 5, 4], None, attrs(scale=0.3)),
            ("float_mask[3,5]", [2, 3, 4], [2, 5, 4], [2, 5, 4], "float", attrs()),
            ("float_mask[2,1,3,5]", [2, 2, 3, 4], [2, 2, 5, 4], [2, 2, 5, 4], "float4", attrs()),
            ("bool_mask[3,5]", [2, 3, 4], [2, 5, 4], [2, 5, 4], "bool", attrs()),
        ]
        for label, qs, ks, vs, mk, a in cases:
            mask = None
            if mk == "float":
                mask = x([3, 5])
            elif mk == "float4":
                mask = x([2, 1, 3, 5])
            elif mk == "bool":
                mask = torch.rand(3, 5) < 0.6
                mask[:, 0] = True
            f = lambda q, k, v, m=None, a=a: sdpa(q, k, v, m, a["causal"], a.get("scale"))
            g(f"sdpa/{s}/{label}", "sdpa", [x(qs), x(ks), x(vs), mask], f, a, hvp=True)
    x = lambda shape: rnd(shape, "float64")
    f = lambda q, k, v, m=None: sdpa(q, k, v, m)
    g("sdpa/f64/lk0", "sdpa", [x([2, 3, 4]), x([2, 0, 4]), x([2, 0, 3]), None], f, attrs())
    g("sdpa/f64/lq0", "sdpa", [x([2, 0, 4]), x([2, 5, 4]), x([2, 5, 3]), None], f, attrs())
    return fam

