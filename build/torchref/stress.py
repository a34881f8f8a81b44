"""Cases that small random inputs cannot catch (stress.json): values around
±1000 along every dim of softmax, log_softmax and logsumexp, where a maximum
taken over the wrong elements overflows exp; and rows far longer than the
other families' 64 elements (3000 and 70000), for the reductions, softmax and
cumsum, where a kernel that drops or repeats a block of a long row is off.

The long inputs are generated on both sides (refcase.G) and long outputs
stored as base64, which keeps the file small.
"""

import torch
import torch.nn.functional as F

from refcase import FLOATS, SHORT, Family, G, rnd, shp


def offsets(shape, dim):
    """1000·(m - M/2), where m numbers the slices along every dim but dim: any
    two elements of different rows of dim are 1000 or more apart, so a max
    taken from another row is 1000 off and exp of x - max overflows to inf or
    underflows to 0 (in float64 too), while within a row the values stay O(1)."""
    d = dim % len(shape)
    rest = [s for i, s in enumerate(shape) if i != d]
    m = torch.arange(int(torch.tensor(rest).prod()), dtype=torch.float64).reshape(rest)
    return (1000 * (m - m.numel() // 2)).unsqueeze(d).expand(shape)


def large(fam):
    ops = (("softmax", F.softmax, {}), ("log_softmax", F.log_softmax, {}),
           ("logsumexp", lambda x, d: torch.logsumexp(x, d), None))
    for op, fn, _ in ops:
        for dt in FLOATS:
            for shape, dims in (([3, 4, 5], (0, 1, 2, -1)), ([4, 6], (0, 1)), ([2, 3, 2, 3], (1, 3))):
                for d in dims:
                    # O(1) values on a 2^-9 grid: with the offsets (below
                    # 2^14) they are exact in float32, so the float64 case
                    # narrowed to float32 (wgpu) computes on the same values.
                    noise = torch.round(rnd(shape, "float64", "wide") * 512) / 512
                    x = (noise + offsets(shape, d)).to(rnd([], dt).dtype)
                    attrs = {"dims": [d]} if op == "logsumexp" else {"dim": d}
                    fam.case(f"{op}/{SHORT[dt]}/large{shp(shape)}/dim{d}", op, [x], lambda x, d=d, fn=fn: fn(x, d), attrs)
            # Rows that mix ±1000 with O(1) values: the max is one element.
            x = torch.tensor([[1000.0, -1000.0, 0.5, 999.0, -3.0], [-1000.5, -1000.0, -999.0, -1001.0, -1000.25],
                              [2.0, 1000.0, -1000.0, 1.0, 0.0]], dtype=torch.float64).to(rnd([], dt).dtype)
            for d in (0, 1):
                attrs = {"dims": [d]} if op == "logsumexp" else {"dim": d}
                fam.case(f"{op}/{SHORT[dt]}/mixed±1000/dim{d}", op, [x], lambda x, d=d, fn=fn: fn(x, d), attrs)


def reduce_fn(op, dims):
    def f(x):
        d = tuple(range(x.dim())) if dims is None else tuple(dims)
        if op == "prod":
            for k in sorted((i % x.dim() for i in d), reverse=True):
                x = torch.prod(x, k)
            return x
        if op in ("argmax", "argmin"):
            return getattr(torch, op)(x) if dims is None else getattr(torch, op)(x, d[0])
        if op in ("var", "std"):
            return getattr(torch, op)(x, d, unbiased=True)
        return {"sum": torch.sum, "mean": torch.mean, "max": torch.amax, "min": torch.amin,
                "logsumexp": torch.logsumexp}[op](x, d)
    return f


def rattrs(op, dims):
    if op in ("argmax", "argmin"):
        return {} if dims is None else {"dim": dims[0]}
    a = {} if dims is None else {"dims": list(dims)}
    if op in ("var", "std"):
        a["unbiased"] = True
    return a


# Long rows: along the last dim (contiguous runs), along the first (strided
# runs: a column sum), and one whole 70000-element tensor.
LONG = [([3, 3000], [1]), ([3000, 3], [0]), ([2, 70000], [1]), ([70000], None)]


def long_rows(fam):
    seed = iter(range(1000, 100000))
    for op in ("sum", "mean", "max", "min", "logsumexp", "argmax", "argmin", "var", "std"):
        for dt in FLOATS:
            for shape, dims in LONG:
                name = f"{op}/{SHORT[dt]}/long{shp(shape)}/" + ("all" if dims is None else f"dims{shp(dims)}")
                fam.case(name, op, [G(shape, dt, next(seed))], reduce_fn(op, dims), rattrs(op, dims))
    # Products of 1, 2 and 0.5 (mostly 1) are exact in any order, and stay
    # far inside float32's range over 3000 terms.
    for dt in FLOATS:
        for shape, dims in LONG[:2]:
            fam.case(f"prod/{SHORT[dt]}/long{shp(shape)}/dims{shp(dims)}", "prod",
                     [G(shape, dt, next(seed), choices=[0.5, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])],
                     reduce_fn("prod", dims), rattrs("prod", dims))
    # Integer sums are int64, as torch's; int64 values of ±2^42 overflow an
    # int32 accumulator at once.
    for dt, step in (("int32", 1.0), ("int64", 2.0 ** 31)):
        for shape, dims in LONG:
            for op in ("sum", "max", "argmax"):
                name = f"{op}/{SHORT[dt]}/long{shp(shape)}/" + ("all" if dims is None else f"dims{shp(dims)}")
                fam.case(name, op, [G(shape, dt, next(seed), levels=4096, step=step)], reduce_fn(op, dims),
                         rattrs(op, dims))
    # Softmax and cumsum keep the row: their outputs are long (base64).
    for dt in FLOATS:
        for shape, d in (([2, 3000], 1), ([3000, 2], 0), ([70000], 0)):
            if dt == "float64" and shape != [3000, 2]:
                continue  # float32 covers the rest in half the bytes
            for op, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax), ("cumsum", torch.cumsum)):
                if op == "log_softmax" and shape == [70000]:
                    continue  # softmax's kernel, and it would take the file past 1.5 MB
                fam.case(f"{op}/{SHORT[dt]}/long{shp(shape)}/dim{d}", op, [G(shape, dt, next(seed))],
                         lambda x, d=d, fn=fn: fn(x, d), {"dim": d})
    for dt, step, shapes in (("int32", 1.0, (([2, 3000], 1), ([3000, 2], 0))), ("int64", 2.0 ** 31, (([3000, 2], 0),))):
        for shape, d in shapes:
            fam.case(f"cumsum/{SHORT[dt]}/long{shp(shape)}/dim{d}", "cumsum", [G(shape, dt, next(seed), step=step)],
                     lambda x, d=d: torch.cumsum(x, d), {"dim": d})


def stress():
    fam = Family("stress", 30)
    large(fam)
    long_rows(fam)
    return fam
