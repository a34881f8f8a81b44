"""Cases for sort, argsort, topk and max/min along a dim: forward ones
(sort.json) and gradient ones (grad_sort.json).

torch.sort and torch.argsort run with stable=True, which is what lathe's
Sort and ArgSort promise. torch.topk (sorted=True) does not specify the
order of tied elements and its cpu kernel returns ties in a partial-sort
order, while lathe returns them in their original order (the first k of a
stable sort). So a topk case's reference is torch.topk's values, checked
here to equal the first k values of the stable sort, and the stable sort's
first k indices, checked here to equal torch.topk's own indices wherever
the row holds no ties among its chosen values.

Second-order cases square the values (attribute "square"): sort, topk and
max are gathers, linear in x, so their own Hessian is zero.
"""

import torch

from grad import GradFamily
from refcase import DTYPES, FLOATS, INTS, INF, NAN, SHORT, Family, G, L, rnd, shp, vals

I64_MIN, I64_MAX = -2 ** 63, 2 ** 63 - 1


def sort_fn(dim, desc):
    return lambda x: torch.sort(x, dim=dim, descending=desc, stable=True)


def argsort_fn(dim, desc):
    return lambda x: torch.sort(x, dim=dim, descending=desc, stable=True)[1]


def topk_fn(k, dim, largest):
    """torch.topk's values and the stable sort's first k indices (module
    doc); asserts that the two agree wherever they can."""
    def f(x):
        v, i = torch.topk(x, k, dim, largest, sorted=True)
        if x.dim() == 0:
            return v, i
        sv, si = torch.sort(x, dim=dim, descending=largest, stable=True)
        sv, si = sv.narrow(dim, 0, k), si.narrow(dim, 0, k)
        assert torch.equal(v, sv) or torch.allclose(v, sv, equal_nan=True), (v, sv)
        if k and (not x.is_floating_point() or not x.isnan().any()):
            # Rows whose chosen values are distinct: torch's indices are the
            # stable sort's too.
            xs = x.movedim(dim, -1).reshape(-1, x.shape[dim])
            vs, ss, ts = sv.movedim(dim, -1).reshape(-1, k), si.movedim(dim, -1).reshape(-1, k), \
                i.movedim(dim, -1).reshape(-1, k)
            for r in range(xs.shape[0]):
                if k and len(set(vs[r].tolist())) == k and all(
                        (xs[r] == val).sum() == 1 for val in vs[r].tolist()):
                    assert torch.equal(ss[r], ts[r]), (ss[r], ts[r])
        return v, si
    return f


def max_fn(op, dim, keep):
    return lambda x: tuple(getattr(torch, op)(x, dim, keepdim=keep))


def sort():
    fam = Family("sort", 31)
    c = fam.case
    specials = [[1.0, NAN, -0.0, 0.0, INF, -INF, NAN, 0.0, -0.0, 1.0, -1.0, -INF]]
    for dt in FLOATS + INTS + ["bool"]:
        s = SHORT[dt]
        ties = "halves" if dt in FLOATS else "small"
        for desc in (False, True):
            d = "desc" if desc else "asc"
            for shape, dims in (([3, 4], (0, 1, -1, -2)), ([2, 3, 4], (0, 1, 2, -3))):
                for dim in dims:
                    a = {"dim": dim, "descending": desc}
                    c(f"sort/{s}/{d}/{shp(shape)}/dim{dim}", "sort", [rnd(shape, dt, ties)], sort_fn(dim, desc), a)
            a = {"dim": -1, "descending": desc}
            c(f"argsort/{s}/{d}/[4,6]/ties", "argsort", [rnd([4, 6], dt, ties)], argsort_fn(-1, desc), a)
            c(f"sort/{s}/{d}/0d/dim0", "sort", [rnd([], dt)], sort_fn(0, desc), {"dim": 0, "descending": desc})
            c(f"sort/{s}/{d}/0d/dim-1", "sort", [rnd([], dt)], sort_fn(-1, desc), a)
            c(f"sort/{s}/{d}/[1]", "sort", [rnd([1], dt)], sort_fn(0, desc), {"dim": 0, "descending": desc})
            c(f"sort/{s}/{d}/[3,2]/dim1", "sort", [rnd([3, 2], dt, ties)], sort_fn(1, desc),
              {"dim": 1, "descending": desc})
            c(f"sort/{s}/{d}/transposed[3,5]/dim0", "sort", [L(rnd([3, 5], dt, ties), "transposed")],
              sort_fn(0, desc), {"dim": 0, "descending": desc})
            c(f"sort/{s}/{d}/strided[3,5]/dim1", "sort", [L(rnd([3, 5], dt, ties), "strided")],
              sort_fn(1, desc), {"dim": 1, "descending": desc})
            c(f"sort/{s}/{d}/empty[0,3]/dim0", "sort", [rnd([0, 3], dt)], sort_fn(0, desc),
              {"dim": 0, "descending": desc})
            c(f"sort/{s}/{d}/empty[3,0]/dim0", "sort", [rnd([3, 0], dt)], sort_fn(0, desc),
              {"dim": 0, "descending": desc})
        c(f"sort/{s}/err/dim2", "sort", [rnd([3, 4], dt)], sort_fn(2, False), {"dim": 2, "descending": False},
          error="index")
        c(f"sort/{s}/err/0d/dim1", "sort", [rnd([], dt)], sort_fn(1, False), {"dim": 1, "descending": False},
          error="index")
    for dt in FLOATS:
        s = SHORT[dt]
        for desc in (False, True):
            d = "desc" if desc else "asc"
            a = {"dim": 1, "descending": desc}
            c(f"sort/{s}/{d}/specials", "sort", [vals(specials, dt)], sort_fn(1, desc), a)
            c(f"sort/{s}/{d}/specials/transposed", "sort", [L(vals(specials, dt).t(), "transposed")],
              sort_fn(0, desc), {"dim": 0, "descending": desc})
    ext = [[I64_MIN, I64_MAX, 0, -1, I64_MAX, I64_MIN, 1, I64_MIN + 1, I64_MAX - 1, -1]]
    for desc in (False, True):
        d = "desc" if desc else "asc"
        c(f"sort/i64/{d}/extremes", "sort", [vals(ext, "int64")], sort_fn(1, desc), {"dim": 1, "descending": desc})
        c(f"sort/i32/{d}/extremes", "sort", [vals([[-2 ** 31, 2 ** 31 - 1, 0, -1, -2 ** 31, 2 ** 31 - 1]], "int32")],
          sort_fn(-1, desc), {"dim": -1, "descending": desc})
    # Long rows: one workgroup (1000) and the merge passes (5000) on wgpu,
    # generated on both sides; few levels, so ties abound.
    for desc in (False, True):
        d = "desc" if desc else "asc"
        c(f"sort/f32/{d}/[4,1000]/ties", "sort", [G([4, 1000], "float32", 311, levels=50, step=0.5)],
          sort_fn(1, desc), {"dim": 1, "descending": desc})
        c(f"sort/f32/{d}/[2,5000]/ties", "sort", [G([2, 5000], "float32", 312, levels=300, step=0.25)],
          sort_fn(-1, desc), {"dim": -1, "descending": desc})
        c(f"argsort/i64/{d}/[2,5000]/ties", "argsort", [G([2, 5000], "int64", 313, levels=40, step=1.0)],
          argsort_fn(1, desc), {"dim": 1, "descending": desc})
    c("argsort/i32/desc/[5000,2]/dim0", "argsort", [G([5000, 2], "int32", 314, levels=99, step=1.0)],
      argsort_fn(0, True), {"dim": 0, "descending": True})

    # topk: every k edge, both directions, dims, ties, NaN, errors.
    for dt in FLOATS + INTS:
        s = SHORT[dt]
        for largest in (True, False):
            lg = "largest" if largest else "smallest"
            for k in (0, 1, 3, 5):
                a = {"k": k, "dim": 1, "largest": largest}
                c(f"topk/{s}/{lg}/[3,5]/k{k}", "topk", [rnd([3, 5], dt)], topk_fn(k, 1, largest), a)
            a = {"k": 2, "dim": -3, "largest": largest}
            c(f"topk/{s}/{lg}/[3,2,4]/dim-3", "topk", [rnd([3, 2, 4], dt)], topk_fn(2, -3, largest), a)
            a = {"k": 3, "dim": 0, "largest": largest}
            c(f"topk/{s}/{lg}/transposed[4,3]/dim0", "topk", [L(rnd([4, 3], dt), "transposed")],
              topk_fn(3, 0, largest), a)
            a = {"k": 4, "dim": 1, "largest": largest}
            c(f"topk/{s}/{lg}/[3,8]/ties", "topk", [rnd([3, 8], dt, "halves" if dt in FLOATS else "small")],
              topk_fn(4, 1, largest), a)
            for k in (0, 1):
                c(f"topk/{s}/{lg}/0d/k{k}", "topk", [rnd([], dt)], topk_fn(k, 0, largest),
                  {"k": k, "dim": 0, "largest": largest})
        for k in (6, -1):
            c(f"topk/{s}/err/k{k}", "topk", [rnd([3, 5], dt)], topk_fn(k, 1, True),
              {"k": k, "dim": 1, "largest": True}, error="value")
        c(f"topk/{s}/err/0d/k2", "topk", [rnd([], dt)], topk_fn(2, 0, True), {"k": 2, "dim": 0, "largest": True},
          error="value")
        c(f"topk/{s}/err/dim2", "topk", [rnd([3, 5], dt)], topk_fn(1, 2, True), {"k": 1, "dim": 2, "largest": True},
          error="index")
        c(f"topk/{s}/empty[0,3]/k0", "topk", [rnd([0, 3], dt)], topk_fn(0, 0, True),
          {"k": 0, "dim": 0, "largest": True})
        c(f"topk/{s}/err/empty[0,3]/k1", "topk", [rnd([0, 3], dt)], topk_fn(1, 0, True),
          {"k": 1, "dim": 0, "largest": True}, error="value")
    c("topk/bool/err", "topk", [rnd([4], "bool")], topk_fn(1, 0, True), {"k": 1, "dim": 0, "largest": True},
      error="dtype")
    for dt in FLOATS:
        for largest in (True, False):
            lg = "largest" if largest else "smallest"
            c(f"topk/{SHORT[dt]}/{lg}/specials", "topk", [vals(specials, dt)], topk_fn(6, 1, largest),
              {"k": 6, "dim": 1, "largest": largest})
    for largest in (True, False):
        lg = "largest" if largest else "smallest"
        c(f"topk/f32/{lg}/[8,5000]/k50", "topk", [G([8, 5000], "float32", 316, levels=4096, step=2.0 ** -9)],
          topk_fn(50, 1, largest), {"k": 50, "dim": 1, "largest": largest})
        c(f"topk/i64/{lg}/extremes", "topk", [vals(ext, "int64")], topk_fn(4, 1, largest),
          {"k": 4, "dim": 1, "largest": largest})

    # max and min along a dim: values and indices in one call.
    for op in ("max", "min"):
        key = f"{op}_dim"
        for dt in FLOATS + INTS + ["bool"]:
            s = SHORT[dt]
            ties = "halves" if dt in FLOATS else "small"
            for dim, keep in ((1, False), (-2, True), (0, False), (-1, True)):
                a = {"dim": dim, "keepdim": keep}
                c(f"{key}/{s}/[3,4]/dim{dim}/keep{keep}", key, [rnd([3, 4], dt, ties)], max_fn(op, dim, keep), a)
            c(f"{key}/{s}/0d", key, [rnd([], dt)], max_fn(op, 0, False), {"dim": 0, "keepdim": False})
            c(f"{key}/{s}/transposed[3,4]/dim0", key, [L(rnd([3, 4], dt, ties), "transposed")],
              max_fn(op, 0, False), {"dim": 0, "keepdim": False})
            c(f"{key}/{s}/err/empty[0,3]", key, [rnd([0, 3], dt)], max_fn(op, 0, False),
              {"dim": 0, "keepdim": False}, error="shape")
            c(f"{key}/{s}/err/dim2", key, [rnd([3, 4], dt)], max_fn(op, 2, False), {"dim": 2, "keepdim": False},
              error="index")
        c(f"{key}/f32/specials", key, [vals(specials, "float32")], max_fn(op, 1, False), {"dim": 1, "keepdim": False})
        c(f"{key}/f32/empty[3,0]/dim0", key, [rnd([3, 0], "float32")], max_fn(op, 0, False),
          {"dim": 0, "keepdim": False})

    # The narrow dtypes, which the cpu holds (the other devices skip these
    # cases). torch 1.13 has no cpu topk for float16, so it has none here.
    for dt in ("float16", "bfloat16", "int8", "uint8"):
        s = SHORT[dt]

        def mk(shape, dt=dt):
            if dt in ("int8", "uint8"):
                return torch.randint(-4 if dt == "int8" else 0, 5, shape, dtype=DTYPES[dt])
            return rnd(shape, "float64", "halves").to(DTYPES[dt])
        for desc in (False, True):
            d = "desc" if desc else "asc"
            a = {"dim": 1, "descending": desc}
            c(f"sort/{s}/{d}/[3,6]/dim1", "sort", [mk([3, 6])], sort_fn(1, desc), a)
            c(f"sort/{s}/{d}/transposed[4,3]/dim0", "sort", [L(mk([4, 3]), "transposed")], sort_fn(0, desc),
              {"dim": 0, "descending": desc})
        if dt != "float16":
            for largest in (True, False):
                lg = "largest" if largest else "smallest"
                c(f"topk/{s}/{lg}/[3,6]/k3", "topk", [mk([3, 6])], topk_fn(3, 1, largest),
                  {"k": 3, "dim": 1, "largest": largest})
        for op in ("max", "min"):
            c(f"{op}_dim/{s}/[3,6]/dim1", f"{op}_dim", [mk([3, 6])], max_fn(op, 1, False), {"dim": 1, "keepdim": False})
    for dt in ("float16", "bfloat16"):
        for desc in (False, True):
            d = "desc" if desc else "asc"
            c(f"sort/{SHORT[dt]}/{d}/specials", "sort", [vals(specials, dt)], sort_fn(1, desc),
              {"dim": 1, "descending": desc})
    return fam


def grad_sort():
    fam = GradFamily("grad_sort", 32)
    g = fam.gcase

    def sort_values(dim, desc, sq):
        def f(x):
            v = torch.sort(x, dim=dim, descending=desc, stable=True)[0]
            return v * v if sq else v
        return f

    def topk_values(k, dim, largest, sq):
        def f(x):
            v = torch.topk(x, k, dim, largest)[0]
            return v * v if sq else v
        return f

    def max_values(op, dim, keep, sq):
        def f(x):
            v = getattr(torch, op)(x, dim, keepdim=keep)[0]
            return v * v if sq else v
        return f

    for dt in FLOATS:
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        for desc in (False, True):
            d = "desc" if desc else "asc"
            for shape, dim in (([3, 4], 1), ([2, 3, 4], -3), ([5], 0)):
                a = {"dim": dim, "descending": desc}
                g(f"sort_values/{s}/{d}/{shp(shape)}/dim{dim}", "sort_values", [x(shape)],
                  sort_values(dim, desc, False), a)
                g(f"sort_values/{s}/{d}/{shp(shape)}/dim{dim}/square", "sort_values", [x(shape)],
                  sort_values(dim, desc, True), dict(a, square=True), hvp=True)
            g(f"sort_values/{s}/{d}/transposed[3,4]/dim0", "sort_values", [L(x([3, 4]), "transposed")],
              sort_values(0, desc, False), {"dim": 0, "descending": desc})
            g(f"sort_values/{s}/{d}/0d", "sort_values", [x([])], sort_values(0, desc, True),
              {"dim": 0, "descending": desc, "square": True}, hvp=True)
        for largest in (True, False):
            lg = "largest" if largest else "smallest"
            for shape, k, dim in (([3, 5], 2, 1), ([4, 3], 4, 0), ([2, 3, 4], 1, -1), ([3, 5], 0, 1)):
                a = {"k": k, "dim": dim, "largest": largest}
                g(f"topk_values/{s}/{lg}/{shp(shape)}/k{k}/dim{dim}", "topk_values", [x(shape)],
                  topk_values(k, dim, largest, False), a)
                g(f"topk_values/{s}/{lg}/{shp(shape)}/k{k}/dim{dim}/square", "topk_values", [x(shape)],
                  topk_values(k, dim, largest, True), dict(a, square=True), hvp=True)
        for op in ("max", "min"):
            g(f"{op}_dim_values/{s}/[3,4]/dim1", f"{op}_dim_values", [x([3, 4])], max_values(op, 1, False, True),
              {"dim": 1, "keepdim": False, "square": True}, hvp=True)
            g(f"{op}_dim_values/{s}/[3,4]/dim0/keep", f"{op}_dim_values", [x([3, 4])],
              max_values(op, 0, True, False), {"dim": 0, "keepdim": True})
    return fam
