// gamma_f32.h: lgamma, digamma and trigamma of float32s in float64 lanes,
// four at a time, for lathe_unary64_f32 (shim.c includes it after the
// lane functions it uses: log4d, sincos4d, pick4d, abs4d). The algorithms
// are gamma.go's, with each data-dependent loop run a fixed number of
// times under a mask, and each recurrence's sum one fraction p/q (one
// division). The Go functions took a call per element, 6-8 times torch's
// time; each here is within a float32 ulp of them.

// trunc4d is x rounded toward zero.
AVX2 static inline v4d trunc4d(v4d x) { return __builtin_ia32_roundpd256(x, 11); }

// reduced_turn4d is r in (-1, 0] moved by a period into [-1/2, 0],
// exactly, so that sin(πr) and tan(πr) lose no digits near r = -1.
AVX2 static inline v4d reduced_turn4d(v4d r) { return pick4d(r < -0.5, r + 1.0, r); }

// lgamma_pos4d is lgamma of z ≥ 0 (or NaN; not +Inf): z(z+1)…(z+k-1) = p
// up to z + k ≥ 8, then Stirling's series to 1/z¹³ there, less log p.
AVX2 static inline v4d lgamma_pos4d(v4d z) {
	v4d p = splat4d(1.0);
	for (int i = 0; i < 8; i++) {
		v4l m = z < 8.0;
		p = pick4d(m, p * z, p);
		z = pick4d(m, z + 1.0, z);
	}
	v4d r = 1.0 / z, r2 = r * r;
	v4d corr = r * (1.0 / 12 + r2 * (-1.0 / 360 + r2 * (1.0 / 1260 + r2 * (-1.0 / 1680 + r2 * (1.0 / 1188 +
	                 r2 * (-691.0 / 360360 + r2 * (1.0 / 156)))))));
	return (z - 0.5) * log4d(z) - z + 0.91893853320467274178 + corr - log4d(p);
}

// lgamma4d is ln|Γ(x)|: below 0 the reflection ln π - ln|sin(πx)| -
// lgamma(1 - x) (+Inf at the poles); +Inf at ±Inf.
AVX2 static inline v4d lgamma4d(v4d x) {
	v4l neg = x < 0.0;
	v4d v = lgamma_pos4d(pick4d(neg, 1.0 - x, x));
	v4d s = abs4d(sincos4d(3.14159265358979323846 * reduced_turn4d(x - trunc4d(x)), 0));
	v = pick4d(neg, 1.1447298858494002 - log4d(s) - v, v);
	return pick4d(abs4d(x) == __builtin_inf(), splat4d(__builtin_inf()), v);
}

// digamma4d is gamma.go's digammaF: the reflection ψ(1-x) - π/tan(πx)
// below 0 (NaN at the poles, -Inf included), one step of the recurrence
// from (0, 1), then up to nine more to 10 as one fraction, the constant
// ψ(10) where x lands on 10, and the series beyond; ψ(±0) = ∓Inf.
AVX2 static inline v4d digamma4d(v4d x) {
	const double pi = 3.14159265358979323846;
	v4l neg = x < 0.0;
	v4d t = trunc4d(x), r = pi * reduced_turn4d(x - t);
	v4d reflection = pick4d(neg, pi * sincos4d(r, 1) / sincos4d(r, 0), splat4d(0.0));
	v4d y = pick4d(neg, 1.0 - x, x);
	v4l small = y < 1.0;
	v4d result = pick4d(small, -1.0 / y, splat4d(0.0));
	y = pick4d(small, y + 1.0, y);
	v4d p = splat4d(0.0), q = splat4d(1.0);
	for (int i = 0; i < 9; i++) {
		v4l m = y < 10.0;
		p = pick4d(m, p * y + q, p);
		q = pick4d(m, q * y, q);
		y = pick4d(m, y + 1.0, y);
	}
	result -= p / q;
	v4d z = 1.0 / (y * y);
	v4d series = z * (8.33333333333333333333e-2 +
	                  z * (-8.33333333333333333333e-3 +
	                       z * (3.96825396825396825397e-3 +
	                            z * (-4.16666666666666666667e-3 +
	                                 z * (7.57575757575757575758e-3 + z * (-2.10927960927960927961e-2 + z * 8.33333333333333333333e-2))))));
	series = pick4d(y < 1e17, series, splat4d(0.0));
	v4d v = result + log4d(y) - 0.5 / y - series;
	v = pick4d(y == 10.0, result + 2.25175258906672110764, v) - reflection;
	v = pick4d(x == 0.0, -1.0 / x, v);
	return pick4d(neg & (x == t), splat4d(__builtin_nan("")), v);
}

// trigamma_pos4d is gamma.go's trigammaPositive, ψ'(y) for y ≥ 1/2 (or
// NaN): up to ten steps of the recurrence as one fraction, then the
// series to 1/y¹⁵.
AVX2 static inline v4d trigamma_pos4d(v4d y) {
	v4d p = splat4d(0.0), q = splat4d(1.0);
	for (int i = 0; i < 10; i++) {
		v4l m = y < 10.0;
		v4d y2 = y * y;
		p = pick4d(m, p * y2 + q, p);
		q = pick4d(m, q * y2, q);
		y = pick4d(m, y + 1.0, y);
	}
	v4d z = 1.0 / (y * y);
	v4d series = 1.0 / 6 + z * (-1.0 / 30 + z * (1.0 / 42 + z * (-1.0 / 30 + z * (5.0 / 66 + z * (-691.0 / 2730 + z * (7.0 / 6))))));
	return p / q + (1.0 + (1.0 / (2.0 * y) + z * series)) / y;
}

// round4f is x rounded to float32, as a float32 operation whose exact
// result x is would round it.
AVX2 static inline v4d round4f(v4d x) { return __builtin_convertvector(__builtin_convertvector(x, v4f), v4d); }

// trigamma4d is gamma.go's trigamma[float32]: below 1/2 its reflection in
// float32 arithmetic, as torch's (sin of πx rounded to float32, so that
// the poles keep torch's finite values: each step rounded to float32),
// less the positive part of 1 - x (in float32). Lanes whose πx is past
// sincos4d's range (|x| > 2^28, integers, so poles) take libm's sin.
AVX2 static inline v4d trigamma4d(v4d x) {
	const double pi = 3.1415927410125732; // π in float32
	v4l refl = x < 0.5;
	v4d y = pick4d(refl, round4f(1.0 - x), x);
	v4d v = round4f(trigamma_pos4d(y));
	v4d px = round4f(pi * x);
	v4d s = sincos4d(px, 0);
	v4l far = refl & ~(abs4d(px) <= 0x1p30);
	if (__builtin_ia32_movmskpd256(from_bits4d(far)))
		for (int l = 0; l < 4; l++)
			if (far[l]) s[l] = sin(px[l]);
	s = round4f(s);
	v4d r = round4f((double)(float)(pi * pi) / round4f(s * s));
	return pick4d(refl, round4f(r - v), v);
}
