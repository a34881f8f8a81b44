{{/*
airy: the Airy function Ai(x) as airyf (dispatch/ops/airy.go), for the
elementwise kernel, which includes this where its expression calls it.
The algorithm is the cpu's (backends/cpu/airy.go) in float32: the modulus
and phase forms below -2.09, the Maclaurin series up to 2.09 (40 terms at
most) and the rational form in 1/ζ from there, with Cephes's tables
(airy_tables.wgsl, written by build/airy/tables.py).
*/}}
{{define "airy"}}
{{template "airy_tables"}}
fn airyf(x: f32) -> f32 {
    if (is_nan(x)) {
        return x;
    }
    if (x > 103.892) {
        return 0.0; // +Inf too; -Inf is past the phase's digits below
    }
    if (x < -2.09) {
        let zeta = -2.0 * x * sqrt(-x) / 3.0;
        if (zeta >= 8388608.0) {
            return 0.0; // the phase ζ + π/4 keeps no digit: from x = -5.4e4
        }
        let z = 1.0 / zeta;
        let zz = z * z;
        var afn = 0.0;
        for (var i = 0u; i < 9u; i++) {
            afn = afn * zz + AIRY_AFN[i];
        }
        var afd = 0.0;
        for (var i = 0u; i < 10u; i++) {
            afd = afd * zz + AIRY_AFD[i];
        }
        var agn = 0.0;
        for (var i = 0u; i < 11u; i++) {
            agn = agn * zz + AIRY_AGN[i];
        }
        var agd = 0.0;
        for (var i = 0u; i < 11u; i++) {
            agd = agd * zz + AIRY_AGD[i];
        }
        let t = zeta + 0.785398163397448309616;
        return 0.564189583547756286948 / sqrt(sqrt(-x)) * (sinf(t) * (1.0 + zz * afn / afd) - cosf(t) * (z * agn / agd));
    }
    if (x >= 2.09) {
        let zeta = 2.0 * x * sqrt(x) / 3.0;
        var an = 0.0;
        var ad = 0.0;
        for (var i = 0u; i < 8u; i++) {
            an = an * (1.0 / zeta) + AIRY_AN[i];
            ad = ad * (1.0 / zeta) + AIRY_AD[i];
        }
        return 0.564189583547756286948 * (an / ad) / (2.0 * sqrt(sqrt(x)) * expf(zeta));
    }
    var f = 1.0;
    var g = x;
    var m = 1.0;
    var n = x;
    var k = 1.0;
    let z = x * x * x;
    for (var i = 0; i < 40 && abs(m / f) > 1.11022302462515654042e-16; i++) {
        m *= z / ((k + 1.0) * (k + 2.0));
        n *= z / ((k + 2.0) * (k + 3.0));
        f += m;
        g += n;
        k += 3.0;
    }
    return 0.355028053887817239260 * f - 0.258819403792806798405 * g;
}
{{end}}
