"""Cases of the everyday shape, product and small math functions lathe
builds as composites in ops_shapes3.go (shapes3.json) and their gradients
(grad_shapes3.json):

1. select, t, movedim, swapaxes, ravel, expand_as, reshape_as, view_as,
   type_as, unflatten, msort, positive, clamp_min, clamp_max, aminmax,
   sgn and rsub;
2. atleast_1d/2d/3d, broadcast_tensors, hsplit, vsplit, dsplit,
   diagflat, combinations, dot, vdot, inner, mv, mm, bmm, dist,
   float_power, trapezoid and cumulative_trapezoid.

Run it from the repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/shapes3.py

(gen.py runs it too, with every other family.) Op keys and attributes are
listed with the Go table, internal/conformance/ops_shapes3.go. Gradient
cases with "square" square the result, so that the Hessian-vector product
of an op linear in its input is not zero.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily, off  # noqa: E402
from refcase import INF, NAN, SHORT, Family, L, rnd, shp, vals  # noqa: E402


def sq(f, square):
    return (lambda *a: f(*a) ** 2) if square else f


def views(fam):
    c = fam.case
    x = rnd([2, 3, 4], "float32")
    for d, i in ((1, -1), (2, -4)):
        c(f"select/f32/[2,3,4]/dim={d},index={i}", "select", [x], lambda t, d=d, i=i: t.select(d, i), {"dim": d, "index": i})
    c("select/i64/transposed[3,4]/dim=0,index=2", "select", [L(rnd([3, 4], "int64"), "transposed")],
      lambda t: t.select(0, 2), {"dim": 0, "index": 2})
    c("select/f32/[2,3]/index=3/error", "select", [rnd([2, 3], "float32")], lambda t: t.select(1, 3),
      {"dim": 1, "index": 3}, error="index")
    for shape in ([3, 4], []):
        c(f"t/f32/{shp(shape)}", "t", [rnd(shape, "float32")], lambda t: t.t())
    c("t/f32/[2,3,4]/error", "t", [x], lambda t: t.t(), error="shape")
    for src, dst in (([0, 1], [2, 0]), ([-1], [0])):
        c(f"movedim/f32/[2,3,4]/{shp(src)}->{shp(dst)}", "movedim", [x], lambda t, s=src, d=dst: torch.movedim(t, s, d),
          {"source": src, "destination": dst})
    c("movedim/f32/0d/[0]->[-1]", "movedim", [vals(2.0, "float32")], lambda t: torch.movedim(t, [0], [-1]),
      {"source": [0], "destination": [-1]})
    c("movedim/f32/repeated/error", "movedim", [x], lambda t: torch.movedim(t, [0, 0], [1, 2]),
      {"source": [0, 0], "destination": [1, 2]}, error="value")
    c("swapaxes/f32/[2,3,4]/-1,1", "swapaxes", [x], lambda t: torch.swapaxes(t, -1, 1), {"a": -1, "b": 1})
    c("swapaxes/f32/0d", "swapaxes", [vals(2.0, "float32")], lambda t: torch.swapaxes(t, 0, -1), {"a": 0, "b": -1})
    c("ravel/f32/0d", "ravel", [rnd([], "float32")], torch.ravel)
    c("ravel/i32/transposed[3,4]", "ravel", [L(rnd([3, 4], "int32"), "transposed")], torch.ravel)
    c("expand_as/f32/[1,3]->[4,2,3]", "expand_as", [rnd([1, 3], "float32"), rnd([4, 2, 3], "int64")],
      lambda a, b: a.expand_as(b))
    c("expand_as/f32/[3]->[2]/error", "expand_as", [rnd([3], "float32"), rnd([2], "float32")], lambda a, b: a.expand_as(b),
      error="shape")
    c("reshape_as/f32/transposed[3,4]->[2,6]", "reshape_as", [L(rnd([3, 4], "float32"), "transposed"),
                                                                 rnd([2, 6], "bool")], lambda a, b: a.reshape_as(b))
    c("reshape_as/f32/[2,3]->[4]/error", "reshape_as", [rnd([2, 3], "float32"), rnd([4], "float32")],
      lambda a, b: a.reshape_as(b), error="shape")
    c("view_as/f32/[2,3]->[3,2]", "view_as", [rnd([2, 3], "float32"), rnd([3, 2], "float64")], lambda a, b: a.view_as(b))
    for a, b in (("float32", "int32"), ("int64", "float64")):
        c(f"type_as/{SHORT[a]}->{SHORT[b]}", "type_as", [rnd([2, 3], a, "small"), rnd([1], b)], lambda p, q: p.type_as(q))
    for d, sizes in ((-1, [-1, 2]), (0, [1, 3, 1])):
        c(f"unflatten/f32/[3,4]/dim={d},sizes={shp(sizes)}", "unflatten", [rnd([3, 4], "float32")],
          lambda t, d=d, s=sizes: t.unflatten(d, s), {"dim": d, "sizes": sizes})
    c("unflatten/f32/[2,0]/dim=1,sizes=[5,-1]", "unflatten", [rnd([2, 0], "float32")],
      lambda t: t.unflatten(1, (5, -1)), {"dim": 1, "sizes": [5, -1]})
    for name, sizes, err in (("product", [3, 3], "shape"), ("zero-inferred", [0, -1], "shape")):
        c(f"unflatten/f32/{name}/error", "unflatten", [rnd([2, 4], "float32")], lambda t, s=sizes: t.unflatten(1, s),
          {"dim": 1, "sizes": sizes}, error=err)


def elementwise(fam):
    c = fam.case
    for dt in ("int64", "bool"):
        c(f"msort/{SHORT[dt]}/[4,3]", "msort", [rnd([4, 3], dt)], torch.msort)
    c("msort/f32/special", "msort", [vals([NAN, 1.0, -INF, 0.0, -0.0], "float32")], torch.msort)
    c("positive/i32/[2,3]", "positive", [rnd([2, 3], "int32")], torch.positive)
    c("positive/bool/error", "positive", [rnd([2], "bool")], torch.positive, error="dtype")
    sp = vals([NAN, -INF, -1.5, -0.0, 0.0, 0.5, 2.0, INF], "float32")
    c("clamp_min/f32/special/min=0", "clamp_min", [sp], lambda t: torch.clamp_min(t, 0.0), {"min": 0.0})
    c("clamp_max/f32/special/max=1.25", "clamp_max", [sp], lambda t: torch.clamp_max(t, 1.25), {"max": 1.25})
    c("clamp_min/i32/min=1.5", "clamp_min", [vals([-2, 1, 3], "int32")], lambda t: torch.clamp_min(t, 1.5), {"min": 1.5})
    c("clamp_max/i64/max=1", "clamp_max", [vals([-2, 1, 3], "int64")], lambda t: torch.clamp_max(t, 1), {"max": 1.0})
    c("clamp_min/bool/min=0", "clamp_min", [vals([True, False], "bool")], lambda t: torch.clamp_min(t, 0), {"min": 0.0})
    for dt in ("int32", "bool"):
        c(f"aminmax/{SHORT[dt]}/[3,4]", "aminmax", [rnd([3, 4], dt)], lambda t: tuple(torch.aminmax(t)))
    c("aminmax/f32/special", "aminmax", [vals([1.0, NAN, -INF], "float32")], lambda t: tuple(torch.aminmax(t)))
    c("aminmax/f32/0d/dim=0", "aminmax", [vals(2.0, "float32")], lambda t: tuple(torch.aminmax(t, dim=0)), {"dim": 0})
    c("aminmax/f64/[3,4]/dim=-1,keep=True", "aminmax", [rnd([3, 4], "float64")],
      lambda t: tuple(torch.aminmax(t, dim=-1, keepdim=True)), {"dim": -1, "keepdim": True})
    c("aminmax/f32/[2,0]/dim=1/error", "aminmax", [rnd([2, 0], "float32")], lambda t: torch.aminmax(t, dim=1),
      {"dim": 1}, error="index")
    for dt in ("int32", "bool"):
        c(f"sgn/{SHORT[dt]}/[2,3]", "sgn", [rnd([2, 3], dt)], torch.sgn)
    c("sgn/f32/special", "sgn", [sp], torch.sgn)
    for a, b, alpha in (("float32", "float32", 0.5), ("int64", "int64", 2), ("int32", "float32", 2.0),
                        ("float64", "float32", -1.5)):
        c(f"rsub/{SHORT[a]}x{SHORT[b]}/alpha={alpha}", "rsub", [rnd([2, 3], a), rnd([3], b)],
          lambda x, y, al=alpha: torch.rsub(x, y, alpha=al), {"alpha": float(alpha)})
    c("rsub/i64/alpha=2.5/error", "rsub", [rnd([3], "int64"), rnd([3], "int64")],
      lambda x, y: torch.rsub(x, y, alpha=2.5), {"alpha": 2.5}, error="value")


def functions(fam):
    c = fam.case
    for op, fn in (("atleast_1d", torch.atleast_1d), ("atleast_2d", torch.atleast_2d), ("atleast_3d", torch.atleast_3d)):
        for shape in ([], [3]):
            c(f"{op}/f32/{shp(shape)}", op, [rnd(shape, "float32")], fn)
    c("atleast_3d/f32/[2,3]", "atleast_3d", [rnd([2, 3], "float32")], torch.atleast_3d)
    c("broadcast_tensors/f32,i32,bool", "broadcast_tensors",
      [rnd([2, 1], "float32"), rnd([3], "int32"), rnd([], "bool")], lambda *t: tuple(torch.broadcast_tensors(*t)))
    c("broadcast_tensors/f32/[2]x[3]/error", "broadcast_tensors", [rnd([2], "float32"), rnd([3], "float32")],
      lambda *t: torch.broadcast_tensors(*t), error="shape")
    v = rnd([6, 4], "float32")
    c("hsplit/f32/[6,4]/sections=2", "hsplit", [v], lambda t: tuple(torch.hsplit(t, 2)), {"sections": 2})
    c("hsplit/f32/[6]/indices=[1,4]", "hsplit", [rnd([6], "float32")], lambda t: tuple(torch.hsplit(t, [1, 4])),
      {"indices": [1, 4]})
    c("vsplit/f32/[6,4]/indices=[-2,9]", "vsplit", [v], lambda t: tuple(torch.vsplit(t, [-2, 9])), {"indices": [-2, 9]})
    c("dsplit/i32/[2,1,4]/sections=2", "dsplit", [rnd([2, 1, 4], "int32")], lambda t: tuple(torch.dsplit(t, 2)),
      {"sections": 2})
    c("hsplit/f32/[6,4]/sections=3/error", "hsplit", [v], lambda t: torch.hsplit(t, 3), {"sections": 3}, error="value")
    c("vsplit/f32/[6]/error", "vsplit", [rnd([6], "float32")], lambda t: torch.vsplit(t, 2), {"sections": 2},
      error="shape")
    for shape, off_ in (([2, 2], 1), ([], -1), ([0], 2)):
        c(f"diagflat/f32/{shp(shape)}/offset={off_}", "diagflat", [rnd(shape, "float32")],
          lambda t, o=off_: torch.diagflat(t, o), {"offset": off_})
    for r, rep in ((2, False), (3, True), (0, False), (5, False)):
        c(f"combinations/i64/[4]/r={r},rep={rep}", "combinations", [rnd([4], "int64")],
          lambda t, r=r, p=rep: torch.combinations(t, r, p), {"r": r, "with_replacement": rep})
    c("combinations/f32/[2,2]/error", "combinations", [rnd([2, 2], "float32")], lambda t: torch.combinations(t, 2),
      {"r": 2, "with_replacement": False}, error="shape")


def products(fam):
    c = fam.case
    for dt in ("float32", "int32"):
        c(f"dot/{SHORT[dt]}/[5]", "dot", [rnd([5], dt), rnd([5], dt)], torch.dot)
    c("vdot/f64/[4]", "vdot", [rnd([4], "float64"), rnd([4], "float64")], torch.vdot)
    c("dot/f32/[0]", "dot", [rnd([0], "float32"), rnd([0], "float32")], torch.dot)
    c("dot/f32xf64/error", "dot", [rnd([3], "float32"), rnd([3], "float64")], torch.dot, error="dtype")
    c("dot/f32/[3]x[4]/error", "dot", [rnd([3], "float32"), rnd([4], "float32")], torch.dot, error="shape")
    c("inner/f64/[3]x[2,2,3]", "inner", [rnd([3], "float64"), rnd([2, 2, 3], "float64")], torch.inner)
    c("inner/f32xf64/0d", "inner", [rnd([], "float32"), rnd([2, 3], "float64")], torch.inner)
    c("inner/f32/[2]x[3]/error", "inner", [rnd([2], "float32"), rnd([3], "float32")], torch.inner, error="shape")
    c("mv/f32/transposed", "mv", [L(rnd([3, 4], "float32"), "transposed"), rnd([4], "float32")], torch.mv)
    c("mv/f32/[3,4]x[3]/error", "mv", [rnd([3, 4], "float32"), rnd([3], "float32")], torch.mv, error="shape")
    c("mm/i64/[2,3]x[3,4]", "mm", [rnd([2, 3], "int64"), rnd([3, 4], "int64")], torch.mm)
    c("mm/f32/[2,0]x[0,3]", "mm", [rnd([2, 0], "float32"), rnd([0, 3], "float32")], torch.mm)
    c("mm/f32/[2,3]x[2,3]/error", "mm", [rnd([2, 3], "float32"), rnd([2, 3], "float32")], torch.mm, error="shape")
    c("bmm/f32/[2,2,3]x[2,3,4]", "bmm", [rnd([2, 2, 3], "float32"), rnd([2, 3, 4], "float32")], torch.bmm)
    c("bmm/f32/batch/error", "bmm", [rnd([2, 2, 3], "float32"), rnd([3, 3, 4], "float32")], torch.bmm, error="shape")
    for p in (2.0, 0.0, 3.5, INF):
        c(f"dist/f32/[2,3]x[3]/p={p}", "dist", [rnd([2, 3], "float32"), rnd([3], "float32", "halves")],
          lambda a, b, p=p: torch.dist(a, b, p), {"p": p})
    c("dist/f32xf64", "dist", [rnd([3], "float32"), rnd([3], "float64")], torch.dist, {"p": 2.0})
    c("dist/i32/error", "dist", [rnd([3], "int32"), rnd([3], "int32")], torch.dist, {"p": 2.0}, error="dtype")
    # float_power's result is float64 whatever its inputs: not narrowed on wgpu.
    f64 = {"float64_only": True}
    c("float_power/i64xf32", "float_power", [vals([2, 3, -2], "int64"), rnd([3], "float32")], torch.float_power, f64)
    c("float_power/f32/special", "float_power", [vals([-8.0, 0.0, INF, NAN, 2.0], "float32"),
                                                 vals([1 / 3, -1.0, 0.5, 0.0, 10.0], "float32")], torch.float_power, f64)
    c("float_power_scalar/i32/e=2", "float_power_scalar", [vals([2, -3], "int32")], lambda t: torch.float_power(t, 2),
      {"exponent": 2.0, "float64_only": True})
    y = rnd([3, 4], "float32")
    for d, dx in ((0, 0.5), (-1, 2.0)):
        c(f"trapezoid/f32/[3,4]/dim={d},dx={dx}", "trapezoid", [y], lambda t, d=d, dx=dx: torch.trapezoid(t, dx=dx, dim=d),
          {"dim": d, "dx": dx})
        c(f"cumulative_trapezoid/f32/[3,4]/dim={d},dx={dx}", "cumulative_trapezoid", [y],
          lambda t, d=d, dx=dx: torch.cumulative_trapezoid(t, dx=dx, dim=d), {"dim": d, "dx": dx})
    c("trapezoid/i64/[4]", "trapezoid", [rnd([4], "int64")], lambda t: torch.trapezoid(t), {"dim": -1, "dx": 1.0})
    c("trapezoid/f32/[0]", "trapezoid", [rnd([0], "float32")], lambda t: torch.trapezoid(t), {"dim": -1, "dx": 1.0})
    c("cumulative_trapezoid/f32/[1,3]/dim=0", "cumulative_trapezoid", [rnd([1, 3], "float32")],
      lambda t: torch.cumulative_trapezoid(t, dim=0), {"dim": 0, "dx": 1.0})
    xs = vals([0.0, 0.5, 2.0, 2.25], "float32")
    c("trapezoid_x/f32/[3,4]x[4]", "trapezoid_x", [y, xs], lambda t, x: torch.trapezoid(t, x), {"dim": -1})
    c("trapezoid_x/f64/[4,3]x[4]/dim=0", "trapezoid_x", [rnd([4, 3], "float64"), xs.double()],
      lambda t, x: torch.trapezoid(t, x, dim=0), {"dim": 0})
    c("trapezoid_x/f32/[3,4]x[1,4]", "trapezoid_x", [y, rnd([1, 4], "float32")], lambda t, x: torch.trapezoid(t, x),
      {"dim": -1})
    c("cumulative_trapezoid_x/f32/[3,4]x[4]", "cumulative_trapezoid_x", [y, xs],
      lambda t, x: torch.cumulative_trapezoid(t, x), {"dim": -1})
    c("trapezoid_x/f32/points/error", "trapezoid_x", [y, rnd([3], "float32")], lambda t, x: torch.trapezoid(t, x),
      {"dim": -1}, error="shape")


def shapes3():
    fam = Family("shapes3", 99)
    views(fam)
    elementwise(fam)
    functions(fam)
    products(fam)
    return fam


def grad_shapes3():
    fam = GradFamily("grad_shapes3", 100)
    g = fam.gcase
    x = rnd([2, 3, 4], "float64")
    g("select/f64/[2,3,4]/dim=1,index=-1/squared", "select", [x], sq(lambda t: t.select(1, -1), True),
      {"dim": 1, "index": -1, "square": True}, hvp=True)
    g("t/f64/[3,4]", "t", [rnd([3, 4], "float64")], lambda t: t.t())
    g("movedim/f64/[2,3,4]/squared", "movedim", [x], sq(lambda t: torch.movedim(t, [0, 1], [2, 0]), True),
      {"source": [0, 1], "destination": [2, 0], "square": True}, hvp=True)
    g("swapaxes/f64/[2,3,4]", "swapaxes", [x], lambda t: torch.swapaxes(t, 0, 2), {"a": 0, "b": 2})
    g("ravel/f64/transposed[3,4]", "ravel", [L(rnd([3, 4], "float64"), "transposed")], torch.ravel)
    g("expand_as/f64/[1,3]->[4,3]", "expand_as", [rnd([1, 3], "float64"), rnd([4, 3], "float64")],
      lambda a, b: a.expand_as(b))
    g("reshape_as/f64/[2,6]", "reshape_as", [rnd([3, 4], "float64"), rnd([2, 6], "float64")], lambda a, b: a.reshape_as(b))
    g("type_as/f32->f64", "type_as", [rnd([2, 3], "float32"), rnd([1], "float64")], lambda a, b: a.type_as(b))
    g("unflatten/f64/[3,4]/squared", "unflatten", [rnd([3, 4], "float64")], sq(lambda t: t.unflatten(1, (2, -1)), True),
      {"dim": 1, "sizes": [2, -1], "square": True}, hvp=True)
    g("msort/f64/[4,3]", "msort", [off(rnd([4, 3], "float64"))], torch.msort)
    g("clamp_min/f64/[3,4]/min=0.1", "clamp_min", [off(rnd([3, 4], "float64"))], lambda t: torch.clamp_min(t, 0.1),
      {"min": 0.1})
    g("clamp_max/f64/[3,4]/max=-0.2", "clamp_max", [off(rnd([3, 4], "float64"))], lambda t: torch.clamp_max(t, -0.2),
      {"max": -0.2})
    g("rsub/f64/alpha=0.5", "rsub", [rnd([2, 3], "float64"), rnd([3], "float64")],
      lambda a, b: torch.rsub(a, b, alpha=0.5), {"alpha": 0.5})
    g("atleast_3d/f64/[3]", "atleast_3d", [rnd([3], "float64")], torch.atleast_3d)
    g("diagflat/f64/[2,2]/offset=1/squared", "diagflat", [rnd([2, 2], "float64")], sq(lambda t: torch.diagflat(t, 1), True),
      {"offset": 1, "square": True}, hvp=True)
    g("combinations/f64/[4]/r=2", "combinations", [rnd([4], "float64")], lambda t: torch.combinations(t, 2),
      {"r": 2, "with_replacement": False})
    g("combinations/f64/[3]/r=2,rep", "combinations", [rnd([3], "float64")],
      lambda t: torch.combinations(t, 2, with_replacement=True), {"r": 2, "with_replacement": True})
    g("dot/f64/[5]", "dot", [rnd([5], "float64"), rnd([5], "float64")], torch.dot, hvp=True)
    g("vdot/f32/[4]", "vdot", [rnd([4], "float32"), rnd([4], "float32")], torch.vdot)
    g("inner/f64/[2,3]x[4,3]", "inner", [rnd([2, 3], "float64"), rnd([4, 3], "float64")], torch.inner, hvp=True)
    g("mv/f64/[3,4]x[4]", "mv", [rnd([3, 4], "float64"), rnd([4], "float64")], torch.mv, hvp=True)
    g("mm/f64/[2,3]x[3,4]", "mm", [rnd([2, 3], "float64"), rnd([3, 4], "float64")], torch.mm)
    g("bmm/f64/[2,2,3]x[2,3,4]", "bmm", [rnd([2, 2, 3], "float64"), rnd([2, 3, 4], "float64")], torch.bmm, hvp=True)
    for p in (2.0, 3.5):
        g(f"dist/f64/[2,3]x[3]/p={p}", "dist", [rnd([2, 3], "float64"), off(rnd([3], "float64"))],
          lambda a, b, p=p: torch.dist(a, b, p), {"p": p}, hvp=True)
    g("dist/f64/p=inf", "dist", [rnd([4], "float64"), off(rnd([4], "float64"))], lambda a, b: torch.dist(a, b, INF),
      {"p": INF})
    g("float_power/f32xf64", "float_power", [rnd([3], "float32", "pos"), rnd([3], "float64")], torch.float_power,
      {"float64_only": True}, hvp=True)
    g("float_power_scalar/f64/e=2.5", "float_power_scalar", [rnd([4], "float64", "pos")],
      lambda t: torch.float_power(t, 2.5), {"exponent": 2.5, "float64_only": True}, hvp=True)
    g("trapezoid/f64/[3,4]/dim=0,dx=0.5", "trapezoid", [rnd([3, 4], "float64")], lambda t: torch.trapezoid(t, dx=0.5, dim=0),
      {"dim": 0, "dx": 0.5})
    g("cumulative_trapezoid/f64/[3,4]", "cumulative_trapezoid", [rnd([3, 4], "float64")], torch.cumulative_trapezoid,
      {"dim": -1, "dx": 1.0})
    g("trapezoid_x/f64/[3,4]x[4]", "trapezoid_x", [rnd([3, 4], "float64"), rnd([4], "float64")], torch.trapezoid,
      {"dim": -1}, hvp=True)
    g("cumulative_trapezoid_x/f64/[2,4]x[4]", "cumulative_trapezoid_x", [rnd([2, 4], "float64"), rnd([4], "float64")],
      torch.cumulative_trapezoid, {"dim": -1}, hvp=True)
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (shapes3, grad_shapes3):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
