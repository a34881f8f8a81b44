{{/*
dropout: dst[i] = src[strided(0, i)] · (scale or 0), kept where word i % 4
of philox((i / 4, 0, 0, 0), key) is at least the threshold (ops.Dropout;
f32, the 16-bit floats widened by the Go side). Parameters after x's layout
(p[19 ..]): the key's low and high words, the threshold, the scale's f32
bits.

Launch: an item per block of four output elements, ceil(n / 4) items (the
prelude's numbering); out contiguous at element 0 of its buffer (binding
1), x strided (argument 0 of the layout, binding 2). An element index is
below 2^32, so a counter's high word is 0.
*/}}
{{define "dropout"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;
{{template "philox"}}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let b = item(gid, nwg);
    let n = p[0];
    if (b >= n / 4u + select(0u, 1u, n % 4u != 0u)) {
        return;
    }
    let words = philox(vec4<u32>(b, 0u, 0u, 0u), vec2<u32>(p[19], p[20]));
    let threshold = p[21];
    let scale = bitcast<f32>(p[22]);
    for (var j = 0u; j < 4u; j = j + 1u) {
        let i = 4u * b + j;
        if (i >= n) {
            return;
        }
        var f = 0.0;
        if (words[j] >= threshold) {
            f = scale;
        }
        dst[i] = src[strided(0u, i)] * f;
    }
}
{{end}}
