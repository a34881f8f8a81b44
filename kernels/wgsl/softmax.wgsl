{{/*
softmax and log_softmax along one dim, one workgroup per line: the lanes
stride over the line for its maximum (a NaN anywhere is the maximum, so the
whole line comes out NaN, as in PyTorch), a tree in workgroup memory gives
it to every lane, then the same for the sum of exp(x - max) in f32 (the cpu
sums in float64), and a third walk writes exp(x - max) / sum, or
(x - max) - log(sum). Subtracting the maximum first keeps exp from
overflowing. exp and log are math.wgsl's expf and logf, as for the Exp and
Log ops: WGSL's builtins are tens of ulp off on lavapipe.

Data: .Log is true for log_softmax, .PerItem for the invocation-per-line
form (the same three walks by one invocation, where lines are many and
short, or on a CPU adapter: ops_reduce.go's perItemRowsFit). Elements are
f32.

Launch: workgroup w (w = wid.y * nwg.x + wid.x; at or past p[0] return),
or in the per-line form item w (the prelude's numbering), is line w, the row-major index over every dim but the softmax one, with
cumsum's line layout (reduce.wgsl, "lines"; ops_reduce.go, lineParams). The
output is contiguous at element 0.
*/}}
{{define "softmax"}}{{template "prelude" .}}
{{template "math"}}
{{template "lines" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;

// lineScale is what result needs of a line's sum of exp(x - max): log(sum)
// for log_softmax, else the sum.
fn lineScale(sum: f32) -> f32 {
{{- if .Log}}
    return logf(sum);
{{- else}}
    return sum;
{{- end}}
}

// maxOf is the larger of a and b, NaN where b is NaN (a NaN max makes a
// NaN line).
fn maxOf(a: f32, b: f32) -> f32 {
    if (b > a || is_nan(b)) {
        return b;
    }
    return a;
}

// lineMax is the max of the line's elements j = first, first + step, ...
// below n, whose element 0 is at src[x] and which lie xs apart.
fn lineMax(x: i32, xs: i32, n: u32, first: u32, step: u32) -> f32 {
    var m = -inf_f32();
    for (var j = first; j < n; j = j + step) {
        m = maxOf(m, src[u32(x + i32(j) * xs)]);
    }
    return m;
}

// result is the output for v = x - max on a line of lineScale scale.
fn result(v: f32, scale: f32) -> f32 {
{{- if .Log}}
    return v - scale;
{{- else}}
    return expf(v) / scale;
{{- end}}
}

{{- if .PerItem}}

// identity and combine make the sum of blocked (reduce.wgsl).
fn identity() -> f32 {
    return 0.0;
}

fn combine(a: f32, b: f32) -> f32 {
    return a + b;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = item(gid, nwg);
    if (w >= p[0]) {
        return;
    }
    let n = p[1];
    let xs = bitcast<i32>(p[3]);
    let os = bitcast<i32>(p[4]);
    let line = lineBase(w);
    let m = lineMax(line.x, xs, n, 0u, 1u);
    // Summed as reduce.wgsl's per-row form, for an error near the
    // workgroup tree's.
    {{- template "blocked" "expf(src[u32(line.x + i32(j) * xs)] - m)"}}
    let scale = lineScale(acc);
    for (var j = 0u; j < n; j = j + 1u) {
        dst[u32(line.y + i32(j) * os)] = result(src[u32(line.x + i32(j) * xs)] - m, scale);
    }
}
{{- else}}

var<workgroup> lanes: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = wid.y * nwg.x + wid.x;
    if (w >= p[0]) {
        return;
    }
    let n = p[1];
    let xs = bitcast<i32>(p[3]);
    let os = bitcast<i32>(p[4]);
    let line = lineBase(w);

    lanes[lid] = lineMax(line.x, xs, n, lid, WG);
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            lanes[lid] = maxOf(lanes[lid], lanes[lid + s]);
        }
        workgroupBarrier();
    }
    let m = lanes[0];
    workgroupBarrier();

    var sum = 0.0;
    for (var j = lid; j < n; j = j + WG) {
        sum = sum + expf(src[u32(line.x + i32(j) * xs)] - m);
    }
    lanes[lid] = sum;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            lanes[lid] = lanes[lid] + lanes[lid + s];
        }
        workgroupBarrier();
    }
    sum = lanes[0];

    let scale = lineScale(sum);
    for (var j = lid; j < n; j = j + WG) {
        dst[u32(line.y + i32(j) * os)] = result(src[u32(line.x + i32(j) * xs)] - m, scale);
    }
}
{{- end}}
{{end}}

{{/*
softmaxScale: the last pass of softmax over a few long lines, after
logsumexp (reduce.wgsl) has reduced each line, in parallel parts, to its
State: the maximum m and the sum s of exp(x - m). out = exp(x - m) / s, or
(x - m) - log(s) for log_softmax, as the fused kernel has them. A line
whose m is not finite (a NaN or +inf) or whose s is 0 (only -inf) is NaN
throughout, as the fused kernel's sum makes it.

Data: .Log is true for log_softmax. Elements are f32.

Launch: one item per output element (the prelude's numbering and strided
layout): out contiguous at element 0, x strided (argument 0), and the
line's State broadcast along the dim (argument 1): the layout gives the
index of m, and s is the word after it.
*/}}
{{define "softmaxScale"}}{{template "prelude" .}}
{{template "math"}}
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read> states: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    let at = strided(1u, i);
    let m = states[at];
    let s = states[at + 1u];
    if (is_nan(m) || is_inf(m) || s == 0.0) {
        dst[i] = nan_f32();
        return;
    }
    let v = src[strided(0u, i)] - m;
{{- if .Log}}
    dst[i] = v - logf(s);
{{- else}}
    dst[i] = expf(v) / s;
{{- end}}
}
{{end}}
