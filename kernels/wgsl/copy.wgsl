{{/*
copy: out[i] = T_out(in[strided(0, i)]), for contiguous, cast and the
copies of views. Data: .Out and .In are WGSL element types (f32, i32,
vec2<u32> for int64, u32 for bool); .Conv is the conversion expression of
the value x (backends/wgpu/ops_copy.go's convExpr; int64's from int64.wgsl).

Launch: an item per ITEM_ELEMENTS output elements (the prelude's
flat_main); out contiguous at element 0 of its buffer; in strided
(argument 0 of the layout).
*/}}
{{define "copy"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{.Out}}>;
@group(0) @binding(2) var<storage, read> src: array<{{.In}}>;
{{template "int64"}}
fn copy_element(i: u32) {
    let x = src[strided(0u, i)];
    dst[i] = {{.Conv}};
}
{{template "flat_main" "copy_element"}}
{{end}}

{{/*
fill: dst[i] = the word p[1] (.T u32, whatever the dtype) or, for int64
(.T vec2<u32>), the words p[1] (low) and p[2]: pad's fill value, the zeros
that pooling's scatters start from.

Launch: an item per ITEM_ELEMENTS elements of dst (the prelude's
flat_main), dst contiguous at element 0 of its buffer (binding 1); p[0] is
the number of elements.
*/}}
{{define "fill"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{.T}}>;

fn fill_element(i: u32) {
    dst[i] = {{if eq .T "u32"}}p[1]{{else}}vec2<u32>(p[1], p[2]){{end}};
}
{{template "flat_main" "fill_element"}}
{{end}}
