// erfc_f32.h: erfc of float32s in float64 lanes, four at a time, for
// lathe_unary64_f32 (shim.c includes it after expd4, pick4d and abs4d).
// The algorithm and its rational functions are fdlibm's (s_erf.c, as Go's
// math.Erfc has them), each piece computed in every lane and picked by
// |x|: 1 - erf(x) below 0.84375 (erf as x + x·P/Q, and from 1/4 on
// 0.5 - (x·P/Q + (x - 0.5))), 1 - erx - P/Q in (s = |x| - 1) to 1.25, and
// beyond exp(-z² - 0.5625)·exp((z - a)(z + a) + R/S)/a with z a cut to 20
// bits (so z² is exact) and R/S one of two fits in 1/a² (below and above
// 1/0.35); 2 - that for negative x. The call per element of math.Erfc
// took six times torch's time.

#define HORNER2(s, a, b) ((a) + (s) * (b))
#define HORNER3(s, a, b, c) ((a) + (s) * HORNER2(s, b, c))
#define HORNER4(s, a, b, c, d) ((a) + (s) * HORNER3(s, b, c, d))
#define HORNER5(s, a, b, c, d, e) ((a) + (s) * HORNER4(s, b, c, d, e))
#define HORNER6(s, a, b, c, d, e, f) ((a) + (s) * HORNER5(s, b, c, d, e, f))
#define HORNER7(s, a, b, c, d, e, f, g) ((a) + (s) * HORNER6(s, b, c, d, e, f, g))
#define HORNER8(s, a, b, c, d, e, f, g, h) ((a) + (s) * HORNER7(s, b, c, d, e, f, g, h))
#define HORNER9(s, a, b, c, d, e, f, g, h, i) ((a) + (s) * HORNER8(s, b, c, d, e, f, g, h, i))

AVX2 static inline v4d erfc4d(v4d x) {
	v4d a = abs4d(x);
	v4l neg = x < 0.0;
	// |x| < 0.84375: erf(x) = x + x·y.
	v4d z = x * x;
	v4d y = HORNER5(z, 1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
	                -5.77027029648944159157e-03, -2.37630166566501626084e-05) /
	        HORNER6(z, 1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
	                1.32494738004321644526e-04, -3.96022827877536812320e-06);
	v4d small = pick4d(x < 0.25, 1.0 - (x + x * y), 0.5 - (x * y + (x - 0.5)));
	// 0.84375 ≤ |x| < 1.25.
	v4d s = a - 1.0;
	v4d pq = HORNER7(s, -2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
	                 3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
	                 -2.16637559486879084300e-03) /
	         HORNER7(s, 1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
	                 1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02);
	const double erx = 8.45062911510467529297e-01;
	v4d mid = pick4d(neg, 1.0 + erx + pq, 1.0 - erx - pq);
	// 1.25 ≤ |x| < 28.
	v4d t = 1.0 / (a * a);
	v4d rs_near = HORNER8(t, -9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
	                      -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
	                      -8.12874355063065934246e+01, -9.81432934416914548592e+00) /
	              HORNER9(t, 1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
	                      6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
	                      6.57024977031928170135e+00, -6.04244152148580987438e-02);
	v4d rs_far = HORNER7(t, -9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
	                     -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
	                     -4.83519191608651397019e+02) /
	             HORNER8(t, 1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
	                     3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
	                     -2.24409524465858183362e+01);
	v4d rs = pick4d(a < 1 / 0.35, rs_near, rs_far);
	v4d zc = from_bits4d(bits4d(a) & (v4l){-1LL << 32, -1LL << 32, -1LL << 32, -1LL << 32});
	v4d r = expd4(-zc * zc - 0.5625) * expd4((zc - a) * (zc + a) + rs) / a;
	v4d tail = pick4d(neg, 2.0 - r, r);
	tail = pick4d(a >= 28.0, pick4d(neg, splat4d(2.0), splat4d(0.0)), tail);
	v4d v = pick4d(a < 0.84375, small, pick4d(a < 1.25, mid, tail));
	return pick4d(x != x, x, v);
}

#undef HORNER2
#undef HORNER3
#undef HORNER4
#undef HORNER5
#undef HORNER6
#undef HORNER7
#undef HORNER8
#undef HORNER9
