{{/*
Layout copies: place moves elements as words (.T: u32, or vec2<u32> for
int64), whatever the dtype, from one view to another over one walk: dst[strided(0, i)] = src[strided(1, i)]. It
copies each input of concat into its stretch of the output, and what
survives of pad's input into the filled output (copy.wgsl's fill); dst's
view is the output's strides from the stretch's or region's first element.
Launch: one item per element of the walk over the copied part's shape
(collapsed by the host); dst and src are strided arguments 0 and 1.
*/}}
{{define "place"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{.T}}>;
@group(0) @binding(2) var<storage, read> src: array<{{.T}}>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    dst[strided(0u, i)] = src[strided(1u, i)];
}
{{end}}
