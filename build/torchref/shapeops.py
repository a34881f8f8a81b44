"""Cases of the ops a decoder needs (shape_ops.json) and their gradients of
first and second order (grad_shape_ops.json): tril, triu, repeat, tile,
repeat_interleave with an int count and with a tensor of counts, and einsum.

Op keys and attributes: tril and triu take "diagonal"; repeat and tile
"reps"; repeat_interleave "repeats" and "dim"; repeat_interleave_counts
"counts" (a list, made a tensor) and "dim"; einsum "equation" with the
operands as inputs. tril, triu and the repeats are linear in x, so their
second-order cases square the result (attribute "square": true), as pad's
do, so that the Hessian is not zero; einsum of two or more operands is not
linear and needs no square.

Where torch refuses, the case says so (error, torch_raises); lathe's
errors where torch would not refuse are none here.
"""

import torch

from grad import GradFamily
from refcase import FLOATS, INTS, SHORT, Family, L, rnd, shp

TRI = (("tril", torch.tril), ("triu", torch.triu))

# (shape, diagonals): square, wide, tall, batched, empty, and diagonals past
# every edge.
TRI_PLANS = [([4, 4], [0, 1, -1, 3, -3, 4, -4, 100, -100]), ([3, 5], [0, 2, -2, 5, -3]),
             ([5, 3], [0, 1, -4, 3]), ([2, 3, 4], [0, -1, 2]), ([2, 1, 3, 3], [0, 1]),
             ([0, 3], [0]), ([3, 0], [1]), ([2, 0, 4, 4], [0])]

REPEAT_PLANS = [([2, 3], [2, 1]), ([2, 3], [1, 3]), ([2, 3], [2, 2]), ([2, 3], [3, 2, 1]), ([3], [2, 1, 2]),
                ([], [3]), ([], []), ([2, 3], [0, 2]), ([0, 3], [2, 2]), ([2, 1, 3], [1, 4, 1]),
                ([2, 3], [1, 1])]
TILE_PLANS = [([2, 3], [2]), ([2, 3], []), ([2, 3, 2], [2, 1]), ([3], [2, 2]), ([2, 3], [2, 1, 2]), ([], [2]),
              ([2, 3], [0])]
INTERLEAVE_PLANS = [([2, 3], 2, 0), ([2, 3], 3, 1), ([2, 3], 2, -1), ([2, 3, 4], 2, 1), ([2, 3, 4], 1, -2),
                    ([3], 4, 0), ([2, 3], 0, 1), ([0, 3], 2, 0), ([2, 4, 2], 3, -3)]

# (equation, operand shapes): the contractions attention code writes and
# the rest of einsum's grammar.
EINSUM_PLANS = [
    ("bhqd,bhkd->bhqk", [[2, 2, 3, 4], [2, 2, 5, 4]]),
    ("bhqk,bhkd->bhqd", [[2, 2, 3, 5], [2, 2, 5, 4]]),
    ("bij,bjk->bik", [[2, 3, 4], [2, 4, 2]]),
    ("ij->ji", [[3, 4]]),
    ("ii->i", [[4, 4]]),
    ("i,i->", [[5], [5]]),
    ("i,j->ij", [[3], [4]]),
    ("...ij,...jk->...ik", [[2, 3, 2, 4], [2, 3, 4, 3]]),
    ("...ij,...jk->...ik", [[3, 4], [2, 4, 2]]),
    ("bn,anm,bm->ba", [[2, 3], [4, 3, 5], [2, 5]]),
    ("ij,jk", [[2, 3], [3, 4]]),
    ("ba,ab", [[2, 3], [3, 2]]),
    ("Ba,aC", [[2, 3], [3, 2]]),
    ("ii", [[3, 3]]),
    ("iij->ji", [[3, 3, 2]]),
    ("i j -> j i", [[2, 3]]),
    ("ij,jk->ik", [[2, 1], [3, 4]]),
    ("bij,bjk->bik", [[1, 2, 3], [4, 3, 2]]),
    ("ij->", [[3, 4]]),
    ("ijk->kj", [[2, 3, 4]]),
    ("...->...", [[2, 3]]),
    ("i...->...", [[2, 3]]),
    ("ab...,b...->a...", [[2, 3, 4], [3, 4]]),
    ("i,->i", [[3], []]),
    ("->", [[]]),
    ("ij,ij->ij", [[2, 3], [2, 3]]),
    ("bhqd,bkd->bhqk", [[2, 3, 2, 4], [2, 5, 4]]),
    ("ij,jk,kl->il", [[2, 3], [3, 4], [4, 2]]),
    ("ij,jk->ik", [[2, 0], [0, 3]]),
    ("bij,bjk->bik", [[0, 2, 3], [0, 3, 2]]),
    ("i,i->i", [[1], [3]]),
]

# Equations torch refuses: (equation, shapes, kind).
EINSUM_ERRORS = [
    ("i1", [[2, 3]], "value"), ("ij->j>", [[2, 2]], "value"), ("ij-", [[2, 2]], "value"),
    ("..i->i", [[2]], "value"), ("ij->.", [[2, 2]], "value"), ("ij->ii", [[2, 3]], "value"),
    ("ij->k", [[2, 3]], "value"), ("i,i", [[2]], "value"), ("i", [[2], [2]], "value"),
    ("ij", [[2, 3, 4]], "shape"), ("ij,jk", [[2, 2], [3, 4]], "shape"), ("ii->i", [[2, 3]], "shape"),
    ("...i,...i->...", [[2, 3], [4, 3]], "shape"),
]


def einsum_fn(eq):
    return lambda *xs: torch.einsum(eq, *xs)


def einsum_name(eq, shapes):
    return eq.replace(" ", "_") + "/" + "x".join(shp(s) for s in shapes)


def shape_ops():
    fam = Family("shape_ops", 41)
    for op, fn in TRI:
        for dt in FLOATS + INTS + ["bool"]:
            for shape, diagonals in TRI_PLANS:
                if dt != "float32" and len(diagonals) > 5:
                    diagonals = diagonals[:3] + diagonals[-2:]
                for k in diagonals:
                    fam.case(f"{op}/{SHORT[dt]}/{shp(shape)}/k={k}", op, [rnd(shape, dt)],
                             lambda x, k=k, fn=fn: fn(x, k), {"diagonal": k})
        for dt in ("float32", "int32"):
            fam.case(f"{op}/{SHORT[dt]}/transposed[2,3,4]/k=1", op, [L(rnd([2, 3, 4], dt), "transposed")],
                     lambda x, fn=fn: fn(x, 1), {"diagonal": 1})
            fam.case(f"{op}/{SHORT[dt]}/strided[3,3]/k=0", op, [L(rnd([3, 3], dt), "strided")],
                     lambda x, fn=fn: fn(x, 0), {"diagonal": 0})
        # NaN and Inf above the diagonal are zeroed, as torch's.
        fam.case(f"{op}/f32/special[3,3]", op, [torch.tensor([[1.0, float("nan"), float("inf")],
                                                              [float("-inf"), -0.0, float("nan")],
                                                              [float("nan"), 2.0, 3.0]])],
                 lambda x, fn=fn: fn(x, 0), {"diagonal": 0})
        fam.case(f"{op}/f32/[3]/error", op, [rnd([3], "float32")], lambda x, fn=fn: fn(x, 0), {"diagonal": 0},
                 error="shape")
        fam.case(f"{op}/f32/0d/error", op, [rnd([], "float32")], lambda x, fn=fn: fn(x, 0), {"diagonal": 0},
                 error="shape")
    for dt in FLOATS + INTS + ["bool"]:
        for shape, reps in REPEAT_PLANS:
            fam.case(f"repeat/{SHORT[dt]}/{shp(shape)}/{shp(reps)}", "repeat", [rnd(shape, dt)],
                     lambda x, r=reps: x.repeat(*r) if r else x.repeat(()), {"reps": reps})
        for shape, reps in TILE_PLANS:
            fam.case(f"tile/{SHORT[dt]}/{shp(shape)}/{shp(reps)}", "tile", [rnd(shape, dt)],
                     lambda x, r=reps: torch.tile(x, tuple(r)), {"reps": reps})
        for shape, n, dim in INTERLEAVE_PLANS:
            fam.case(f"repeat_interleave/{SHORT[dt]}/{shp(shape)}/n={n}/dim={dim}", "repeat_interleave",
                     [rnd(shape, dt)], lambda x, n=n, d=dim: torch.repeat_interleave(x, n, dim=d),
                     {"repeats": n, "dim": dim})
    for dt in ("float32", "int64"):
        fam.case(f"repeat/{SHORT[dt]}/transposed[3,4]/[2,2]", "repeat", [L(rnd([3, 4], dt), "transposed")],
                 lambda x: x.repeat(2, 2), {"reps": [2, 2]})
        fam.case(f"tile/{SHORT[dt]}/strided[2,3]/[3]", "tile", [L(rnd([2, 3], dt), "strided")],
                 lambda x: torch.tile(x, (3,)), {"reps": [3]})
        fam.case(f"repeat_interleave/{SHORT[dt]}/transposed[2,3,4]/n=2/dim=1", "repeat_interleave",
                 [L(rnd([2, 3, 4], dt), "transposed")], lambda x: torch.repeat_interleave(x, 2, dim=1),
                 {"repeats": 2, "dim": 1})
    # Refusals torch makes too.
    x = rnd([2, 3], "float32")
    fam.case("repeat/f32/[2,3]/[2]/error", "repeat", [x], lambda x: x.repeat(2), {"reps": [2]}, error="value")
    fam.case("repeat/f32/[2,3]/[2,-1]/error", "repeat", [x], lambda x: x.repeat(2, -1), {"reps": [2, -1]},
             error="value")
    fam.case("tile/f32/[2,3]/[-1]/error", "tile", [x], lambda x: torch.tile(x, (-1,)), {"reps": [-1]}, error="value")
    fam.case("repeat_interleave/f32/[2,3]/n=-1/error", "repeat_interleave", [x],
             lambda x: torch.repeat_interleave(x, -1, dim=0), {"repeats": -1, "dim": 0}, error="value")
    fam.case("repeat_interleave/f32/[2,3]/dim=2/error", "repeat_interleave", [x],
             lambda x: torch.repeat_interleave(x, 2, dim=2), {"repeats": 2, "dim": 2}, error="index")
    fam.case("repeat_interleave/f32/0d/error", "repeat_interleave", [rnd([], "float32")],
             lambda x: torch.repeat_interleave(x, 2, dim=0), {"repeats": 2, "dim": 0}, error="index")
    for dt in FLOATS + ["int32"]:
        for eq, shapes in EINSUM_PLANS:
            # torch's sum of int32 is int64 where one operand is summed
            # alone; lathe's einsum keeps int32 (its doc comment says so).
            fam.case(f"einsum/{SHORT[dt]}/{einsum_name(eq, shapes)}", "einsum", [rnd(s, dt) for s in shapes],
                     einsum_fn(eq), {"equation": eq}, out_dtype=dt)
    fam.case("einsum/f32/transposed/bij,bjk->bik", "einsum",
             [L(rnd([2, 3, 4], "float32"), "transposed"), L(rnd([2, 4, 2], "float32"), "transposed")],
             einsum_fn("bij,bjk->bik"), {"equation": "bij,bjk->bik"})
    fam.case("einsum/f32/strided/ii->i", "einsum", [L(rnd([3, 3], "float32"), "strided")], einsum_fn("ii->i"),
             {"equation": "ii->i"})
    fam.case("einsum/f64/strided/bhqd,bhkd->bhqk", "einsum",
             [L(rnd([1, 2, 3, 4], "float64"), "strided"), L(rnd([1, 2, 5, 4], "float64"), "transposed")],
             einsum_fn("bhqd,bhkd->bhqk"), {"equation": "bhqd,bhkd->bhqk"})
    for eq, shapes, kind in EINSUM_ERRORS:
        fam.case(f"einsum/f32/{einsum_name(eq, shapes)}/error", "einsum", [rnd(s, "float32") for s in shapes],
                 einsum_fn(eq), {"equation": eq}, error=kind)
    fam.case("einsum/f32xf64/error", "einsum", [rnd([2], "float32"), rnd([2], "float64")], einsum_fn("i,i->"),
             {"equation": "i,i->"}, error="dtype")
    # The tensor-of-counts form (RepeatInterleaveCounts), its counts an
    # attribute that the Go table makes an int64 tensor on the case's device.
    for dt in FLOATS + INTS + ["bool"]:
        for shape, counts, dim in COUNTS_PLANS:
            fam.case(f"repeat_interleave_counts/{SHORT[dt]}/{shp(shape)}/{shp(counts)}/dim={dim}",
                     "repeat_interleave_counts", [rnd(shape, dt)], counts_fn(counts, dim),
                     {"counts": counts, "dim": dim})
    fam.case("repeat_interleave_counts/f32/transposed[2,3,4]/[2,0,1]/dim=1", "repeat_interleave_counts",
             [L(rnd([2, 3, 4], "float32"), "transposed")], counts_fn([2, 0, 1], 1), {"counts": [2, 0, 1], "dim": 1})
    for counts, dim, kind in (([1, 2], 0, "shape"), ([-1, 1, 1], 0, "value"), ([1, 1], 2, "index")):
        fam.case(f"repeat_interleave_counts/f32/[3,2]/{shp(counts)}/dim={dim}/error", "repeat_interleave_counts",
                 [rnd([3, 2], "float32")], counts_fn(counts, dim), {"counts": counts, "dim": dim}, error=kind)
    return fam


# (shape, counts, dim) of the tensor-of-counts form: one count per element
# of the dim, one for all, zeros, an empty dim.
COUNTS_PLANS = [([3, 2], [2, 0, 1], 0), ([2, 3], [1, 3, 2], 1), ([2, 3, 4], [0, 2, 1, 3], -1), ([4], [3], 0),
                ([2, 3], [0, 0, 0], 1), ([0, 3], [], 0), ([2, 2, 3], [2, 1], -2)]


def counts_fn(counts, dim):
    return lambda x: torch.repeat_interleave(x, torch.tensor(counts, dtype=torch.int64), dim=dim)


def sq(f, square):
    return (lambda *xs: f(*xs) ** 2) if square else f


def grad_shape_ops():
    fam = GradFamily("grad_shape_ops", 42)
    g = fam.gcase
    for op, fn in TRI:
        for shape, k in (([4, 4], 0), ([3, 5], 1), ([5, 3], -2), ([2, 3, 4], 0), ([3, 3], 10), ([3, 3], -10),
                         ([0, 3], 0)):
            g(f"{op}/f64/{shp(shape)}/k={k}", op, [rnd(shape, "float64")], lambda x, k=k, fn=fn: fn(x, k),
              {"diagonal": k})
        g(f"{op}/f32/[3,4]/k=1", op, [rnd([3, 4], "float32")], lambda x, fn=fn: fn(x, 1), {"diagonal": 1})
        g(f"{op}/f64/transposed[2,3,4]/k=-1", op, [L(rnd([2, 3, 4], "float64"), "transposed")],
          lambda x, fn=fn: fn(x, -1), {"diagonal": -1})
        g(f"{op}/f64/[3,4]/k=0/squared", op, [rnd([3, 4], "float64")], sq(lambda x, fn=fn: fn(x, 0), True),
          {"diagonal": 0, "square": True}, hvp=True)
    for shape, reps in REPEAT_PLANS[:5] + [([2, 3], [0, 2])]:
        g(f"repeat/f64/{shp(shape)}/{shp(reps)}", "repeat", [rnd(shape, "float64")],
          lambda x, r=reps: x.repeat(*r), {"reps": reps})
    g("repeat/f32/[2,3]/[2,2]", "repeat", [rnd([2, 3], "float32")], lambda x: x.repeat(2, 2), {"reps": [2, 2]})
    g("repeat/f64/transposed[3,2]/[2,1,3]", "repeat", [L(rnd([3, 2], "float64"), "transposed")],
      lambda x: x.repeat(2, 1, 3), {"reps": [2, 1, 3]})
    g("repeat/f64/[2,3]/[2,2]/squared", "repeat", [rnd([2, 3], "float64")], sq(lambda x: x.repeat(2, 2), True),
      {"reps": [2, 2], "square": True}, hvp=True)
    for shape, reps in TILE_PLANS[:4]:
        g(f"tile/f64/{shp(shape)}/{shp(reps)}", "tile", [rnd(shape, "float64")],
          lambda x, r=reps: torch.tile(x, tuple(r)), {"reps": reps})
    g("tile/f64/[2,3]/[3]/squared", "tile", [rnd([2, 3], "float64")], sq(lambda x: torch.tile(x, (3,)), True),
      {"reps": [3], "square": True}, hvp=True)
    for shape, n, dim in INTERLEAVE_PLANS[:6] + [INTERLEAVE_PLANS[6]]:
        g(f"repeat_interleave/f64/{shp(shape)}/n={n}/dim={dim}", "repeat_interleave", [rnd(shape, "float64")],
          lambda x, n=n, d=dim: torch.repeat_interleave(x, n, dim=d), {"repeats": n, "dim": dim})
    g("repeat_interleave/f32/[2,3,4]/n=2/dim=1", "repeat_interleave", [rnd([2, 3, 4], "float32")],
      lambda x: torch.repeat_interleave(x, 2, dim=1), {"repeats": 2, "dim": 1})
    g("repeat_interleave/f64/transposed[2,3,4]/n=3/dim=-1", "repeat_interleave",
      [L(rnd([2, 3, 4], "float64"), "transposed")], lambda x: torch.repeat_interleave(x, 3, dim=-1),
      {"repeats": 3, "dim": -1})
    g("repeat_interleave/f64/[2,3]/n=2/dim=0/squared", "repeat_interleave", [rnd([2, 3], "float64")],
      sq(lambda x: torch.repeat_interleave(x, 2, dim=0), True), {"repeats": 2, "dim": 0, "square": True}, hvp=True)
    for eq, shapes in EINSUM_PLANS:
        hvp = "," in eq  # a product of operands: not linear
        g(f"einsum/f64/{einsum_name(eq, shapes)}", "einsum", [rnd(s, "float64") for s in shapes], einsum_fn(eq),
          {"equation": eq}, hvp=hvp)
    for eq, shapes in EINSUM_PLANS[:3] + EINSUM_PLANS[9:10]:
        g(f"einsum/f32/{einsum_name(eq, shapes)}", "einsum", [rnd(s, "float32") for s in shapes], einsum_fn(eq),
          {"equation": eq}, hvp=True)
    g("einsum/f64/transposed/bij,bjk->bik", "einsum",
      [L(rnd([2, 3, 4], "float64"), "transposed"), L(rnd([2, 4, 2], "float64"), "strided")],
      einsum_fn("bij,bjk->bik"), {"equation": "bij,bjk->bik"}, hvp=True)
    g("einsum/f64/ii->i/squared", "einsum", [rnd([3, 3], "float64")], sq(einsum_fn("ii->i"), True),
      {"equation": "ii->i", "square": True}, hvp=True)
    for shape, counts, dim in COUNTS_PLANS[:4]:
        g(f"repeat_interleave_counts/f64/{shp(shape)}/{shp(counts)}/dim={dim}", "repeat_interleave_counts",
          [rnd(shape, "float64")], counts_fn(counts, dim), {"counts": counts, "dim": dim})
    g("repeat_interleave_counts/f64/[3,2]/[2,0,1]/dim=0/squared", "repeat_interleave_counts",
      [rnd([3, 2], "float64")], sq(counts_fn([2, 0, 1], 0), True), {"counts": [2, 0, 1], "dim": 0, "square": True},
      hvp=True)
    return fam
