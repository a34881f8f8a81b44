{{/*
Layout copies: place (concat) and pad. Both move 32-bit words, whatever the
dtype.

place: dst[strided(0, i)] = src[strided(1, i)]: one input of concat copied
into its stretch of the output. dst's view is the output's strides from the
stretch's first element.
Launch: one item per element of src (the walk is over src's shape).

pad: dst[i] = src[c - left] where the output coordinate c, less the left
pads, lies inside src, else the fill value. A negative left pad crops:
c - left then skips the cropped elements; the output's size crops the right.
Launch: one item per element of the contiguous dst; src is strided argument
0 of the layout (its offset and strides); p[19 + d] is the left pad of dim
d (i32), p[27 + d] src's size there, p[35] the fill value's bits.
*/}}
{{define "place"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    dst[strided(0u, i)] = src[strided(1u, i)];
}
{{end}}

{{define "pad"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    var rem = i;
    var at = bitcast<i32>(p[10]);
    var inside = true;
    for (var d = i32(p[1]) - 1; d >= 0; d = d - 1) {
        let size = p[2u + u32(d)];
        let c = i32(rem % size) - bitcast<i32>(p[19u + u32(d)]);
        rem = rem / size;
        inside = inside && c >= 0 && c < i32(p[27u + u32(d)]);
        at = at + c * bitcast<i32>(p[11u + u32(d)]);
    }
    var v = p[35];
    if (inside) {
        v = src[u32(at)];
    }
    dst[i] = v;
}
{{end}}
