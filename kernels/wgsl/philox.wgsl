{{/*
philox: Philox4x32-10 of a counter under a key, internal/philox's Block
(the Go package holds the numbering and the reference; the tests hold this
to it). WGSL has no high word of a 32-bit product, so mulhi takes it from
the four products of the 16-bit halves.

A kernel that draws random words (dropout in random.wgsl, the dropout of
the probabilities in attention.wgsl) includes it with {{template "philox"}},
once; it must not declare mulhi or philox itself.
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
