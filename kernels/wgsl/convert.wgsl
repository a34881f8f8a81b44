{{/*
convert: moves elements between a narrow dtype and its compute dtype, the
conversion that dispatch.ViaCompute wraps every wgpu kernel in
(backends/wgpu/narrow.go). WGSL has no 8- or 16-bit storage, so a narrow
tensor's elements are packed in u32 words, element e in word e / PER at
bits (e % PER)·BITS, the host's little-endian bytes: float16 and bfloat16
two to a word, int8 and uint8 four. The compute side (f32 or i32, one word
each) is handled as bits too, so that no float arithmetic of the adapter
(flushing subnormals, canonicalising NaN) touches a value: every
conversion below is integer code that gives internal/half's bits. The
conversions themselves are the template "conversions", which
elementwise.wgsl includes too, to read and write narrow tensors in their
words without this kernel's launches.

Data: .Name is the narrow dtype's function prefix below (f16, bf16, i8,
u8, or raw16: a 16-bit float's bits to and from an int32, for
dispatch.ViaBits), .Bits its width (16 or 8), .Widen true for narrow →
compute and false for compute → narrow.

Params: p[0] the work items, p[1] dst's element offset, p[2] src's, p[3]
the number of elements n.

Launch: ITEM_ELEMENTS items an invocation (the prelude's flat_main).
Widening: one item per element (p[0] = n); item i reads src's element
p[2] + i and writes dst word p[1] + i.
Narrowing: one item per dst word that elements p[1] .. p[1]+n-1 touch
(p[0] = that many words), so that no two invocations write a word;
an item converts the elements of its word that lie in the range and keeps
the bits of the others (a tensor's neighbour in the same buffer, or the
rest of a view), a read-modify-write of the word by the one invocation
that owns it.
*/}}
{{define "convert"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<u32>;

const BITS: u32 = {{.Bits}}u;
const PER: u32 = 32u / BITS;
const MASK: u32 = (1u << BITS) - 1u;

{{template "conversions"}}

// convert_item converts item i.
fn convert_item(i: u32) {
{{- if .Widen}}
    let e = p[2] + i;
    let v = (src[e / PER] >> ((e % PER) * BITS)) & MASK;
    dst[p[1] + i] = {{.Name}}_widen(v);
{{- else}}
    let lo = p[1];
    let hi = p[1] + p[3];
    let w = lo / PER + i;
    var word = dst[w];
    for (var k = 0u; k < PER; k = k + 1u) {
        let e = w * PER + k;
        if (e >= lo && e < hi) {
            let at = k * BITS;
            word = (word & ~(MASK << at)) | ({{.Name}}_narrow(src[p[2] + e - lo]) << at);
        }
    }
    dst[w] = word;
{{- end}}
}

{{template "flat_main" "convert_item"}}
{{end}}

{{/*
conversions: each narrow dtype's widening to the bits of its compute dtype
and narrowing back, <name>_widen and <name>_narrow, on the element's bits
in the low bits of a u32 and the compute value's bits.
*/}}
{{define "conversions"}}
const F32_INF: u32 = 0x7f800000u;
const F32_QUIET: u32 = 0x00400000u;

// f16_widen is float16 h's float32 bits, exactly: a subnormal becomes a
// normal float32, a NaN keeps its payload and is quieted
// (half.Float16ToFloat32).
fn f16_widen(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0x1fu) {
        if (m == 0u) {
            return sign | F32_INF;
        }
        return sign | F32_INF | F32_QUIET | (m << 13u);
    }
    if (e == 0u) {
        if (m == 0u) {
            return sign;
        }
        // m·2^-24 with its leading 1 at bit q: 2^(q-24)·1.rest.
        let q = firstLeadingBit(m);
        return sign | ((q + 103u) << 23u) | ((m << (23u - q)) & 0x7fffffu);
    }
    // Rebias the exponent from 15 to 127: add 112 << 23.
    return sign | ((((e << 10u) | m) << 13u) + 0x38000000u);
}

// f16_narrow rounds float32 bits f to the nearest float16, ties to even
// (half.Float16FromFloat32): past 65520 to Inf, below 2^-14 to a
// subnormal, a NaN quiet with its payload's top bits.
fn f16_narrow(f: u32) -> u32 {
    let sign = (f >> 16u) & 0x8000u;
    var b = f & 0x7fffffffu;
    if (b > F32_INF) {
        return sign | 0x7e00u | ((b >> 13u) & 0x3ffu);
    }
    if (b >= 0x477ff000u) {
        return sign | 0x7c00u;
    }
    if (b >= 0x38800000u) {
        // Add just under half an ulp, plus one where the kept part is
        // odd: the carry reaches the kept bits exactly when they round up.
        b = b - 0x38000000u;
        b = b + 0x0fffu + ((b >> 13u) & 1u);
        return sign | (b >> 13u);
    }
    if (b <= 0x33000000u) {
        return sign;
    }
    // A subnormal m·2^-24: the 24-bit significand s shifted right by
    // 126 - e (14 .. 24), rounded to nearest even; m may reach 1024,
    // which is the bits of the smallest normal.
    let s = (b & 0x7fffffu) | 0x800000u;
    let shift = 126u - (b >> 23u);
    var m = s >> shift;
    let rest = s & ((1u << shift) - 1u);
    let mid = 1u << (shift - 1u);
    if (rest > mid || (rest == mid && (m & 1u) == 1u)) {
        m = m + 1u;
    }
    return sign | m;
}

// raw16_widen and raw16_narrow carry a 16-bit float's bits in an int32 and
// back (dispatch.ViaBits, for the kernels that move elements): every
// pattern as it is, a signalling NaN too.
fn raw16_widen(h: u32) -> u32 {
    return h;
}

fn raw16_narrow(b: u32) -> u32 {
    return b & 0xffffu;
}

// bf16_widen is bfloat16 h's float32 bits: its own top half, a NaN
// quieted (half.BFloat16ToFloat32).
fn bf16_widen(h: u32) -> u32 {
    let b = h << 16u;
    if ((b & 0x7fffffffu) > F32_INF) {
        return b | F32_QUIET;
    }
    return b;
}

// bf16_narrow rounds float32 bits f to the nearest bfloat16, ties to even
// (half.BFloat16FromFloat32); a NaN is tested first, since the rounding
// add could carry its payload into the exponent.
fn bf16_narrow(f: u32) -> u32 {
    if ((f & 0x7fffffffu) > F32_INF) {
        return (f >> 16u) | 0x40u;
    }
    return (f + 0x7fffu + ((f >> 16u) & 1u)) >> 16u;
}

// The 8-bit integers widen by sign or zero extension and narrow by
// keeping the low 8 bits, two's complement wrapping as PyTorch's.
fn i8_widen(v: u32) -> u32 {
    return bitcast<u32>(bitcast<i32>(v << 24u) >> 24u);
}

fn i8_narrow(v: u32) -> u32 {
    return v & 0xffu;
}

fn u8_widen(v: u32) -> u32 {
    return v;
}

fn u8_narrow(v: u32) -> u32 {
    return v & 0xffu;
}
{{end}}
