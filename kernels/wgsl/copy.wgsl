{{/*
copy: out[i] = T_out(in[strided(0, i)]), for contiguous, cast and the
copies of views. Data: .Out and .In are WGSL element types (f32, i32, u32
for bool); .Conv is the conversion expression's template, with X the value.

Launch: one item per output element; out contiguous at element 0 of its
buffer; in strided (argument 0 of the layout).
*/}}
{{define "copy"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{.Out}}>;
@group(0) @binding(2) var<storage, read> src: array<{{.In}}>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    let x = src[strided(0u, i)];
    dst[i] = {{.Conv}};
}
{{end}}

{{/*
fill: dst[i] = p[1], one 32-bit word whatever the dtype (pad's fill value,
the zeros that pooling's scatters start from).

Launch: one item per element of dst, contiguous at element 0 of its buffer
(binding 1); p[0] is the number of elements.
*/}}
{{define "fill"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    dst[i] = p[1];
}
{{end}}
