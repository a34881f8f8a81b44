{{/*
grid: grid_sampler (torch.nn.functional.grid_sample) over 2 or 3 spatial
dims, as the cpu computes it (backends/cpu/grid.go: gridUnnormalize,
gridPad, reflect, nearestPoint, linearPoint, cubicPoint, and their notes on torch 1.13's NaN, far and
tied coordinates). float32 only; no template data.

Parameters (u32 words):
  p[0]  items (output elements, N·C·P)
  p[1]  C, p[2] P (grid points per batch entry), p[3] k (2 or 3)
  p[4]  mode (0 bilinear, 1 nearest, 2 bicubic: 2-d only), p[5] padding (0 zeros, 1 border,
        2 reflection), p[6] align_corners (0 or 1)
  p[7]  x's element offset, p[8] grid's element offset
  p[9 + j]  the size of the dim that grid component j indexes (j = 0 is W)
Bindings: out (1) contiguous (N, C, P) at element 0; x (2) contiguous
(N, C, S...) from its offset; grid (3) contiguous (N, P, k) from its
offset.

Launch: one item per output element; each reads its point's grid vector
and the 2^k (or 1) pixels it needs.
*/}}
{{define "grid"}}{{template "prelude" .}}
{{template "math"}}
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read> grd: array<f32>;

// unnormalize maps the normalised g to pixels along a dim of the given
// size (gridUnnormalize).
fn unnormalize(g: f32, size: u32) -> f32 {
    let n = f32(size);
    if (p[6] == 1u) {
        return (g + 1.0) * ((n - 1.0) / 2.0);
    }
    return (g + 1.0) * (n / 2.0) - 0.5;
}

// pad applies the padding mode to the pixel coordinate c (gridPad); with
// zeros padding a NaN stays NaN.
fn pad(c0: f32, size: u32, k: u32) -> f32 {
    let n = f32(size);
    var c = c0;
    if (p[5] == 0u) {
        return c;
    }
    if (p[5] == 2u) {
        var low = -0.5;
        var period = 2.0 * n;
        if (p[6] == 1u) {
            low = 0.0;
            period = 2.0 * (n - 1.0);
        }
        if (period == 0.0) {
            c = 0.0;
        } else {
            // The product is rounded before the subtraction, as torch's
            // kernel rounds it (opaque keeps the compiler from fusing).
            let dist = abs(c - low);
            let extra = dist - opaque(trunc(dist / period) * period);
            c = select(extra, period - extra, period - extra < extra) + low;
            if (is_nan(extra)) {
                c = extra;
            }
        }
    }
    if (is_nan(c)) {
        return select(n - 1.0, 0.0, k == 2u);
    }
    return clamp(c, 0.0, n - 1.0);
}

// cubic is the weights of the taps at -1, 0, 1, 2 pixels from the floor
// for a fraction t (cubicWeights, A = -0.75).
fn cubic(t: f32) -> vec4<f32> {
    let a = -0.75;
    let x0 = t + 1.0;
    let x2 = 1.0 - t;
    let x3 = x2 + 1.0;
    return vec4<f32>(((a * x0 - 5.0 * a) * x0 + 8.0 * a) * x0 - 4.0 * a,
                     ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0,
                     ((a + 2.0) * x2 - (a + 3.0)) * x2 * x2 + 1.0,
                     ((a * x3 - 5.0 * a) * x3 + 8.0 * a) * x3 - 4.0 * a);
}

fn inside(i: f32, size: u32) -> bool {
    return i >= 0.0 && i < f32(size);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = item(gid, nwg);
    if (e >= p[0]) {
        return;
    }
    let c = p[1];
    let points = p[2];
    let k = p[3];
    let q = e % points;
    let bc = e / points; // batch · C + channel
    let b = bc / c;
    var plane = 1u;
    for (var j = 0u; j < k; j = j + 1u) {
        plane = plane * p[9u + j];
    }
    let img = p[7] + bc * plane;
    let at = p[8] + (b * points + q) * k;
    if (p[4] == 2u) {
        // Bicubic (2-d): 4×4 taps, each padded by itself (cubicPoint).
        let w = p[9];
        let h = p[10];
        let ix = unnormalize(grd[at], w);
        let iy = unnormalize(grd[at + 1u], h);
        let fx = floor(ix);
        let fy = floor(iy);
        let wx = cubic(ix - fx);
        let wy = cubic(iy - fy);
        var acc = 0.0;
        for (var r = 0u; r < 4u; r = r + 1u) {
            let y = pad(fy - 1.0 + f32(r), h, 2u);
            var row = 0.0;
            for (var i = 0u; i < 4u; i = i + 1u) {
                let x = pad(fx - 1.0 + f32(i), w, 2u);
                var v = 0.0;
                if (!is_nan(x) && !is_nan(y) && inside(x, w) && inside(y, h)) {
                    v = src[img + u32(y) * w + u32(x)];
                }
                row = row + v * wx[i];
            }
            acc = acc + row * wy[r];
        }
        dst[e] = acc;
        return;
    }
    var s: array<f32, 3>;
    for (var j = 0u; j < k; j = j + 1u) {
        s[j] = pad(unnormalize(grd[at + j], p[9u + j]), p[9u + j], k);
    }
    if (p[4] == 1u) {
        // Nearest: ties to even in 2-d, away from zero in 3-d.
        var idx = 0u;
        var stride = 1u;
        for (var j = 0u; j < k; j = j + 1u) {
            var r = round(s[j]);
            if (k == 3u) {
                r = sign(s[j]) * floor(abs(s[j]) + 0.5);
            }
            if (is_nan(s[j]) || !inside(r, p[9u + j])) {
                dst[e] = 0.0;
                return;
            }
            idx = idx + u32(r) * stride;
            stride = stride * p[9u + j];
        }
        dst[e] = src[img + idx];
        return;
    }
    var base: array<i32, 3>;
    var frac: array<f32, 3>;
    for (var j = 0u; j < k; j = j + 1u) {
        let f = floor(s[j]);
        frac[j] = s[j] - f;
        if (is_nan(frac[j])) {
            // A non-finite coordinate: NaN in 2-d with zeros padding (the
            // weights are NaN), else nothing read.
            dst[e] = select(0.0, nan_f32(), k == 2u && p[5] == 0u);
            return;
        }
        base[j] = i32(clamp(f, -2.0, f32(p[9u + j]) + 1.0));
    }
    var acc = 0.0;
    for (var corner = 0u; corner < (1u << k); corner = corner + 1u) {
        var w = 1.0;
        var idx = 0u;
        var stride = 1u;
        var ok = true;
        for (var j = 0u; j < k; j = j + 1u) {
            var i = base[j];
            if (((corner >> j) & 1u) == 1u) {
                w = w * frac[j];
                i = i + 1;
            } else {
                w = w * (1.0 - frac[j]);
            }
            ok = ok && i >= 0 && i < i32(p[9u + j]);
            idx = idx + u32(max(i, 0)) * stride;
            stride = stride * p[9u + j];
        }
        if (ok) {
            acc = acc + w * src[img + idx];
        }
    }
    dst[e] = acc;
}
{{end}}
