{{/*
Indexing kernels: index_check, gather, scatter, scatter_add_atomic and
one_hot.
Index tensors are i32 (wgpu:0 has no int64). gather and scatter move
32-bit words, whatever the dtype, except where scatter_add adds.

index_check: dispatch's value check (backends/wgpu/checks.go): the first
(row-major) position of a value outside [min, max], unless it is the
ignored value, by atomicMin into log[2·slot], which holds 0xffffffff (no
bad value) until a check writes it; the host reads the log back with the
next read-back.
check_fetch: then copies the value at that position to log[2·slot + 1].
Launch: index_check one item per element of the values, check_fetch one
item; the values are strided argument 0 of the layout (over their own
shape); p[19] is min, p[20] max, p[21] the ignored value, p[22] whether
there is one, p[23] the slot (i32 each).

gather: dst[i] = src[strided(0, i) + index[strided(1, i)] · step], the
kernel of gather and index_select (whose index view repeats along every dim
but dim, through strides of 0).
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
or short ones (ops_index.go's walkLines). Data: .T is the element type, .Combine the expression of old and v.
Launch: one item per line; the walk is over the index's shape without dim,
arguments dst (0), src (1), index (2); p[37] is the line's length, p[38..41)
the steps along dim of dst, src and the index (i32).

scatter_add_atomic: scatter_add with one item per element of the index, for
an index of few long lines, which the line walk would leave to few
invocations: dst[o + index[x] · ostep] += src[s] as an atomic add (i32), or
(f32) a compare-exchange loop on the bits of the sum, whose order is then
the hardware's; bool is an atomic or. Data: .Float says f32, .Op the atomic
of the other dtypes (atomicAdd, atomicOr), .A the word type (i32 or u32).
Launch: one item per element of the index; the walk is over the index's
shape, arguments dst (0, stride 0 along dim), src (1), index (2); p[37] is
dst's stride along dim (i32).

one_hot: dst[i] = 1 where x's class at i / classes is i % classes, else 0.
Launch: one item per element of the contiguous i32 dst; x is strided
argument 0 of the layout over dst's shape, with stride 0 along the last
dim; p[19] is the number of classes.
*/}}
{{define "index_check"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> log: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> values: array<i32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    let v = values[strided(0u, i)];
    let outside = v < bitcast<i32>(p[19]) || v > bitcast<i32>(p[20]);
    let ignored = p[22] != 0u && v == bitcast<i32>(p[21]);
    if (outside && !ignored) {
        atomicMin(&log[2u * p[23]], i);
    }
}
{{end}}

{{define "check_fetch"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> log: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<i32>;

@compute @workgroup_size(1)
fn main() {
    let pos = log[2u * p[23]];
    if (pos != 0xffffffffu) {
        log[2u * p[23] + 1u] = bitcast<u32>(values[strided(0u, pos)]);
    }
}
{{end}}

{{define "gather"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read> index: array<i32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    let k = index[strided(1u, i)];
    dst[i] = src[u32(bitcast<i32>(strided(0u, i)) + k * bitcast<i32>(p[28]))];
}
{{end}}

{{define "scatter"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{.T}}>;
@group(0) @binding(2) var<storage, read> src: array<{{.T}}>;
@group(0) @binding(3) var<storage, read> index: array<i32>;

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
        let at = u32(o + index[u32(x + t * xstep)] * ostep);
        let old = dst[at];
        let v = src[u32(s + t * sstep)];
        dst[at] = {{.Combine}};
    }
}
{{end}}

{{define "scatter_add_atomic"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<atomic<{{.A}}>>;
@group(0) @binding(2) var<storage, read> src: array<{{.A}}>;
@group(0) @binding(3) var<storage, read> index: array<i32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    let at = u32(bitcast<i32>(strided(0u, i)) + index[strided(2u, i)] * bitcast<i32>(p[37]));
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
{{- else}}
    {{.Op}}(&dst[at], v);
{{- end}}
}
{{end}}

{{define "one_hot"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<i32>;
@group(0) @binding(2) var<storage, read> x: array<i32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
    dst[i] = select(0, 1, x[strided(0u, i)] == i32(i % p[19]));
}
{{end}}
