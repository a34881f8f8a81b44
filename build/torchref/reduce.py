"""Cases for reductions (sum ... cumsum) and matmul."""

import torch

from refcase import FLOATS, INF, INTS, NAN, SHORT, Family, L, rnd, shp, vals


# ---- reductions -------------------------------------------------------------

def reduce_fn(op, dims, keepdim):
    def f(x):
        if dims is None and not keepdim:
            return {"sum": torch.sum, "mean": torch.mean, "prod": torch.prod, "max": torch.amax,
                    "min": torch.amin, "logsumexp": lambda x: torch.logsumexp(x, tuple(range(x.dim())))}[op](x)
        d = tuple(range(x.dim())) if dims is None else tuple(dims)
        if op == "prod":  # torch.prod takes one dim: reduce them one at a time
            if len(d) == 1:
                return torch.prod(x, d[0], keepdim=keepdim)
            for k in sorted((i % x.dim() for i in d), reverse=True):
                x = torch.prod(x, k, keepdim=keepdim)
            return x
        g = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax, "min": torch.amin,
             "logsumexp": torch.logsumexp}[op]
        return g(x, d, keepdim=keepdim)
    return f


def rattrs(dims, keepdim, **kw):
    a = dict(kw)
    if dims is not None:
        a["dims"] = list(dims)
    if keepdim:
        a["keepdim"] = True
    return a


def rname(dims, keepdim):
    s = "all" if dims is None else "dims" + shp(dims)
    return s + ("/keepdim" if keepdim else "")


def reductions():
    fam = Family("reduce", 3)
    plans = [([3, 4], None, False), ([3, 4], [1], False), ([2, 3, 4], [-1], True), ([2, 3, 4], [0, 2], False),
             ([2, 3, 4], [0, 2], True), ([2, 3], [0, 1], True), ([4, 16], [1], False), ([2, 3, 4], [], False)]
    for op in ("sum", "mean", "prod", "max", "min", "logsumexp"):
        dom = "unit" if op == "prod" else "any"
        for dt in FLOATS:
            p = f"{op}/{SHORT[dt]}"
            for shape, dims, kd in plans:
                if dims == [] and op not in ("sum", "mean"):
                    continue  # dim=() reads as "all dims" only in sum and mean
                fam.case(f"{p}/{rname(dims, kd)}{shp(shape)}", op, [rnd(shape, dt, dom)], reduce_fn(op, dims, kd),
                         rattrs(dims, kd))
            fam.case(f"{p}/0d", op, [rnd([], dt, dom)], reduce_fn(op, None, False))
            fam.case(f"{p}/0d/dims[0]", op, [rnd([], dt, dom)], reduce_fn(op, [0], False), rattrs([0], False))
            fam.case(f"{p}/empty[0,3]/dims[1]", op, [rnd([0, 3], dt)], reduce_fn(op, [1], False), rattrs([1], False))
            if op in ("sum", "mean", "prod", "logsumexp"):  # a reduction over nothing: 0, nan, 1, -inf
                fam.case(f"{p}/empty[0,3]/dims[0]", op, [rnd([0, 3], dt)], reduce_fn(op, [0], False), rattrs([0], False))
            fam.case(f"{p}/transposed[3,4]/dims[0]", op, [L(rnd([3, 4], dt, dom), "transposed")],
                     reduce_fn(op, [0], False), rattrs([0], False))
            fam.case(f"{p}/strided[3,4]/dims[1]", op, [L(rnd([3, 4], dt, dom), "strided")],
                     reduce_fn(op, [1], False), rattrs([1], False))
            fam.case(f"{p}/nan/dims[1]", op, [vals([[1.0, NAN, 2.0], [INF, 1.0, -1.0]], dt)],
                     reduce_fn(op, [1], False), rattrs([1], False))
            fam.case(f"{p}/dims[2]/error", op, [rnd([3, 4], dt)], reduce_fn(op, [2], False), rattrs([2], False),
                     error="index")
        if op == "logsumexp":
            fam.case("logsumexp/f32/large", op, [vals([[1000.0, -1000.0, 0.0], [-1000.0, -1000.0, -1000.0]], "float32")],
                     reduce_fn(op, [1], False), rattrs([1], False))
            fam.case("logsumexp/f32/-inf", op, [vals([[-INF, -INF], [-INF, 0.0]], "float32")],
                     reduce_fn(op, [1], False), rattrs([1], False))
            continue
        for dt in INTS:
            if op == "mean":
                fam.case(f"mean/{SHORT[dt]}/error", op, [rnd([3, 4], dt)], torch.mean, error="dtype")
                continue
            p = f"{op}/{SHORT[dt]}"
            # Sums and products of integers are int64, as torch's.
            for shape, dims, kd in plans[:3]:
                fam.case(f"{p}/{rname(dims, kd)}{shp(shape)}", op, [rnd(shape, dt, "small")], reduce_fn(op, dims, kd),
                         rattrs(dims, kd))
    for op, fn in (("var", torch.var), ("std", torch.std)):
        for dt in FLOATS:
            p = f"{op}/{SHORT[dt]}"
            for shape, dims, kd in plans[:6]:
                for u in (True, False):
                    f = (lambda x, u=u, fn=fn: fn(x, unbiased=u)) if dims is None and not kd else \
                        (lambda x, d=dims, u=u, kd=kd, fn=fn: fn(x, dim=tuple(d), unbiased=u, keepdim=kd))
                    fam.case(f"{p}/{rname(dims, kd)}/{'unbiased' if u else 'biased'}{shp(shape)}", op,
                             [rnd(shape, dt)], f, rattrs(dims, kd, unbiased=u))
            # One element: the unbiased estimate divides by zero (nan).
            fam.case(f"{p}/one/unbiased", op, [rnd([1, 3], dt)], lambda x, fn=fn: fn(x, dim=0, unbiased=True),
                     rattrs([0], False, unbiased=True))
            fam.case(f"{p}/0d/biased", op, [rnd([], dt)], lambda x, fn=fn: fn(x, unbiased=False),
                     {"unbiased": False})
            fam.case(f"{p}/transposed[3,4]/dims[1]", op, [L(rnd([3, 4], dt), "transposed")],
                     lambda x, fn=fn: fn(x, dim=1, unbiased=True), rattrs([1], False, unbiased=True))
            fam.case(f"{p}/dims[3]/error", op, [rnd([3, 4], dt)], lambda x, fn=fn: fn(x, dim=3),
                     rattrs([3], False, unbiased=True), error="index")
    ties = [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, -1.0]]
    for op, fn in (("argmax", torch.argmax), ("argmin", torch.argmin)):
        for dt in FLOATS + ["int32"]:
            p = f"{op}/{SHORT[dt]}"
            fam.case(f"{p}/all[3,4]", op, [rnd([3, 4], dt)], fn)
            fam.case(f"{p}/dim[1][3,4]", op, [rnd([3, 4], dt)], lambda x, fn=fn: fn(x, 1), {"dim": 1})
            fam.case(f"{p}/dim[-1]/keepdim[2,3,4]", op, [rnd([2, 3, 4], dt)],
                     lambda x, fn=fn: fn(x, -1, keepdim=True), {"dim": -1, "keepdim": True})
            fam.case(f"{p}/dim[0]/keepdim[3,4]", op, [rnd([3, 4], dt)],
                     lambda x, fn=fn: fn(x, 0, keepdim=True), {"dim": 0, "keepdim": True})
            fam.case(f"{p}/ties/dim[1]", op, [vals(ties, dt)], lambda x, fn=fn: fn(x, 1), {"dim": 1})
            fam.case(f"{p}/ties/all", op, [vals(ties, dt)], fn)
            fam.case(f"{p}/0d", op, [rnd([], dt)], fn)
            fam.case(f"{p}/strided[3,4]/dim[1]", op, [L(rnd([3, 4], dt), "strided")],
                     lambda x, fn=fn: fn(x, 1), {"dim": 1})
        fam.case(f"{op}/f32/nan/dim[1]", op, [vals([[1.0, NAN, 5.0, NAN], [0.0, -1.0, 2.0, 1.0]], "float32")],
                 lambda x, fn=fn: fn(x, 1), {"dim": 1})
        fam.case(f"{op}/f32/transposed[3,4]/dim[0]", op, [L(rnd([3, 4], "float32"), "transposed")],
                 lambda x, fn=fn: fn(x, 0), {"dim": 0})
        fam.case(f"{op}/f32/dim[2]/error", op, [rnd([3, 4], "float32")], lambda x, fn=fn: fn(x, 2), {"dim": 2},
                 error="index")
    for dt in FLOATS + INTS:
        p = f"cumsum/{SHORT[dt]}"
        cs = lambda d: (lambda x: torch.cumsum(x, d))
        fam.case(f"{p}/dim[1][3,4]", "cumsum", [rnd([3, 4], dt)], cs(1), {"dim": 1})
        fam.case(f"{p}/dim[-2][2,3,4]", "cumsum", [rnd([2, 3, 4], dt)], cs(-2), {"dim": -2})
        fam.case(f"{p}/0d/dim[0]", "cumsum", [rnd([], dt)], cs(0), {"dim": 0})
        fam.case(f"{p}/strided[3,4]/dim[1]", "cumsum", [L(rnd([3, 4], dt), "strided")], cs(1), {"dim": 1})
    fam.case("cumsum/f32/empty[0,3]/dim[0]", "cumsum", [rnd([0, 3], "float32")], lambda x: torch.cumsum(x, 0), {"dim": 0})
    fam.case("cumsum/f32/transposed[3,4]/dim[1]", "cumsum", [L(rnd([3, 4], "float32"), "transposed")],
             lambda x: torch.cumsum(x, 1), {"dim": 1})
    fam.case("cumsum/f32/nan", "cumsum", [vals([1.0, NAN, 2.0, INF, -INF], "float32")], lambda x: torch.cumsum(x, 0),
             {"dim": 0})
    fam.case("cumsum/f32/dim[2]/error", "cumsum", [rnd([3, 4], "float32")], lambda x: torch.cumsum(x, 2), {"dim": 2},
             error="index")
    # Bool, int8 and uint8 sum, multiply and run to int64, as torch's: a
    # bool sum counts, and uint8 values near 255 would wrap in their dtype.
    byte = {"bool": lambda s: torch.rand(s) < 0.5, "int8": lambda s: torch.randint(-128, 128, s, dtype=torch.int8),
            "uint8": lambda s: torch.randint(200, 256, s, dtype=torch.uint8)}
    for dt, make in byte.items():
        for shape, dims, kd in ([3, 4], None, False), ([3, 4], [1], False), ([2, 3, 4], [-1], True):
            fam.case(f"sum/{SHORT[dt]}/{rname(dims, kd)}{shp(shape)}", "sum", [make(shape)], reduce_fn("sum", dims, kd),
                     rattrs(dims, kd))
        fam.case(f"prod/{SHORT[dt]}/dims[1][2,3]", "prod", [make([2, 3])], reduce_fn("prod", [1], False),
                 rattrs([1], False))
        fam.case(f"cumsum/{SHORT[dt]}/dim[1][3,4]", "cumsum", [make([3, 4])], lambda x: torch.cumsum(x, 1), {"dim": 1})
    return fam


# ---- matmul -------------------------------------------------------------------

def matmul():
    fam = Family("matmul", 4)
    shapes = [([4], [4]), ([3], [3, 5]), ([2, 3], [3]), ([2, 3], [3, 4]), ([2, 2, 3], [2, 3, 4]),
              ([2, 1, 3, 4], [3, 4, 2]), ([2, 3, 4], [4]), ([4], [2, 4, 3]), ([3, 4], [2, 4, 2]),
              ([0, 3], [3, 2]), ([2, 0], [0, 3]), ([8, 8], [8, 8]), ([1, 1], [1, 1])]
    for dt in FLOATS + ["int32", "int64"]:
        dom = "small" if dt in INTS else "any"
        for a, b in shapes:
            fam.case(f"matmul/{SHORT[dt]}/{shp(a)}x{shp(b)}", "matmul", [rnd(a, dt, dom), rnd(b, dt, dom)], torch.matmul)
        fam.case(f"matmul/{SHORT[dt]}/transposed[3,4]x[4,2]", "matmul",
                 [L(rnd([3, 4], dt, dom), "transposed"), rnd([4, 2], dt, dom)], torch.matmul)
        fam.case(f"matmul/{SHORT[dt]}/[3,4]xtransposed[4,2]", "matmul",
                 [rnd([3, 4], dt, dom), L(rnd([4, 2], dt, dom), "transposed")], torch.matmul)
        fam.case(f"matmul/{SHORT[dt]}/strided[2,3]x[3,2]", "matmul",
                 [L(rnd([2, 3], dt, dom), "strided"), rnd([3, 2], dt, dom)], torch.matmul)
    fam.case("matmul/f32/special", "matmul", [vals([[1.0, INF], [NAN, 0.0]], "float32"), vals([[1.0, 2.0], [0.0, 1.0]], "float32")],
             torch.matmul)
    fam.case("matmul/f32/shape[2,3]x[4,2]", "matmul", [rnd([2, 3], "float32"), rnd([4, 2], "float32")], torch.matmul,
             error="shape")
    fam.case("matmul/f32/shape[2,2,3]x[3,3,2]", "matmul", [rnd([2, 2, 3], "float32"), rnd([3, 3, 2], "float32")],
             torch.matmul, error="shape")
    fam.case("matmul/f32/0d", "matmul", [rnd([], "float32"), rnd([3], "float32")], torch.matmul, error="shape")
    fam.case("matmul/f32xf64/error", "matmul", [rnd([2, 3], "float32"), rnd([3, 2], "float64")], error="dtype")
    fam.case("matmul/bool/error", "matmul", [rnd([2, 3], "bool"), rnd([3, 2], "bool")], error="dtype")
    return fam
