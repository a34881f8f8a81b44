"""Cases for views and copies (reshape ... cast) and for indexing."""

import torch
import torch.nn.functional as F

from refcase import DTYPES, FLOATS, INF, NAN, SHORT, Family, L, idx, rnd, shp, vals


# ---- views and copies -------------------------------------------------------------

def slicer(dim, start, stop, step):
    def f(x):
        idx = [slice(None)] * x.dim()
        idx[dim] = slice(start, stop, step)
        return x[tuple(idx)]
    return f


def views():
    fam = Family("views", 5)
    for dt in FLOATS + ["int32", "bool"]:
        s = SHORT[dt]
        r = lambda shape, dt=dt: rnd(shape, dt)
        fam.case(f"reshape/{s}/[2,3]to[3,2]", "reshape", [r([2, 3])], lambda x: x.reshape(3, 2), {"shape": [3, 2]})
        fam.case(f"reshape/{s}/[2,3]to[-1,2]", "reshape", [r([2, 3])], lambda x: x.reshape(-1, 2), {"shape": [-1, 2]})
        fam.case(f"reshape/{s}/transposed[3,4]to[12]", "reshape", [L(r([3, 4]), "transposed")],
                 lambda x: x.reshape(12), {"shape": [12]})
        fam.case(f"permute/{s}/[2,3,4]/[2,0,1]", "permute", [r([2, 3, 4])], lambda x: x.permute(2, 0, 1),
                 {"dims": [2, 0, 1]})
        fam.case(f"transpose/{s}/[2,3,4]/0,2", "transpose", [r([2, 3, 4])], lambda x: x.transpose(0, 2),
                 {"d0": 0, "d1": 2})
        fam.case(f"flip/{s}/[3,4]/[0,1]", "flip", [r([3, 4])], lambda x: x.flip(0, 1), {"dims": [0, 1]})
        fam.case(f"expand/{s}/[3,1]to[2,3,4]", "expand", [r([3, 1])], lambda x: x.expand(2, 3, 4),
                 {"shape": [2, 3, 4]})
        fam.case(f"concat/{s}/[2,3]+[1,3]/dim0", "concat", [r([2, 3]), r([1, 3])], lambda *t: torch.cat(t, 0),
                 {"dim": 0})
        fam.case(f"stack/{s}/2x[2,3]/dim1", "stack", [r([2, 3]), r([2, 3])], lambda *t: torch.stack(t, 1), {"dim": 1})
        fam.case(f"contiguous/{s}/transposed[3,4]", "contiguous", [L(r([3, 4]), "transposed")], lambda x: x.contiguous())
        fam.case(f"contiguous/{s}/strided[2,3]", "contiguous", [L(r([2, 3]), "strided")], lambda x: x.contiguous())
        fam.case(f"contiguous/{s}/[2,3]", "contiguous", [r([2, 3])], lambda x: x.contiguous())
    r = lambda shape: rnd(shape, "float32")
    R = "reshape"
    fam.case("reshape/f32/0dto[1]", R, [r([])], lambda x: x.reshape(1), {"shape": [1]})
    fam.case("reshape/f32/[1]to0d", R, [r([1])], lambda x: x.reshape(()), {"shape": []})
    fam.case("reshape/f32/empty[0,3]to[3,0]", R, [r([0, 3])], lambda x: x.reshape(3, 0), {"shape": [3, 0]})
    fam.case("reshape/f32/[2,3]to[4]/error", R, [r([2, 3])], lambda x: x.reshape(4), {"shape": [4]}, error="shape")
    fam.case("reshape/f32/[2,3]to[-1,-1]/error", R, [r([2, 3])], lambda x: x.reshape(-1, -1), {"shape": [-1, -1]},
             error="shape")
    fam.case("permute/f32/[2,3,4]/[-1,0,1]", "permute", [r([2, 3, 4])], lambda x: x.permute(-1, 0, 1), {"dims": [-1, 0, 1]})
    fam.case("permute/f32/transposed[3,4]/[1,0]", "permute", [L(r([3, 4]), "transposed")], lambda x: x.permute(1, 0),
             {"dims": [1, 0]})
    fam.case("permute/f32/[2,3]/[0,2]/error", "permute", [r([2, 3])], lambda x: x.permute(0, 2), {"dims": [0, 2]},
             error="index")
    fam.case("transpose/f32/[2,3,4]/-1,-2", "transpose", [r([2, 3, 4])], lambda x: x.transpose(-1, -2), {"d0": -1, "d1": -2})
    fam.case("transpose/f32/[2,3]/0,2/error", "transpose", [r([2, 3])], lambda x: x.transpose(0, 2), {"d0": 0, "d1": 2},
             error="index")
    fam.case("mt/f32/[3,4]", "mt", [r([3, 4])], lambda x: x.mT)
    fam.case("mt/f32/[2,3,4]", "mt", [r([2, 3, 4])], lambda x: x.mT)
    fam.case("mt/f32/[3]/error", "mt", [r([3])], lambda x: x.mT, error="shape")
    sq = r([1, 3, 1, 2])
    for dims, out in (([], [3, 2]), ([0], [3, 1, 2]), ([-2], [1, 3, 2]), ([1], [1, 3, 1, 2]), ([0, 2], [3, 2])):
        fam.case(f"squeeze/f32/[1,3,1,2]/dims{shp(dims)}", "squeeze", [sq], lambda x, out=out: x.reshape(out),
                 {"dims": dims})
    fam.case("squeeze/f32/0d", "squeeze", [r([])], lambda x: x.squeeze(), {"dims": []})
    fam.case("squeeze/f32/dims[4]/error", "squeeze", [sq], lambda x: x.squeeze(4), {"dims": [4]}, error="index")
    for shape, d in (([3, 4], 0), ([3, 4], 2), ([3, 4], -1), ([], 0), ([0, 2], 1)):
        fam.case(f"unsqueeze/f32/{shp(shape)}/dim{d}", "unsqueeze", [r(shape)], lambda x, d=d: x.unsqueeze(d), {"dim": d})
    fam.case("unsqueeze/f32/dim3/error", "unsqueeze", [r([3, 4])], lambda x: x.unsqueeze(3), {"dim": 3}, error="index")
    for op in ("expand", "broadcast_to"):
        for shape, to in (([3, 1], [3, 4]), ([3, 1], [-1, 4]), ([], [2, 3]), ([1], [0]), ([2, 1], [2, 2, 3])):
            fam.case(f"{op}/f32/{shp(shape)}to{shp(to)}", op, [r(shape)], lambda x, to=to: x.expand(*to), {"shape": to})
        fam.case(f"{op}/f32/transposed[1,3]to[2,1,3]", op, [L(r([3, 1]).T, "transposed")],
                 lambda x: x.expand(2, 1, 3), {"shape": [2, 1, 3]})
        fam.case(f"{op}/f32/[3,2]to[3,4]/error", op, [r([3, 2])], lambda x: x.expand(3, 4), {"shape": [3, 4]}, error="shape")
        fam.case(f"{op}/f32/[2,3]to[3]/error", op, [r([2, 3])], lambda x: x.expand(3), {"shape": [3]}, error="shape")
    for d, st, ln in ((1, 1, 3), (0, 2, 2), (-1, 0, 0), (-1, 4, 1)):
        fam.case(f"narrow/f32/[4,5]/{d},{st},{ln}", "narrow", [r([4, 5])], lambda x, d=d, st=st, ln=ln: x.narrow(d, st, ln),
                 {"dim": d, "start": st, "length": ln})
    fam.case("narrow/f32/[4,5]/1,4,2/error", "narrow", [r([4, 5])], lambda x: x.narrow(1, 4, 2),
             {"dim": 1, "start": 4, "length": 2}, error="index")
    fam.case("narrow/f32/[4,5]/2,0,1/error", "narrow", [r([4, 5])], lambda x: x.narrow(2, 0, 1),
             {"dim": 2, "start": 0, "length": 1}, error="index")
    for d, a, b, st in ((1, 0, 6, 2), (0, 1, 3, 1), (-1, 1, 5, 3), (0, 0, 0, 1), (1, 5, 6, 4)):
        fam.case(f"slice/f32/[4,6]/{d},{a},{b},{st}", "slice", [r([4, 6])], slicer(d, a, b, st),
                 {"dim": d, "start": a, "stop": b, "step": st})
    fam.case("slice/f32/strided[2,4]/1,1,4,2", "slice", [L(r([2, 4]), "strided")], slicer(1, 1, 4, 2),
             {"dim": 1, "start": 1, "stop": 4, "step": 2})
    fam.case("slice/f32/step0/error", "slice", [r([4, 6])], slicer(1, 0, 6, 0),
             {"dim": 1, "start": 0, "stop": 6, "step": 0}, error="value")
    for shape in ([2, 3, 4], [], [0, 3]):
        fam.case(f"flatten/f32/{shp(shape)}", "flatten", [r(shape)], lambda x: x.flatten())
    fam.case("flatten/f32/transposed[3,4]", "flatten", [L(r([3, 4]), "transposed")], lambda x: x.flatten())
    for shape, a, b in (([2, 3, 4], 1, -1), ([2, 3, 4, 5], 1, 2), ([2, 3, 4], -2, -1), ([2, 3], 0, 0),
                        ([], 0, -1), ([2, 0, 3], 0, 1)):
        fam.case(f"flatten/f32/{shp(shape)}/{a},{b}", "flatten", [r(shape)], lambda x, a=a, b=b: x.flatten(a, b),
                 {"start": a, "end": b})
    fam.case("flatten/f32/transposed[3,4]/1,1", "flatten", [L(r([3, 4]), "transposed")], lambda x: x.flatten(1, 1),
             {"start": 1, "end": 1})
    fam.case("flatten/f32/[2,3,4]/2,1/error", "flatten", [r([2, 3, 4])], lambda x: x.flatten(2, 1),
             {"start": 2, "end": 1}, error="value")
    fam.case("flatten/f32/[2,3]/0,2/error", "flatten", [r([2, 3])], lambda x: x.flatten(0, 2),
             {"start": 0, "end": 2}, error="index")
    for shape, dims in (([3, 4], [0]), ([3, 4], [-1]), ([2, 3, 4], [0, 2]), ([], []), ([0, 2], [1])):
        fam.case(f"flip/f32/{shp(shape)}/{shp(dims)}", "flip", [r(shape)], lambda x, d=dims: x.flip(d), {"dims": dims})
    fam.case("flip/f32/strided[2,3]/[1]", "flip", [L(r([2, 3]), "strided")], lambda x: x.flip(1), {"dims": [1]})
    fam.case("flip/f32/dims[2]/error", "flip", [r([3, 4])], lambda x: x.flip(2), {"dims": [2]}, error="index")
    cat = lambda d: (lambda *t: torch.cat(t, d))
    stk = lambda d: (lambda *t: torch.stack(t, d))
    fam.case("concat/f32/[2,3]+[2,1]/dim-1", "concat", [r([2, 3]), r([2, 1])], cat(-1), {"dim": -1})
    fam.case("concat/f32/3x/dim1", "concat", [r([2, 1]), r([2, 2]), r([2, 3])], cat(1), {"dim": 1})
    fam.case("concat/f32/empty/dim0", "concat", [r([0, 3]), r([2, 3])], cat(0), {"dim": 0})
    fam.case("concat/f32/one/dim0", "concat", [r([2, 3])], cat(0), {"dim": 0})
    fam.case("concat/f32/transposed/dim0", "concat", [L(r([3, 2]), "transposed"), r([1, 2])], cat(0), {"dim": 0})
    fam.case("concat/f32/shape/error", "concat", [r([2, 3]), r([2, 4])], cat(0), {"dim": 0}, error="shape")
    fam.case("concat/f32/dim2/error", "concat", [r([2, 3]), r([2, 3])], cat(2), {"dim": 2}, error="index")
    fam.case("concat/f32xf64/error", "concat", [r([2, 3]), rnd([2, 3], "float64")], attrs={"dim": 0}, error="dtype")
    for d in (0, 2, -1):
        fam.case(f"stack/f32/2x[2,3]/dim{d}", "stack", [r([2, 3]), r([2, 3])], stk(d), {"dim": d})
    fam.case("stack/f32/0d/dim0", "stack", [r([]), r([]), r([])], stk(0), {"dim": 0})
    fam.case("stack/f32/shape/error", "stack", [r([2, 3]), r([3, 2])], stk(0), {"dim": 0}, error="shape")
    fam.case("stack/f32/dim3/error", "stack", [r([2, 3]), r([2, 3])], stk(3), {"dim": 3}, error="index")
    for shape, size, d in (([5, 3], 2, 0), ([5, 3], 1, -1), ([4, 2], 4, 0), ([4, 2], 3, 1)):
        fam.case(f"split/f32/{shp(shape)}/{size},{d}", "split", [r(shape)],
                 lambda x, size=size, d=d: torch.split(x, size, d), {"size": size, "dim": d})
    fam.case("split/f32/dim2/error", "split", [r([4, 2])], lambda x: torch.split(x, 1, 2), {"size": 1, "dim": 2},
             error="index")
    # torch.chunk makes pieces of ceil(size/n), so [5] in 4 chunks is 2,2,1.
    for shape, n, d in (([5, 3], 2, 0), ([6, 2], 3, 0), ([5], 4, 0), ([2, 3], 3, -1), ([2, 2], 5, 1)):
        fam.case(f"chunk/f32/{shp(shape)}/{n},{d}", "chunk", [r(shape)], lambda x, n=n, d=d: torch.chunk(x, n, d),
                 {"n": n, "dim": d})
    fam.case("chunk/f32/n0/error", "chunk", [r([4])], lambda x: torch.chunk(x, 0, 0), {"n": 0, "dim": 0}, error="value")
    for dt in FLOATS + ["int32"]:
        for shape, pads, v in (([2, 3], [1, 2], 0.0), ([2, 3], [1, 1, 2, 0], 1.5), ([3], [0, 0], 0.0),
                               ([2, 3], [-1, 1], 0.0), ([0, 2], [1, 1], 2.0), ([2, 2, 2], [0, 1, 1, 0, 1, 1], -1.0)):
            if dt == "int32" and v != int(v):
                continue
            fam.case(f"pad/{SHORT[dt]}/{shp(shape)}/{shp(pads)}/{v}", "pad", [rnd(shape, dt)],
                     lambda x, p=pads, v=v: F.pad(x, p, value=v), {"pads": pads, "value": v})
    fam.case("pad/f32/transposed[3,2]/[1,1]", "pad", [L(r([3, 2]), "transposed")], lambda x: F.pad(x, [1, 1], value=0.0),
             {"pads": [1, 1], "value": 0.0})
    fam.case("pad/f32/odd/error", "pad", [r([2, 3])], lambda x: F.pad(x, [1]), {"pads": [1], "value": 0.0}, error="value")
    fam.case("pad/f32/toolong/error", "pad", [r([3])], lambda x: F.pad(x, [1, 1, 1, 1]), {"pads": [1, 1, 1, 1], "value": 0.0},
             error="value")
    casts = [("float32", "int32", [1.7, -1.7, 0.0, -0.0, 2.5, 100.9]), ("float32", "bool", [0.0, -0.0, 0.5, NAN, INF]),
             ("float64", "float32", [1.0 / 3, 1e-50, 1e50, -INF, NAN]), ("float32", "float64", [0.1, -2.5, INF, NAN]),
             ("float64", "int64", [3.99, -3.99, 1e12]), ("int32", "float32", [1, -7, 16777217]),
             ("int64", "int32", [5, -5, 2**31 - 1]), ("int32", "int64", [3, -3]), ("int32", "bool", [0, 2, -1]),
             ("bool", "float64", [True, False]), ("bool", "int32", [True, False]), ("int64", "float64", [2**53 + 1, -9]),
             # Past the integer's range, and NaN: torch on x86 (cvttss2si)
             # gives the most negative integer, as lathe does on every device.
             ("float32", "int32", [INF, -INF, NAN, 3e9, -3e9, 2147483648.0, 2147483520.0, -2147483648.0, -2.5]),
             ("float64", "int32", [INF, NAN, 3e9, -2147483649.0, 1e10, -2147483648.9, -7.5]),
             ("float32", "int64", [INF, -INF, NAN, 1e19, -1e19, 3e9, 9.2233715e18]),
             ("float64", "int64", [INF, NAN, 9.3e18, -9.3e18, -9223372036854775808.0, 9.2233720368547748e18])]
    for src, to, v in casts:
        name = f"cast/{SHORT[src]}to{SHORT[to]}"
        if name in fam.seen:
            name += "/out_of_range"
        fam.case(name, "cast", [vals(v, src)], lambda x, to=to: x.to(DTYPES[to]), {"dtype": to})
    fam.case("cast/f32tof64/transposed[2,3]", "cast", [L(r([2, 3]), "transposed")], lambda x: x.double(), {"dtype": "float64"})
    fam.case("cast/i32tof32/strided[2,3]", "cast", [L(rnd([2, 3], "int32"), "strided")], lambda x: x.float(),
             {"dtype": "float32"})
    fam.case("cast/f32tof32/[3]", "cast", [r([3])], lambda x: x.float(), {"dtype": "float32"})
    fam.case("cast/f32/0d", "cast", [r([])], lambda x: x.double(), {"dtype": "float64"})
    fam.case("cast/f32/empty", "cast", [r([0, 2])], lambda x: x.int(), {"dtype": "int32"})
    # A value the dtype cannot hold: torch raises "value cannot be converted
    # to type int without overflow".
    fam.case("pad/i32/value3e9/error", "pad", [rnd([3], "int32")], lambda x: F.pad(x, [1, 1], value=3e9),
             {"pads": [1, 1], "value": 3e9}, error="value")
    fam.case("pad/f32/value1e39/error", "pad", [rnd([3], "float32")], lambda x: F.pad(x, [1, 1], value=1e39),
             {"pads": [1, 1], "value": 1e39}, error="value")
    return fam


# ---- indexing -----------------------------------------------------------------

def indexing():
    fam = Family("index", 6)
    for dt in FLOATS + ["int32", "bool"]:
        s = SHORT[dt]
        fam.case(f"index_select/{s}/[4,3]/dim0", "index_select", [rnd([4, 3], dt), idx([2, 0, 2])],
                 lambda x, i: torch.index_select(x, 0, i), {"dim": 0})
        fam.case(f"gather/{s}/[3,4]/dim1", "gather", [rnd([3, 4], dt), idx([[0, 3], [1, 1], [2, 0]])],
                 lambda x, i: torch.gather(x, 1, i), {"dim": 1})
        fam.case(f"scatter/{s}/[3,5]/dim0", "scatter", [rnd([3, 5], dt), idx([[0, 1, 2, 0, 1], [2, 0, 1, 1, 0]]),
                                                          rnd([2, 5], dt)],
                 lambda x, i, src: torch.scatter(x, 0, i, src), {"dim": 0})
        fam.case(f"masked_fill/{s}/[3,4]/bcast[1,4]", "masked_fill", [rnd([3, 4], dt), rnd([1, 4], "bool")],
                 lambda x, m: x.masked_fill(m, 1), {"value": 1.0})
    for dt in FLOATS:
        s = SHORT[dt]
        x = lambda shape, dt=dt: rnd(shape, dt)
        fam.case(f"index_select/{s}/[2,5]/dim-1/i32", "index_select", [x([2, 5]), idx([4, 0, 1, 4], "int32")],
                 lambda x, i: torch.index_select(x, -1, i.long()), {"dim": -1})
        fam.case(f"index_select/{s}/empty_index", "index_select", [x([4, 3]), idx([], "int64")],
                 lambda x, i: torch.index_select(x, 0, i), {"dim": 0})
        fam.case(f"index_select/{s}/transposed[3,4]/dim1", "index_select", [L(x([3, 4]), "transposed"), idx([3, 1])],
                 lambda x, i: torch.index_select(x, 1, i), {"dim": 1})
        fam.case(f"index_select/{s}/0d_index", "index_select", [x([4]), vals(2, "int64")],
                 lambda x, i: torch.index_select(x, 0, i), {"dim": 0})
        fam.case(f"gather/{s}/[3,4]/dim0/i32", "gather", [x([3, 4]), idx([[2, 0, 1, 1]], "int32")],
                 lambda x, i: torch.gather(x, 0, i.long()), {"dim": 0})
        fam.case(f"gather/{s}/[2,3,2]/dim-2", "gather", [x([2, 3, 2]), idx([[[0, 2], [1, 1], [2, 0], [0, 0]],
                                                                         [[1, 2], [2, 2], [0, 1], [1, 0]]])],
                 lambda x, i: torch.gather(x, -2, i), {"dim": -2})
        fam.case(f"gather/{s}/strided[3,4]/dim1", "gather", [L(x([3, 4]), "strided"), idx([[1], [0], [3]])],
                 lambda x, i: torch.gather(x, 1, i), {"dim": 1})
        fam.case(f"scatter/{s}/[2,4]/dim1", "scatter", [x([2, 4]), idx([[3, 0], [1, 2]]), x([2, 3])],
                 lambda x, i, src: torch.scatter(x, 1, i, src), {"dim": 1})
        fam.case(f"scatter_add/{s}/[3,4]/dim0", "scatter_add",
                 [x([3, 4]), idx([[0, 1, 2, 0], [0, 0, 2, 2], [1, 1, 1, 1]]), x([3, 4])],
                 lambda x, i, src: torch.scatter_add(x, 0, i, src), {"dim": 0})
        fam.case(f"scatter_add/{s}/[2,5]/dim-1", "scatter_add", [x([2, 5]), idx([[4, 4, 0], [1, 1, 1]]), x([2, 3])],
                 lambda x, i, src: torch.scatter_add(x, -1, i, src), {"dim": -1})
        fam.case(f"masked_fill/{s}/-inf", "masked_fill", [x([2, 3]), rnd([2, 3], "bool")],
                 lambda x, m: x.masked_fill(m, -INF), {"value": -INF})
        fam.case(f"masked_fill/{s}/0d_mask", "masked_fill", [x([2, 3]), vals(True, "bool")],
                 lambda x, m: x.masked_fill(m, 2.5), {"value": 2.5})
        fam.case(f"masked_fill/{s}/nan", "masked_fill", [x([4]), vals([True, False, True, False], "bool")],
                 lambda x, m: x.masked_fill(m, NAN), {"value": NAN})
        fam.case(f"embedding/{s}/[2,3]x[5,4]", "embedding", [idx([[0, 4, 2], [2, 2, 1]]), x([5, 4])], F.embedding)
        fam.case(f"embedding/{s}/[3]x[4,2]/i32", "embedding", [idx([3, 0, 3], "int32"), x([4, 2])],
                 lambda i, w: F.embedding(i.long(), w))
        fam.case(f"embedding/{s}/0dx[4,2]", "embedding", [vals(1, "int64"), x([4, 2])], F.embedding)
    f = lambda shape: rnd(shape, "float32")
    fam.case("masked_fill/i64/[2,3]", "masked_fill", [rnd([2, 3], "int64"), rnd([2, 3], "bool")],
             lambda x, m: x.masked_fill(m, -5), {"value": -5.0})
    fam.case("masked_fill/f32/mask_f32/error", "masked_fill", [f([2, 3]), f([2, 3])],
             lambda x, m: x.masked_fill(m, 0.0), {"value": 0.0}, error="dtype")
    fam.case("masked_fill/f32/shape/error", "masked_fill", [f([2, 3]), rnd([4], "bool")],
             lambda x, m: x.masked_fill(m, 0.0), {"value": 0.0}, error="shape")
    fam.case("index_select/f32/out_of_range/error", "index_select", [f([4, 3]), idx([0, 4])],
             lambda x, i: torch.index_select(x, 0, i), {"dim": 0}, error="index")
    fam.case("index_select/f32/negative/error", "index_select", [f([4, 3]), idx([-1])],
             lambda x, i: torch.index_select(x, 0, i), {"dim": 0}, error="index")
    fam.case("index_select/f32/dim2/error", "index_select", [f([4, 3]), idx([0])],
             lambda x, i: torch.index_select(x, 2, i), {"dim": 2}, error="index")
    fam.case("index_select/f32/index_f32/error", "index_select", [f([4, 3]), f([2])],
             lambda x, i: torch.index_select(x, 0, i), {"dim": 0}, error="dtype")
    fam.case("gather/f32/out_of_range/error", "gather", [f([3, 4]), idx([[0, 4]])],
             lambda x, i: torch.gather(x, 1, i), {"dim": 1}, error="index")
    fam.case("scatter/f32/out_of_range/error", "scatter", [f([3, 4]), idx([[3, 0]]), f([1, 2])],
             lambda x, i, s: torch.scatter(x, 0, i, s), {"dim": 0}, error="index")
    fam.case("scatter_add/f32/out_of_range/error", "scatter_add", [f([3, 4]), idx([[0, 5]]), f([1, 2])],
             lambda x, i, s: torch.scatter_add(x, 1, i, s), {"dim": 1}, error="index")
    fam.case("scatter/f32xf64/error", "scatter", [f([3, 4]), idx([[0, 1]]), rnd([1, 2], "float64")],
             lambda x, i, s: torch.scatter(x, 0, i, s), {"dim": 0}, error="dtype")
    for shape, n, v in (([3], 5, [0, 4, 2]), ([2, 3], 4, [[0, 1, 2], [3, 3, 0]]), ([], 3, 1), ([0], 2, [])):
        fam.case(f"one_hot/i64/{shp(shape)}/{n}", "one_hot", [vals(v, "int64", shape)],
                 lambda i, n=n: F.one_hot(i, n), {"num_classes": n})
    fam.case("one_hot/i32/[3]/3", "one_hot", [vals([2, 0, 1], "int32")], lambda i: F.one_hot(i.long(), 3),
             {"num_classes": 3})
    fam.case("one_hot/i64/out_of_range/error", "one_hot", [vals([0, 3], "int64")], lambda i: F.one_hot(i, 3),
             {"num_classes": 3}, error="index")
    fam.case("one_hot/f32/error", "one_hot", [f([3])], lambda i: F.one_hot(i, 3), {"num_classes": 3}, error="dtype")
    fam.case("embedding/f32/out_of_range/error", "embedding", [idx([0, 5]), f([5, 2])], F.embedding, error="index")
    fam.case("embedding/f32/weight1d/error", "embedding", [idx([0, 1]), f([5])], F.embedding, error="shape")
    # A value the dtype cannot hold: torch raises, as for pad.
    fam.case("masked_fill/i32/value3e9/error", "masked_fill", [rnd([3], "int32"), rnd([3], "bool")],
             lambda x, m: x.masked_fill(m, 3e9), {"value": 3e9}, error="value")
    fam.case("masked_fill/i32/nan/error", "masked_fill", [rnd([3], "int32"), rnd([3], "bool")],
             lambda x, m: x.masked_fill(m, NAN), {"value": NAN}, error="value")
    return fam
