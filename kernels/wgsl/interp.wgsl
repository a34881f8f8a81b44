{{/*
interp: one pass of a separable interpolation filter along one dim, as
the cpu runs them (backends/cpu/interp.go): the tensor is (outer, n,
inner), contiguous, and the pass makes (outer, m, inner). The host
computes the 1-d filter (PyTorch's coordinate maps, in float32) and
passes it in the parameters. Data: .Op is forward (the filter) or
backward (its transpose). float32 only.

Parameters (u32 words):
  p[0]  items (output elements, outer·m·inner)
  p[1]  inner, p[2] m (the pass's output size along the dim), p[3] n (its
        input size)
  p[4]  forward: k, the taps per output index; backward: E, the entries
  p[5]  the source's element offset
  p[8..) the table. forward: for output index j, the input indices
        p[8 + j·k + t] and the weights (f32 bits) p[8 + m·k + j·k + t],
        t < k. backward (the forward filter transposed, row by row): the
        entries of output index r are e in [p[8 + r], p[8 + r + 1]), each
        a forward output index p[8 + m + 1 + e] and its weight (f32 bits)
        p[8 + m + 1 + E + e], in the order the cpu's scatter-add adds them.
Bindings: out (1) contiguous at element 0, the source (2) contiguous from
its offset.

Launch: one item per output element; both passes are gathers.
*/}}
{{define "interp"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;

const TABLE: u32 = 8u;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = item(gid, nwg);
    if (e >= p[0]) {
        return;
    }
    let inner = p[1];
    let m = p[2];
    let n = p[3];
    let i = e % inner;
    let j = e / inner % m;
    let base = p[5] + e / inner / m * n * inner + i;
{{- if eq .Op "forward"}}
    let k = p[4];
    let w = TABLE + m * k;
    var acc = bitcast<f32>(p[w + j * k]) * src[base + p[TABLE + j * k] * inner];
    for (var t = 1u; t < k; t = t + 1u) {
        acc = acc + bitcast<f32>(p[w + j * k + t]) * src[base + p[TABLE + j * k + t] * inner];
    }
{{- else}}
    let entries = TABLE + m + 1u;
    let w = entries + p[4];
    var acc: f32 = 0.0;
    for (var q = p[TABLE + j]; q < p[TABLE + j + 1u]; q = q + 1u) {
        acc = acc + bitcast<f32>(p[w + q]) * src[base + p[entries + q] * inner];
    }
{{- end}}
    dst[e] = acc;
}
{{end}}
