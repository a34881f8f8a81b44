// vec_unary.h: the float32 unary ops built on the exponential, for one
// vector width, which shim.c includes after vec_exp.h with its parameters
// (W, VF, VI, VEC, LOADW, STOREW, PICKW). It defines abs<W>, sigmoid<W>,
// tanh<W> and unary_exp_rows<W>, which lathe_unary_f32 calls in AVX2's
// eight lanes, or AVX-512's sixteen where the cpu has them (sigmoid of 1M
// values: half the instructions, where eight lanes were 1.5 times torch's
// time).

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

VEC static inline VF CAT(abs, W)(VF x) {
	VI b;
	memcpy(&b, &x, sizeof b);
	b &= 0x7fffffff;
	memcpy(&x, &b, sizeof x);
	return x;
}

// sigmoid<W> is 1/(1 + e^-x) for x ≥ 0 and e^x/(1 + e^x) below, so that no
// exponential overflows and a large negative x keeps its tiny result, as
// elementwise.go's sigmoid; one division, the costly part.
VEC static inline VF CAT(sigmoid, W)(VF x) {
	VF e = CAT(exp, W)(-CAT(abs, W)(x)), r = 1.0f / (1.0f + e);
	return PICKW(x != x, x, PICKW(x >= 0.0f, r, e * r));
}

// tanh<W>: below |x| = 0.5625, x·(1 + z·p(z)) with z = x² (p from
// build/tanh32/fit.py, 1.6e-10 off in float64; a product, so that tanh(-0)
// is -0), where the form below would lose bits to cancellation; from there
// on, with t = e^-2|x|, sign(x)·(1 - t)/(1 + t), which is ±1 once t is
// under float32's half ulp.
VEC static inline VF CAT(tanh, W)(VF x) {
	VF z = x * x;
	VF p = (VF){0} + 0.002489844001976483f;
	p = p * z + -0.0085010139419131291f;
	p = p * z + 0.021812392309210428f;
	p = p * z + -0.053964119215541929f;
	p = p * z + 0.13333322291674615f;
	p = p * z + -0.33333333285266165f;
	VF small = x * (1.0f + z * p);
	VF a = CAT(abs, W)(x), t = CAT(exp, W)(-2.0f * a);
	VF large = (1.0f - t) / (1.0f + t);
	large = PICKW(x < 0.0f, -large, large);
	return PICKW(a < 0.5625f, small, PICKW(x != x, x, large));
}

// unary_exp_rows<W> writes op(x) of the n values at src to dst for the
// exponential's ops of lathe_unary_f32 (sigmoid, silu, tanh, gelu_tanh);
// the tail goes through the same lanes.
#define UNARY_EXP_LOOP(expr)                                                                                                     \
	do {                                                                                                                     \
		ptrdiff_t i = 0;                                                                                                 \
		for (; i + W <= n; i += W) {                                                                                     \
			VF x = LOADW(src + i);                                                                                   \
			STOREW(dst + i, (expr));                                                                                 \
		}                                                                                                                \
		if (i < n) {                                                                                                     \
			float xt[W] = {0}, rt[W];                                                                                \
			memcpy(xt, src + i, (n - i) * sizeof *src);                                                              \
			VF x = LOADW(xt);                                                                                        \
			STOREW(rt, (expr));                                                                                      \
			memcpy(dst + i, rt, (n - i) * sizeof *dst);                                                              \
		}                                                                                                                \
	} while (0)

VEC static void CAT(unary_exp_rows, W)(int op, float *dst, const float *src, ptrdiff_t n) {
	switch (op) {
	case unarySigmoid: UNARY_EXP_LOOP(CAT(sigmoid, W)(x)); break;
	case unarySiLU: UNARY_EXP_LOOP(x * CAT(sigmoid, W)(x)); break;
	case unaryTanh: UNARY_EXP_LOOP(CAT(tanh, W)(x)); break;
	case unaryGELUTanh: // torch's approximate="tanh": x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
		UNARY_EXP_LOOP(0.5f * x * (1.0f + CAT(tanh, W)(0.7978845608028654f * (x + 0.044715f * x * x * x))));
		break;
	}
}

// gelu_tail<W> returns N(|x|) and e^(-x²/2) in *e (shim.c's gelu_n says
// how). Past |x| = 15 both Q and e are 0 in float32 and N is taken at 15
// (a NaN too: x keeps it).
VEC static inline VF CAT(gelu_tail, W)(VF x, VF *e) {
	VF a = CAT(abs, W)(x);
	a = PICKW(a < 15.0f, a, SPLATW(15.0f));
	VF hi = a * a;
	VF lo = FMSW(a, a, hi); // a² - hi, exactly
	*e = CAT(exp, W)(hi * -0.5f) * (1.0f - 0.5f * lo);
	VF t = 2.0f / (2.0f + a);
	VF n = SPLATW(gelu_n[10]);
	for (int k = 9; k >= 0; k--) n = n * t + gelu_n[k];
	return n;
}

// gelu<W> is x·Φ(x); below zero as (x·e)·N, so that a Q under float32's
// normal range loses no digits before the product with x.
VEC static inline VF CAT(gelu, W)(VF x) {
	VF e, n = CAT(gelu_tail, W)(x, &e);
	return PICKW(x < 0, (x * e) * n, x * (1.0f - e * n));
}

// gelu_grad<W> is g·(Φ(x) + x·φ(x)), φ = e/√(2π): e·(N + x/√(2π)) below
// zero, 1 - e·(N - x/√(2π)) above.
VEC static inline VF CAT(gelu_grad, W)(VF g, VF x) {
	VF e, n = CAT(gelu_tail, W)(x, &e);
	VF xc = x * 0.398942280401432678f;
	return g * PICKW(x < 0, e * (xc + n), 1.0f - e * (n - xc));
}

// gelu_rows<W> and gelu_grad_rows<W> are lathe_erf_f32's gelu and
// lathe_act_backward_f32's gelu_backward; the tail goes through the same
// lanes, so every length gives the same values.
VEC static void CAT(gelu_rows, W)(float *dst, const float *src, ptrdiff_t n) { UNARY_EXP_LOOP(CAT(gelu, W)(x)); }

VEC static void CAT(gelu_grad_rows, W)(float *dst, const float *g, const float *x, ptrdiff_t n) {
	ptrdiff_t i = 0;
	for (; i + W <= n; i += W) STOREW(dst + i, CAT(gelu_grad, W)(LOADW(g + i), LOADW(x + i)));
	if (i < n) {
		float gt[W] = {0}, xt[W] = {0}, rt[W];
		memcpy(gt, g + i, (n - i) * sizeof *g);
		memcpy(xt, x + i, (n - i) * sizeof *x);
		STOREW(rt, CAT(gelu_grad, W)(LOADW(gt), LOADW(xt)));
		memcpy(dst + i, rt, (n - i) * sizeof *dst);
	}
}

#undef UNARY_EXP_LOOP
#undef CAT
#undef CAT_
