"""Grid sampling cases (torch.nn.functional.grid_sample and affine_grid):
grid.json, the forward cases and the errors, and grad_grid.json, the
gradient cases.

The attrs are `mode` ("bilinear", "nearest" or "bicubic", which torch
has in 2-d only), `padding_mode` ("zeros",
"border" or "reflection") and `align_corners`; affine_grid's cases have
`size`. Op keys:

- `grid_sample`: F.grid_sample(x, grid, ...).
- `affine_grid`: F.affine_grid(theta, size, align_corners).
- `stn`: F.grid_sample(x, F.affine_grid(theta, x's size), ...), a spatial
  transformer, differentiable in x and theta.

torch 1.13 has no second derivative of grid_sample ("derivative for
aten::grid_sampler_2d_backward is not implemented"), so the Hessian-vector
products come from `composite` below: the same sampling written with
gather, whose first derivatives are checked here against torch's own
grid_sampler backward before its second ones are stored.

NaN grid values follow torch 1.13's cpu kernels, which differ by rank (the
2-d kernel is vectorised, the 3-d one scalar): see lathe's GridSample.
torch's two cpu kernels also fold a far coordinate differently under
reflection padding: the 2-d one as min(extra, period - extra) with extra =
|c - low| - trunc(|c - low| / period)·period, whose rounding decides where
1e30 lands, the 3-d one with an exact fmod. lathe folds as the 2-d kernel
does in both ranks (they agree wherever a coordinate's ulp is below a
pixel), so the 3-d reflection cases leave ±1e30 out. And the 3-d kernel
rounds a nearest tie away from zero (std::round), the 2-d one to even;
lathe does the same per rank.

Gradient cases keep every source coordinate at least 0.02 pixels from the
kinks of the sampling (whole pixels, and the half pixels where reflection
folds), so that finite differences mean something there.
"""

import itertools

import torch
import torch.nn.functional as F

from grad import GradFamily
from refcase import INF, NAN, SHORT, Family, L, rnd, shp, vals

MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]
# x's shape and the grid's output shape per rank.
SHAPES = {4: ([2, 3, 4, 5], [3, 4]), 5: ([2, 2, 3, 4, 3], [2, 3, 2])}


def variants():
    for rank, mode, padding, ac in itertools.product((4, 5), MODES, PADDINGS, (False, True)):
        if mode == "bicubic" and rank == 5:
            continue  # torch's bicubic is 2-d only
        a = {"mode": mode, "padding_mode": padding, "align_corners": ac}
        yield f"{rank - 2}d/{mode}/{padding}{'/ac' if ac else ''}", rank, a


def sample(a):
    return lambda x, g: F.grid_sample(x, g, mode=a["mode"], padding_mode=a["padding_mode"],
                                      align_corners=a["align_corners"])


def grid_values(shape, dt, lo=-1.3, hi=1.3):
    """Seeded normalised coordinates in [lo, hi], 3 decimals."""
    g = torch.rand(shape, dtype=torch.float64) * (hi - lo) + lo
    return (torch.round(g * 1000) / 1000).to(getattr(torch, dt))


def unnormalize(g, size, a):
    """g in pixels, and the slope of that map."""
    if a["align_corners"]:
        return (g + 1) * ((size - 1) / 2), (size - 1) / 2
    return (g + 1) * (size / 2) - 0.5, size / 2


def pad(c, size, a):
    """The padding mode applied to the coordinates c (GridSampler.h,
    compute_coordinates), and its slope."""
    slope = torch.ones_like(c)
    if a["padding_mode"] == "zeros":
        return c, slope
    if a["padding_mode"] == "reflection":
        low, period = (0, 2 * (size - 1)) if a["align_corners"] else (-0.5, 2 * size)
        if period == 0:
            return torch.zeros_like(c), torch.zeros_like(c)
        d = c - low
        dist = d.abs()
        extra = dist - torch.trunc(dist / period) * period
        flip = extra > period - extra
        c = torch.where(flip, period - extra, extra) + low
        slope = slope * torch.where((d < 0) != flip, -1.0, 1.0)
    inside = (c > 0) & (c < size - 1)
    return c.clamp(0, size - 1), torch.where(inside, slope, torch.zeros_like(slope))


def source(g, size, a):
    """The source coordinate of g along a dim of the given size and its slope
    (GridSampler.h); bicubic pads its taps instead."""
    c, scale = unnormalize(g, size, a)
    if a["mode"] == "bicubic":
        return c, torch.full_like(g, scale)
    c, slope = pad(c, size, a)
    return c, slope * scale


def cubic(t):
    """The bicubic weights of the taps at -1, 0, 1, 2 (A = -0.75)."""
    A = -0.75
    near = lambda x: ((A + 2) * x - (A + 3)) * x * x + 1
    far = lambda x: ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def nearest(c, k):
    """The nearest pixel: ties to even in 2-d, away from zero in 3-d (torch
    1.13's 3-d cpu kernel rounds with std::round)."""
    if k == 2:
        return torch.round(c)
    return torch.sign(c) * torch.floor(c.abs() + 0.5)


def composite(a):
    """grid_sample as gather and arithmetic (module doc): twice
    differentiable, in x and grid."""
    def fn(x, grid):
        k = x.dim() - 2
        n, ch = x.shape[:2]
        sizes = [x.shape[k + 1 - j] for j in range(k)]
        strides = [1] * k
        for j in range(1, k):
            strides[j] = strides[j - 1] * sizes[j - 1]
        xf = x.reshape(n, ch, -1)
        pts = grid.shape[1:-1].numel()
        coord, pixel = [], []
        for j in range(k):
            gj = grid[..., j].reshape(n, 1, pts)
            c0, slope = source(gj.detach(), sizes[j], a)
            coord.append(slope * gj + (c0 - slope * gj.detach()))
            pixel.append(nearest(c0, k) if a["mode"] == "nearest" else torch.floor(c0))
        out = torch.zeros(n, ch, pts, dtype=x.dtype)
        # Per dim, the taps: (pixel, weight) pairs.
        taps = []
        for j in range(k):
            if a["mode"] == "nearest":
                taps.append([(pixel[j], 1.0)])
            elif a["mode"] == "bilinear":
                t = coord[j] - pixel[j]
                taps.append([(pixel[j], 1 - t), (pixel[j] + 1, t)])
            else:
                ws = cubic(coord[j] - pixel[j])
                taps.append([(pad(pixel[j] + i - 1, sizes[j], a)[0], ws[i]) for i in range(4)])
        for corner in itertools.product(*[range(len(tp)) for tp in taps]):
            w = torch.ones(n, 1, pts, dtype=x.dtype)
            valid = torch.ones(n, 1, pts, dtype=torch.bool)
            index = torch.zeros(n, 1, pts, dtype=torch.int64)
            for j in range(k):
                at, wj = taps[j][corner[j]]
                w = w * wj
                inside = (at >= 0) & (at <= sizes[j] - 1)
                valid = valid & inside
                index = index + torch.where(inside, at, torch.zeros_like(at)).long() * strides[j]
            v = xf.gather(2, index.expand(n, ch, pts))
            out = out + torch.where(valid, w, torch.zeros_like(w)) * v
        return out.reshape(n, ch, *grid.shape[1:-1])
    return fn


def off_kinks(g, xshape, a):
    """Whether every source coordinate of g lies 0.02 pixels or more from
    a whole or half pixel."""
    k = len(xshape) - 2
    for j in range(k):
        size = xshape[k + 1 - j]
        gj = g[..., j]
        c = (gj + 1) * ((size - 1) / 2) if a["align_corners"] else (gj + 1) * (size / 2) - 0.5
        r = 2 * c
        if ((r - torch.round(r)).abs() < 0.04).any():
            return False
    return True


def smooth_grid(shape, xshape, a):
    while True:
        g = grid_values(shape, "float64", -1.2, 1.2)
        if off_kinks(g, xshape, a):
            return g


SPECIAL = [NAN, INF, -INF, 1e30, -1e30, 7.5, -6.25, 3.1, -2.9, 1.0, -1.0, 0.0, 1.0001, -1.0001, 0.5, -0.5]


def grid_cases():
    fam = Family("grid", 31)
    for name, rank, a in variants():
        xs, os = SHAPES[rank]
        k = rank - 2
        for dt in ("float64", "float32"):
            x = rnd(xs, dt)
            g = grid_values([xs[0]] + os + [k], dt)
            fam.case(f"grid_sample/{SHORT[dt]}/{name}{shp(xs)}", "grid_sample", [x, g], sample(a), a)
        # Far outside [-1, 1], at its ends, NaN and ±Inf: every pairing
        # of a special value with an ordinary one in each coordinate.
        special = SPECIAL
        if rank == 5 and a["padding_mode"] == "reflection":
            special = [v for v in SPECIAL if abs(v) != 1e30]  # module doc: the 3-d kernel folds these otherwise
        sp = torch.tensor(special, dtype=torch.float64)
        m = len(special)
        cols = [sp.repeat_interleave(m) if j == 0 else sp.repeat(m) for j in range(2)]
        cols += [torch.full([m * m], 0.3, dtype=torch.float64)] * (k - 2)
        g = torch.stack(cols, -1).reshape([1] + [1] * (k - 1) + [m * m, k])
        for dt in ("float64", "float32"):
            x = rnd([1, 2] + xs[2:], dt)
            fam.case(f"grid_sample/{SHORT[dt]}/{name}/special", "grid_sample", [x, g.to(getattr(torch, dt))], sample(a), a)
    # Non-contiguous x and grid; a grid larger than x; size-1 dims.
    for ac in (False, True):
        a = {"mode": "bilinear", "padding_mode": "reflection", "align_corners": ac}
        sfx = "/ac" if ac else ""
        fam.case(f"grid_sample/f64/2d/bilinear/reflection{sfx}/transposed_x", "grid_sample",
                 [L(rnd([2, 3, 5, 4], "float64"), "transposed"), grid_values([2, 3, 4, 2], "float64")], sample(a), a)
        fam.case(f"grid_sample/f64/3d/bilinear/reflection{sfx}/strided_grid", "grid_sample",
                 [rnd([1, 2, 3, 4, 5], "float64"), L(grid_values([1, 2, 3, 4, 3], "float64"), "strided")], sample(a), a)
        for mode, padding in itertools.product(MODES, PADDINGS):
            a = {"mode": mode, "padding_mode": padding, "align_corners": ac}
            fam.case(f"grid_sample/f64/2d/{mode}/{padding}{sfx}/size1[1,2,1,3]", "grid_sample",
                     [rnd([1, 2, 1, 3], "float64"), grid_values([1, 5, 2, 2], "float64", -2.5, 2.5)], sample(a), a)
            if mode != "bicubic":
                fam.case(f"grid_sample/f64/3d/{mode}/{padding}{sfx}/size1[1,1,1,1,1]", "grid_sample",
                         [rnd([1, 1, 1, 1, 1], "float64"), grid_values([1, 2, 2, 2, 3], "float64", -2.5, 2.5)],
                         sample(a), a)
    a = {"mode": "bilinear", "padding_mode": "zeros", "align_corners": False}
    fam.case("grid_sample/f32/2d/bilinear/zeros/large[1,4,37,41]", "grid_sample",
             [rnd([1, 4, 37, 41], "float32"), grid_values([1, 30, 50, 2], "float32")], sample(a), a)
    # Empty batch, channels and grid.
    for what, xs, gs in (("batch0", [0, 2, 3, 4], [0, 2, 2, 2]), ("channels0", [2, 0, 3, 4], [2, 2, 2, 2]),
                         ("grid0", [2, 2, 3, 4], [2, 0, 3, 2]), ("batch0_3d", [0, 1, 2, 3, 4], [0, 1, 2, 2, 3])):
        fam.case(f"grid_sample/f64/{what}", "grid_sample", [rnd(xs, "float64"), rnd(gs, "float64")], sample(a), a)
    # Errors, as torch raises them.
    errors = [
        ("x_3d", [2, 3, 4], [2, 4, 2], a, "shape"),
        ("x_6d", [1, 1, 2, 2, 2, 2], [1, 1, 1, 1, 1, 4], a, "shape"),
        ("grid_rank", [2, 3, 4, 5], [2, 1, 4, 4, 2], a, "shape"),
        ("grid_last_dim_3_for_2d", [2, 3, 4, 5], [2, 4, 4, 3], a, "shape"),
        ("grid_last_dim_2_for_3d", [1, 1, 2, 3, 4], [1, 2, 2, 2, 2], a, "shape"),
        ("batch_mismatch", [2, 3, 4, 5], [3, 4, 4, 2], a, "shape"),
        ("empty_spatial", [1, 1, 0, 5], [1, 2, 2, 2], a, "shape"),
        ("unknown_mode", [1, 1, 4, 5], [1, 2, 2, 2], dict(a, mode="area"), "value"),
        ("unknown_padding", [1, 1, 4, 5], [1, 2, 2, 2], dict(a, padding_mode="circular"), "value"),
    ]
    for what, xs, gs, ea, kind in errors:
        fam.case(f"grid_sample/f64/error/{what}", "grid_sample", [rnd(xs, "float64"), rnd(gs, "float64")],
                 sample(ea), ea, error=kind)
    fam.case("grid_sample/i64/error/dtype", "grid_sample", [rnd([1, 1, 3, 3], "int64"), rnd([1, 2, 2, 2], "int64")],
             sample(a), a, error="dtype")
    fam.case("grid_sample/f32/error/mixed_dtype", "grid_sample",
             [rnd([1, 1, 3, 3], "float32"), rnd([1, 2, 2, 2], "float64")], sample(a), a, error="dtype")
    # Bicubic is 2-d only.
    ea = dict(a, mode="bicubic")
    fam.case("grid_sample/f64/error/bicubic_3d", "grid_sample",
             [rnd([1, 1, 2, 3, 3], "float64"), rnd([1, 2, 2, 2, 3], "float64")], sample(ea), ea, error="value")

    for ac in (False, True):
        for size in ([2, 3, 4, 5], [1, 1, 1, 3], [2, 1, 3, 2, 4], [1, 2, 1, 1, 2]):
            k = len(size) - 2
            theta = rnd([size[0], k, k + 1], "float64")
            fa = {"size": size, "align_corners": ac}
            fam.case(f"affine_grid/f64/{shp(size)}{'/ac' if ac else ''}", "affine_grid", [theta],
                     lambda t, s=size, ac=ac: F.affine_grid(t, s, align_corners=ac), fa)
    fa = {"size": [2, 3, 4, 5], "align_corners": False}
    fam.case("affine_grid/f32/[2,3,4,5]", "affine_grid", [rnd([2, 2, 3], "float32")],
             lambda t: F.affine_grid(t, [2, 3, 4, 5], align_corners=False), fa)
    for what, ts, size, kind in (("theta_2x3_for_5d", [1, 2, 3], [1, 1, 2, 2, 2], "shape"),
                                 ("theta_batch", [2, 2, 3], [3, 1, 4, 4], "shape"),
                                 ("theta_3x3", [1, 3, 3], [1, 1, 4, 4], "shape"),
                                 ("size_3d", [1, 2, 3], [1, 1, 4], "value"),
                                 ("size0", [1, 2, 3], [1, 1, 0, 4], "value")):
        fa = {"size": size, "align_corners": False}
        fam.case(f"affine_grid/f64/error/{what}", "affine_grid", [rnd(ts, "float64")],
                 lambda t, s=size: F.affine_grid(t, s, align_corners=False), fa, error=kind)
    fam.case("affine_grid/i64/error/dtype", "affine_grid", [rnd([1, 2, 3], "int64")],
             lambda t: F.affine_grid(t, [1, 1, 4, 4], align_corners=False), {"size": [1, 1, 4, 4], "align_corners": False},
             error="dtype")
    return fam


def checked(a):
    """composite(a), checked against F.grid_sample: value and first
    derivatives."""
    comp = composite(a)

    def fn(x, g):
        out = comp(x, g)
        ref = sample(a)(x, g)
        assert torch.allclose(out, ref, atol=1e-12), (a, (out - ref).abs().max())
        w = torch.randn(out.shape, dtype=out.dtype)
        got = torch.autograd.grad(out, (x, g), w, retain_graph=True, allow_unused=True)
        want = torch.autograd.grad(ref, (x, g), w, allow_unused=True)
        for t, gg, ww in zip((x, g), got, want):
            gg = torch.zeros_like(t) if gg is None else gg
            assert torch.allclose(gg, ww, atol=1e-10), (a, (gg - ww).abs().max())
        return out
    return fn


def stn(a):
    def fn(x, theta):
        grid = F.affine_grid(theta, list(x.shape), align_corners=a["align_corners"])
        return composite(a)(x, grid)
    return fn


def grad_grid():
    fam = GradFamily("grad_grid", 32)
    for name, rank, a in variants():
        xs, os = SHAPES[rank]
        x = rnd(xs, "float64")
        g = smooth_grid([xs[0]] + os + [rank - 2], xs, a)
        fam.gcase(f"grid_sample/f64/{name}{shp(xs)}", "grid_sample", [x, g], checked(a), a, hvp=True)
    a = {"mode": "bilinear", "padding_mode": "border", "align_corners": False}
    xs = [1, 2, 5, 4]
    fam.gcase("grid_sample/f64/2d/bilinear/border/transposed_x", "grid_sample",
              [L(rnd(xs, "float64"), "transposed"), smooth_grid([1, 3, 3, 2], xs, a)], checked(a), a, hvp=True)
    for ac in (False, True):
        a = {"mode": "bilinear", "padding_mode": "zeros", "align_corners": ac}
        for xs in ([2, 2, 4, 5], [1, 2, 3, 4, 3]):
            k = len(xs) - 2
            while True:
                theta = torch.eye(k, k + 1, dtype=torch.float64).expand(xs[0], k, k + 1) * 0.8 + \
                    rnd([xs[0], k, k + 1], "float64") * 0.2
                if off_kinks(F.affine_grid(theta, xs, align_corners=ac), xs, a):
                    break
            fam.gcase(f"stn/f64/{k}d{'/ac' if ac else ''}{shp(xs)}", "stn", [rnd(xs, "float64"), theta], stn(a), a,
                      hvp=True)
    return fam
