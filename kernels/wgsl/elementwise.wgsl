{{/*
elementwise: out[i] = Expr(args at i), for the unary ops, the binary ops
and where. Data:
  .Out        the WGSL type of out (f32, i32, vec2<u32> for int64, u32 for
              bool);
  .Args       the arguments: .Name (the name Expr reads it by), .Type,
              .Binding, .Layout and .Base, the index of its layout words;
  .Expr       the op's WGSL expression of the arguments (the table in
              backends/wgpu/ops_elementwise.go).
An argument's .Layout is "flat" where it is contiguous with out's shape
(element i is at its offset + i), "scalar" where it has one element (at its
offset), and "strided" otherwise.

Launch: one item per output element; out contiguous at element 0 of its
buffer (binding 1); argument k at binding 2+k, with the strided layout of
argument k (prelude), broadcast to out's shape. The op's attributes are the
words after the layout, from p[10 + 9·len(Args)]: attr_f32(j) and
attr_i32(j) read word j of them.

The float functions the table's expressions call (expf, powf, erff, ...)
are math.wgsl's, the int64 ones (i64_add, i64_lt, ...) int64.wgsl's; powi
and clampi, for int32, and powl and clampl, for int64, are here.
*/}}
{{define "elementwise"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{.Out}}>;
{{range .Args}}@group(0) @binding({{.Binding}}) var<storage, read> arg_{{.Name}}: array<{{.Type}}>;
{{end}}
const ATTRS: u32 = {{.AttrBase}}u;

fn attr_f32(j: u32) -> f32 { return bitcast<f32>(p[ATTRS + j]); }
fn attr_i32(j: u32) -> i32 { return bitcast<i32>(p[ATTRS + j]); }

{{template "math"}}
{{template "int64"}}
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

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = item(gid, nwg);
    if (i >= p[0]) {
        return;
    }
{{- range $k, $a := .Args}}
    let {{$a.Name}} = arg_{{$a.Name}}[
        {{- if eq $a.Layout "flat"}}p[{{$a.Base}}u] + i
        {{- else if eq $a.Layout "scalar"}}p[{{$a.Base}}u]
        {{- else}}strided({{$k}}u, i){{end}}];
{{- end}}
    dst[i] = {{.Expr}};
}
{{end}}
