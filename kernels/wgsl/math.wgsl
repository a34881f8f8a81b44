{{/*
math: float32 functions for every kernel that needs exp, log, pow, sin,
cos, tan, erf, tanh, fmod or the inverse and hyperbolic trigonometric functions, written out rather than WGSL's builtins: WebGPU lacks
erf, expm1 and log1p; it allows exp, log, sin, cos and atan2 errors of
thousands of ulp (lavapipe's are 56 to 350 ulp, and sin and cos lose every
digit past 1e5), leaves atan2 of zeros and pow of a negative base
undefined, and a tanh from exp loses its digits near 0. Each here is within
4 ulp of the exact result over the inputs, from 1e-38 to 1e38, that
backends/wgpu/ops_elementwise_test.go sweeps. They use no fma, which WGSL
does not promise to fuse, and keep their error terms from the compiler's
reassociation (opaque).

A kernel includes it with {{template "math"}}, once, after the prelude:
the functions read the prelude's parameter word p[0] (the special values
and opaque's hidden zero), which is never 0 in a launch. The kernel must
not declare any name declared here.
*/}}
{{define "math"}}
// The special values come from a parameter word, so that they are not
// constant expressions, which WGSL forbids to be infinite or NaN.
fn inf_f32() -> f32 { return bitcast<f32>(0x7f800000u | (p[0] & 0u)); }
fn nan_f32() -> f32 { return bitcast<f32>(0x7fc00000u | (p[0] & 0u)); }

// is_nan and is_inf read the bits: a comparison of x with itself may be
// folded away by a compiler that assumes no NaN.
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }

// expf: exp(x) = 2ⁿ·exp(r), n = round(x/ln2), r = x - n·ln2 by Cody and
// Waite's split of ln2 (its high part has 12 bits, so n·hi and x - n·hi
// are exact), exp(r) for |r| ≤ ln2/2 by its Taylor series to r⁸
// (truncation below 3e-10). Results below float32's least normal are 0,
// as GPUs flush subnormals.
fn expf(x: f32) -> f32 {
    if (is_nan(x)) {
        return x;
    }
    if (x >= 88.72283935546875) { // the least float32 whose exp overflows
        return inf_f32();
    }
    if (x < -87.33654475) { // exp(x) < 2⁻¹²⁶
        return 0.0;
    }
    let n = round(x * 1.4426950408889634);
    let r = (x - n * 0.693115234375) - n * 3.1946183298714459e-05;
    return ldexp(exp_reduced(r), i32(n));
}

// exp_reduced is exp(r) for |r| ≤ ln2/2 by its Taylor series to r⁸.
fn exp_reduced(r: f32) -> f32 {
    var q = 1.0 / 40320.0;
    q = q * r + 1.0 / 5040.0;
    q = q * r + 1.0 / 720.0;
    q = q * r + 1.0 / 120.0;
    q = q * r + 1.0 / 24.0;
    q = q * r + 1.0 / 6.0;
    q = q * r + 0.5;
    q = q * r + 1.0;
    return q * r + 1.0;
}

// logf: x = m·2ᵉ with m in [√½, √2) read from the bits (a subnormal's bits
// are its value in units of 2⁻¹⁴⁹), log(m) = 2·atanh(s), s = (m-1)/(m+1),
// |s| ≤ 0.172, by atanh's series to s¹³ (truncation below 1e-11), plus
// e·ln2 in Cody and Waite's two parts.
fn logf(x: f32) -> f32 {
    var bits = bitcast<u32>(x);
    if ((bits & 0x7fffffffu) == 0u) {
        return -inf_f32();
    }
    if (bits >= 0x80000000u) { // negative, or a NaN with its sign bit
        return nan_f32();
    }
    if (bits >= 0x7f800000u) { // +Inf or NaN
        return x;
    }
    var e = 0;
    if (bits < 0x00800000u) {
        bits = bitcast<u32>(f32(bits));
        e = -149;
    }
    e = e + i32(bits >> 23u) - 127;
    var mbits = (bits & 0x007fffffu) | 0x3f800000u; // m in [1, 2)
    if (mbits > 0x3fb504f3u) { // past √2: halve m
        mbits = mbits - 0x00800000u;
        e = e + 1;
    }
    let f = bitcast<f32>(mbits) - 1.0; // exact
    let s = f / (2.0 + f);
    let ef = f32(e);
    return ef * 0.693115234375 + (2.0 * s * atanh_series(s * s) + ef * 3.1946183298714459e-05);
}

// atanh_series is atanh(s)/s as a polynomial in t = s², to s¹²;
// atanh_tail is its part past 1, over t.
fn atanh_series(t: f32) -> f32 { return 1.0 + t * atanh_tail(t); }

fn atanh_tail(t: f32) -> f32 {
    var q = 1.0 / 13.0;
    q = q * t + 1.0 / 11.0;
    q = q * t + 1.0 / 9.0;
    q = q * t + 1.0 / 7.0;
    q = q * t + 1.0 / 5.0;
    return q * t + 1.0 / 3.0;
}

// expm1f: the Taylor series to x⁹ for |x| ≤ 0.5 (truncation below 1e-8
// relative), exp(x) - 1 past it, where no digits cancel.
fn expm1f(x: f32) -> f32 {
    if (!(abs(x) <= 0.5)) {
        return expf(x) - 1.0;
    }
    var s = 1.0 / 362880.0;
    s = s * x + 1.0 / 40320.0;
    s = s * x + 1.0 / 5040.0;
    s = s * x + 1.0 / 720.0;
    s = s * x + 1.0 / 120.0;
    s = s * x + 1.0 / 24.0;
    s = s * x + 1.0 / 6.0;
    s = s * x + 0.5;
    s = s * x + 1.0;
    return s * x;
}

// log1pf: for |x| < 0.5, log(1+x) = 2·atanh(s) with s = x/(2+x), |s| ≤ 1/3,
// by atanh's series to s¹³ (truncation below 2e-8); log(1+x) past it, where
// 1+x is exact (x < -0.5) or its rounding costs under an ulp of the result.
fn log1pf(x: f32) -> f32 {
    if (!(abs(x) < 0.5)) {
        return logf(1.0 + x);
    }
    let s = x / (2.0 + x);
    return 2.0 * s * atanh_series(s * s);
}

// tanhf is -expm1(-2|x|) / (2 + expm1(-2|x|)) with x's sign: no digits
// cancel near 0 and nothing overflows far from it.
fn tanhf(x: f32) -> f32 {
    let e = expm1f(-2.0 * abs(x));
    let t = -e / (2.0 + e);
    return select(t, -t, x < 0.0);
}

// sigmoidf never overflows exp.
fn sigmoidf(x: f32) -> f32 {
    if (x >= 0.0) {
        return 1.0 / (1.0 + expf(-x));
    }
    let e = expf(x);
    return e / (1.0 + e);
}

// siluf is x·sigmoid(x); below -80, where sigmoid(x) nears the subnormals
// that GPUs flush, it is (x·h)·h with h = exp(x/2), whose parts stay
// normal while the result is (1 + exp(x) rounds to 1 there).
fn siluf(x: f32) -> f32 {
    if (x < -80.0) {
        let h = expf(0.5 * x);
        return (x * h) * h;
    }
    return x * sigmoidf(x);
}

// The activations' derivatives, for their backward ops (derivatives.yaml's
// gelu_backward and silu_backward), as the cpu's
// (backends/cpu/activation_backward.go): gelu' = Φ(x) + x·φ(x); with u =
// k(x + c·x³) and t = tanh(u), gelu_tanh' = ½(1 + t) + ½x(1 - t²)·k(1 +
// 3c·x²), taken as p + 2x·p·q·k(1 + 3c·x²) with p = ½(1 + t) = sigmoid(2u)
// and q = ½(1 - t) = sigmoid(-2u), since 1 + t loses digits where t nears
// -1; silu' = s(1 + x(1 - s)), s = sigmoid(x).
fn gelu_grad(x: f32) -> f32 {
    return 0.5 * one_plus_erf(x * 0.70710678118654752) + x * (0.3989422804014327 * expf(-0.5 * x * x));
}

// sigmoids is (sigmoid(w), sigmoid(-w)), both from exp(-|w|), so that
// neither loses digits where the other nears 1.
fn sigmoids(w: f32) -> vec2<f32> {
    let e = expf(-abs(w));
    let big = 1.0 / (1.0 + e);
    let small = e / (1.0 + e);
    return select(vec2<f32>(big, small), vec2<f32>(small, big), w < 0.0);
}

fn gelu_tanh_grad(x: f32) -> f32 {
    let x2 = x * x;
    let s = sigmoids(1.5957691216057308 * (x + 0.044715 * x2 * x));
    // s.x·s.y is 0 once |x| is large, where x·(1 + 0.134145·x²) can
    // overflow: the term is then 0, not 0·inf (NaN).
    let pq = s.x * s.y;
    if (pq == 0.0) {
        return s.x;
    }
    return s.x + 2.0 * x * pq * 0.7978845608028654 * (1.0 + 0.134145 * x2);
}

fn silu_grad(x: f32) -> f32 {
    let s = sigmoids(x);
    return s.x * (1.0 + x * s.y);
}

// erfc_tail is erfc(a) for a ≥ 1: exp(-a²)·h(1/a)/a, with h(s) =
// a·erfc(a)·exp(a²) a least-squares polynomial in s - 0.55 over s in
// [0.1, 1] (relative error 1e-8 in float64, an ulp in float32); past a = 10
// erfc is below float32's least subnormal. exp(-a²) is exp(-hi)·(1 - lo)
// for a² = hi + lo exactly (two_prod): exp of the rounded square would be
// off by its rounding times a², 5e-6 at 9.
fn erfc_tail(a: f32) -> f32 {
    if (a > 10.0) {
        return 0.0;
    }
    let sq = two_prod(a, a);
    let s = 1.0 / a - 0.55;
    var h = 1.153436753e-01;
    h = h * s - 4.844377693e-02;
    h = h * s - 9.386161832e-02;
    h = h * s + 1.058491843e-01;
    h = h * s - 6.082997689e-02;
    h = h * s + 9.622491316e-03;
    h = h * s + 4.988419929e-02;
    h = h * s - 9.691250621e-02;
    h = h * s + 9.835688594e-02;
    h = h * s - 2.036566622e-02;
    h = h * s - 1.700351102e-01;
    h = h * s + 5.023534283e-01;
    return expf(-sq.x) * (1.0 - sq.y) * h / a;
}

// erfc_mid is erfc(a) for a in [1/2, 1), where 1 - erf(a) loses up to
// three bits: exp(-a²)·h(1/a)/a as erfc_tail, h a least-squares
// polynomial in s - 1.5 over s = 1/a in (1, 2] (build/erfc32/fit.py;
// relative error 4e-10 in float64).
fn erfc_mid(a: f32) -> f32 {
    let s = 1.0 / a - 1.5;
    var h = 1.864261735e-04;
    h = h * s - 4.537623218e-04;
    h = h * s + 8.446227243e-04;
    h = h * s - 1.484313124e-03;
    h = h * s + 2.063905403e-03;
    h = h * s - 1.165486987e-03;
    h = h * s - 5.933209493e-03;
    h = h * s + 3.315697430e-02;
    h = h * s - 1.183980212e-01;
    h = h * s + 3.595229385e-01;
    return expf(-a * a) * h / a;
}

// erfcf is erfc(x) = 1 - erf(x), never computed so where it is small:
// erfc_tail from 1 on, erfc_mid from 1/2, 1 - erf_small(x) above -1/2
// (and for NaN), and 2 - erfc(-x) below.
fn erfcf(x: f32) -> f32 {
    let a = abs(x);
    var r = 1.0 - erf_small(a);
    if (a >= 1.0) {
        r = erfc_tail(a);
    } else if (a >= 0.5) {
        r = erfc_mid(a);
    }
    if (x <= -0.5) {
        return 2.0 - r;
    }
    if (x < 0.5) {
        return 1.0 - erf_small(x);
    }
    return r;
}

// erf_small is erf(x) for |x| < 1 by its Taylor series,
// 2/√π · Σ (-1)ⁿ x²ⁿ⁺¹ / (n!(2n+1)), to n = 10 (truncation below 2e-8).
fn erf_small(x: f32) -> f32 {
    let t = x * x;
    var q = 1.0 / 76204800.0;
    q = q * t - 1.0 / 6894720.0;
    q = q * t + 1.0 / 685440.0;
    q = q * t - 1.0 / 75600.0;
    q = q * t + 1.0 / 9360.0;
    q = q * t - 1.0 / 1320.0;
    q = q * t + 1.0 / 216.0;
    q = q * t - 1.0 / 42.0;
    q = q * t + 1.0 / 10.0;
    q = q * t - 1.0 / 3.0;
    q = q * t + 1.0;
    return 1.1283791670955126 * x * q;
}

fn erff(x: f32) -> f32 {
    let a = abs(x);
    if (!(a >= 1.0)) {
        return erf_small(x); // and NaN
    }
    let r = 1.0 - erfc_tail(a);
    return select(r, -r, x < 0.0);
}

// one_plus_erf is 1 + erf(z) without the cancellation of erf near -1.
fn one_plus_erf(z: f32) -> f32 {
    if (z <= -1.0) {
        return erfc_tail(-z);
    }
    return 1.0 + erff(z);
}

// sinf and cosf reduce x by π/2 to r in [-π/4, π/4] and a quadrant, then
// take sin or cos of r by the quadrant. The reduction is Cody and Waite's
// for |x| ≤ 1e5, π/2 split in parts of 8 bits (n·part and the first
// difference exact for n < 2¹⁶), and Payne and Hanek's past it.
fn sinf(x: f32) -> f32 { return sin_quadrant(x, 0); }
fn cosf(x: f32) -> f32 { return sin_quadrant(x, 1); } // cos(x) = sin(x + π/2)

// A reduced argument: x = (n + r/(π/2))·π/2 for an n of quadrant q = n mod 4.
struct Reduced {
    r: f32,
    q: i32,
}

fn reduce_cody_waite(x: f32) -> Reduced {
    let n = round(x * 0.63661977236758134);
    var r = x - n * 1.5703125;
    r = r - n * 0.000484466552734375;
    r = r - n * -6.407499313354492e-07;
    r = r - n * 9.89530235528946e-10;
    r = r - n * 2.5579538487363607e-12;
    r = r - n * 5.390302953474238e-15;
    return Reduced(r, i32(n) & 3);
}

// The bits of 2/π, after a word of zeros (so that every window below
// starts inside the table).
var<private> two_over_pi: array<u32, 9> = array<u32, 9>(0u,
    0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u,
    0xdb629599u, 0x3c439041u, 0xfe5163abu, 0xdebbc561u);

// mul_wide is a·b as (high word, low word), by 16-bit halves.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>(a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u), (mid << 16u) | (p00 & 0xffffu));
}

// window is 32 bits of 2/π from bit j of the table.
fn window(j: u32) -> u32 {
    let w = j / 32u;
    let sh = j % 32u;
    if (sh == 0u) {
        return two_over_pi[w];
    }
    return (two_over_pi[w] << sh) | (two_over_pi[w + 1u] >> (32u - sh));
}

// reduce_payne_hanek reduces a finite a ≥ 2¹⁶ exactly: a = m·2ᴱ with m an
// integer of 24 bits, and a·2/π mod 4 is m times the 96 bits of 2/π from
// bit E-1 on (the earlier bits give multiples of 4), read as a fixed-point
// number with its point after the second bit of the product's second word.
fn reduce_payne_hanek(a: f32) -> Reduced {
    let bits = bitcast<u32>(a);
    let m = (bits & 0x007fffffu) | 0x00800000u;
    let j = (bits >> 23u) - 120u; // bit E - 1 of 2/π, E = exponent - 150, past the zero word
    let w0 = window(j);
    let w1 = window(j + 32u);
    let w2 = window(j + 64u);
    let p2 = mul_wide(m, w2);
    let p1 = mul_wide(m, w1);
    let p0 = mul_wide(m, w0);
    let r2 = p1.y + p2.x;
    let r1 = p0.y + p1.x + select(0u, 1u, r2 < p2.x);
    var q = i32(r1 >> 30u);
    // The fraction, 30 bits of r1 and 32 of r2, to the nearest quadrant.
    var hi = r1 & 0x3fffffffu;
    var lo = r2;
    var sign = 1.0;
    if (hi >= 0x20000000u) {
        q = q + 1;
        sign = -1.0;
        lo = 0u - lo; // 2⁶² minus the fraction, with a borrow
        hi = 0x40000000u - hi - select(0u, 1u, lo != 0u);
    }
    let f = f32(hi & 0xffffffc0u) * 9.313225746154785e-10 // 2⁻³⁰
        + (f32(hi & 0x3fu) * 9.313225746154785e-10 + f32(lo) * 2.168404344971009e-19); // 2⁻⁶²
    return Reduced(sign * f * 1.5707963267948966, q & 3);
}

// reduce_pi2 reduces a finite x by π/2: Cody and Waite's reduction for
// |x| ≤ 1e5, Payne and Hanek's past it.
fn reduce_pi2(x: f32) -> Reduced {
    let a = abs(x);
    if (a <= 1e5) {
        return reduce_cody_waite(x);
    }
    var k = reduce_payne_hanek(a);
    if (x < 0.0) { // sin(-a) = -sin(a), cos(-a) = cos(a)
        k.r = -k.r;
        k.q = (4 - k.q) & 3;
    }
    return k;
}

// sin_reduced is sin r for |r| ≤ π/4 by its Taylor series to r¹¹
// (truncation below 1e-11).
fn sin_reduced(r: f32) -> f32 {
    let t = r * r;
    var p = -1.0 / 39916800.0;
    p = p * t + 1.0 / 362880.0;
    p = p * t - 1.0 / 5040.0;
    p = p * t + 1.0 / 120.0;
    p = p * t - 1.0 / 6.0;
    return r + r * t * p;
}

// cos_reduced is cos r for |r| ≤ π/4 by its Taylor series to r¹²
// (truncation below 1e-12).
fn cos_reduced(r: f32) -> f32 {
    let t = r * r;
    var p = 1.0 / 479001600.0;
    p = p * t - 1.0 / 3628800.0;
    p = p * t + 1.0 / 40320.0;
    p = p * t - 1.0 / 720.0;
    p = p * t + 1.0 / 24.0;
    p = p * t - 0.5;
    return 1.0 + t * p;
}

fn sin_quadrant(x: f32, shift: i32) -> f32 {
    if (is_nan(x) || is_inf(x)) {
        return nan_f32();
    }
    let k = reduce_pi2(x);
    let q = (k.q + shift) & 3;
    var v: f32;
    if ((q & 1) == 0) {
        v = sin_reduced(k.r);
    } else {
        v = cos_reduced(k.r);
    }
    return select(v, -v, (q & 2) != 0);
}

// tanf is sin r / cos r on an even quadrant and -cos r / sin r on an odd
// one (tan(r + π/2) = -cot r), from the same reduction as sinf.
fn tanf(x: f32) -> f32 {
    if (is_nan(x) || is_inf(x)) {
        return nan_f32();
    }
    let k = reduce_pi2(x);
    let s = sin_reduced(k.r);
    let c = cos_reduced(k.r);
    if ((k.q & 1) == 0) {
        return s / c;
    }
    return -c / s;
}

// atan01 is atan(t) for t in [0, 1]: past tan(π/8) it is π/4 + atan(u) with
// u = (t-1)/(t+1); atan(u) for |u| ≤ tan(π/8) by its series to u²³
// (truncation below 1e-9).
fn atan01(t: f32) -> f32 {
    var u = t;
    var base = 0.0;
    if (t > 0.41421356237309505) {
        u = (t - 1.0) / (t + 1.0);
        base = 0.78539816339744831;
    }
    let w = u * u;
    var p = -1.0 / 23.0;
    p = p * w + 1.0 / 21.0;
    p = p * w - 1.0 / 19.0;
    p = p * w + 1.0 / 17.0;
    p = p * w - 1.0 / 15.0;
    p = p * w + 1.0 / 13.0;
    p = p * w - 1.0 / 11.0;
    p = p * w + 1.0 / 9.0;
    p = p * w - 1.0 / 7.0;
    p = p * w + 1.0 / 5.0;
    p = p * w - 1.0 / 3.0;
    return base + (u + u * w * p);
}

// atanf is atan01(|x|), or π/2 - atan01(1/|x|) past 1, with x's sign.
fn atanf(x: f32) -> f32 {
    let a = abs(x);
    var r: f32;
    if (a <= 1.0) {
        r = atan01(a);
    } else if (is_nan(x)) {
        return x;
    } else {
        r = 1.5707963267948966 - atan01(1.0 / a);
    }
    return select(r, -r, x < 0.0);
}

// asinf is atan(x/√(1 - x²)), with 1 - x² as (1 - |x|)(1 + |x|), whose
// first factor is exact near 1 (Sterbenz); NaN past ±1.
fn asinf(x: f32) -> f32 {
    let a = abs(x);
    if (!(a <= 1.0)) {
        return nan_f32();
    }
    if (a == 1.0) {
        return select(1.5707963267948966, -1.5707963267948966, x < 0.0);
    }
    return atanf(x / sqrt((1.0 - a) * (1.0 + a)));
}

// acosf is 2·atan(√((1 - x)/(1 + x))): 1 - x is exact near 1 and 1 + x
// near -1, where acos is steep; NaN past ±1.
fn acosf(x: f32) -> f32 {
    if (!(abs(x) <= 1.0)) {
        return nan_f32();
    }
    if (x == -1.0) {
        return 3.14159265358979;
    }
    return 2.0 * atan01_or_more(sqrt((1.0 - x) / (1.0 + x)));
}

// atan01_or_more is atan(t) for t ≥ 0.
fn atan01_or_more(t: f32) -> f32 {
    if (t <= 1.0) {
        return atan01(t);
    }
    return 1.5707963267948966 - atan01(1.0 / t);
}

// exp_half is exp(a)/2 for 88 ≤ a ≤ 89.42, where exp(a) overflows but
// exp(a)/2 does not: expf's reduction with the half in the power of 2.
fn exp_half(a: f32) -> f32 {
    let n = round(a * 1.4426950408889634);
    let r = (a - n * 0.693115234375) - n * 3.1946183298714459e-05;
    return ldexp(exp_reduced(r), i32(n) - 1);
}

// sinh_cosh_overflow is the least float32 a whose cosh(a), and sinh(a),
// rounds to +Inf in float32 (ln(2·FLT_MAX) is just below it).
const sinh_cosh_overflow = 89.41599273681640625;

// sinhf is (E + E/(E + 1))/2 with E = expm1(|x|), which keeps its digits
// near 0, and exp(|x|)/2 past 88; x's sign.
fn sinhf(x: f32) -> f32 {
    let a = abs(x);
    var r: f32;
    if (is_nan(x)) {
        return x;
    } else if (a >= sinh_cosh_overflow) {
        r = inf_f32();
    } else if (a >= 88.0) {
        r = exp_half(a);
    } else {
        let e = expm1f(a);
        r = 0.5 * (e + e / (e + 1.0));
    }
    return select(r, -r, x < 0.0);
}

// coshf is (e + 1/e)/2 with e = exp(|x|), and exp(|x|)/2 past 88.
fn coshf(x: f32) -> f32 {
    let a = abs(x);
    if (is_nan(x)) {
        return x;
    }
    if (a >= sinh_cosh_overflow) {
        return inf_f32();
    }
    if (a >= 88.0) {
        return exp_half(a);
    }
    let e = expf(a);
    return 0.5 * (e + 1.0 / e);
}

// asinhf follows fdlibm's s_asinh.c: |x| itself below 2⁻¹², where
// x³/6 is under half an ulp; log1p(a + a²/(1 + √(1 + a²))) below 2;
// log(2a + 1/(a + √(a² + 1))) below 2¹²; log(a) + ln2 past it, where a²
// would overflow. x's sign.
fn asinhf(x: f32) -> f32 {
    let a = abs(x);
    var r: f32;
    if (a < 0.000244140625) {
        return x;
    } else if (a < 2.0) {
        let a2 = a * a;
        r = log1pf(a + a2 / (1.0 + sqrt(1.0 + a2)));
    } else if (a < 4096.0) {
        r = logf(2.0 * a + 1.0 / (a + sqrt(a * a + 1.0)));
    } else {
        r = logf(a) + 0.69314718055994531; // and NaN, +Inf
    }
    return select(r, -r, x < 0.0);
}

// acoshf follows fdlibm's e_acosh.c: log1p(t + √(2t + t²)), t = x - 1
// (exact) below 2; log(2x - 1/(x + √(x² - 1))) below 2¹²; log(x) + ln2
// past it. NaN below 1.
fn acoshf(x: f32) -> f32 {
    if (!(x >= 1.0)) {
        return nan_f32();
    }
    if (x < 2.0) {
        let t = x - 1.0;
        return log1pf(t + sqrt(2.0 * t + t * t));
    }
    if (x < 4096.0) {
        return logf(2.0 * x - 1.0 / (x + sqrt(x * x - 1.0)));
    }
    return logf(x) + 0.69314718055994531;
}

// atanhf is log1p(2a/(1 - a))/2 for a = |x|, 1 - a exact past ½
// (Sterbenz), x's sign: ±Inf at ±1, NaN past.
fn atanhf(x: f32) -> f32 {
    let a = abs(x);
    if (!(a <= 1.0)) {
        return nan_f32();
    }
    if (a < 0.000244140625) {
        return x;
    }
    var r: f32;
    if (a == 1.0) {
        r = inf_f32();
    } else {
        r = 0.5 * log1pf(2.0 * a / (1.0 - a));
    }
    return select(r, -r, x < 0.0);
}

// fmodf is C's fmod, exactly (WGSL's % on floats is a - b·trunc(a/b),
// which loses the remainder of large quotients), by fmod_reduce. The sign
// is a's; a zero or NaN b, an infinite or NaN a give NaN, and an infinite
// b gives a. A subnormal |b| is first scaled by 2²⁴ into the normal range,
// since frexp and ldexp of subnormals are not exact on every device
// (lavapipe's gave 0.0572 for fmod(2, 1e-40)): |a| is reduced by |b|·2²⁴,
// a multiple of |b|, and what is left (below 2⁻¹⁰¹) by |b| at that scale,
// where both are normal; the remainder, below |b|, scales back exactly.
fn fmodf(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b) || is_inf(a) || b == 0.0) {
        return nan_f32();
    }
    let d = abs(b);
    var r = abs(a);
    if (is_inf(b) || r < d) {
        return a;
    }
    if (d < 1.17549435e-38) {
        let big = d * 16777216.0;
        r = fmod_reduce(fmod_reduce(r, big) * 16777216.0, big) / 16777216.0;
    } else {
        r = fmod_reduce(r, d);
    }
    return select(r, -r, a < 0.0);
}

// fmod_reduce is r mod d for a finite r ≥ 0 and a normal d > 0: r less
// the largest d·2ᵏ not above it, over and over; each s so taken is in
// [r/2, r], so r - s is exact (Sterbenz), and there is at most one per
// binade between r and d (277 at most, past which the loop stops).
fn fmod_reduce(r0: f32, d: f32) -> f32 {
    var r = r0;
    let ed = frexp(d).exp;
    for (var k = 0; k < 300 && r >= d; k++) {
        var s = ldexp(d, frexp(r).exp - ed);
        if (s > r) {
            s = s * 0.5;
        }
        r = r - s;
    }
    return r;
}

// remainderf is torch.remainder's float rule: fmod, plus b where the
// remainder is nonzero and its sign is not b's (ATen's
// BinaryOpsKernel.cpp), so the result takes b's sign.
fn remainderf(a: f32, b: f32) -> f32 {
    let m = fmodf(a, b);
    return select(m, m + b, !is_nan(m) && m != 0.0 && ((b < 0.0) != (m < 0.0)));
}

// atan2f has IEEE's (and Go's math.Atan2's) special cases, which WGSL's
// atan2 leaves undefined for zeros and infinities: the angle of the
// smaller over the larger magnitude, mirrored into the quadrant of (x, y).
fn atan2f(y: f32, x: f32) -> f32 {
    if (is_nan(x) || is_nan(y)) {
        return nan_f32();
    }
    let ay = abs(y);
    let ax = abs(x);
    var a: f32;
    if (ay == 0.0 && ax == 0.0) {
        a = 0.0;
    } else if (is_inf(ay) && is_inf(ax)) {
        a = 0.78539816339744831;
    } else if (ay <= ax) {
        a = atan01(ay / ax);
    } else {
        a = 1.5707963267948966 - atan01(ax / ay);
    }
    if (bitcast<i32>(x) < 0) { // x < 0 or x = -0
        a = 3.14159265358979 - a;
    }
    return select(a, -a, bitcast<i32>(y) < 0);
}

// is_odd_int reports whether an integral y is odd; every float32 past 2²⁴
// is even.
fn is_odd_int(y: f32) -> bool {
    return abs(y) < 16777216.0 && (i32(y) & 1) != 0;
}

// powf has the special cases of Go's math.Pow (which the cpu's float32 pow
// rounds from) and exp2(y·log2|x|) with x's sign for odd y elsewhere.
fn powf(x: f32, y: f32) -> f32 {
    if (y == 0.0 || x == 1.0) {
        return 1.0;
    }
    if (is_nan(x) || is_nan(y)) {
        return nan_f32();
    }
    let integral = !is_inf(y) && floor(y) == y;
    let odd = integral && is_odd_int(y);
    if (x == 0.0) {
        if (y < 0.0) {
            return select(inf_f32(), select(inf_f32(), -inf_f32(), bitcast<u32>(x) != 0u), odd);
        }
        return select(0.0, x, odd);
    }
    if (is_inf(y)) {
        if (x == -1.0) {
            return 1.0;
        }
        if ((abs(x) < 1.0) == (y > 0.0)) {
            return 0.0;
        }
        return inf_f32();
    }
    if (is_inf(x)) {
        if (x > 0.0) {
            return select(inf_f32(), 0.0, y < 0.0);
        }
        // Pow(-Inf, y) = Pow(-0, -y). The zero's sign comes from its
        // bits: a select of 0.0 and -0.0 gave +0 on lavapipe (Tint or
        // Mesa drops the literal's sign).
        if (y < 0.0) {
            return bitcast<f32>(select(0u, 0x80000000u, odd));
        }
        return select(inf_f32(), -inf_f32(), odd);
    }
    if (x < 0.0 && !integral) {
        return nan_f32();
    }
    if (x == -1.0) {
        // log2|x| is 0, so y·log2|x| would be y·0, whose split of y
        // overflows (4097·y) into NaN past 8e34; every y past 2²⁴ is even.
        return select(1.0, -1.0, odd);
    }
    let r = exp2_ext(mul_ext(y, log2_ext(abs(x))));
    return select(r, -r, x < 0.0 && odd);
}

// pows is pow with an exponent of one element, as torch's pow with a
// scalar exponent (and the cpu's, backends/cpu/binary.go): 2, 3, -2, -1,
// 0.5 and -0.5 are x·x, x·x·x, 1/(x·x), 1/x, √x and 1/√x, so that -0 and
// -Inf to the 0.5 are -0 and NaN (powf's are C's pow: +0 and +Inf).
fn pows(x: f32, y: f32) -> f32 {
    if (y == 2.0) {
        return x * x;
    }
    if (y == 3.0) {
        return x * x * x;
    }
    if (y == -2.0) {
        return 1.0 / (x * x);
    }
    if (y == -1.0) {
        return 1.0 / x;
    }
    if (y == 0.5) {
        return sqrt(x);
    }
    if (y == -0.5) {
        return 1.0 / sqrt(x);
    }
    return powf(x, y);
}

// Double-float arithmetic: a value as hi + lo (a vec2), for pow, whose
// y·log2|x| must be good to far more than float32's 24 bits: its error is
// the relative error of the result.

// opaque is x, plus a zero the compiler cannot see: the error terms below
// are algebraically 0, and a compiler that reassociates floats (Mesa's does)
// would fold them away.
// (p[0], the item count, is never 0 in a launch).
fn opaque(x: f32) -> f32 { return x + select(0.0, 1.0, p[0] == 0u); }

// two_sum is a + b exactly (Knuth).
fn two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = opaque(a + b);
    let v = opaque(s - a);
    return vec2<f32>(s, (a - opaque(s - v)) + (b - v));
}

// split is a as two halves of 12 bits, whose products are exact (Veltkamp).
fn split(a: f32) -> vec2<f32> {
    let c = 4097.0 * a;
    let hi = c - (c - a);
    return vec2<f32>(hi, a - hi);
}

// two_prod is a·b exactly (Dekker).
fn two_prod(a: f32, b: f32) -> vec2<f32> {
    let p = a * b;
    let u = split(a);
    let v = split(b);
    return vec2<f32>(p, ((u.x * v.x - p) + u.x * v.y + u.y * v.x) + u.y * v.y);
}

// log2_ext is log2(a) for a finite a > 0 as a double-float: e + log(m)·log2(e)
// with logf's m and s, s's division corrected by its remainder, and the
// series past 2s, a hundredth of it, in float32.
fn log2_ext(a: f32) -> vec2<f32> {
    var bits = bitcast<u32>(a);
    var e = 0;
    if (bits < 0x00800000u) {
        bits = bitcast<u32>(f32(bits));
        e = -149;
    }
    e = e + i32(bits >> 23u) - 127;
    var mbits = (bits & 0x007fffffu) | 0x3f800000u;
    if (mbits > 0x3fb504f3u) {
        mbits = mbits - 0x00800000u;
        e = e + 1;
    }
    let m = bitcast<f32>(mbits);
    let f = m - 1.0; // exact
    let d = two_sum(1.0, m);
    let sh = f / d.x;
    let q = two_prod(sh, d.x);
    let sl = (((f - q.x) - q.y) - sh * d.y) / d.x;
    let t = sh * sh;
    let ln = two_sum(2.0 * sh, 2.0 * sl + 2.0 * sh * t * atanh_tail(t));
    // ln·log2(e), log2(e) = 1.4426950216293335 + 1.925963033500011e-08.
    let l2 = two_prod(ln.x, 1.4426950216293335);
    let lo = l2.y + (ln.x * 1.925963033500011e-08 + ln.y * 1.4426950216293335);
    let r = two_sum(f32(e), l2.x);
    return two_sum(r.x, r.y + lo);
}

// mul_ext is y·l for a finite float32 y and a double-float l. Where the
// product is far past float32's range, or l is 0 (then y might be past
// 8e34, whose split overflows), it is y·l.x alone.
fn mul_ext(y: f32, l: vec2<f32>) -> vec2<f32> {
    if (l.x == 0.0 || abs(y * l.x) > 1024.0) {
        return vec2<f32>(y * l.x, 0.0);
    }
    let p = two_prod(y, l.x);
    return two_sum(p.x, p.y + y * l.y);
}

// exp2_ext is 2^v for a double-float v: 2ⁿ·exp((v - n)·ln2), n = round(v),
// the last power of 2 applied by a multiplication, which overflows to
// infinity and underflows to 0 (or a subnormal) as IEEE has it.
fn exp2_ext(v: vec2<f32>) -> f32 {
    if (v.x >= 128.5) {
        return inf_f32();
    }
    if (v.x < -151.5) {
        return 0.0;
    }
    let n = round(v.x);
    let f = (v.x - n) + v.y;
    let r = exp_reduced(f * 0.69314718055994531);
    let k = i32(n);
    if (k > 0) {
        return ldexp(r, k - 1) * 2.0;
    }
    return ldexp(r, k + 64) * 5.421010862427522e-20; // 2⁻⁶⁴
}
{{end}}
