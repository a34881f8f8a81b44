{{/*
philox: Philox4x32-10 of a counter under a key, internal/philox's Block
(the Go package holds the numbering and the reference; the tests hold this
to it). WGSL has no high word of a 32-bit product, so mulhi takes it from
the four products of the 16-bit halves.
*/}}
{{define "philox"}}
fn mulhi(a: u32, b: u32) -> u32 {
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let u = ah * bl + ((al * bl) >> 16u);
    let v = al * bh + (u & 0xffffu);
    return ah * bh + (u >> 16u) + (v >> 16u);
}

fn philox(ctr: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var c = ctr;
    var k = key;
    for (var r = 0u; r < 10u; r = r + 1u) {
        if (r > 0u) {
            k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
        }
        let hi0 = mulhi(0xD2511F53u, c.x);
        let lo0 = 0xD2511F53u * c.x;
        let hi1 = mulhi(0xCD9E8D57u, c.z);
        let lo1 = 0xCD9E8D57u * c.z;
        c = vec4<u32>(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}
{{end}}

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
