{{/*
conv: convolution and its two backward passes, unfold and fold, as direct
gathers over a window of up to three spatial dims (1-d and 2-d windows are
padded to three with leading dims of size 1, kernel 1, stride 1, no
padding). Data: .Op is one of conv, conv_input_backward,
conv_weight_backward, unfold, fold. float32 only.

Parameters (u32 words):
  p[0]      items (output elements)
  p[1..5)   N, C (input channels of x, or of dx), O (output channels), groups
  p[5..8)   spatial sizes of the image x (or dx, or fold's output)
  p[8..11)  spatial sizes of the window positions (conv's output)
  p[11..14) kernel, p[14..17) stride, p[17..20) padding, p[20..23) dilation
  p[23]     offset of argument a, p[24..29) its strides (i32), five dims
  p[29]     offset of argument b, p[30..35) its strides (i32), five dims
  p[35]     0, the padding's value (padZero)
Arguments: conv a = x (N, C, in), b = w (O, C/G, k);
conv_input_backward a = g (N, O, out), b = w; conv_weight_backward
a = x, b = g; unfold a = x; fold a = x (N, C·K, L) with its three strides
first.

Launch: out (binding 1) contiguous at element 0; a at binding 2, b at
binding 3 where the op has it. One item per output element, except
conv_weight_backward: one workgroup per element of dw (workgroup w =
wid.y·nwg.x + wid.x), whose 256 invocations share the sum over the batch
and the window positions and add their parts in a tree.

Every sum runs over its terms in the cpu's order (input channel, then the
kernel element row-major, or the output position row-major), so that
results differ from the cpu's only by rounding.
*/}}
{{define "conv"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
{{if or (eq .Op "conv") (eq .Op "conv_input_backward") (eq .Op "conv_weight_backward")}}
@group(0) @binding(3) var<storage, read> b: array<f32>;
{{end}}

fn nb() -> i32 { return i32(p[1]); }
fn nc() -> i32 { return i32(p[2]); }
fn no() -> i32 { return i32(p[3]); }
fn ngroups() -> i32 { return i32(p[4]); }
fn insz(d: u32) -> i32 { return i32(p[5u + d]); }
fn outsz(d: u32) -> i32 { return i32(p[8u + d]); }
fn kern(d: u32) -> i32 { return i32(p[11u + d]); }
fn stride(d: u32) -> i32 { return i32(p[14u + d]); }
fn pad(d: u32) -> i32 { return i32(p[17u + d]); }
fn dil(d: u32) -> i32 { return i32(p[20u + d]); }
fn kvol() -> i32 { return kern(0u) * kern(1u) * kern(2u); }

// at is the element index of (i0, ..., i4) in the argument whose layout
// starts at p[base].
fn at(base: u32, i0: i32, i1: i32, i2: i32, i3: i32, i4: i32) -> u32 {
    var idx = bitcast<i32>(p[base]);
    idx = idx + i0 * bitcast<i32>(p[base + 1u]) + i1 * bitcast<i32>(p[base + 2u]);
    idx = idx + i2 * bitcast<i32>(p[base + 3u]) + i3 * bitcast<i32>(p[base + 4u]) + i4 * bitcast<i32>(p[base + 5u]);
    return u32(idx);
}

const A: u32 = 23u;
const B: u32 = 29u;
const ZERO: u32 = 35u;

// CHUNK is the positions along dim 2 that one invocation of
// conv_weight_backward sums at a time.
const CHUNK: i32 = 16;

// source is the image place that kernel element k of window position o
// reads along dim d (outside [0, insz(d)) where it lies in the padding).
fn source(d: u32, o: i32, k: i32) -> i32 {
    return o * stride(d) + k * dil(d) - pad(d);
}

// position is the window position whose kernel element k reads image place
// i along dim d, or -1 where there is none.
fn position(d: u32, i: i32, k: i32) -> i32 {
    let t = i + pad(d) - k * dil(d);
    if (t < 0 || t % stride(d) != 0) {
        return -1;
    }
    let o = t / stride(d);
    if (o >= outsz(d)) {
        return -1;
    }
    return o;
}

fn inside(d: u32, i: i32) -> bool {
    return i >= 0 && i < insz(d);
}

// padZero is the padding's value, 0, as a value the compiler cannot see
// (a parameter word that is always 0): a literal 0.0·w could be folded to
// 0, where the product must be NaN for a NaN or infinite w.
fn padZero() -> f32 {
    return bitcast<f32>(p[ZERO]);
}

{{if eq .Op "conv_weight_backward"}}
var<workgroup> part: array<f32, 256>;

// padded is the sum of g·0 over the positions [lo, hi) of row (n, oc,
// o0, o1) of g: 0, or NaN where one of them is infinite or NaN.
fn padded(n: i32, oc: i32, o0: i32, o1: i32, lo: i32, hi: i32) -> f32 {
    var s: f32 = 0.0;
    if (lo >= hi) {
        return s;
    }
    var gi = at(B, n, oc, o0, o1, lo);
    for (var o2 = lo; o2 < hi; o2 = o2 + 1) {
        s = s + b[gi] * padZero();
        gi = u32(i32(gi) + bitcast<i32>(p[B + 5u]));
    }
    return s;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = wid.y * nwg.x + wid.x;
    if (e >= p[0]) {
        return;
    }
    // e is (oc, ci, k0, k1, k2) of dw (O, C/G, kernel).
    var r = i32(e);
    let k2 = r % kern(2u); r = r / kern(2u);
    let k1 = r % kern(1u); r = r / kern(1u);
    let k0 = r % kern(0u); r = r / kern(0u);
    let cg = nc() / ngroups();
    let ci = r % cg;
    let oc = r / cg;
    let c = oc / (no() / ngroups()) * cg + ci;
    // The window positions along dim 2 that read inside the image, as the
    // cpu's reach: o2·stride + off in [0, insz(2)).
    let off = k2 * dil(2u) - pad(2u);
    var lo2 = 0;
    if (off < 0) {
        lo2 = (-off + stride(2u) - 1) / stride(2u);
    }
    let hi2 = min(outsz(2u), max(insz(2u) - off + stride(2u) - 1, 0) / stride(2u));
    // The invocations share out chunks of CHUNK positions of a row (n, o0,
    // o1), so that decoding a chunk's place costs little per term and a
    // 1-d convolution of a few long rows still fills the workgroup.
    let chunks = (outsz(2u) + CHUNK - 1) / CHUNK;
    let rows = nb() * outsz(0u) * outsz(1u);
    var acc: f32 = 0.0;
    for (var j = i32(lid); j < rows * chunks; j = j + i32(WG)) {
        var q = j / chunks;
        let first = max(lo2, j % chunks * CHUNK);
        let last = min(hi2, (j % chunks + 1) * CHUNK);
        let o1 = q % outsz(1u); q = q / outsz(1u);
        let o0 = q % outsz(0u);
        let n = q / outsz(0u);
        let i0 = source(0u, o0, k0);
        let i1 = source(1u, o1, k1);
        // The chunk's positions whose tap lies over the padding multiply
        // its zero, as the cpu's product with im2col's columns does (an
        // infinite or NaN g there makes dw NaN); the others read x.
        let start = j % chunks * CHUNK;
        let end = min(outsz(2u), start + CHUNK);
        if (!inside(0u, i0) || !inside(1u, i1) || first >= last) {
            acc = acc + padded(n, oc, o0, o1, start, end);
            continue;
        }
        acc = acc + padded(n, oc, o0, o1, start, first) + padded(n, oc, o0, o1, last, end);
        var gi = at(B, n, oc, o0, o1, first);
        var xi = at(A, n, c, i0, i1, first * stride(2u) + off);
        let gstep = bitcast<i32>(p[B + 5u]);
        let xstep = bitcast<i32>(p[A + 5u]) * stride(2u);
        for (var o2 = first; o2 < last; o2 = o2 + 1) {
            acc = acc + b[gi] * a[xi];
            gi = u32(i32(gi) + gstep);
            xi = u32(i32(xi) + xstep);
        }
    }
    part[lid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            part[lid] = part[lid] + part[lid + s];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        dst[e] = part[0];
    }
}
{{else}}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = item(gid, nwg);
    if (e >= p[0]) {
        return;
    }
    var r = i32(e);
{{- if eq .Op "conv"}}
    // e is (n, oc, o0, o1, o2) of y; group g reads input channels
    // g·C/G .. (g+1)·C/G.
    let o2 = r % outsz(2u); r = r / outsz(2u);
    let o1 = r % outsz(1u); r = r / outsz(1u);
    let o0 = r % outsz(0u); r = r / outsz(0u);
    let oc = r % no();
    let n = r / no();
    let cg = nc() / ngroups();
    let c0 = oc / (no() / ngroups()) * cg;
    // A tap over the padding multiplies a zero, as the cpu's im2col and
    // torch do: 0·NaN and 0·Inf are NaN. The zero is read, not a literal,
    // so that no compiler folds the product away.
    var acc: f32 = 0.0;
    for (var ci = 0; ci < cg; ci = ci + 1) {
        for (var k0 = 0; k0 < kern(0u); k0 = k0 + 1) {
            let i0 = source(0u, o0, k0);
            for (var k1 = 0; k1 < kern(1u); k1 = k1 + 1) {
                let i1 = source(1u, o1, k1);
                for (var k2 = 0; k2 < kern(2u); k2 = k2 + 1) {
                    let i2 = source(2u, o2, k2);
                    var xv = padZero();
                    if (inside(0u, i0) && inside(1u, i1) && inside(2u, i2)) {
                        xv = a[at(A, n, c0 + ci, i0, i1, i2)];
                    }
                    acc = acc + xv * b[at(B, oc, ci, k0, k1, k2)];
                }
            }
        }
    }
    dst[e] = acc;
{{- else if eq .Op "conv_input_backward"}}
    // e is (n, c, i0, i1, i2) of dx: the sum over the output channels of
    // c's group and the window positions that read place i.
    let i2 = r % insz(2u); r = r / insz(2u);
    let i1 = r % insz(1u); r = r / insz(1u);
    let i0 = r % insz(0u); r = r / insz(0u);
    let c = r % nc();
    let n = r / nc();
    let cg = nc() / ngroups();
    let og = no() / ngroups();
    let ci = c % cg;
    let oc0 = c / cg * og;
    var acc: f32 = 0.0;
    for (var oc = oc0; oc < oc0 + og; oc = oc + 1) {
        for (var k0 = 0; k0 < kern(0u); k0 = k0 + 1) {
            let o0 = position(0u, i0, k0);
            if (o0 < 0) {
                continue;
            }
            for (var k1 = 0; k1 < kern(1u); k1 = k1 + 1) {
                let o1 = position(1u, i1, k1);
                if (o1 < 0) {
                    continue;
                }
                for (var k2 = 0; k2 < kern(2u); k2 = k2 + 1) {
                    let o2 = position(2u, i2, k2);
                    if (o2 < 0) {
                        continue;
                    }
                    acc = acc + a[at(A, n, oc, o0, o1, o2)] * b[at(B, oc, ci, k0, k1, k2)];
                }
            }
        }
    }
    dst[e] = acc;
{{- else if eq .Op "unfold"}}
    // e is (n, c·K + k, l) of the column matrix, k = (k0, k1, k2) and
    // l = (o0, o1, o2) row-major; zero where the window is over the padding.
    let l = outsz(0u) * outsz(1u) * outsz(2u);
    var q = r % l; r = r / l;
    let o2 = q % outsz(2u); q = q / outsz(2u);
    let o1 = q % outsz(1u);
    let o0 = q / outsz(1u);
    let kk = r % kvol(); r = r / kvol();
    let k2 = kk % kern(2u);
    let k1 = kk / kern(2u) % kern(1u);
    let k0 = kk / kern(2u) / kern(1u);
    let c = r % nc();
    let n = r / nc();
    let i0 = source(0u, o0, k0);
    let i1 = source(1u, o1, k1);
    let i2 = source(2u, o2, k2);
    var v: f32 = 0.0;
    if (inside(0u, i0) && inside(1u, i1) && inside(2u, i2)) {
        v = a[at(A, n, c, i0, i1, i2)];
    }
    dst[e] = v;
{{- else if eq .Op "fold"}}
    // e is (n, c, i0, i1, i2) of the image: the sum, over the kernel
    // elements in order, of the column entry of the window position that
    // puts that element on place i.
    let i2 = r % insz(2u); r = r / insz(2u);
    let i1 = r % insz(1u); r = r / insz(1u);
    let i0 = r % insz(0u); r = r / insz(0u);
    let c = r % nc();
    let n = r / nc();
    var acc: f32 = 0.0;
    var kk = 0;
    for (var k0 = 0; k0 < kern(0u); k0 = k0 + 1) {
        let o0 = position(0u, i0, k0);
        for (var k1 = 0; k1 < kern(1u); k1 = k1 + 1) {
            let o1 = position(1u, i1, k1);
            for (var k2 = 0; k2 < kern(2u); k2 = k2 + 1) {
                let o2 = position(2u, i2, k2);
                if (o0 >= 0 && o1 >= 0 && o2 >= 0) {
                    let l = (o0 * outsz(1u) + o1) * outsz(2u) + o2;
                    acc = acc + a[at(A, n, c * kvol() + kk, l, 0, 0)];
                }
                kk = kk + 1;
            }
        }
    }
    dst[e] = acc;
{{- end}}
}
{{end}}
{{end}}
