{{/*
elementwise: out[i] = Expr(args at i), for the unary ops, the binary ops
and where. Data:
  .Out        the WGSL type of Expr: out's own (f32, i32, vec2<u32> for
              int64, u32 for bool), or for a narrow out the type it
              computes in (f32 for float16 and bfloat16, i32 for int8 and
              uint8);
  .OutNarrow  for a narrow out, the prefix of its conversions (f16, bf16,
              i8, u8: convert.wgsl's "conversions"), and .OutBits its
              width; "" otherwise;
  .Args       the arguments: .Name (the name Expr reads it by), .Type (the
              WGSL type Expr sees), .Narrow and .Bits (as .OutNarrow and
              .OutBits, for an argument stored packed), .Binding, .Layout
              and .Base, the index of its layout words;
  .Expr       the op's WGSL expression of the arguments (the table in
              backends/wgpu/ops_elementwise.go);
  .Conversions whether any tensor is narrow, so that the shader needs
              convert.wgsl's conversions;
  .Gamma      whether Expr calls gamma.wgsl's functions, .Igamma
              igamma.wgsl's (which call gamma.wgsl's), .OrthoPoly
              orthopoly.wgsl's and .Airy airy.wgsl's.
An argument's .Layout is "flat" where it is contiguous with out's shape
(element i is at its offset + i), "scalar" where it has one element (at its
offset), and "strided" otherwise.

A narrow tensor is packed in u32 words as convert.wgsl keeps it (element e
in word e / (32 / bits), from bit (e % (32 / bits))·bits). An argument's
element is widened exactly where it is read, and a narrow out's value is
Expr's rounded once (convert's narrowing): the bits of
dispatch.ViaCompute's launches, convert's around this kernel's, in one.

Launch: out contiguous at element 0 of its buffer (binding 1), which
dispatch allocates; p[0] its number of elements n. An item per
ITEM_ELEMENTS output elements (the prelude's flat_main). For a narrow out,
one item per word of out, ceil(n / (32 / bits)) items: an item computes
the elements of its word and writes the word whole, so that no two
invocations write one word, and the bits past element n - 1 of the last
word zero. Argument k at binding 2+k, with the
strided layout of argument k (prelude), broadcast to out's shape. The op's
attributes are the words after the layout, from p[10 + 9·len(Args)]:
attr_f32(j) and attr_i32(j) read word j of them.

The float functions the table's expressions call (expf, powf, erff, ...)
are math.wgsl's, the int64 ones (i64_add, i64_lt, ...) int64.wgsl's; powi,
clampi, fmodi and remainderi, for int32, and powl, clampl, fmodl and remainderl, for
int64, are here.
*/}}
{{define "elementwise"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{if .OutNarrow}}u32{{else}}{{.Out}}{{end}}>;
{{range .Args}}@group(0) @binding({{.Binding}}) var<storage, read> arg_{{.Name}}: array<{{if .Narrow}}u32{{else}}{{.Type}}{{end}}>;
{{end}}
const ATTRS: u32 = {{.AttrBase}}u;

fn attr_f32(j: u32) -> f32 { return bitcast<f32>(p[ATTRS + j]); }
fn attr_i32(j: u32) -> i32 { return bitcast<i32>(p[ATTRS + j]); }

{{template "math"}}
{{- if .Gamma}}
{{template "gamma"}}
{{- end}}
{{- if .Igamma}}
{{template "igamma"}}
{{- end}}
{{- if .OrthoPoly}}
{{template "orthopoly"}}
{{- end}}
{{- if .Airy}}
{{template "airy"}}
{{- end}}
{{template "int64"}}
{{- if .Conversions}}
{{template "conversions"}}
{{- end}}
// powi is integer power by squaring, wrapping as the cpu's does; negative
// exponents are refused before the launch.
fn powi(a: i32, b: i32) -> i32 {
    var r = 1;
    var base = a;
    var e = b;
    loop {
        if (e <= 0) {
            break;
        }
        if ((e & 1) != 0) {
            r = r * base;
        }
        base = base * base;
        e = e >> 1u;
    }
    return r;
}

// fmodi and remainderi are fmod and remainder of int32s: % truncates, as
// C's does, and remainder moves a remainder whose sign is not b's by b
// (ATen's rule). A zero b is refused before the launch; WGSL's % gives a
// defined value for it and for the least int32 over -1, never a trap.
fn fmodi(a: i32, b: i32) -> i32 {
    return select(a % b, 0, b == 0 || b == -1);
}

fn remainderi(a: i32, b: i32) -> i32 {
    let m = fmodi(a, b);
    return select(m, m + b, m != 0 && ((b < 0) != (m < 0)));
}

// floordivi is a / b rounded down (Python's //) of int32s, as the cpu's
// floorDivide: WGSL's / truncates, and a nonzero remainder whose sign is
// not b's takes one off. A zero b is refused before the launch (0 here);
// the least int32 over -1 wraps to itself.
fn floordivi(a: i32, b: i32) -> i32 {
    if (b == 0) {
        return 0;
    }
    if (b == -1) {
        return 0 - a;
    }
    let q = a / b;
    let r = a - q * b;
    return select(q, q - 1, r != 0 && ((r < 0) != (b < 0)));
}

// gcdi is torch's calc_gcd of int32s: Euclid's algorithm on |a| and |b|
// (abs wraps at the least int32, as torch's). 47 steps finish any pair of
// int32s (Fibonacci's are the slowest); the bound keeps a kernel finite.
fn gcdi(x: i32, y: i32) -> i32 {
    var a = abs(x);
    var b = abs(y);
    for (var i = 0; i < 100 && a != 0; i++) {
        let c = a;
        a = fmodi(b, a);
        b = c;
    }
    return b;
}

// U64DivMod is a quotient and a remainder of unsigned 64-bit words.
struct U64DivMod {
    q: vec2<u32>,
    r: vec2<u32>,
}

// u64_divmod divides x by d != 0, both unsigned 64-bit words, by long
// division, a bit of x at a time from the top: the partial remainder stays
// below d, and |an int64| ≤ 2⁶³, so for the int64s' magnitudes doubling it
// never overflows.
fn u64_divmod(x: vec2<u32>, d: vec2<u32>) -> U64DivMod {
    var q = vec2<u32>(0u, 0u);
    var r = vec2<u32>(0u, 0u);
    for (var k = 63u; k < 64u; k--) {
        let w = select(x.x, x.y, k >= 32u);
        r = u64_shl(r, 1u);
        r.x = r.x | ((w >> (k & 31u)) & 1u);
        q = u64_shl(q, 1u);
        if (!(r.y < d.y || (r.y == d.y && r.x < d.x))) {
            r = i64_sub(r, d);
            q.x = q.x | 1u;
        }
    }
    return U64DivMod(q, r);
}

// fmodl, remainderl and floordivl are fmodi, remainderi and floordivi of
// int64s, from the long division of |a| by |b| (unsigned, so the least
// int64 is 2⁶³) with the signs put back.
fn fmodl(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (!i64_nonzero(b)) {
        return vec2<u32>(0u, 0u);
    }
    let r = u64_divmod(i64_abs(a), i64_abs(b)).r;
    return select(r, i64_neg(r), i64_negative(a));
}

fn floordivl(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (!i64_nonzero(b)) {
        return vec2<u32>(0u, 0u);
    }
    let qr = u64_divmod(i64_abs(a), i64_abs(b));
    let differ = i64_negative(a) != i64_negative(b);
    let q = select(qr.q, i64_neg(qr.q), differ);
    return select(q, i64_sub(q, vec2<u32>(1u, 0u)), differ && i64_nonzero(qr.r));
}

// gcdl is gcdi of int64s; 93 steps finish any pair.
fn gcdl(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
    var a = i64_abs(x);
    var b = i64_abs(y);
    for (var i = 0; i < 100 && i64_nonzero(a); i++) {
        let c = a;
        a = fmodl(b, a);
        b = c;
    }
    return b;
}

fn remainderl(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let m = fmodl(a, b);
    return select(m, i64_add(m, b), i64_nonzero(m) && (i64_negative(b) != i64_negative(m)));
}

// powl is powi of int64s (int64.wgsl's wrapping products), over the bits
// of the exponent.
fn powl(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    var r = vec2<u32>(1u, 0u);
    var base = a;
    var e = b;
    loop {
        if (i64_negative(e) || !i64_nonzero(e)) {
            break;
        }
        if ((e.x & 1u) != 0u) {
            r = i64_mul(r, base);
        }
        base = i64_mul(base, base);
        e = u64_shr(e, 1u);
    }
    return r;
}

// clampi is clamp of an int: attribute words 0 and 1 are the bounds
// ceil(lo) and floor(hi), word 2 has bit 0 set where every x is below lo
// and bit 1 where every x is above hi (bounds past int32's range).
fn clampi(x: i32) -> i32 {
    let lo = attr_i32(0);
    let hi = attr_i32(1);
    let always = p[ATTRS + 2u];
    if (x < lo || (always & 1u) != 0u) {
        return lo;
    }
    if (x > hi || (always & 2u) != 0u) {
        return hi;
    }
    return x;
}

// clampl is clampi of an int64 (attribute words: lo and hi, two words
// each, low first, then the word of bounds past int64's range).
fn clampl(x: vec2<u32>) -> vec2<u32> {
    let lo = vec2<u32>(p[ATTRS], p[ATTRS + 1u]);
    let hi = vec2<u32>(p[ATTRS + 2u], p[ATTRS + 3u]);
    let always = p[ATTRS + 4u];
    if (i64_lt(x, lo) || (always & 1u) != 0u) {
        return lo;
    }
    if (i64_lt(hi, x) || (always & 2u) != 0u) {
        return hi;
    }
    return x;
}

{{range $k, $a := .Args}}
// read_{{$a.Name}} is argument {{$k}}'s element for output element i.
fn read_{{$a.Name}}(i: u32) -> {{$a.Type}} {
    let e = {{if eq $a.Layout "flat"}}p[{{$a.Base}}u] + i
        {{- else if eq $a.Layout "scalar"}}p[{{$a.Base}}u]
        {{- else}}strided({{$k}}u, i){{end}};
{{- if $a.Narrow}}
    let per = 32u / {{$a.Bits}}u;
    let bits = (arg_{{$a.Name}}[e / per] >> ((e % per) * {{$a.Bits}}u)) & ((1u << {{$a.Bits}}u) - 1u);
    return bitcast<{{$a.Type}}>({{$a.Narrow}}_widen(bits));
{{- else}}
    return arg_{{$a.Name}}[e];
{{- end}}
}
{{end}}
// value is Expr at output element i.
fn value(i: u32) -> {{.Out}} {
{{- range .Args}}
    let {{.Name}} = read_{{.Name}}(i);
{{- end}}
    return {{.Expr}};
}

{{- if .OutNarrow}}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    let per = 32u / {{.OutBits}}u;
    if (i * per >= p[0]) {
        return;
    }
    var word = 0u;
    for (var k = 0u; k < per; k = k + 1u) {
        if (i * per + k < p[0]) {
            word = word | ({{.OutNarrow}}_narrow(bitcast<u32>(value(i * per + k))) << (k * {{.OutBits}}u));
        }
    }
    dst[i] = word;
}
{{- else}}
fn write_element(i: u32) {
    dst[i] = value(i);
}
{{template "flat_main" "write_element"}}
{{- end}}
{{end}}
