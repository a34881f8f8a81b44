{{/*
int64: the 64-bit integer arithmetic of every kernel that meets an int64
tensor. WGSL has no 64-bit integers, so an int64 is a vec2<u32>: x the low
word, y the high word, in two's complement. That is the host's
little-endian int64 byte for byte, so an upload or a read-back is a plain
copy, and a buffer of int64s binds as array<vec2<u32>> (8-byte elements,
indexed by element as every other dtype).

Each function is Go's (and PyTorch's) int64 operation: add, sub, neg and
mul wrap modulo 2⁶⁴; a conversion to int32 keeps the low word (wraps); a
conversion to float32 rounds to nearest, ties to even, as Go's float32(v)
and x86's cvtsi2ss do; a conversion from float32 truncates toward zero and
gives the most negative int64 for NaN and for what truncates outside
int64's range, as the cpu's floatToInt64 (backends/cpu/cast.go).

A kernel includes it with {{template "int64"}}, once, after the prelude.
The kernel must not declare any name declared here (i64_*, u64_*,
u32_mul_wide).
*/}}
{{define "int64"}}
fn i64_of_i32(v: i32) -> vec2<u32> {
    return vec2<u32>(bitcast<u32>(v), select(0u, 0xffffffffu, v < 0));
}

fn i64_of_u32(v: u32) -> vec2<u32> {
    return vec2<u32>(v, 0u);
}

fn i64_of_bool(b: bool) -> vec2<u32> {
    return vec2<u32>(select(0u, 1u, b), 0u);
}

// i64_to_i32 wraps: the low word, as Go's int32(v).
fn i64_to_i32(a: vec2<u32>) -> i32 {
    return bitcast<i32>(a.x);
}

fn i64_nonzero(a: vec2<u32>) -> bool {
    return (a.x | a.y) != 0u;
}

fn i64_negative(a: vec2<u32>) -> bool {
    return bitcast<i32>(a.y) < 0;
}

// i64_add and i64_sub carry (borrow) from the low word into the high.
fn i64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn i64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}

fn i64_neg(a: vec2<u32>) -> vec2<u32> {
    return i64_sub(vec2<u32>(0u, 0u), a);
}

// u32_mul_wide is the whole 64-bit product of two u32s, from the four
// products of their 16-bit halves (each fits in 32 bits).
fn u32_mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    // Bits 16..48 of the product, before their carry: below 3·2¹⁶.
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi);
}

// i64_mul is the product mod 2⁶⁴: the high words' product lies past it,
// and the cross products count in the high word alone.
fn i64_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = u32_mul_wide(a.x, b.x);
    return vec2<u32>(lo.x, lo.y + a.x * b.y + a.y * b.x);
}

fn i64_eq(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x == b.x && a.y == b.y;
}

// i64_lt orders by the signed high words, then the unsigned low words.
fn i64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
    let ah = bitcast<i32>(a.y);
    let bh = bitcast<i32>(b.y);
    return ah < bh || (ah == bh && a.x < b.x);
}

fn i64_le(a: vec2<u32>, b: vec2<u32>) -> bool {
    return !i64_lt(b, a);
}

fn i64_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(a, b, i64_lt(a, b));
}

fn i64_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(a, b, i64_lt(b, a));
}

// i64_abs wraps at the most negative int64, which is its own negation.
fn i64_abs(a: vec2<u32>) -> vec2<u32> {
    return select(a, i64_neg(a), i64_negative(a));
}

fn i64_sign(a: vec2<u32>) -> vec2<u32> {
    if (i64_negative(a)) {
        return vec2<u32>(0xffffffffu, 0xffffffffu);
    }
    return i64_of_bool(i64_nonzero(a));
}

// u64_shl and u64_shr shift a 64-bit word pair left or right (logically)
// by s < 64 bits; WGSL takes a shift count mod 32, so each word's shift
// stays below 32.
fn u64_shl(a: vec2<u32>, s: u32) -> vec2<u32> {
    if (s == 0u) {
        return a;
    }
    if (s < 32u) {
        return vec2<u32>(a.x << s, (a.y << s) | (a.x >> (32u - s)));
    }
    return vec2<u32>(0u, a.x << (s - 32u));
}

fn u64_shr(a: vec2<u32>, s: u32) -> vec2<u32> {
    if (s == 0u) {
        return a;
    }
    if (s < 32u) {
        return vec2<u32>((a.x >> s) | (a.y << (32u - s)), a.y >> s);
    }
    return vec2<u32>(a.y >> (s - 32u), 0u);
}

// i64_sar shifts an int64 right by s < 64 bits, arithmetically: the s
// bits shifted in are copies of the sign bit, as Go's >> on an int64.
fn i64_sar(a: vec2<u32>, s: u32) -> vec2<u32> {
    let r = u64_shr(a, s);
    if (!i64_negative(a)) {
        return r;
    }
    return r | ~u64_shr(vec2<u32>(0xffffffffu, 0xffffffffu), s);
}

// u64_low_nonzero says whether any of the k < 64 lowest bits of a is set.
fn u64_low_nonzero(a: vec2<u32>, k: u32) -> bool {
    if (k == 0u) {
        return false;
    }
    if (k < 32u) {
        return (a.x & ((1u << k) - 1u)) != 0u;
    }
    if (k == 32u) {
        return a.x != 0u;
    }
    return a.x != 0u || (a.y & ((1u << (k - 32u)) - 1u)) != 0u;
}

// i64_to_f32 rounds |a| to 24 significant bits by hand, to nearest with
// ties to even (the guard bit below the kept ones, and whether any bit
// below it is set), and builds the float from its bits: WGSL does not
// promise how f32(u32) rounds. A round up to 2²⁴ carries into the
// exponent, which is the right float.
fn i64_to_f32(a: vec2<u32>) -> f32 {
    let neg = i64_negative(a);
    let m = select(a, i64_neg(a), neg); // |a| as unsigned (2⁶³ for the most negative)
    if (m.y == 0u && m.x < 0x1000000u) {
        let small = f32(m.x); // below 2²⁴: exact
        return select(small, -small, neg);
    }
    var top = 31u - countLeadingZeros(m.x);
    if (m.y != 0u) {
        top = 63u - countLeadingZeros(m.y);
    }
    let s = top - 23u; // bits dropped, at least 1
    let kept = u64_shr(m, s).x; // in [2²³, 2²⁴)
    let guard = (u64_shr(m, s - 1u).x & 1u) != 0u;
    var bits = ((top + 127u) << 23u) + (kept - 0x800000u);
    if (guard && (u64_low_nonzero(m, s - 1u) || (kept & 1u) != 0u)) {
        bits = bits + 1u;
    }
    return bitcast<f32>(bits | select(0u, 0x80000000u, neg));
}

// i64_of_f32 truncates toward zero from the float's bits: |x| is
// m·2^(e-150) with m its 24-bit significand. |x| ≥ 2⁶³ (exponent field
// 190 and up), the infinities and NaN give the most negative int64.
fn i64_of_f32(x: f32) -> vec2<u32> {
    let b = bitcast<u32>(x);
    let e = (b >> 23u) & 0xffu;
    if (e >= 190u) {
        return vec2<u32>(0u, 0x80000000u);
    }
    if (e < 127u) {
        return vec2<u32>(0u, 0u); // |x| < 1
    }
    let m = (b & 0x7fffffu) | 0x800000u;
    var r = vec2<u32>(m >> (150u - min(e, 150u)), 0u);
    if (e > 150u) {
        r = u64_shl(vec2<u32>(m, 0u), e - 150u);
    }
    return select(r, i64_neg(r), (b & 0x80000000u) != 0u);
}
{{end}}
