{{/*
Indexing kernels: index_check, gather, scatter, scatter_add_atomic and
one_hot.
Index tensors are int32 or int64; .I is their WGSL type (i32, or
vec2<u32> for int64, int64.wgsl) and index_at(k) reads element k of
binding index as an i32 (an int64's low word: an index whose high word
matters is out of range, which the value check reports; the access stays
bounded whatever it reads). gather and scatter move elements as words
(.T: u32, or vec2<u32> for int64), whatever the dtype, except where
scatter_add adds.

index_check: dispatch's value check (backends/wgpu/checks.go): the first
(row-major) position of a value outside [min, max] (inside it, where the
check's Outside flag is set), unless it is the ignored value, by atomicMin into log[3·slot], which holds 0xffffffff (no
bad value) until a check writes it; the host reads the log back with the
next read-back.
check_fetch: then copies the value at that position to log[3·slot + 1]
(its low word) and log[3·slot + 2] (its high word). Values (.I) are int32
or int64 and compare as int64s, so that no value is wrapped into range.
Launch: index_check one item per element of the values, check_fetch one
item; the values are strided argument 0 of the layout (over their own
shape); p[19..21) is min, p[21..23) max, p[23..25) the ignored value (each
an int64, low word first), p[25] the check's flags (bit 0: there is an ignored value; bit 1:
Outside), p[26] the slot.

gather: dst[i] = src[strided(0, i) + index[strided(1, i)] · step], the
kernel of gather and index_select (whose index view repeats along every dim
but dim, through strides of 0). Data: .T, .I.
Launch: one item per element of the contiguous dst; src's view has stride 0
along dim, and step (p[28], i32) is src's real stride there.

scatter: for each line along dim of the index, in order along it:
dst[o + index[x + t·xstep] · ostep] = {{.Combine}} of the old value and
src[s + t·sstep], where o, s and x start the line in dst, src and the index.
One invocation walks one whole line, as the cpu does: lines write disjoint
elements of dst (they differ off dim), and the writes that can land on one
element happen in one invocation, in order. So scatter keeps the last write
and scatter_add sums in row-major order, both deterministic, with no
atomics. It serves scatter, and scatter_add where the index has many lines
or short ones (ops_index.go's walkLines). Data: .T is the element type, .I
the index's, .Combine the expression of old and v.
Launch: one item per line; the walk is over the index's shape without dim,
arguments dst (0), src (1), index (2); p[37] is the line's length, p[38..41)
the steps along dim of dst, src and the index (i32).

scatter_add_atomic: scatter_add with one item per element of the index, for
an index of few long lines, which the line walk would leave to few
invocations: dst[o + index[x] · ostep] += src[s] as an atomic add (i32), or
(f32) a compare-exchange loop on the bits of the sum, whose order is then
the hardware's; bool is an atomic or; int64 (.Int64) adds its low words
atomically and then its high words with the carry that its own low add
made, which sums to the exact int64 total mod 2⁶⁴ in any order. Data:
.Float says f32, .Int64 int64, .Op the atomic of the other dtypes
(atomicAdd, atomicOr), .A the word type (i32 or u32), .I the index's.
Launch: one item per element of the index; the walk is over the index's
shape, arguments dst (0, stride 0 along dim), src (1), index (2); p[37] is
dst's stride along dim (i32).

one_hot: dst[i] = 1 where the class at i / classes is i % classes, else 0.
Launch: one item per element of the contiguous int64 dst; the classes
(binding index, .I) are strided argument 0 of the layout over dst's
shape, with stride 0 along the last dim; p[19] is the number of classes.
*/}}
{{define "index_read"}}
{{template "int64"}}
@group(0) @binding({{.IndexBinding}}) var<storage, read> index: array<{{.I}}>;

fn index_at(k: u32) -> i32 {
{{- if eq .I "i32"}}
    return index[k];
{{- else}}
    return i64_to_i32(index[k]);
{{- end}}
}
{{end}}

{{define "index_check"}}{{template "prelude" .}}
{{template "int64"}}
@group(0) @binding(1) var<storage, read_write> log: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> values: array<{{.I}}>;

fn p64(k: u32) -> vec2<u32> {
    return vec2<u32>(p[k], p[k + 1u]);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
{{- if eq .I "i32"}}
    let v = i64_of_i32(values[strided(0u, i)]);
{{- else}}
    let v = values[strided(0u, i)];
{{- end}}
    let outside = i64_lt(v, p64(19u)) || i64_lt(p64(21u), v);
    let ignored = (p[25] & 1u) != 0u && i64_eq(v, p64(23u));
    if (outside != ((p[25] & 2u) != 0u) && !ignored) {
        atomicMin(&log[3u * p[26]], i);
    }
}
{{end}}

{{define "check_fetch"}}{{template "prelude" .}}
{{template "int64"}}
@group(0) @binding(1) var<storage, read_write> log: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<{{.I}}>;

@compute @workgroup_size(1)
fn main() {
    let pos = log[3u * p[26]];
    if (pos != 0xffffffffu) {
{{- if eq .I "i32"}}
        let v = i64_of_i32(values[strided(0u, pos)]);
{{- else}}
        let v = values[strided(0u, pos)];
{{- end}}
        log[3u * p[26] + 1u] = v.x;
        log[3u * p[26] + 2u] = v.y;
    }
}
{{end}}

{{define "gather"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{.T}}>;
@group(0) @binding(2) var<storage, read> src: array<{{.T}}>;
{{template "index_read" .}}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    let k = index_at(strided(1u, i));
    dst[i] = src[u32(bitcast<i32>(strided(0u, i)) + k * bitcast<i32>(p[28]))];
}
{{end}}

{{define "scatter"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{.T}}>;
@group(0) @binding(2) var<storage, read> src: array<{{.T}}>;
{{template "index_read" .}}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    let o = bitcast<i32>(strided(0u, i));
    let s = bitcast<i32>(strided(1u, i));
    let x = bitcast<i32>(strided(2u, i));
    let ostep = bitcast<i32>(p[38]);
    let sstep = bitcast<i32>(p[39]);
    let xstep = bitcast<i32>(p[40]);
    for (var t = 0; t < i32(p[37]); t = t + 1) {
        let at = u32(o + index_at(u32(x + t * xstep)) * ostep);
        let old = dst[at];
        let v = src[u32(s + t * sstep)];
        dst[at] = {{.Combine}};
    }
}
{{end}}

{{define "scatter_add_atomic"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<atomic<{{.A}}>>;
@group(0) @binding(2) var<storage, read> src: array<{{if .Int64}}vec2<u32>{{else}}{{.A}}{{end}}>;
{{template "index_read" .}}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    let at = u32(bitcast<i32>(strided(0u, i)) + index_at(strided(2u, i)) * bitcast<i32>(p[37]));
    let v = src[strided(1u, i)];
{{- if .Float}}
    var old = atomicLoad(&dst[at]);
    loop {
        let r = atomicCompareExchangeWeak(&dst[at], old, bitcast<u32>(bitcast<f32>(old) + bitcast<f32>(v)));
        if (r.exchanged) {
            break;
        }
        old = r.old_value;
    }
{{- else if .Int64}}
    let lo = atomicAdd(&dst[2u * at], v.x);
    atomicAdd(&dst[2u * at + 1u], v.y + select(0u, 1u, lo + v.x < lo));
{{- else}}
    {{.Op}}(&dst[at], v);
{{- end}}
}
{{end}}

{{define "one_hot"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;
{{template "index_read" .}}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    dst[i] = vec2<u32>(select(0u, 1u, index_at(strided(0u, i)) == i32(i % p[19])), 0u);
}
{{end}}
