{{/*
pool: pooling over up to three spatial dims (fewer are padded to three
with leading dims of size 1 and a window of 1). Data: .Op is avg (the
average), avg_backward (its adjoint), argmax (the place of each window's
maximum: max_pool_indices, adaptive_max_pool_indices), or one of the
index ops below; .Adaptive picks adaptive pooling's windows over the
sliding window's. Indices are int64, as on every device (int64.wgsl's
vec2<u32>, low word first): an index whose high word is not 0 (past 2³²,
or negative) lies outside every plane, and so does a low word, read as a
u32, past the plane. float32 values only.

Window ops (avg, avg_backward, argmax):

Parameters (u32 words):
  p[0]      items (output elements)
  p[1]      C, the channels
  p[2..5)   spatial sizes of the pooling's input
  p[5..8)   spatial sizes of the pooling's output
  p[8..11) kernel, p[11..14) stride, p[14..17) padding, p[17..20) dilation
            (sliding windows only)
  p[20]     1 where padded places are left out of a window's count
  p[21]     the divisor (i32) that replaces the count, 0 for none
  p[22]     the source's element offset, p[23..28) its strides (i32) over
            (N, C, d0, d1, d2)
Bindings: out (1) contiguous at element 0, the source (2): the pooling's
input (avg, argmax) or the gradient of its output (avg_backward).
Launch: one item per output element. The pooling sums its window in
row-major order and divides by the divisor; the backward pass is a gather:
each input place sums, over the windows that read it in row-major order
of the windows, their gradient over their divisor, as the cpu's
scatter-add does, so that the two agree to the last bit barring fused
multiply-adds. argmax keeps the first of equal values and the last NaN,
and a window of -inf gives its first place, as the cpu does.

Index ops, over an index tensor (N, C, index sizes) whose values are flat
places in the (n, c) planes of an addressed tensor (N, C, plane sizes):
  gather       out[item] = x[plane, idx[item]] (pool_gather; a = x)
  scatter_add  out[plane, idx[item]] += a[item] (max_pool_backward; out
               zeroed first by copy.wgsl's fill, added to by a
               compare-exchange loop)
  claim        winner[plane, idx[item]] = max over items + 1 (max_unpool's
               first pass, winner zeroed first: the last item wins, as the
               cpu's last write does)
  unpool       out[q] = a[winner[q] - 1], or 0 where no item went
Parameters: p[0] items (the index tensor's elements; unpool: out's), p[1]
C, p[2..5) plane sizes, p[5..8) index sizes, p[8] a's offset and p[9..14)
its strides over (N, C, d0, d1, d2), p[14] the indices' offset and
p[15..20) their strides, in elements. Bindings: out (1), then
a (gather: x) and the indices, or winner and a (unpool). An index outside
its plane is skipped (gather: reads 0); dispatch's value check reports it
(backends/wgpu/checks.go).
*/}}
{{define "pool"}}{{template "prelude" .}}
{{- if or (eq .Op "avg") (eq .Op "avg_backward") (eq .Op "argmax")}}
{{template "pool_window" .}}
{{- else}}
{{template "pool_index" .}}
{{- end}}
{{end}}

{{define "pool_window"}}
{{- if eq .Op "argmax"}}
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;
{{- else}}
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
{{- end}}
@group(0) @binding(2) var<storage, read> src: array<f32>;

fn insz(d: u32) -> i32 { return i32(p[2u + d]); }
fn outsz(d: u32) -> i32 { return i32(p[5u + d]); }
fn kern(d: u32) -> i32 { return i32(p[8u + d]); }
fn stride(d: u32) -> i32 { return i32(p[11u + d]); }
fn pad(d: u32) -> i32 { return i32(p[14u + d]); }
fn dil(d: u32) -> i32 { return i32(p[17u + d]); }

fn at(n: i32, c: i32, i0: i32, i1: i32, i2: i32) -> u32 {
    var idx = bitcast<i32>(p[22u]);
    idx = idx + n * bitcast<i32>(p[23u]) + c * bitcast<i32>(p[24u]);
    idx = idx + i0 * bitcast<i32>(p[25u]) + i1 * bitcast<i32>(p[26u]) + i2 * bitcast<i32>(p[27u]);
    return u32(idx);
}

// window is the window of output place o along dim d: (start, lo, hi,
// count), its taps lo <= t < hi reading input place start + t·step(d), and
// the places it counts for the average.
fn window(d: u32, o: i32) -> vec4<i32> {
{{- if .Adaptive}}
    // [floor(o·n/m), ceil((o+1)·n/m)), PyTorch's start_index and end_index.
    let n = insz(d);
    let m = outsz(d);
    let lo = o * n / m;
    let hi = ((o + 1) * n + m - 1) / m;
    return vec4<i32>(lo, 0, hi - lo, hi - lo);
{{- else}}
    // dispatch.PoolTaps, and the cpu's windowGeom count.
    let start = o * stride(d) - pad(d);
    let dl = dil(d);
    var lo = 0;
    if (start < 0) {
        lo = (-start + dl - 1) / dl;
    }
    var hi = kern(d);
    let last = start + (hi - 1) * dl;
    if (last >= insz(d)) {
        hi = hi - (last - insz(d) + dl) / dl;
    }
    hi = max(lo, hi);
    var count = hi - lo;
    if (p[20] == 0u) {
        count = min(start + kern(d), insz(d) + pad(d)) - start;
    }
    return vec4<i32>(start, lo, hi, count);
{{- end}}
}

fn step(d: u32) -> i32 {
{{- if .Adaptive}}
    return 1;
{{- else}}
    return dil(d);
{{- end}}
}

fn divisor(w0: vec4<i32>, w1: vec4<i32>, w2: vec4<i32>) -> f32 {
    if (p[21] != 0u) {
        return f32(bitcast<i32>(p[21]));
    }
    return f32(w0.w * w1.w * w2.w);
}

// candidates is how many window positions candidate(d, i, c) tries for
// input place i along dim d.
fn candidates(d: u32, i: i32) -> i32 {
{{- if .Adaptive}}
    let n = insz(d);
    let m = outsz(d);
    return ((i + 1) * m + n - 1) / n - i * m / n;
{{- else}}
    return kern(d);
{{- end}}
}

// candidate is the c-th window position along dim d (ascending in c) whose
// window reads input place i, or -1 where that candidate does not.
fn candidate(d: u32, i: i32, c: i32) -> i32 {
{{- if .Adaptive}}
    // o reads i exactly when floor(i·m/n) <= o < ceil((i+1)·m/n).
    return i * outsz(d) / insz(d) + c;
{{- else}}
    let t = i + pad(d) - (kern(d) - 1 - c) * dil(d);
    if (t < 0 || t % stride(d) != 0 || t / stride(d) >= outsz(d)) {
        return -1;
    }
    return t / stride(d);
{{- end}}
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = item(gid, nwg);
    if (e >= p[0]) {
        return;
    }
    var r = i32(e);
{{- if eq .Op "avg"}}
    let o2 = r % outsz(2u); r = r / outsz(2u);
    let o1 = r % outsz(1u); r = r / outsz(1u);
    let o0 = r % outsz(0u); r = r / outsz(0u);
    let c = r % i32(p[1]);
    let n = r / i32(p[1]);
    let w0 = window(0u, o0);
    let w1 = window(1u, o1);
    let w2 = window(2u, o2);
    var sum: f32 = 0.0;
    for (var t0 = w0.y; t0 < w0.z; t0 = t0 + 1) {
        for (var t1 = w1.y; t1 < w1.z; t1 = t1 + 1) {
            for (var t2 = w2.y; t2 < w2.z; t2 = t2 + 1) {
                sum = sum + src[at(n, c, w0.x + t0 * step(0u), w1.x + t1 * step(1u), w2.x + t2 * step(2u))];
            }
        }
    }
    dst[e] = sum / divisor(w0, w1, w2);
{{- else if eq .Op "argmax"}}
    let o2 = r % outsz(2u); r = r / outsz(2u);
    let o1 = r % outsz(1u); r = r / outsz(1u);
    let o0 = r % outsz(0u); r = r / outsz(0u);
    let c = r % i32(p[1]);
    let n = r / i32(p[1]);
    let w0 = window(0u, o0);
    let w1 = window(1u, o1);
    let w2 = window(2u, o2);
    // Every window reads at least one place (Infer refuses one wholly in
    // the padding). Starting from the first place is the cpu's start from
    // -inf at the first place: it is taken unless it is -inf, and then it
    // is the answer unless a later place wins.
    let f0 = w0.x + w0.y * step(0u);
    let f1 = w1.x + w1.y * step(1u);
    let f2 = w2.x + w2.y * step(2u);
    var best = src[at(n, c, f0, f1, f2)];
    var place = (f0 * insz(1u) + f1) * insz(2u) + f2;
    for (var t0 = w0.y; t0 < w0.z; t0 = t0 + 1) {
        let i0 = w0.x + t0 * step(0u);
        for (var t1 = w1.y; t1 < w1.z; t1 = t1 + 1) {
            let i1 = w1.x + t1 * step(1u);
            for (var t2 = w2.y; t2 < w2.z; t2 = t2 + 1) {
                let i2 = w2.x + t2 * step(2u);
                let v = src[at(n, c, i0, i1, i2)];
                // The NaN test is on the bits, which no compiler folds away.
                if (v > best || (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u) {
                    best = v;
                    place = (i0 * insz(1u) + i1) * insz(2u) + i2;
                }
            }
        }
    }
    dst[e] = vec2<u32>(u32(place), 0u);
{{- else}}
    let i2 = r % insz(2u); r = r / insz(2u);
    let i1 = r % insz(1u); r = r / insz(1u);
    let i0 = r % insz(0u); r = r / insz(0u);
    let c = r % i32(p[1]);
    let n = r / i32(p[1]);
    var acc: f32 = 0.0;
    for (var c0 = 0; c0 < candidates(0u, i0); c0 = c0 + 1) {
        let o0 = candidate(0u, i0, c0);
        if (o0 < 0) {
            continue;
        }
        let w0 = window(0u, o0);
        for (var c1 = 0; c1 < candidates(1u, i1); c1 = c1 + 1) {
            let o1 = candidate(1u, i1, c1);
            if (o1 < 0) {
                continue;
            }
            let w1 = window(1u, o1);
            for (var c2 = 0; c2 < candidates(2u, i2); c2 = c2 + 1) {
                let o2 = candidate(2u, i2, c2);
                if (o2 < 0) {
                    continue;
                }
                acc = acc + src[at(n, c, o0, o1, o2)] / divisor(w0, w1, window(2u, o2));
            }
        }
    }
    dst[e] = acc;
{{- end}}
}
{{end}}

{{define "pool_index"}}
{{- if eq .Op "gather"}}
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> idx: array<vec2<u32>>;
{{- else if eq .Op "scatter_add"}}
@group(0) @binding(1) var<storage, read_write> dst: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> idx: array<vec2<u32>>;
{{- else if eq .Op "claim"}}
@group(0) @binding(1) var<storage, read_write> dst: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> idx: array<vec2<u32>>;
{{- else if eq .Op "unpool"}}
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> winner: array<u32>;
@group(0) @binding(3) var<storage, read> a: array<f32>;
{{- end}}

fn planesz(d: u32) -> u32 { return p[2u + d]; }
fn idxsz(d: u32) -> u32 { return p[5u + d]; }
fn plane() -> u32 { return planesz(0u) * planesz(1u) * planesz(2u); }

// element is the element index, in the tensor whose layout starts at
// p[base], of (n, c, s0, s1, s2).
fn element(base: u32, n: u32, c: u32, s: vec3<u32>) -> u32 {
    var e = bitcast<i32>(p[base]) + i32(n) * bitcast<i32>(p[base + 1u]) + i32(c) * bitcast<i32>(p[base + 2u]);
    e = e + i32(s.x) * bitcast<i32>(p[base + 3u]) + i32(s.y) * bitcast<i32>(p[base + 4u]) + i32(s.z) * bitcast<i32>(p[base + 5u]);
    return u32(e);
}

// coords is item i of the index tensor as (n, c, s0, s1, s2).
fn coords(i: u32) -> array<u32, 5> {
    var r = i;
    let s2 = r % idxsz(2u); r = r / idxsz(2u);
    let s1 = r % idxsz(1u); r = r / idxsz(1u);
    let s0 = r % idxsz(0u); r = r / idxsz(0u);
    return array<u32, 5>(r / p[1], r % p[1], s0, s1, s2);
}

{{- if or (eq .Op "gather") (eq .Op "scatter_add") (eq .Op "claim")}}
// place_of is the place that item i's index names in its plane, or plane()
// where it lies outside (a negative index included: its high word is set).
fn place_of(i: u32) -> u32 {
    let q = coords(i);
    let v = idx[element(14u, q[0], q[1], vec3<u32>(q[2], q[3], q[4]))];
    return select(min(v.x, plane()), plane(), v.y != 0u);
}
{{- end}}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
{{- if eq .Op "gather"}}
    let q = coords(i);
    let place = place_of(i);
    var v: f32 = 0.0;
    if (place < plane()) {
        let s2 = place % planesz(2u);
        let s1 = place / planesz(2u) % planesz(1u);
        let s0 = place / planesz(2u) / planesz(1u);
        v = a[element(8u, q[0], q[1], vec3<u32>(s0, s1, s2))];
    }
    dst[i] = v;
{{- else if eq .Op "scatter_add"}}
    let q = coords(i);
    let place = place_of(i);
    if (place >= plane()) {
        return;
    }
    let v = a[element(8u, q[0], q[1], vec3<u32>(q[2], q[3], q[4]))];
    let at = (q[0] * p[1] + q[1]) * plane() + place;
    var old = atomicLoad(&dst[at]);
    loop {
        let r = atomicCompareExchangeWeak(&dst[at], old, bitcast<u32>(bitcast<f32>(old) + v));
        if (r.exchanged) {
            break;
        }
        old = r.old_value;
    }
{{- else if eq .Op "claim"}}
    let q = coords(i);
    let place = place_of(i);
    if (place < plane()) {
        atomicMax(&dst[(q[0] * p[1] + q[1]) * plane() + place], i + 1u);
    }
{{- else if eq .Op "unpool"}}
    let w = winner[i];
    var v: f32 = 0.0;
    if (w != 0u) {
        let q = coords(w - 1u);
        v = a[element(8u, q[0], q[1], vec3<u32>(q[2], q[3], q[4]))];
    }
    dst[i] = v;
{{- end}}
}
{{end}}
