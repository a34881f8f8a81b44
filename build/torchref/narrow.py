"""Cases of the narrow dtypes (narrow.json): float16 and bfloat16, stored in
16 bits and computed in float32, and int8 and uint8, whose arithmetic wraps.

The reference of a case is torch 1.13's cpu result in the case's dtype.
Where torch 1.13's cpu has no kernel for the dtype (it raises "not
implemented for 'Half'"), the reference is the op in float32 on the same
(rounded) inputs, rounded once to the dtype, which is what lathe computes;
such a case says "reference": "float32". The Go side's tolerances for these
dtypes are in internal/conformance/tolerance.go.
"""

import torch
import torch.nn.functional as F

from refcase import DTYPES, HALVES, SHORT, Family, rnd, vals


def half(shape, dt, domain="any"):
    """rnd's float64 values rounded to dt: the inputs both sides see."""
    return rnd(shape, "float64", domain).to(DTYPES[dt])


def add(fam, name, op, inputs, fn, attrs=None, ref32=False):
    """A case whose reference is torch in the inputs' dtype, or float32
    rounded once where torch's cpu has no kernel for that dtype, or where
    ref32 says that torch 1.13's kernel does not accumulate in float32 (its
    bfloat16 matmul rounds partial sums to bfloat16: 0.6562 for a product
    whose float32 value rounds to 0.6367), which lathe and later torch do."""
    ts = [i for i in inputs if isinstance(i, torch.Tensor)]
    dt = next(t.dtype for t in ts if t.is_floating_point())
    try:
        if ref32:
            raise RuntimeError("not implemented for: accumulates in " + str(dt))
        fn(*inputs)
    except RuntimeError as e:
        if "not implemented for" not in str(e):
            raise
        wide = [i.float() if isinstance(i, torch.Tensor) and i.dtype == dt else i for i in inputs]
        fam.case(name, op, inputs, lambda *_: fn(*wide).to(dt), attrs)
        fam.cases[-1]["reference"] = "float32"
        return
    fam.case(name, op, inputs, fn, attrs)


def narrow():
    fam = Family("narrow", 17)
    specials = [0.0, -0.0, 0.5, -2.5, 1.0, 65504.0, -65504.0, 1e-7, 6e-5, 300.7, float("inf"), float("-inf"), float("nan")]
    for dt in HALVES:
        s = SHORT[dt]
        # Casts: every pair with float32, float64, the ints, bool and the other half.
        x32 = torch.tensor(specials + [0.1, 1 / 3, 70000.0, 3.4e38, -1e-40], dtype=torch.float32)
        fam.case(f"cast/f32_to_{s}/specials", "cast", [x32], lambda x: x.to(DTYPES[dt]), {"dtype": dt})
        x64 = torch.tensor([1 + 2 ** -11 + 2 ** -40, 0.1, 1e-8, -65519.99, 65520.0, 2.0 ** -24 * 0.75], dtype=torch.float64)
        fam.case(f"cast/f64_to_{s}/ties", "cast", [x64], lambda x: x.to(DTYPES[dt]), {"dtype": dt})
        h = torch.tensor(specials, dtype=torch.float32).to(DTYPES[dt])
        for to in ["float32", "float64", "int32", "int64", "bool", "int8", "uint8", HALVES[1 - HALVES.index(dt)]]:
            src = h if to not in ("int32", "int64", "int8", "uint8") else h.nan_to_num(0, 0, 0)
            fam.case(f"cast/{s}_to_{SHORT[to]}", "cast", [src], lambda x, to=to: x.to(DTYPES[to]), {"dtype": to})
        for frm in ["int32", "int64", "int8", "uint8", "bool"]:
            v = {"int32": [0, -7, 2049, 2 ** 24 + 1, -(2 ** 31)], "int64": [5, -2049, 2 ** 40 + 3, 65519, 65520],
                 "int8": [-128, 127, 3], "uint8": [0, 255, 129], "bool": [True, False]}[frm]
            fam.case(f"cast/{SHORT[frm]}_to_{s}", "cast", [vals(v, frm)], lambda x: x.to(DTYPES[dt]), {"dtype": dt})

        # Elementwise: computed in float32 and rounded once.
        a, b = half([3, 4], dt), half([3, 4], dt)
        for op in ["add", "sub", "mul", "div", "maximum", "atan2"]:
            fn = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
                  "maximum": torch.maximum, "atan2": torch.atan2}[op]
            add(fam, f"{op}/{s}/[3,4]", op, [a, b], fn)
        add(fam, f"add/{s}/bcast[3,1]x[1,4]", "add", [half([3, 1], dt), half([1, 4], dt)], torch.add)
        add(fam, f"mul/{s}/overflow", "mul", [vals([300.0, 60000.0, -2.0], "float32").to(DTYPES[dt]),
                                               vals([300.0, 2.0, 65504.0], "float32").to(DTYPES[dt])], torch.mul)
        for op, fn, dom in [("neg", torch.neg, "any"), ("exp", torch.exp, "any"), ("log", torch.log, "pos"),
                            ("sqrt", torch.sqrt, "pos"), ("sin", torch.sin, "any"), ("tanh", torch.tanh, "any"),
                            ("sigmoid", torch.sigmoid, "any"), ("gelu", F.gelu, "any"), ("relu", torch.relu, "any"),
                            ("floor", torch.floor, "wide"), ("round", torch.round, "halves"), ("abs", torch.abs, "any")]:
            add(fam, f"{op}/{s}/[2,5]", op, [half([2, 5], dt, dom)], fn)
        add(fam, f"exp/{s}/specials", "exp", [h], torch.exp)
        # Comparisons give bool, exactly.
        c = half([4, 3], dt, "halves")
        for op, fn in [("eq", torch.eq), ("lt", torch.lt), ("ge", torch.ge)]:
            add(fam, f"{op}/{s}/ties", op, [c, half([4, 3], dt, "halves")], fn)
        add(fam, f"where/{s}", "where", [torch.rand(3, 4) < 0.5, a, b], torch.where)

        # Reductions accumulate in float32 and round once.
        r = half([4, 16], dt)
        add(fam, f"sum/{s}/all[4,16]", "sum", [r], lambda x: x.sum(), {"dims": []})
        add(fam, f"sum/{s}/dim1[4,16]", "sum", [r], lambda x: x.sum(1), {"dims": [1]})
        add(fam, f"mean/{s}/dim0[4,16]", "mean", [r], lambda x: x.mean(0), {"dims": [0]})
        add(fam, f"max/{s}/dim1[4,16]", "max", [r], lambda x: x.amax(1), {"dims": [1]})
        add(fam, f"prod/{s}/dim0[4,3]", "prod", [half([4, 3], dt, "unit")], lambda x: x.prod(0), {"dims": [0]})
        add(fam, f"argmax/{s}/dim1[4,16]", "argmax", [r], lambda x: x.argmax(1), {"dim": 1})
        add(fam, f"var/{s}/dim1[4,16]", "var", [r], lambda x: x.var(1), {"dims": [1], "unbiased": True})
        add(fam, f"cumsum/{s}/dim1[3,8]", "cumsum", [half([3, 8], dt)], lambda x: x.cumsum(1), {"dim": 1})
        add(fam, f"sum/{s}/2048_ones", "sum", [torch.ones(2048, dtype=DTYPES[dt]) * 1.5], lambda x: x.sum(), {"dims": []})
        add(fam, f"softmax/{s}/dim1[3,7]", "softmax", [half([3, 7], dt, "wide")], lambda x: x.softmax(1), {"dim": 1})
        add(fam, f"log_softmax/{s}/dim0[3,7]", "log_softmax", [half([3, 7], dt, "wide")], lambda x: x.log_softmax(0), {"dim": 0})

        # Matmul: float32 GEMM on the widened tiles, rounded once.
        add(fam, f"matmul/{s}/[5,16]x[16,3]", "matmul", [half([5, 16], dt), half([16, 3], dt)], torch.matmul, ref32=True)
        add(fam, f"matmul/{s}/batched[2,3,8]x[8,4]", "matmul", [half([2, 3, 8], dt), half([8, 4], dt)], torch.matmul, ref32=True)

        # Conv and pooling through float32.
        add(fam, f"conv2d/{s}/[1,2,5,5]x[3,2,3,3]", "conv2d", [half([1, 2, 5, 5], dt), half([3, 2, 3, 3], dt), half([3], dt)],
            lambda x, w, bb: F.conv2d(x, w, bb, padding=1), {"padding": [1]})
        add(fam, f"max_pool2d/{s}/k2", "max_pool2d", [half([1, 2, 4, 4], dt)], lambda x: F.max_pool2d(x, 2), {"kernel": [2]})
        add(fam, f"avg_pool2d/{s}/k2", "avg_pool2d", [half([1, 2, 4, 4], dt)], lambda x: F.avg_pool2d(x, 2), {"kernel": [2]})

        # Data movement keeps every value.
        add(fam, f"index_select/{s}/dim0", "index_select", [a, vals([2, 0, 2], "int64")], lambda x, i: x.index_select(0, i), {"dim": 0})
        add(fam, f"gather/{s}/dim1", "gather", [a, vals([[0, 3], [1, 1], [2, 0]], "int64")], lambda x, i: x.gather(1, i), {"dim": 1})
        add(fam, f"masked_fill/{s}", "masked_fill", [a, torch.rand(3, 4) < 0.5], lambda x, m: x.masked_fill(m, 0.1), {"value": 0.1})
        add(fam, f"scatter_add/{s}/dim0", "scatter_add", [a, vals([[0, 1, 2, 0]], "int64"), half([1, 4], dt)],
            lambda x, i, u: x.scatter_add(0, i, u), {"dim": 0})
        add(fam, f"concat/{s}/dim1", "concat", [a, b], lambda x, y: torch.cat([x, y], 1), {"dim": 1})
        add(fam, f"contiguous/{s}/transposed", "contiguous", [a.t()], lambda x: x.contiguous())

    for dt in ["int8", "uint8"]:
        s = SHORT[dt]
        lo, hi = (-128, 128) if dt == "int8" else (0, 256)
        a = torch.randint(lo, hi, [3, 5], dtype=DTYPES[dt])
        b = torch.randint(lo, hi, [3, 5], dtype=DTYPES[dt])
        for op, fn in [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("maximum", torch.maximum),
                       ("eq", torch.eq), ("lt", torch.lt), ("ge", torch.ge)]:
            fam.case(f"{op}/{s}/wrap[3,5]", op, [a, b], fn)
        fam.case(f"add/{s}/bcast[3,1]x[1,5]", "add", [a[:, :1].contiguous(), b[:1].contiguous()], torch.add)
        for op, fn in [("neg", torch.neg), ("abs", torch.abs), ("sign", torch.sign), ("square", torch.square)]:
            fam.case(f"{op}/{s}/[3,5]", op, [a], fn)
        edge = vals([lo, hi - 1, 0, 1, lo + 1], dt)
        fam.case(f"neg/{s}/edges", "neg", [edge], torch.neg)
        fam.case(f"add_scalar/{s}/wrap", "add_scalar", [edge], lambda x: x + 100, {"s": 100.0})
        fam.case(f"pow_scalar/{s}/wrap", "pow_scalar", [edge], lambda x: x ** 3, {"s": 3.0})
        fam.case(f"where/{s}", "where", [torch.rand(3, 5) < 0.5, a, b], torch.where)
        fam.case(f"max/{s}/dim1", "max", [a], lambda x: x.amax(1), {"dims": [1]})
        fam.case(f"argmax/{s}/dim0", "argmax", [a], lambda x: x.argmax(0), {"dim": 0})
        fam.case(f"gather/{s}/dim1", "gather", [a, vals([[0, 4], [1, 1], [2, 0]], "int64")], lambda x, i: x.gather(1, i), {"dim": 1})
        fam.case(f"index_select/{s}/dim1", "index_select", [a, vals([4, 0], "int64")], lambda x, i: x.index_select(1, i), {"dim": 1})
        fam.case(f"masked_fill/{s}", "masked_fill", [a, torch.rand(3, 5) < 0.5], lambda x, m: x.masked_fill(m, 7), {"value": 7.0})
        fam.case(f"contiguous/{s}/transposed", "contiguous", [a.t()], lambda x: x.contiguous())
        # Casts in and out: a float past the range keeps the low 8 bits of
        # its int32 truncation (x86's cvttss2si), NaN and ±Inf give 0.
        f = vals([300.7, -1.0, 1e10, -129.5, float("nan"), float("inf"), 3e9 + 256, -3e9, 255.9, -0.9], "float32")
        fam.case(f"cast/f32_to_{s}/out_of_range", "cast", [f], lambda x: x.to(DTYPES[dt]), {"dtype": dt})
        fam.case(f"cast/f64_to_{s}/out_of_range", "cast", [f.double()], lambda x: x.to(DTYPES[dt]), {"dtype": dt})
        fam.case(f"cast/i32_to_{s}/wrap", "cast", [vals([300, -1, 2 ** 31 - 1, -129, 128], "int32")], lambda x: x.to(DTYPES[dt]), {"dtype": dt})
        fam.case(f"cast/i64_to_{s}/wrap", "cast", [vals([2 ** 40 + 7, -1, 255], "int64")], lambda x: x.to(DTYPES[dt]), {"dtype": dt})
        for to in ["float32", "float64", "int32", "int64", "bool", "int8" if dt == "uint8" else "uint8"]:
            fam.case(f"cast/{s}_to_{SHORT[to]}", "cast", [edge], lambda x, to=to: x.to(DTYPES[to]), {"dtype": to})
        fam.case(f"add/{s}/promote_i32", "add", [a, a.int()], lambda x, y: x + y)
        fam.case(f"add_scalar/{s}/out_of_range/error", "add_scalar", [a], None, {"s": 300.0}, error="value")

    # The norms: statistics and sums in float32, the result rounded once
    # (the reference is float32's: torch 1.13's cpu kernels for bfloat16
    # differ).
    for dt in HALVES:
        s = SHORT[dt]
        add(fam, f"layer_norm/{s}/[3,8]/[8]", "layer_norm", [half([3, 8], dt), half([8], dt), half([8], dt)],
            lambda x, w, b: F.layer_norm(x, [8], w, b, 1e-5), {"normalized_shape": [8], "eps": 1e-5}, ref32=True)
        add(fam, f"group_norm/{s}/[2,4,3]/groups2", "group_norm", [half([2, 4, 3], dt), half([4], dt), half([4], dt)],
            lambda x, w, b: F.group_norm(x, 2, w, b, 1e-5), {"groups": 2, "eps": 1e-5}, ref32=True)
        for p in (2.0, 3.0):
            add(fam, f"vector_norm/{s}/p{p:g}/dims[1][4,16]", "vector_norm", [half([4, 16], dt)],
                lambda x, p=p: torch.linalg.vector_norm(x, p, [1]), {"p": p, "dims": [1]}, ref32=True)
    return fam
