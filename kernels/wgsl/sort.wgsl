{{/*
argsort: the stable permutation that sorts each line of a tensor along a
dim (backends/wgpu/ops_sort.go). Each element becomes a 64-bit key,
(hi, lo) compared as one unsigned number, whose order is torch's: a float's
bits made monotone (negatives complemented, the rest with the sign bit
set), -0 taken as +0, every NaN the largest key; an int32 or int64 with its
sign bit flipped; a bool (a u32 word) 0 or 1; a 32-bit key has lo = 0. A
descending sort complements both words. Ties are broken by the element's
index along the line, so every comparison is between distinct
(key, index) triples and the unstable sorting networks below give the
stable order.

Two kernels:

argsort_block: one workgroup per block of .B elements of a line (.B a
power of two, at most 1024: three u32 arrays of .B in workgroup memory,
12 KiB). It loads the block (padding past the line's end with the largest
triple, which sorts last), sorts it with a bitonic network (log2(B)·
(log2(B)+1)/2 steps of B/2 compare-exchanges, each lane taking B/512 of
them: O(B log² B) work, O(log² B) barriers), and writes either the final
int64 indices (.Direct: the whole line is one block) to dst at the line's
strided places, or the sorted triples to a scratch line of .W words each
(2: key, index; 3: hi, lo, index) for argsort_merge.

argsort_merge: one invocation per element of the scratch, lines × len in
all. The scratch holds sorted runs of p[32] elements; an element of run r
finds its place in the merge of runs r and r^1 as its offset in its own run
plus the count of the other run's elements below it (a binary search: the
triples are distinct, so the two runs never disagree on a tie). It writes
the triple to the next scratch, or, in the last pass (.Final), its index as
an int64 to dst. O(n log n) work per pass, log2(n / B) passes: the whole
sort is O(n log² B + n log n log(n / B)).

argsort_item: one invocation per line, for lines of at most .B (16)
elements, which a workgroup each would leave mostly idle: an insertion
sort in private memory, O(n²) compares per line, then the indices to dst.

argsort_rank: one invocation per element, for lines of at most 256: the
element's place is the count of the line's elements that sort before it
(rank by count, O(n) per element, O(n²) per line, no barriers), and it
writes its own index there.

Data: .T the element type (f32, i32, u32 for bool, vec2<u32> for int64);
.W the scratch words per element; .B the block size; .Direct and .Final as
above.

Launch: argsort_block: workgroup g (g = wid.y * nwg.x + wid.x) is block
g % p[31] of line g / p[31]; at or past p[0] lines it returns.
argsort_item: item w (the prelude's numbering) is line w; at or past p[0]
it returns.
argsort_rank: item i is element i % p[1] of line i / p[1], as in
argsort_merge.
argsort_merge: item i (the prelude's numbering) is element i % p[1] of line
i / p[1]; at or past p[0]·p[1] it returns.
Parameters are the line layout (ops_reduce.go, lineParams):
  p[0] lines, p[1] len, p[2] input offset, p[3] input step along the dim,
  p[4] output step along the dim, p[5] the other dims' rank,
  p[6..14) their shape, p[14..22) their input strides, p[22..30) their
  output strides (i32), then p[30] descending (0 or 1), p[31] blocks per
  line, p[32] the merge's run length. The output is int64, contiguous at
  element 0; the scratch is line-major, .W words per element.
*/}}
{{define "argsort_key"}}
// key is v's 64-bit sort key as (hi, lo).
fn key(v: {{.T}}) -> vec2<u32> {
{{- if eq .T "f32"}}
    var b = bitcast<u32>(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return vec2<u32>(0xffffffffu, 0u); // NaN, any sign and payload
    }
    if (b == 0x80000000u) {
        b = 0u; // -0 sorts as +0
    }
    if ((b & 0x80000000u) != 0u) {
        return vec2<u32>(~b, 0u);
    }
    return vec2<u32>(b | 0x80000000u, 0u);
{{- else if eq .T "i32"}}
    return vec2<u32>(bitcast<u32>(v) ^ 0x80000000u, 0u);
{{- else if eq .T "u32"}}
    return vec2<u32>(select(0u, 1u, v != 0u), 0u);
{{- else}}
    return vec2<u32>(v.y ^ 0x80000000u, v.x);
{{- end}}
}

// before says whether triple a sorts before triple b.
fn before(a: vec3<u32>, b: vec3<u32>) -> bool {
    if (a.x != b.x) {
        return a.x < b.x;
    }
    if (a.y != b.y) {
        return a.y < b.y;
    }
    return a.z < b.z;
}
{{end}}

{{define "argsort_block"}}{{template "prelude" .}}
{{template "lines" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{if .Direct}}vec2<u32>{{else}}u32{{end}}>;
@group(0) @binding(2) var<storage, read> src: array<{{.T}}>;
{{template "argsort_key" .}}
const B: u32 = {{.B}}u;
var<workgroup> khi: array<u32, {{.B}}>;
var<workgroup> klo: array<u32, {{.B}}>;
var<workgroup> kix: array<u32, {{.B}}>;

fn at(t: u32) -> vec3<u32> {
    return vec3<u32>(khi[t], klo[t], kix[t]);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = wid.y * nwg.x + wid.x;
    let w = g / p[31];
    let first = (g % p[31]) * B;
    // Every lane of a workgroup takes the same branch, so the barriers
    // below stay in uniform control flow.
    if (w >= p[0]) {
        return;
    }
    let n = p[1];
    let line = lineBase(w);
    let xs = bitcast<i32>(p[3]);
    let flip = select(0u, 0xffffffffu, p[30] != 0u);
    for (var t = lid; t < B; t = t + WG) {
        let j = first + t;
        if (j < n) {
            let k = key(src[u32(line.x + i32(j) * xs)]);
            khi[t] = k.x ^ flip;
            klo[t] = k.y ^ flip;
            kix[t] = j;
        } else {
            khi[t] = 0xffffffffu;
            klo[t] = 0xffffffffu;
            kix[t] = 0xffffffffu;
        }
    }
    workgroupBarrier();
    for (var k = 2u; k <= B; k = k << 1u) {
        for (var j = k >> 1u; j > 0u; j = j >> 1u) {
            for (var q = lid; q < B / 2u; q = q + WG) {
                let a = (q / j) * 2u * j + q % j;
                let b = a + j;
                let ta = at(a);
                let tb = at(b);
                if (before(tb, ta) == ((a & k) == 0u)) {
                    khi[a] = tb.x;
                    klo[a] = tb.y;
                    kix[a] = tb.z;
                    khi[b] = ta.x;
                    klo[b] = ta.y;
                    kix[b] = ta.z;
                }
            }
            workgroupBarrier();
        }
    }
    for (var t = lid; t < B; t = t + WG) {
        let j = first + t;
        if (j < n) {
{{- if .Direct}}
            dst[u32(line.y + i32(j) * bitcast<i32>(p[4]))] = vec2<u32>(kix[t], 0u);
{{- else}}
            let o = (w * n + j) * {{.W}}u;
            dst[o] = khi[t];
{{- if eq .W 3}}
            dst[o + 1u] = klo[t];
{{- end}}
            dst[o + {{.W}}u - 1u] = kix[t];
{{- end}}
        }
    }
}
{{end}}

{{define "argsort_merge"}}{{template "prelude" .}}
{{template "lines" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{if .Final}}vec2<u32>{{else}}u32{{end}}>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
{{template "argsort_key" .}}
fn load(e: u32) -> vec3<u32> {
    let o = e * {{.W}}u;
{{- if eq .W 3}}
    return vec3<u32>(src[o], src[o + 1u], src[o + 2u]);
{{- else}}
    return vec3<u32>(src[o], 0u, src[o + 1u]);
{{- end}}
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    let n = p[1];
    if (i >= p[0] * n) {
        return;
    }
    let w = i / n;
    let pos = i % n;
    let width = p[32];
    let run = pos / width;
    let base = w * n;
    let me = load(base + pos);
    var lo = min((run ^ 1u) * width, n);
    let start = lo;
    var hi = min(lo + width, n);
    while (lo < hi) {
        let mid = lo + (hi - lo) / 2u;
        if (before(load(base + mid), me)) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let to = (run & ~1u) * width + (pos - run * width) + (lo - start);
{{- if .Final}}
    dst[u32(lineBase(w).y + i32(to) * bitcast<i32>(p[4]))] = vec2<u32>(me.z, 0u);
{{- else}}
    let o = (base + to) * {{.W}}u;
    dst[o] = me.x;
{{- if eq .W 3}}
    dst[o + 1u] = me.y;
{{- end}}
    dst[o + {{.W}}u - 1u] = me.z;
{{- end}}
}
{{end}}

{{define "argsort_item"}}{{template "prelude" .}}
{{template "lines" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> src: array<{{.T}}>;
{{template "argsort_key" .}}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = item(gid, nwg);
    if (w >= p[0]) {
        return;
    }
    let n = p[1];
    let line = lineBase(w);
    let xs = bitcast<i32>(p[3]);
    let os = bitcast<i32>(p[4]);
    let flip = select(0u, 0xffffffffu, p[30] != 0u);
    var e: array<vec3<u32>, {{.B}}>;
    for (var j = 0u; j < n; j = j + 1u) {
        let k = key(src[u32(line.x + i32(j) * xs)]);
        let cur = vec3<u32>(k.x ^ flip, k.y ^ flip, j);
        var i = j;
        while (i > 0u && before(cur, e[i - 1u])) {
            e[i] = e[i - 1u];
            i = i - 1u;
        }
        e[i] = cur;
    }
    for (var j = 0u; j < n; j = j + 1u) {
        dst[u32(line.y + i32(j) * os)] = vec2<u32>(e[j].z, 0u);
    }
}
{{end}}

{{define "argsort_rank"}}{{template "prelude" .}}
{{template "lines" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> src: array<{{.T}}>;
{{template "argsort_key" .}}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    let n = p[1];
    if (i >= p[0] * n) {
        return;
    }
    let w = i / n;
    let pos = i % n;
    let line = lineBase(w);
    let xs = bitcast<i32>(p[3]);
    let flip = select(0u, 0xffffffffu, p[30] != 0u);
    let k = key(src[u32(line.x + i32(pos) * xs)]);
    let me = vec3<u32>(k.x ^ flip, k.y ^ flip, pos);
    var rank = 0u;
    for (var j = 0u; j < n; j = j + 1u) {
        let o = key(src[u32(line.x + i32(j) * xs)]);
        if (before(vec3<u32>(o.x ^ flip, o.y ^ flip, j), me)) {
            rank = rank + 1u;
        }
    }
    dst[u32(line.y + i32(rank) * bitcast<i32>(p[4]))] = vec2<u32>(pos, 0u);
}
{{end}}
