{{/*
airy: the Airy function Ai(x) and its derivative as airyf (dispatch/ops/airy.go), for the
elementwise kernel, which includes this where its expression calls it.
The algorithm is the cpu's (backends/cpu/airy.go) in float32: the modulus
and phase forms below -2.09, the Maclaurin series up to 2.09 (40 terms at
most) and the rational form in 1/ζ from there, with Cephes's tables
(airy_tables.wgsl, written by build/airy/tables.py).
*/}}
{{define "airy"}}
{{template "airy_tables"}}
fn airyf(x: f32, prime: bool) -> f32 {
    let v = airy(x);
    return select(v.x, v.y, prime);
}

// airy is (Ai(x), Ai'(x)): each branch's derivative is its form's, the
// series term by term and the rational forms by the quotient rule on
// their polynomials (the cpu's airy, step for step).
fn airy(x: f32) -> vec2<f32> {
    if (is_nan(x)) {
        return vec2<f32>(x, x);
    }
    if (x > 103.892) {
        return vec2<f32>(0.0, 0.0); // +Inf too; -Inf is past the phase's digits below
    }
    if (x < -2.09) {
        let u = -x;
        let ru = sqrt(u);
        let zeta = 2.0 * u * ru / 3.0;
        if (zeta >= 8388608.0) {
            return vec2<f32>(0.0, 0.0); // the phase ζ + π/4 keeps no digit: from x = -5.4e4
        }
        let z = 1.0 / zeta;
        let zz = z * z;
        var fnum = vec2<f32>(0.0, 0.0); // (value, derivative)
        for (var i = 0u; i < 9u; i++) {
            fnum = vec2<f32>(fnum.x * zz + AIRY_AFN[i], fnum.y * zz + fnum.x);
        }
        var fd = vec2<f32>(0.0, 0.0);
        for (var i = 0u; i < 10u; i++) {
            fd = vec2<f32>(fd.x * zz + AIRY_AFD[i], fd.y * zz + fd.x);
        }
        var gn = vec2<f32>(0.0, 0.0);
        for (var i = 0u; i < 11u; i++) {
            gn = vec2<f32>(gn.x * zz + AIRY_AGN[i], gn.y * zz + gn.x);
        }
        var gd = vec2<f32>(0.0, 0.0);
        for (var i = 0u; i < 11u; i++) {
            gd = vec2<f32>(gd.x * zz + AIRY_AGD[i], gd.y * zz + gd.x);
        }
        let f = fnum.x / fd.x;
        let g = gn.x / gd.x;
        let df = (fnum.y * fd.x - fnum.x * fd.y) / (fd.x * fd.x);
        let dg = (gn.y * gd.x - gn.x * gd.y) / (gd.x * gd.x);
        let up = 1.0 + zz * f;
        let vp = z * g;
        let dz = ru * zz;
        let dzz = 2.0 * z * dz;
        let dup = (f + zz * df) * dzz;
        let dvp = g * dz + z * dg * dzz;
        let a = 0.564189583547756286948 / sqrt(ru);
        let t = zeta + 0.785398163397448309616;
        let s = sinf(t);
        let c = cosf(t);
        let v = a * (s * up - c * vp);
        return vec2<f32>(v, v / (4.0 * u) + a * (-ru * (c * up + s * vp) + s * dup - c * dvp));
    }
    if (x >= 2.09) {
        let rx = sqrt(x);
        let zeta = 2.0 * x * rx / 3.0;
        let w = 1.0 / zeta;
        var an = vec2<f32>(0.0, 0.0);
        var ad = vec2<f32>(0.0, 0.0);
        for (var i = 0u; i < 8u; i++) {
            an = vec2<f32>(an.x * w + AIRY_AN[i], an.y * w + an.x);
            ad = vec2<f32>(ad.x * w + AIRY_AD[i], ad.y * w + ad.x);
        }
        let v = 0.564189583547756286948 * (an.x / ad.x) / (2.0 * sqrt(rx) * expf(zeta));
        return vec2<f32>(v, v * (-(an.y / an.x - ad.y / ad.x) * rx * w * w - 1.0 / (4.0 * x) - rx));
    }
    var f = 1.0;
    var g = x;
    var m = 1.0;
    var n = x;
    var k = 1.0;
    var df = 0.0;
    var dg = 1.0;
    let z = x * x * x;
    let xx = x * x;
    for (var i = 0; i < 40 && abs(m / f) > 1.11022302462515654042e-16; i++) {
        df += m * xx / (k + 1.0);
        dg += n * xx / (k + 2.0);
        m *= z / ((k + 1.0) * (k + 2.0));
        n *= z / ((k + 2.0) * (k + 3.0));
        f += m;
        g += n;
        k += 3.0;
    }
    return vec2<f32>(0.355028053887817239260 * f - 0.258819403792806798405 * g,
                     0.355028053887817239260 * df - 0.258819403792806798405 * dg);
}
{{end}}
