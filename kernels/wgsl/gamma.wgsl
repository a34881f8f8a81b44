{{/*
gamma: the gamma family's float32 functions, lgammaf, digammaf,
polygammaf and zetaf (dispatch/ops/gamma.go), for the elementwise kernel, which
includes this after math.wgsl where its expression calls one. The
algorithms are torch's (aten/src/ATen/native/Math.h), as lathe's cpu
kernels write them (backends/cpu/gamma.go); lgamma, which WGSL and torch
take from the C library, is a Chebyshev fit on [1, 3) that keeps the
zeros at 1 and 2 exact, the recurrence to it from (0, 8), Stirling's
series from 8 on and the reflection below 0. Every loop has a fixed
bound, so no input can keep an invocation.
*/}}
{{define "gamma"}}
// reduced_turn is r in (-1, 0) moved by a period into [-1/2, 0), exactly,
// so that tan(πr) and |sin(πr)| lose no digits near r = -1.
fn reduced_turn(r: f32) -> f32 { return select(r, r + 1.0, r < -0.5); }

// lgamma_small is lgamma of z in [0, 8) (or NaN): (0, 1) up to [1, 2) by
// lgamma(y) = lgamma(y+1) - ln y, [3, 8) down to [2, 3) by lgamma(y+1) =
// lgamma(y) + ln y, and there (y-1)(y-2)·R(y-2), R a degree-16 fit of
// lgamma(y)/((y-1)(y-2)) (relative error 2e-11). u = y - 2 is exact (z - 1
// where z is below 1, not z + 1 - 2, which rounds: lgamma(0.99995) was
// 1e-3 off), so that the zeros at 1 and 2 keep their relative digits.
fn lgamma_small(z: f32) -> f32 {
    var y = z;
    var logs = 0.0;
    var prod = 1.0;
    for (var i = 0; i < 5; i++) {
        if (y >= 3.0) {
            y = y - 1.0;
            prod = prod * y;
        }
    }
    var u = y - 2.0;
    if (z < 1.0) {
        logs = -logf(z);
        u = z - 1.0;
    }
    var r = 1.2468269595677312e-06;
    r = r * u + -2.459750174845368e-06;
    r = r * u + -1.1835872944086594e-07;
    r = r * u + -4.5068741705409446e-07;
    r = r * u + 1.0371803776198627e-05;
    r = r * u + -2.112736497763247e-05;
    r = r * u + 3.6823646327585917e-05;
    r = r * u + -8.115387728926197e-05;
    r = r * u + 0.00018303771044982778;
    r = r * u + -0.0004063129447022552;
    r = r * u + 0.0009152797623939525;
    r = r * u + -0.0021080317281440336;
    r = r * u + 0.0049986508445119425;
    r = r * u + -0.01238419942664814;
    r = r * u + 0.032965000251643936;
    r = r * u + -0.10031730152107982;
    r = r * u + 0.42278433510078123;
    return (u + 1.0) * u * r + logf(prod) + logs;
}

// lgamma_stirling is lgamma of z ≥ 8 by Stirling's series to 1/z¹³.
fn lgamma_stirling(z: f32) -> f32 {
    let r = 1.0 / z;
    let r2 = r * r;
    let corr = r * (1.0 / 12.0 + r2 * (-1.0 / 360.0 + r2 * (1.0 / 1260.0 + r2 * (-1.0 / 1680.0 + r2 * (1.0 / 1188.0 +
        r2 * (-691.0 / 360360.0 + r2 * (1.0 / 156.0)))))));
    // z·(ln z - 1) - ½ln z: (z - ½)·ln z alone overflows from 4e36, where
    // the result does not.
    let l = logf(z);
    return z * (l - 1.0) - 0.5 * l + 0.91893853320467274 + corr; // ½ ln 2π
}

// lgammaf is ln|Γ(x)|: +Inf at 0, the negative integers and ±Inf.
fn lgammaf(x: f32) -> f32 {
    if (is_inf(x)) {
        return inf_f32();
    }
    let neg = x < 0.0;
    let z = select(x, 1.0 - x, neg);
    var v = lgamma_small(z);
    if (z >= 8.0) {
        v = lgamma_stirling(z);
    }
    if (neg) {
        // ln π - ln|sin(π·frac(x))| - lgamma(1 - x); +Inf at the poles,
        // where lgamma(1 - x) may be +Inf too (x below -4e36).
        let s = sinf(3.14159265358979323846 * reduced_turn(x - trunc(x)));
        if (s == 0.0) {
            return inf_f32();
        }
        v = 1.1447298858494002 - logf(abs(s)) - v;
    }
    return v;
}

// digammaf is torch's calc_digamma: the reflection ψ(1-x) - π/tan(πx)
// below 0 (NaN at the poles, -Inf included), the recurrence ψ(x) = ψ(x+1)
// - 1/x up to 10 (eleven steps at most, as x is then positive), the series
// beyond; ψ(±0) = ∓Inf.
fn digammaf(x0: f32) -> f32 {
    if (x0 == 0.0) {
        return -1.0 / x0;
    }
    var x = x0;
    var reflection = 0.0;
    if (x < 0.0) {
        let t = trunc(x);
        if (x == t) {
            return nan_f32();
        }
        reflection = 3.14159265358979323846 / tanf(3.14159265358979323846 * reduced_turn(x - t));
        x = 1.0 - x;
    }
    var result = 0.0;
    for (var i = 0; i < 11 && x < 10.0; i++) {
        result = result - 1.0 / x;
        x = x + 1.0;
    }
    if (x == 10.0) {
        return result + 2.25175258906672110764 - reflection;
    }
    var series = 0.0;
    if (x < 1e17) {
        let z = 1.0 / (x * x);
        series = z * (8.33333333333333333333e-2 + z * (-8.33333333333333333333e-3 + z * (3.96825396825396825397e-3 +
            z * (-4.16666666666666666667e-3 + z * (7.57575757575757575758e-3 + z * (-2.10927960927960927961e-2 +
            z * 8.33333333333333333333e-2))))));
    }
    return result + logf(x) - 0.5 / x - series - reflection;
}

// trigammaf: the reflection below 1/2, as torch's (so that the poles are
// float32's: trigamma(-2) is 3.2e14), the recurrence up to 10 (ten steps
// at most) and the series to 1/x¹⁵.
fn trigammaf(x0: f32) -> f32 {
    var x = x0;
    var sign = 1.0;
    var result = 0.0;
    if (x < 0.5) {
        sign = -1.0;
        let s = sinf(3.14159265358979323846 * x);
        result = -9.8696044010893586 / (s * s);
        x = 1.0 - x;
    }
    for (var i = 0; i < 10 && x < 10.0; i++) {
        result = result + 1.0 / (x * x);
        x = x + 1.0;
    }
    let z = 1.0 / (x * x);
    let series = 1.0 / 6.0 + z * (-1.0 / 30.0 + z * (1.0 / 42.0 + z * (-1.0 / 30.0 + z * (5.0 / 66.0 +
        z * (-691.0 / 2730.0 + z * (7.0 / 6.0))))));
    result = result + (1.0 + (1.0 / (2.0 * x) + z * series)) / x;
    return sign * result;
}

// zeta_positive is Σ_{k≥0} (q + k)^-s for s > 1 and q > 0 (Cephes's zeta.c
// without its early exits): ten terms, then the Euler–Maclaurin tail from
// w = q + 9 with twelve Bernoulli terms, (2i+2)!/B_{2i+2}, each term's
// numerator and power one product t (times (s+k)/w a step), as gamma.go's:
// apart, the numerator overflows float32 where the power underflows.
fn zeta_positive(s: f32, q: f32) -> f32 {
    var bernoulli = array<f32, 12>(12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
        7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
        1.8152105401943546773e17, -7.1661652561756670113e18);
    var sum = powf(q, -s);
    var w = q;
    var b = 0.0;
    for (var i = 0; i < 9; i++) {
        w = w + 1.0;
        b = powf(w, -s);
        sum = sum + b;
    }
    sum = sum + b * w / (s - 1.0) - 0.5 * b;
    var t = b;
    var k = 0.0;
    for (var i = 0; i < 12; i++) {
        t = t * ((s + k) / w);
        sum = sum + t / bernoulli[i];
        t = t * ((s + k + 1.0) / w);
        k = k + 2.0;
    }
    return sum;
}

// zetaf is the Hurwitz zeta function Σ_{k≥0} (q + k)^-x (torch's
// special.zeta): +Inf at x = 1 and where q is 0, a negative integer or
// -Inf; NaN for x < 1 and where q < 0 and x is not an integer; a negative
// q regrouped into three sums of a positive one, zeta(x, r) +
// (-1)^x·(zeta(x, 1 - r) - zeta(x, 1 - q)) with r = q - floor(q), where
// Cephes sums as many terms as q is far below 0.
fn zetaf(x: f32, q: f32) -> f32 {
    if (is_nan(x) || is_nan(q) || x < 1.0) {
        return nan_f32();
    }
    let fl = floor(q);
    if (x == 1.0 || (q <= 0.0 && q == fl)) {
        return inf_f32();
    }
    if (q < 0.0) {
        if (x != floor(x)) {
            return nan_f32();
        }
        let r = q - fl;
        let sign = select(1.0, -1.0, x - 2.0 * floor(x * 0.5) == 1.0);
        // The pair first, which cancels exactly at a half-integer q for
        // an odd x, leaving zeta(x, 1 - q) whole (backends/cpu/gamma.go).
        return (zeta_positive(x, r) + sign * zeta_positive(x, 1.0 - r)) - sign * zeta_positive(x, 1.0 - q);
    }
    return zeta_positive(x, q);
}

// polygammaf is polygamma(n, x), c = (-1)^(n+1)·n! (ops.PolygammaOf).
fn polygammaf(n: f32, c: f32, x: f32) -> f32 {
    if (n == 0.0) {
        return digammaf(x);
    }
    if (n == 1.0) {
        return trigammaf(x);
    }
    return c * zetaf(n + 1.0, x);
}
{{end}}
