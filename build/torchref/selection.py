"""Cases for the data-dependent selections and advanced indexing: nonzero,
masked_select, unique, index (x[i0, i1, ...]) and index_put, forward ones
(select.json) and gradient ones (grad_select.json). (The module is not
select.py: that name is Python's own select module, which wins the import.)

An index case's inputs are x then one entry per indexed dim, None for a full
slice (torch's ":"); an index_put case's are x, values, then the same.

unique: torch 1.13's cpu kernel gives each NaN a value of its own, after
the numbers, but inverse 0 and count 0 for them, which lathe does not copy
(it gives the NaN's own place and 1), so the NaN cases compare the values
alone. With sorted=False torch's cpu order is a hash set's; lathe always
sorts, so those cases take torch's sorted answer after checking that it
holds the same values.

index_put without accumulate is compared only where no place is written
twice: torch leaves the result of duplicates unspecified.

Second-order cases square the result (attribute "square"): these ops are
linear in x and values, so their own Hessian is zero.
"""

import torch

from grad import GradFamily
from refcase import FLOATS, INTS, INF, NAN, SHORT, Family, L, idx, rnd, shp, vals


def full(x, n):
    """x[i0, ..., i(n-1)]'s index tuple from case inputs, None as ':'."""
    return tuple(slice(None) if i is None else i for i in x[:n])


def index_fn(x, *ix):
    return x[full(ix, len(ix))]


def widened(f):
    """f with int32 index tensors taken as int64: torch 1.13 indexes with
    int64 only, lathe takes int32 too, as its other index ops do."""
    return lambda *a: f(*[t.long() if isinstance(t, torch.Tensor) and t.dtype == torch.int32 else t for t in a])


def index_put_fn(acc):
    def f(x, v, *ix):
        return torch.index_put(x, full(ix, len(ix)), v, accumulate=acc)
    return f


def index_put_full(acc):
    """index_put with full slices, which torch.index_put does not take:
    y[key] = v on a clone, or y[key] += v for accumulate (the same where,
    as in these cases, no place is written twice)."""
    def f(x, v, *ix):
        y, key = x.clone(), full(ix, len(ix))
        y[key] = y[key] + v if acc else v
        return y
    return f


def unique_fn(srt, inv, cnt):
    def f(x):
        out = torch.unique(x, sorted=True, return_inverse=inv, return_counts=cnt)
        if not srt:
            other = torch.unique(x, sorted=False)
            assert torch.equal(torch.sort(other)[0], out[0] if isinstance(out, tuple) else out)
        return out if isinstance(out, tuple) else (out,)
    return f


def select():
    fam = Family("select", 47)
    c = fam.case
    specials = [1.0, NAN, -0.0, 0.0, INF, -INF, 0.0, 2.5]

    # nonzero: every dtype and rank, NaN and -0, all and none, empty, layouts.
    for dt in FLOATS + INTS + ["bool"]:
        s = SHORT[dt]
        z = "small" if dt in INTS else "any"

        def sparse(shape, dt=dt, z=z):
            return rnd(shape, dt, z) * (torch.rand(shape) < 0.5).to(rnd([], dt).dtype)
        for shape in ([3, 4], [7], [2, 3, 4]):
            c(f"nonzero/{s}/{shp(shape)}", "nonzero", [sparse(shape)], torch.nonzero)
        c(f"nonzero/{s}/transposed[3,4]", "nonzero", [L(sparse([3, 4]), "transposed")], torch.nonzero)
        c(f"nonzero/{s}/none[3,4]", "nonzero", [torch.zeros([3, 4], dtype=rnd([], dt).dtype)], torch.nonzero)
        c(f"nonzero/{s}/all[2,3]", "nonzero", [torch.ones([2, 3], dtype=rnd([], dt).dtype)], torch.nonzero)
        c(f"nonzero/{s}/empty[0,3]", "nonzero", [rnd([0, 3], dt)], torch.nonzero)
        c(f"nonzero/{s}/0d/one", "nonzero", [torch.ones([], dtype=rnd([], dt).dtype)], torch.nonzero)
        c(f"nonzero/{s}/0d/zero", "nonzero", [torch.zeros([], dtype=rnd([], dt).dtype)], torch.nonzero)
    for dt in FLOATS:
        c(f"nonzero/{SHORT[dt]}/specials", "nonzero", [vals(specials, dt)], torch.nonzero)

    # masked_select: masks of every kind, broadcasting both ways, errors.
    for dt in FLOATS + INTS + ["bool"]:
        s = SHORT[dt]
        c(f"masked_select/{s}/[3,4]", "masked_select", [rnd([3, 4], dt), rnd([3, 4], "bool")], torch.masked_select)
        c(f"masked_select/{s}/mask[4]", "masked_select", [rnd([3, 4], dt), rnd([4], "bool")], torch.masked_select)
        c(f"masked_select/{s}/x[4]mask[3,4]", "masked_select", [rnd([4], dt), rnd([3, 4], "bool")],
          torch.masked_select)
        c(f"masked_select/{s}/x[3,1]mask[1,4]", "masked_select", [rnd([3, 1], dt), rnd([1, 4], "bool")],
          torch.masked_select)
        c(f"masked_select/{s}/all", "masked_select", [rnd([2, 3], dt), torch.ones([2, 3], dtype=torch.bool)],
          torch.masked_select)
        c(f"masked_select/{s}/none", "masked_select", [rnd([2, 3], dt), torch.zeros([2, 3], dtype=torch.bool)],
          torch.masked_select)
        c(f"masked_select/{s}/transposed", "masked_select",
          [L(rnd([3, 5], dt), "transposed"), L(rnd([3, 5], "bool"), "transposed")], torch.masked_select)
        c(f"masked_select/{s}/empty[0,4]", "masked_select", [rnd([0, 4], dt), rnd([4], "bool")], torch.masked_select)
        c(f"masked_select/{s}/0d", "masked_select", [rnd([], dt), rnd([2, 2], "bool")], torch.masked_select)
    c("masked_select/f32/specials", "masked_select", [vals(specials, "float32"), vals([1, 1, 1, 0, 1, 1, 0, 1], "bool")],
      torch.masked_select)
    c("masked_select/err/float_mask", "masked_select", [rnd([3], "float32"), rnd([3], "float32")],
      torch.masked_select, error="dtype")
    c("masked_select/err/shape", "masked_select", [rnd([3, 4], "float32"), rnd([3], "bool")],
      torch.masked_select, error="shape")

    # unique: every dtype, flags, ties, NaN and -0, empty, 0-d.
    for dt in FLOATS + INTS + ["bool"]:
        s = SHORT[dt]
        ties = "halves" if dt in FLOATS else "small"
        for srt, inv, cnt in ((True, False, False), (True, True, False), (True, False, True), (True, True, True),
                              (False, True, True)):
            a = {"sorted": srt, "inverse": inv, "counts": cnt}
            name = f"unique/{s}/sorted{srt}/inverse{inv}/counts{cnt}"
            c(name + "/[3,5]", "unique", [rnd([3, 5], dt, ties)], unique_fn(srt, inv, cnt), a)
        a = {"sorted": True, "inverse": True, "counts": True}
        c(f"unique/{s}/transposed[4,3]", "unique", [L(rnd([4, 3], dt, ties), "transposed")], unique_fn(True, True, True), a)
        c(f"unique/{s}/empty[0,3]", "unique", [rnd([0, 3], dt)], unique_fn(True, True, True), a)
        c(f"unique/{s}/0d", "unique", [rnd([], dt)], unique_fn(True, True, True), a)
        c(f"unique/{s}/[200]", "unique", [rnd([200], dt, ties)], unique_fn(True, True, True), a)
    for dt in FLOATS:
        s = SHORT[dt]
        c(f"unique/{s}/nan", "unique", [vals([NAN, 1.0, NAN, 2.0, -INF, INF, 1.0], dt)], unique_fn(True, False, False),
          {"sorted": True})
        c(f"unique/{s}/zeros", "unique", [vals([-0.0, 0.0, 1.0, -0.0], dt)], unique_fn(True, True, True),
          {"sorted": True, "inverse": True, "counts": True})
        c(f"unique/{s}/zeros/plus_first", "unique", [vals([0.0, -0.0, 1.0], dt)], unique_fn(True, True, True),
          {"sorted": True, "inverse": True, "counts": True})
    c("unique/i64/extremes", "unique", [vals([2 ** 63 - 1, -2 ** 63, 0, 2 ** 63 - 1, -2 ** 63], "int64")],
      unique_fn(True, True, True), {"sorted": True, "inverse": True, "counts": True})

    # index: x[i0, i1, ...] with broadcasting, full slices, negatives.
    for dt in FLOATS + INTS + ["bool"]:
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        c(f"index/{s}/[5,4]/i0", "index", [x([5, 4]), idx([4, 0, 2])], index_fn)
        c(f"index/{s}/[5,4]/i0,i1", "index", [x([5, 4]), idx([4, 0, 2]), idx([1, 3, 3])], index_fn)
        c(f"index/{s}/[5,4]/bcast[2,1]x[3]", "index", [x([5, 4]), idx([[1], [3]]), idx([0, 2, 3])], index_fn)
        c(f"index/{s}/[5,4]/negative", "index", [x([5, 4]), idx([-1, -5, 2]), idx([-4, 0, -1])], index_fn)
        c(f"index/{s}/[3,5]/slice,i1", "index", [x([3, 5]), None, idx([[4, 0], [1, 1]])], index_fn)
        c(f"index/{s}/[2,3,4]/slice,i1,i2", "index", [x([2, 3, 4]), None, idx([2, 0]), idx([[3], [1]])], index_fn)
        c(f"index/{s}/[2,3,4]/i0,slice,i2", "index", [x([2, 3, 4]), idx([1, 0, 1]), None, idx([3, 2, 0])], index_fn)
        c(f"index/{s}/[2,3,4]/slice,slice,i2", "index", [x([2, 3, 4]), None, None, idx([[3, 1]])], index_fn)
        c(f"index/{s}/[2,3,4]/0d", "index", [x([2, 3, 4]), idx(1)], index_fn)
        c(f"index/{s}/[2,3,4]/empty", "index", [x([2, 3, 4]), idx([], "int64"), idx([], "int64")], index_fn)
        c(f"index/{s}/transposed[4,3]", "index", [L(x([4, 3]), "transposed"), idx([3, 3, 0])], index_fn)
    c("index/f32/i32", "index", [rnd([5, 4], "float32"), idx([4, 0, -2], "int32"), idx([1, -3, 3], "int32")], widened(index_fn))
    c("index/f32/i32_transposed", "index", [rnd([5, 4], "float32"), L(idx([[4, 0, 1], [2, 3, 1]], "int32"), "transposed")],
      widened(index_fn))
    c("index/f32/[6,7]/big", "index", [rnd([6, 7], "float32"), rnd([30, 1], "int64", "nonneg"), rnd([40], "int64", "nonneg")],
      index_fn)
    c("index/err/past_end", "index", [rnd([5, 4], "float32"), idx([1, 5])], index_fn, error="index")
    c("index/err/before_start", "index", [rnd([5, 4], "float32"), idx([0, 1]), idx([-5])], index_fn, error="index")
    c("index/err/too_many", "index", [rnd([5], "float32"), idx([0]), idx([0])], index_fn, error="index")
    c("index/err/bcast", "index", [rnd([5, 4], "float32"), idx([0, 1]), idx([0, 1, 2])], index_fn, error="shape")
    c("index/err/float_index", "index", [rnd([5, 4], "float32"), rnd([2], "float32")], index_fn, error="dtype")
    c("index/err/0d_x", "index", [rnd([], "float32"), idx([0])], index_fn, error="index")
    # Bool masks: each indexes as many dims as it has.
    for dt in FLOATS + INTS:
        s = SHORT[dt]
        c(f"index/{s}/mask[3,4]", "index", [rnd([3, 4], dt), rnd([3, 4], "bool")], index_fn)
        c(f"index/{s}/[3,4,2]/mask[3,4]", "index", [rnd([3, 4, 2], dt), rnd([3, 4], "bool")], index_fn)
        c(f"index/{s}/[2,3,4]/slice,mask[3,4]", "index", [rnd([2, 3, 4], dt), None, rnd([3, 4], "bool")], index_fn)
        c(f"index/{s}/[3,4]/mask[3],i1", "index", [rnd([3, 4], dt), vals([True, False, True], "bool"), idx([-1])],
          index_fn)
        c(f"index/{s}/mask/none", "index", [rnd([3, 4], dt), torch.zeros([3, 4], dtype=torch.bool)], index_fn)
        c(f"index/{s}/mask/all", "index", [rnd([3, 4], dt), torch.ones([3, 4], dtype=torch.bool)], index_fn)
    c("index/err/mask_shape", "index", [rnd([3, 4], "float32"), rnd([4], "bool")], index_fn, error="shape")
    c("index/err/mask_too_many_dims", "index", [rnd([3, 4], "float32"), idx([0]), rnd([4, 1], "bool")], index_fn,
      error="shape")

    # index_put: accumulate with repeats, overwrite without, broadcasting
    # values, full slices, errors.
    for dt in FLOATS + INTS:
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        for acc in (False, True):
            a = {"accumulate": acc}
            n = f"index_put/{s}/acc{acc}"
            c(f"{n}/[5,4]/i0", "index_put", [x([5, 4]), x([3, 4]), idx([4, 0, 2])], index_put_fn(acc), a)
            c(f"{n}/[5,4]/i0,i1", "index_put", [x([5, 4]), x([3]), idx([4, 0, -2]), idx([1, 3, -1])],
              index_put_fn(acc), a)
            c(f"{n}/[5,4]/scalar_values", "index_put", [x([5, 4]), x([]), idx([[1], [3]]), idx([0, 2, 3])],
              index_put_fn(acc), a)
            c(f"{n}/[3,5]/slice,i1", "index_put", [x([3, 5]), x([3, 2]), None, idx([4, 0])], index_put_full(acc), a)
            c(f"{n}/[2,3,4]/i0,slice,i2", "index_put", [x([2, 3, 4]), x([2, 3]), idx([1, 0]), None, idx([3, 0])],
              index_put_full(acc), a)
            c(f"{n}/[2,3,4]/slice,i1,i2", "index_put", [x([2, 3, 4]), x([2, 1]), None, idx([2, 0]), idx([3, 1])],
              index_put_full(acc), a)
            c(f"{n}/empty", "index_put", [x([5, 4]), x([0, 4]), idx([], "int64")], index_put_fn(acc), a)
            c(f"{n}/transposed", "index_put", [L(x([4, 3]), "transposed"), L(x([2, 3]), "transposed"),
                                                idx([1, 3])], index_put_fn(acc), a)
        a = {"accumulate": True}
        c(f"index_put/{s}/accTrue/repeats", "index_put", [x([5, 4]), x([6, 4]), idx([1, 1, 3, 1, -4, 0])],
          index_put_fn(True), a)
        c(f"index_put/{s}/accTrue/repeats2d", "index_put", [x([3, 3]), x([5]), idx([0, 2, 0, 0, 2]), idx([1, 1, 1, -2, 1])],
          index_put_fn(True), a)
    for acc in (False, True):
        c(f"index_put/f32/acc{acc}/mask[3,4]", "index_put", [rnd([3, 4], "float32"), rnd([], "float32"),
                                                          rnd([3, 4], "bool")], index_put_fn(acc), {"accumulate": acc})
        c(f"index_put/f32/acc{acc}/[3,4,2]/mask[3,4]", "index_put",
          [rnd([3, 4, 2], "float32"), rnd([2], "float32"), rnd([3, 4], "bool")], index_put_fn(acc), {"accumulate": acc})
    c("index_put/bool/accFalse", "index_put", [rnd([5], "bool"), rnd([2], "bool"), idx([1, 3])], index_put_fn(False),
      {"accumulate": False})
    c("index_put/f32/i32", "index_put", [rnd([5, 4], "float32"), rnd([3], "float32"), idx([4, 0, -2], "int32"),
                                         idx([1, 3, -1], "int32")], widened(index_put_fn(True)), {"accumulate": True})
    c("index_put/err/past_end", "index_put", [rnd([5, 4], "float32"), rnd([4], "float32"), idx([5])],
      index_put_fn(False), {"accumulate": False}, error="index")
    c("index_put/err/before_start", "index_put", [rnd([5, 4], "float32"), rnd([], "float32"), idx([0]), idx([-5])],
      index_put_fn(True), {"accumulate": True}, error="index")
    c("index_put/err/values_dtype", "index_put", [rnd([5, 4], "float32"), rnd([4], "float64"), idx([1])],
      index_put_fn(False), {"accumulate": False}, error="dtype")
    c("index_put/err/values_shape", "index_put", [rnd([5, 4], "float32"), rnd([3], "float32"), idx([1, 2])],
      index_put_fn(False), {"accumulate": False}, error="shape")
    c("index_put/err/bcast", "index_put", [rnd([5, 4], "float32"), rnd([], "float32"), idx([0, 1]), idx([0, 1, 2])],
      index_put_fn(False), {"accumulate": False}, error="shape")
    return fam


def grad_select():
    fam = GradFamily("grad_select", 48)
    g = fam.gcase

    def sq(f, square):
        return (lambda *a: f(*a) ** 2) if square else f

    for dt in FLOATS:
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        for square in (False, True):
            a = {"square": True} if square else {}
            tag = "/square" if square else ""
            g(f"masked_select/{s}/[3,4]{tag}", "masked_select", [x([3, 4]), rnd([3, 4], "bool")],
              sq(torch.masked_select, square), a, hvp=square)
            g(f"masked_select/{s}/x[4]mask[3,4]{tag}", "masked_select", [x([4]), rnd([3, 4], "bool")],
              sq(torch.masked_select, square), a, hvp=square)
            g(f"index/{s}/[5,4]/repeats{tag}", "index", [x([5, 4]), idx([[1, 1], [3, -5]])],
              sq(index_fn, square), a, hvp=square)
            g(f"index/{s}/[2,3,4]/slice,i1,i2{tag}", "index", [x([2, 3, 4]), None, idx([2, 0, 2]), idx([[3], [-3]])],
              sq(index_fn, square), a, hvp=square)
            g(f"index/{s}/[2,3,4]/i0,slice,i2{tag}", "index", [x([2, 3, 4]), idx([1, 1]), None, idx([3, 0])],
              sq(index_fn, square), a, hvp=square)
            for acc in (False, True):
                b = dict(a, accumulate=acc)
                n = f"index_put/{s}/acc{acc}"
                g(f"{n}/[5,4]/i0{tag}", "index_put", [x([5, 4]), x([2, 4]), idx([3, -1])],
                  sq(index_put_fn(acc), square), b, hvp=square)
                g(f"{n}/[5,4]/i0,i1{tag}", "index_put", [x([5, 4]), x([1]), idx([1, 3]), idx([0, 2])],
                  sq(index_put_fn(acc), square), b, hvp=square)
            g(f"index_put/{s}/accTrue/repeats{tag}", "index_put", [x([4, 3]), x([5, 3]), idx([1, 1, 0, 1, 2])],
              sq(index_put_fn(True), square), dict(a, accumulate=True), hvp=square)
        g(f"index/{s}/[3,4,2]/mask[3,4]", "index", [x([3, 4, 2]), rnd([3, 4], "bool")], sq(index_fn, True),
          {"square": True}, hvp=True)
        g(f"index_put/{s}/accTrue/mask[3,4]", "index_put", [x([3, 4]), x([]), rnd([3, 4], "bool")],
          sq(index_put_fn(True), True), {"accumulate": True, "square": True}, hvp=True)
        g(f"masked_select/{s}/none", "masked_select", [x([2, 3]), torch.zeros([2, 3], dtype=torch.bool)],
          torch.masked_select)
        g(f"masked_select/{s}/transposed", "masked_select", [L(x([3, 4]), "transposed"), rnd([4, 3], "bool").t()],
          torch.masked_select)
    return fam
