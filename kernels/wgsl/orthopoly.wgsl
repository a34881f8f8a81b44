{{/*
orthopoly: torch.special's orthogonal polynomials (dispatch/ops/orthopoly.go)
as orthopolyf, for the elementwise kernel, which includes this where its
expression calls it. The algorithm is the cpu's (backends/cpu/orthopoly.go)
in float32, step for step: each family's three-term recurrence,
differentiated m times, and the Chebyshev kinds' closed forms. A family f
is 0-3 for Chebyshev's T, U, V and W, 4 and 5 for Hermite's H and He, 6
for Laguerre's L and 7 for Legendre's P. The recurrence's loop is bounded
by the degree, which the ops hold to 65536, and by 65536 here as well.
*/}}
{{define "orthopoly"}}
fn poly_is_odd(n: f32) -> bool { return n - 2.0 * floor(0.5 * n) == 1.0; }

// orthopolyf is family f's degree-n polynomial's derivative of order m at
// x, or at 2x - 1 where shifted (times 2^m).
fn orthopolyf(f: u32, shifted: bool, n: f32, m: f32, x: f32) -> f32 {
    if (shifted) {
        return f32(1u << u32(m)) * poly_at(f, n, m, x + x - 1.0);
    }
    return poly_at(f, n, m, x);
}

fn poly_at(f: u32, n: f32, m: f32, x: f32) -> f32 {
    if (n < 0.0 || m > n) {
        return 0.0;
    }
    if (n == 0.0) {
        return 1.0;
    }
    if (is_nan(x)) {
        return x;
    }
    if (is_inf(x)) {
        return poly_at_inf(f, n, m, x);
    }
    if (m == 0.0) {
        let c = poly_closed(f, n, x);
        if (c.y != 0.0) {
            return c.x;
        }
    }
    return poly_recurrence(f, n, u32(m), x);
}

// poly_at_inf: below the degree's order, ±Inf with the leading
// coefficient's sign ((-1)^n for Laguerre's, else +) times x's^(n-m); at
// it, the constant the recurrence gives at 0.
fn poly_at_inf(f: u32, n: f32, m: f32, x: f32) -> f32 {
    if (m == n) {
        return poly_recurrence(f, n, u32(m), 0.0);
    }
    var s = 1.0;
    if (f == 6u && poly_is_odd(n)) {
        s = -s;
    }
    if (x < 0.0 && poly_is_odd(n - m)) {
        s = -s;
    }
    return s * inf_f32();
}

// poly_closed is (the value, 1) where a closed form gives it, else (0, 0):
// the Chebyshev kinds and Legendre's at ±1, the Chebyshev kinds past
// degree 6 (T) or 8 in cos and sin of θ = acos x inside (-1, 1), and in
// cosh and sinh of t = acosh |x| outside it.
fn poly_closed(f: u32, n: f32, x: f32) -> vec2<f32> {
    let ax = abs(x);
    let odd = poly_is_odd(n);
    let sign = select(1.0, -1.0, odd);
    if (ax == 1.0) {
        switch f {
            case 0u, 7u: {
                return vec2<f32>(select(-1.0, 1.0, x > 0.0 || !odd), 1.0);
            }
            case 1u: {
                return vec2<f32>(select(-(n + 1.0), n + 1.0, x > 0.0 || !odd), 1.0);
            }
            case 2u: {
                return vec2<f32>(select(sign * (n + n + 1.0), 1.0, x > 0.0), 1.0);
            }
            case 3u: {
                return vec2<f32>(select(sign, n + n + 1.0, x > 0.0), 1.0);
            }
            default: {
                return vec2<f32>(0.0, 0.0);
            }
        }
    }
    if (f > 3u || n <= 6.0 || (f != 0u && n <= 8.0)) {
        return vec2<f32>(0.0, 0.0);
    }
    if (ax < 1.0) {
        let theta = acosf(x);
        switch f {
            case 0u: {
                return vec2<f32>(cosf(n * theta), 1.0);
            }
            case 1u: { // sin θ > 0 inside (-1, 1)
                return vec2<f32>(sinf((n + 1.0) * theta) / sinf(theta), 1.0);
            }
            case 2u: {
                if (sinf(0.5 * theta) != 1.0) {
                    return vec2<f32>(cosf((n + 0.5) * theta) / cosf(0.5 * theta), 1.0);
                }
                return vec2<f32>(sign * (n + n + 1.0), 1.0);
            }
            default: {
                if (cosf(0.5 * theta) != 1.0) {
                    return vec2<f32>(sinf((n + 0.5) * theta) / sinf(0.5 * theta), 1.0);
                }
                return vec2<f32>(n + n + 1.0, 1.0);
            }
        }
    }
    let t = acoshf(ax);
    var v: f32;
    if (f == 0u) {
        v = coshf(n * t);
    } else if (f == 1u) {
        v = sinh_ratio((n + 1.0) * t, t);
    } else if ((f == 2u) == (x > 0.0)) {
        v = cosh_ratio((n + 0.5) * t, 0.5 * t);
    } else {
        v = sinh_ratio((n + 0.5) * t, 0.5 * t);
    }
    return vec2<f32>(select(v, v * sign, x < 0.0), 1.0);
}

// sinh_ratio is sinh(a)/sinh(b) for a ≥ b > 0, as e^(a-b)/(1 - e^-2b)
// where sinh(a) would overflow though the ratio need not; cosh_ratio
// likewise.
fn sinh_ratio(a: f32, b: f32) -> f32 {
    if (a < 80.0) {
        return sinhf(a) / sinhf(b);
    }
    return expf(a - b) / -expm1f(-2.0 * b);
}

fn cosh_ratio(a: f32, b: f32) -> f32 {
    if (a < 80.0) {
        return coshf(a) / coshf(b);
    }
    return expf(a - b) / (1.0 + expf(-2.0 * b));
}

// poly_recurrence runs the recurrence to degree n with each derivative
// to order m (poly_step), in three rows of terms that take turns as the
// degrees k - 1, k and k + 1; it stops at a NaN, which every later term
// would be.
fn poly_recurrence(f: u32, n: f32, m: u32, x: f32) -> f32 {
    if (n > 65536.0 || m > 8u) {
        return nan_f32();
    }
    var terms: array<array<f32, 9>, 3>;
    terms[0][0] = 1.0;
    let first = poly_first(f, x);
    terms[1][0] = first.x;
    terms[1][1] = first.y;
    var prev = 0u;
    var cur = 1u;
    var next = 2u;
    let steps = u32(n);
    for (var k = 1u; k < steps; k++) {
        let kf = f32(k);
        for (var j = 0u; j <= m; j++) {
            var lower = 0.0;
            if (j > 0u) {
                lower = terms[cur][j - 1u];
            }
            terms[next][j] = poly_step(f, kf, f32(j), x, terms[cur][j], lower, terms[prev][j]);
        }
        let done = prev;
        prev = cur;
        cur = next;
        next = done;
        if (is_nan(terms[cur][m])) {
            break;
        }
    }
    return terms[cur][m];
}

// poly_first is the degree-1 polynomial at x and its derivative.
fn poly_first(f: u32, x: f32) -> vec2<f32> {
    switch f {
        case 0u, 5u, 7u: {
            return vec2<f32>(x, 1.0);
        }
        case 2u: {
            return vec2<f32>(x + x - 1.0, 2.0);
        }
        case 3u: {
            return vec2<f32>(x + x + 1.0, 2.0);
        }
        case 6u: {
            return vec2<f32>(1.0 - x, -1.0);
        }
        default: {
            return vec2<f32>(x + x, 2.0);
        }
    }
}

// poly_step is the j-th derivative at degree k + 1 from the j-th at k (d)
// and k - 1 (prev) and the (j-1)-th at k (lower): the recurrence
// P_{k+1} = (a_k·x + b_k)·P_k - c_k·P_{k-1} differentiated j times.
fn poly_step(f: u32, k: f32, j: f32, x: f32, d: f32, lower: f32, prev: f32) -> f32 {
    switch f {
        case 4u: {
            return (x + x) * d + 2.0 * j * lower - 2.0 * k * prev;
        }
        case 5u: {
            return x * d + j * lower - k * prev;
        }
        case 6u: {
            return ((k + k + (1.0 - x)) * d - j * lower - k * prev) / (k + 1.0);
        }
        case 7u: {
            return ((k + k + 1.0) * x * d + (k + k + 1.0) * j * lower - k * prev) / (k + 1.0);
        }
        default: {
            return (x + x) * d + 2.0 * j * lower - prev;
        }
    }
}
{{end}}
