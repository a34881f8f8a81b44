{{/*
reduce: sum, prod, max, min, argmax, argmin, var, std and logsumexp. Each
op is a State with an identity, lift (an element into a State), combine
(two States into one; associative, so they may be paired in any order) and
finish (a State into the result). Rows (one per output element) are
reduced either by a workgroup each, with a tree over its 256 lanes in
workgroup memory, or, where there are many short or column-wise rows, by
one invocation each.

Data: .T is the input's WGSL element type (f32, i32, or vec2<u32> for
int64, whose arithmetic is int64.wgsl's), .OutT the output's, .Op the reduction, .PerItem the invocation-per-row form, .Src
"tensor" (read the strided input) or "partials" (read States a first pass
wrote), .Dst "out" (write finished results) or "partials" (write States for
a second pass); the per-row form reads a tensor and writes out.

Parameters:
  p[0] rows, p[1] n (reduced elements per row), p[2] parts per row,
  p[3] chunk, p[4] the input's element offset, p[5] kept rank, p[6] reduced
  rank, p[7] correction (var, std);
  p[8..16) kept shape, p[16..24) kept strides, p[24..32) reduced shape,
  p[32..40) reduced strides (of the input, in elements; i32).
Row r is the row-major index over the kept dims; reduced element j is the
row-major index over the reduced dims (the index argmax returns). dst is
contiguous at element 0.

Launch, workgroup per row: workgroup w of the grid (w = wid.y * nwg.x +
wid.x; workgroups at or past rows * parts return) reduces part w % parts of
row w / parts, the elements [part * chunk, min((part + 1) * chunk, n)),
lane l taking those congruent to l mod 256, into dst[w].
Launch, invocation per row: item r (the prelude's numbering; items at or
past rows return) reduces row r in order, in blocks of 8 within blocks
of 64, into dst[r]; parts is 1.
*/}}
{{define "reduce"}}{{template "prelude" .}}
{{template "reduceState" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{if eq .Dst "partials"}}State{{else}}{{.OutT}}{{end}}>;
@group(0) @binding(2) var<storage, read> src: array<{{if eq .Src "partials"}}State{{else}}{{.T}}{{end}}>;

{{- if not .PerItem}}

var<workgroup> lanes: array<State, 256>;
{{- end}}

// rowBase is the input position of row r's first reduced element.
fn rowBase(r: u32) -> i32 {
    var rem = r;
    var idx = bitcast<i32>(p[4]);
    for (var d = i32(p[5]) - 1; d >= 0; d = d - 1) {
        let size = p[8u + u32(d)];
        idx = idx + i32(rem % size) * bitcast<i32>(p[16u + u32(d)]);
        rem = rem / size;
    }
    return idx;
}

// reducedAt is the offset of reduced element j from its row's base.
fn reducedAt(j: u32) -> i32 {
    if (p[6] == 1u) {
        return i32(j) * bitcast<i32>(p[32]);
    }
    var rem = j;
    var idx = 0;
    for (var d = i32(p[6]) - 1; d >= 0; d = d - 1) {
        let size = p[24u + u32(d)];
        idx = idx + i32(rem % size) * bitcast<i32>(p[32u + u32(d)]);
        rem = rem / size;
    }
    return idx;
}

fn load(j: u32, at: u32) -> State {
{{- if eq .Src "partials"}}
    return src[at];
{{- else}}
    return lift(src[at], j);
{{- end}}
}

{{- if .PerItem}}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = item(gid, nwg);
    if (r >= p[0]) {
        return;
    }
    let base = rowBase(r);
    let n = p[1];
    {{- template "pivot" .}}
    {{- template "blocked" "load(j, u32(base + reducedAt(j)))"}}
    dst[r] = finish(acc);
}
{{- else}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = wid.y * nwg.x + wid.x;
    if (w >= p[0] * p[2]) {
        return;
    }
    let start = (w % p[2]) * p[3];
    let end = min(start + p[3], p[1]);
    let base = rowBase(w / p[2]);
    {{- template "pivot" .}}
    var acc = identity();
    for (var j = start + lid; j < end; j = j + WG) {
        acc = combine(acc, load(j, u32(base + reducedAt(j))));
    }
    lanes[lid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            lanes[lid] = combine(lanes[lid], lanes[lid + s]);
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
{{- if eq .Dst "partials"}}
        dst[w] = lanes[0];
{{- else}}
        dst[w] = finish(lanes[0]);
{{- end}}
    }
}
{{- end}}
{{end}}

{{/*
pivot: in var and std's main over a tensor, sets the kernel's pivot to
the row's first element (the row at base; lift subtracts it); nothing for
the other reductions, and for a second pass, whose States are already
shifted.
*/}}
{{define "pivot"}}
{{- if and (or (eq .Op "var") (eq .Op "std")) (eq .Src "tensor")}}
    if (p[1] > 0u) {
        pivot = load(0u, u32(base + reducedAt(0u))).mean;
    }
{{- end}}
{{- end}}

{{/*
reduceState: the State of .Op over elements of .T, and the helpers on
floats that do not trust the compiler with NaN and infinity: WGSL lets an
implementation assume finite floats, so NaN tests read the bits.
*/}}
{{define "reduceState"}}
// NaN and the infinities come from bits at run time: a constant
// expression may not be one (WGSL refuses the shader).
var<private> NAN_BITS: u32 = 0x7fc00000u;
var<private> INF_BITS: u32 = 0x7f800000u;

fn nan() -> f32 {
    return bitcast<f32>(NAN_BITS);
}

fn inf() -> f32 {
    return bitcast<f32>(INF_BITS);
}

// t_lt, t_eq, t_add and t_mul are <, ==, + and * of .T: int64.wgsl's for
// int64, whose sums and products wrap as the cpu's do.
{{- if eq .T "vec2<u32>"}}
{{template "int64"}}
fn t_lt(a: {{.T}}, b: {{.T}}) -> bool { return i64_lt(a, b); }
fn t_eq(a: {{.T}}, b: {{.T}}) -> bool { return i64_eq(a, b); }
fn t_add(a: {{.T}}, b: {{.T}}) -> {{.T}} { return i64_add(a, b); }
fn t_mul(a: {{.T}}, b: {{.T}}) -> {{.T}} { return i64_mul(a, b); }
fn t_of(v: i32) -> {{.T}} { return i64_of_i32(v); }
{{- else}}
fn t_lt(a: {{.T}}, b: {{.T}}) -> bool { return a < b; }
fn t_eq(a: {{.T}}, b: {{.T}}) -> bool { return a == b; }
fn t_add(a: {{.T}}, b: {{.T}}) -> {{.T}} { return a + b; }
fn t_mul(a: {{.T}}, b: {{.T}}) -> {{.T}} { return a * b; }
fn t_of(v: i32) -> {{.T}} { return {{.T}}(v); }
{{- end}}

fn isNaN(x: {{.T}}) -> bool {
{{- if eq .T "f32"}}
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
{{- else}}
    return false;
{{- end}}
}

// notFinite is true for NaN and both infinities.
fn notFinite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) == 0x7f800000u;
}

// lowest and highest are the identities of max and min.
{{- if eq .T "f32"}}
fn lowest() -> f32 {
    return -inf();
}

fn highest() -> f32 {
    return inf();
}
{{- else if eq .T "i32"}}
fn lowest() -> i32 {
    return bitcast<i32>(0x80000000u);
}

fn highest() -> i32 {
    return 0x7fffffff;
}
{{- else}}
fn lowest() -> {{.T}} {
    return vec2<u32>(0u, 0x80000000u);
}

fn highest() -> {{.T}} {
    return vec2<u32>(0xffffffffu, 0x7fffffffu);
}
{{- end}}

{{- if or (eq .Op "sum") (eq .Op "prod") (eq .Op "max") (eq .Op "min")}}
alias State = {{.T}};

fn lift(x: {{.T}}, j: u32) -> State {
    return x;
}

fn finish(s: State) -> {{.OutT}} {
    return s;
}
{{- end}}

{{- if eq .Op "sum"}}
// Floats add in f32 (the cpu adds in float64); int32 adds wrap, which
// is the int64 sum the cpu computes rounded to int32, exactly; int64 adds
// carry and wrap, as the cpu's.
fn identity() -> State {
    return t_of(0);
}

fn combine(a: State, b: State) -> State {
    return t_add(a, b);
}
{{- end}}

{{- if eq .Op "prod"}}
fn identity() -> State {
    return t_of(1);
}

fn combine(a: State, b: State) -> State {
    return t_mul(a, b);
}
{{- end}}

{{- if or (eq .Op "max") (eq .Op "min")}}
// A NaN anywhere is the result, as in torch.amax.
fn identity() -> State {
    return {{if eq .Op "max"}}lowest(){{else}}highest(){{end}};
}

fn combine(a: State, b: State) -> State {
    if (isNaN(a)) {
        return a;
    }
    if (isNaN(b)) {
        return b;
    }
    return select(b, a, !t_lt({{if eq .Op "max"}}a, b{{else}}b, a{{end}}));
}
{{- end}}

{{- if or (eq .Op "argmax") (eq .Op "argmin")}}
// The first index of the extreme, where NaN is both the largest and the
// smallest value (the first NaN wins), as in PyTorch. The identity's index
// is past every real one, so a real element always beats it.
struct State {
    v: {{.T}},
    i: u32,
}

fn identity() -> State {
    return State({{if eq .Op "argmax"}}lowest(){{else}}highest(){{end}}, 0xffffffffu);
}

fn lift(x: {{.T}}, j: u32) -> State {
    return State(x, j);
}

// wins says whether a is the result of combining a and b.
fn wins(a: State, b: State) -> bool {
    let an = isNaN(a.v);
    let bn = isNaN(b.v);
    if (an || bn) {
        return select(an, a.i <= b.i, an && bn);
    }
    if (t_eq(a.v, b.v)) {
        return a.i <= b.i;
    }
    return t_lt({{if eq .Op "argmax"}}b.v, a.v{{else}}a.v, b.v{{end}});
}

fn combine(a: State, b: State) -> State {
    if (wins(a, b)) {
        return a;
    }
    return b;
}

fn finish(s: State) -> {{.OutT}} {
{{- if eq .OutT "vec2<u32>"}}
    return vec2<u32>(s.i, 0u);
{{- else}}
    return {{.OutT}}(s.i);
{{- end}}
}
{{- end}}

{{- if or (eq .Op "var") (eq .Op "std")}}
// Count, mean and sum of squared deviations, combined by Chan, Golub and
// LeVeque's pairwise update ("Updating formulae and a pairwise algorithm
// for computing sample variances", 1979), in f32; the cpu's two passes in
// float64 give the same value to f32's precision. An infinite or NaN
// element makes the result NaN, as its deviation from the mean is on the
// cpu.
struct State {
    n: f32,
    mean: f32,
    m2: f32,
}

// pivot is subtracted from every element before it is lifted: the row's
// first element (template "pivot"), so that the means the combines carry
// are of the deviations from it, as small as the spread of the row, rather
// than of the elements. A mean of 1000 rounds to 6e-5, which the pairwise
// update's d² then carries into m2: [1000.5, 1000.25, 1000, 1001, 999] had
// a variance of 0.4400077 for torch's 0.44. The variance does not depend on
// the shift; the States' means (never read past finish) do.
var<private> pivot: f32 = 0.0;

fn identity() -> State {
    return State(0.0, 0.0, 0.0);
}

fn lift(x: f32, j: u32) -> State {
    return State(1.0, x - pivot, select(0.0, nan(), notFinite(x)));
}

fn combine(a: State, b: State) -> State {
    if (a.n == 0.0) {
        return b;
    }
    if (b.n == 0.0) {
        return a;
    }
    let n = a.n + b.n;
    let d = b.mean - a.mean;
    return State(n, a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * (b.n / n)));
}

// finish divides by n - correction; a divisor of 0 or less gives NaN for
// a zero (or NaN) sum and +inf otherwise, as float division by zero does on
// the cpu.
fn finish(s: State) -> f32 {
    let div = s.n - f32(p[7]);
    var v = s.m2 / max(div, 1.0);
    if (div <= 0.0) {
        v = select(inf(), nan(), !(s.m2 > 0.0));
    }
{{- if eq .Op "std"}}
    return sqrt(v);
{{- else}}
    return v;
{{- end}}
}
{{- end}}

{{- if eq .Op "logsumexp"}}
{{template "math"}}
// The running maximum m and the sum s of exp(x - m), rescaled when m grows
// (the streaming form of the max-shifted sum, so that no exp overflows),
// with math.wgsl's expf and logf, as softmax has them.
// -inf elements add nothing (s = 0 is the identity); a NaN or +inf maximum
// is the result itself, and no elements (or only -inf) give -inf, as in
// torch.logsumexp.
struct State {
    m: f32,
    s: f32,
}

fn identity() -> State {
    return State(lowest(), 0.0);
}

fn lift(x: f32, j: u32) -> State {
    if (x == lowest()) {
        return identity();
    }
    return State(x, 1.0);
}

fn combine(a: State, b: State) -> State {
    if (a.s == 0.0) {
        return b;
    }
    if (b.s == 0.0) {
        return a;
    }
    if (isNaN(a.m)) {
        return a;
    }
    if (isNaN(b.m)) {
        return b;
    }
    let m = select(b.m, a.m, a.m >= b.m);
    if (m == inf()) {
        return State(m, 1.0);
    }
    return State(m, a.s * expf(a.m - m) + b.s * expf(b.m - m));
}

fn finish(s: State) -> f32 {
    if (s.s == 0.0) {
        return lowest();
    }
    if (notFinite(s.m)) {
        return s.m;
    }
    return s.m + logf(s.s);
}
{{- end}}
{{end}}

{{/*
cumsum: the running sums of each line along the dim, one workgroup per
line. Lane l scans the l-th chunk of ceil(len / 256) consecutive elements
twice: once for its total, and, after an inclusive scan of the 256 totals
in workgroup memory (Hillis and Steele's doubling), once more from the
total of the chunks before it, writing each sum. Floats add in f32 (the cpu
adds in float64), int32 wraps as the cpu's int64 sum rounded to int32 does,
int64 carries and wraps as the cpu's.

Many short lines would leave most of such a workgroup idle; with .PerItem
each invocation scans one line in order instead.

Data: .T is the element type (f32, i32, or vec2<u32> for int64); .PerItem
the invocation-per-line form.

Launch: workgroup w (w = wid.y * nwg.x + wid.x; at or past p[0] return) is
line w, the row-major index over every dim but the scanned one; with
.PerItem, item w (the prelude's numbering; at or past p[0] return) is.
Parameters are the line layout (ops_reduce.go, lineParams):
  p[0] lines, p[1] len, p[2] input offset, p[3] input step along the dim,
  p[4] output step along the dim, p[5] the other dims' rank,
  p[6..14) their shape, p[14..22) their input strides, p[22..30) their
  output strides (i32). The output is contiguous at element 0.
*/}}
{{define "cumsum"}}{{template "prelude" .}}
{{template "lines" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{.T}}>;
@group(0) @binding(2) var<storage, read> src: array<{{.T}}>;

// add and zero are + and 0 of .T: int64.wgsl's for int64, which carries.
{{- if eq .T "vec2<u32>"}}
{{template "int64"}}
fn add(a: {{.T}}, b: {{.T}}) -> {{.T}} { return i64_add(a, b); }
{{- else}}
fn add(a: {{.T}}, b: {{.T}}) -> {{.T}} { return a + b; }
{{- end}}
fn zero() -> {{.T}} { return {{.T}}(); }

{{- if .PerItem}}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = item(gid, nwg);
    if (w >= p[0]) {
        return;
    }
    let xs = bitcast<i32>(p[3]);
    let os = bitcast<i32>(p[4]);
    let line = lineBase(w);
    var acc = zero();
    for (var j = 0u; j < p[1]; j = j + 1u) {
        acc = add(acc, src[u32(line.x + i32(j) * xs)]);
        dst[u32(line.y + i32(j) * os)] = acc;
    }
}
{{- else}}
var<workgroup> totals: array<{{.T}}, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = wid.y * nwg.x + wid.x;
    if (w >= p[0]) {
        return;
    }
    let n = p[1];
    let chunk = (n + WG - 1u) / WG;
    let lo = min(lid * chunk, n);
    let hi = min(lo + chunk, n);
    let xs = bitcast<i32>(p[3]);
    let os = bitcast<i32>(p[4]);
    let line = lineBase(w);
    var t = zero();
    for (var j = lo; j < hi; j = j + 1u) {
        t = add(t, src[u32(line.x + i32(j) * xs)]);
    }
    totals[lid] = t;
    workgroupBarrier();
    for (var off = 1u; off < WG; off = off * 2u) {
        var v = totals[lid];
        if (lid >= off) {
            v = add(v, totals[lid - off]);
        }
        workgroupBarrier();
        totals[lid] = v;
        workgroupBarrier();
    }
    var acc = select(zero(), totals[max(lid, 1u) - 1u], lid > 0u);
    for (var j = lo; j < hi; j = j + 1u) {
        acc = add(acc, src[u32(line.x + i32(j) * xs)]);
        dst[u32(line.y + i32(j) * os)] = acc;
    }
}
{{- end}}
{{end}}

{{/*
blocked: acc, the combination of the terms for j < n (the dot: a WGSL
expression in j), in blocks of 8 within blocks of 64, each combined into
the one above: a float32 sum's error then grows with 16 + n/64 rather
than n, near the workgroup tree's (a CPU adapter takes rows of thousands
one invocation each). The kernel defines identity() and combine(a, b).
*/}}
{{define "blocked"}}
    var acc = identity();
    for (var j0 = 0u; j0 < n; j0 = j0 + 64u) {
        var block = identity();
        for (var j1 = j0; j1 < min(j0 + 64u, n); j1 = j1 + 8u) {
            var part = identity();
            for (var j = j1; j < min(j1 + 8u, n); j = j + 1u) {
                part = combine(part, {{.}});
            }
            block = combine(block, part);
        }
        acc = combine(acc, block);
    }
{{- end}}

{{/*
lines: lineBase, the input (x) and output (y) positions of line w's first
element under the line layout of cumsum and softmax.
*/}}
{{define "lines"}}
fn lineBase(w: u32) -> vec2<i32> {
    var rem = w;
    var at = vec2<i32>(bitcast<i32>(p[2]), 0);
    for (var d = i32(p[5]) - 1; d >= 0; d = d - 1) {
        let size = p[6u + u32(d)];
        let c = i32(rem % size);
        rem = rem / size;
        at = at + c * vec2<i32>(bitcast<i32>(p[14u + u32(d)]), bitcast<i32>(p[22u + u32(d)]));
    }
    return at;
}
{{end}}
