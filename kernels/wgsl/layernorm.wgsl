{{/*
layerNorm: the fused layer norm (ops.LayerNorm, ops.LayerNormBackward) over
the rows of an x of shape [..., D], f32, read through its strides (its
leading dims merged into one row stride; ops_layernorm.go copies an x or g
whose dims do not merge).

.Pass "fwd": y = (x - mean)·rstd·w + b, one workgroup per row. The lanes
stride over the row for Σ(x - x₀), a tree in workgroup memory gives the
mean to every lane, then the same for Σ(x - mean)² (centred, so it does not
cancel), and a third walk writes y. rstd = 1/√(var + eps), var the biased
variance. Every x - mean is taken as (x - x₀) - (mean - x₀), x₀ the row's
first element, as the var template does: the mean of a row such as 1e8 +
small values rounds to a multiple of 8 in float32, and x - mean would keep
that error where (x - x₀) is exact.

.Pass "dx": the backward's dx, one workgroup per row, as torch's
layer_norm_backward: with x̂ = (x - mean)·rstd and dx̂ = g·w,
dx = rstd·(dx̂ - mean(dx̂) - x̂·mean(dx̂·x̂)); the row's x₀, mean - x₀ and
rstd go to stats[3·row], stats[3·row + 1] and stats[3·row + 2] for the next
pass.

.Pass "dwb": dw = Σrows g·x̂ and db = Σrows g, one invocation per column,
walking the rows in blocks of 64 whose sums are added in order (a two-level
sum: about (64 + rows/64) roundings per result rather than rows).

Parameters: p[0] work items (rows for fwd and dx, D for dwb), p[1] D,
p[2] dst's element offset, p[3] eps (f32 bits), p[4] rows; x at p[5]
(offset, row stride, column stride); w at p[8] (offset, stride); the third
tensor (b for fwd, g for the backward) at p[10] (offset, row stride, column
stride; b's row stride is 0). dst is x's shape, contiguous, for fwd; for
the backward it is the flat result: dx at 0 (row-major), dw at rows·D, db
at rows·D + D.

.PerItem (fwd and dx): an invocation per row instead of a workgroup, for
rows of at most 64 values, which would leave most of a workgroup's lanes
idle (and, on lavapipe, pay for every barrier of the trees once per lane).

Launch: fwd and dx: workgroup w (w = wid.y * nwg.x + wid.x; at or past
p[0] return) is row w, or with .PerItem the prelude's item w; dwb: the
prelude's items, item j column j.
*/}}
{{define "layerNorm"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
{{- if eq .Pass "dwb"}}
@group(0) @binding(3) var<storage, read> third: array<f32>;
@group(0) @binding(4) var<storage, read> stats: array<f32>;
{{- else}}
@group(0) @binding(3) var<storage, read> wt: array<f32>;
@group(0) @binding(4) var<storage, read> third: array<f32>;
{{- end}}
{{- if eq .Pass "dx"}}
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;
{{- end}}

fn at_x(r: u32, j: u32) -> u32 {
    return u32(bitcast<i32>(p[5]) + i32(r) * bitcast<i32>(p[6]) + i32(j) * bitcast<i32>(p[7]));
}

fn at_third(r: u32, j: u32) -> u32 {
    return u32(bitcast<i32>(p[10]) + i32(r) * bitcast<i32>(p[11]) + i32(j) * bitcast<i32>(p[12]));
}

// centred is x[r, j] - mean, taken as (x - x0) - (mean - x0), x0 the row's
// first element and shifted its mean - x0.
fn centred(r: u32, j: u32, x0: f32, shifted: f32) -> f32 {
    return (x[at_x(r, j)] - x0) - shifted;
}
{{- if ne .Pass "dwb"}}

fn at_w(j: u32) -> u32 {
    return u32(bitcast<i32>(p[8]) + i32(j) * bitcast<i32>(p[9]));
}

{{- if .PerItem}}

// An invocation per row: it walks the whole row, and its sums are its own.
const STEP: u32 = 1u;

fn tree_sum(lid: u32, v: f32) -> f32 {
    return v;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = item(gid, nwg);
    let lid = 0u;
{{- else}}

const STEP: u32 = WG;

var<workgroup> lanes: array<f32, 256>;

// tree_sum is the sum of every lane's v, given to every lane.
fn tree_sum(lid: u32, v: f32) -> f32 {
    lanes[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            lanes[lid] = lanes[lid] + lanes[lid + s];
        }
        workgroupBarrier();
    }
    let r = lanes[0];
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let r = wid.y * nwg.x + wid.x;
{{- end}}
    if (r >= p[0]) {
        return;
    }
    let d = p[1];
    let n = f32(d);
    var x0 = 0.0;
    if (d > 0u) {
        x0 = x[at_x(r, 0u)];
    }
    var s = 0.0;
    for (var j = lid; j < d; j = j + STEP) {
        s = s + (x[at_x(r, j)] - x0);
    }
    let shifted = tree_sum(lid, s) / n;
    var q = 0.0;
    for (var j = lid; j < d; j = j + STEP) {
        let c = centred(r, j, x0, shifted);
        q = q + c * c;
    }
    let rstd = 1.0 / sqrt(tree_sum(lid, q) / n + bitcast<f32>(p[3]));
{{- if eq .Pass "fwd"}}
    for (var j = lid; j < d; j = j + STEP) {
        dst[p[2] + r * d + j] = centred(r, j, x0, shifted) * rstd * wt[at_w(j)] + third[at_third(r, j)];
    }
{{- else}}
    var s1 = 0.0;
    var s2 = 0.0;
    for (var j = lid; j < d; j = j + STEP) {
        let dxh = third[at_third(r, j)] * wt[at_w(j)];
        s1 = s1 + dxh;
        s2 = s2 + dxh * centred(r, j, x0, shifted) * rstd;
    }
    let m1 = tree_sum(lid, s1) / n;
    let m2 = tree_sum(lid, s2) / n;
    for (var j = lid; j < d; j = j + STEP) {
        let xh = centred(r, j, x0, shifted) * rstd;
        let dxh = third[at_third(r, j)] * wt[at_w(j)];
        dst[p[2] + r * d + j] = rstd * (dxh - m1 - xh * m2);
    }
    if (lid == 0u) {
        stats[3u * r] = x0;
        stats[3u * r + 1u] = shifted;
        stats[3u * r + 2u] = rstd;
    }
{{- end}}
}
{{- else}}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = item(gid, nwg);
    if (j >= p[0]) {
        return;
    }
    let d = p[1];
    let rows = p[4];
    var dw = 0.0;
    var db = 0.0;
    for (var r0 = 0u; r0 < rows; r0 = r0 + 64u) {
        var bw = 0.0;
        var bb = 0.0;
        for (var r = r0; r < min(r0 + 64u, rows); r = r + 1u) {
            let g = third[at_third(r, j)];
            bw = bw + g * centred(r, j, stats[3u * r], stats[3u * r + 1u]) * stats[3u * r + 2u];
            bb = bb + g;
        }
        dw = dw + bw;
        db = db + bb;
    }
    dst[p[2] + rows * d + j] = dw;
    dst[p[2] + rows * d + d + j] = db;
}
{{- end}}
{{end}}
