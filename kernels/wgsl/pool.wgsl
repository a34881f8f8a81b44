{{/*
pool: average pooling and adaptive average pooling, and their backward
passes, over up to three spatial dims (fewer are padded to three with
leading dims of size 1 and a window of 1). Data: .Op is avg (the pooling)
or avg_backward (its adjoint); .Adaptive picks adaptive pooling's windows
over the sliding window's. float32 only.

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
input (avg) or the gradient of its output (avg_backward).

Launch: one item per output element. The pooling sums its window in
row-major order and divides by the divisor; the backward pass is a gather:
each input place sums, over the windows that read it in row-major order
of the windows, their gradient over their divisor, as the cpu's
scatter-add does, so that the two agree to the last bit barring fused
multiply-adds.
*/}}
{{define "pool"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
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
