// vec_exp.h: the exponential that softmax and attention take, and the
// softmax row, for one vector width. shim.c includes it once per width,
// with these defined: W (the lanes: 8 or 16), VF and VI (the float and int
// vector types), VEC (the functions' target attribute), and the width's
// helpers LOADW, STOREW, PICKW (mask ? a : b) and HSUMW (the lanes' sum).
// It defines exp_kr<W>, exp<W>, exp_row<W>, row_max<W> and softmax_row<W>. The code is the same
// for both widths: AVX2's eight lanes on every machine with AVX2, AVX-512's
// sixteen where the cpu has them, which halves the instructions of a row's
// exponentials (a softmax of 4096×1024 took 5.1–5.4 ms on one core with
// eight lanes, 2.7–3.3 with sixteen).

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

// exp_kr<W> is e^x as e^r·2^k, x = k·ln2 + r with |r| ≤ ln2/2 (kf is k,
// rounded from x·log2e by the caller): e^r by its Taylor series to r⁷ in
// Horner form, 2^k applied as two factors, each a normal float32 for
// k ∈ [-150, 128], so that results from float32's smallest subnormal to
// its largest normal come out right.
VEC static inline VF CAT(exp_kr, W)(VF x, VF kf) {
	VF r = x - kf * 0.693145751953125f;     // ln2's high part: exact in float32
	r = r - kf * 1.428606820309417232e-06f; // and the rest
	VF p = (VF){0} + 1.0f / 5040;
	p = p * r + 1.0f / 720;
	p = p * r + 1.0f / 120;
	p = p * r + 1.0f / 24;
	p = p * r + 1.0f / 6;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	VI k = __builtin_convertvector(kf, VI);
	VI k1 = k >> 1, k2 = k - k1;
	VF s1, s2;
	VI b1 = (k1 + 127) << 23, b2 = (k2 + 127) << 23;
	memcpy(&s1, &b1, sizeof s1);
	memcpy(&s2, &b2, sizeof s2);
	return p * s1 * s2;
}

// exp<W> is e^x for x ≤ 0 (softmax subtracts the row's max). Below about
// -103.97 the result is 0. Those lanes compute e^0, which is thrown away,
// rather than e^-104: a subnormal product there costs a microcode assist
// per vector, and a masked row of attention is all -Inf.
VEC static inline VF CAT(exp, W)(VF x) {
	VI under = x < -104.0f;
	VF lo = PICKW(under, (VF){0}, x);
	// convertvector truncates toward zero; lo·log2e - 0.5 ≤ 0 rounds to nearest
	VF kf = __builtin_convertvector(__builtin_convertvector(lo * 1.44269504088896341f - 0.5f, VI), VF);
	return PICKW(under, (VF){0}, CAT(exp_kr, W)(lo, kf));
}

// exp_row<W> replaces each of the n values x at row by e^(x - shift),
// for x - shift ≤ 0, and returns their sum (zeros and 0 for a shift of
// -Inf): attention's rows (shim.c's lathe_exp_f32).
VEC static double CAT(exp_row, W)(float *row, ptrdiff_t n, float shift) {
	if (shift == -__builtin_inff()) {
		memset(row, 0, n * sizeof *row);
		return 0;
	}
	double sum = 0;
	ptrdiff_t i = 0;
	for (; i + W <= n;) {
		VF a = {0};
		ptrdiff_t end = i + sumBlock < n ? i + sumBlock : n;
		for (; i + W <= end; i += W) {
			VF e = CAT(exp, W)(LOADW(row + i) - shift);
			STOREW(row + i, e);
			a += e;
		}
		sum += HSUMW(a);
	}
	if (i < n) { // the last few values as one vector, padded with zeros that the sum leaves out
		float tail[W] = {0};
		memcpy(tail, row + i, (n - i) * sizeof *row);
		STOREW(tail, CAT(exp, W)(LOADW(tail) - shift));
		memcpy(row + i, tail, (n - i) * sizeof *row);
		for (ptrdiff_t j = 0; j < n - i; j++) sum += tail[j];
	}
	return sum;
}

// row_max<W> is the largest of the n values at row, -Inf for none; a NaN
// never raises it (it compares false), as attention's Go loop.
VEC static float CAT(row_max, W)(const float *row, ptrdiff_t n) {
	VF vm = (VF){0} - __builtin_inff();
	ptrdiff_t i = 0;
	for (; i + W <= n; i += W) {
		VF v = LOADW(row + i);
		vm = PICKW(v > vm, v, vm);
	}
	float m = vm[0];
	for (int j = 1; j < W; j++) m = vm[j] > m ? vm[j] : m;
	for (; i < n; i++) m = row[i] > m ? row[i] : m;
	return m;
}

// softmax_row<W> writes softmax (or log-softmax) of the n values at src to
// dst. It returns 0 without writing when the row holds a NaN or its max is
// infinite, which the caller's general path handles. The exponentials
// are summed as lathe_sum_f32 sums (float32 lanes in blocks, the blocks in
// float64) and softmax scales them in float32, so no pass widens a value;
// log-softmax subtracts the log of the sum in float64 (affine8, eight
// lanes at a time), where float32 would lose the digits of a result near
// zero.
VEC static int CAT(softmax_row, W)(float *dst, const float *src, ptrdiff_t n, int log) {
	if (n < W) return 0;
	VF vm = LOADW(src);
	VI nan = {0};
	ptrdiff_t i = W;
	for (; i + W <= n; i += W) {
		VF v = LOADW(src + i);
		nan |= v != v;
		vm = PICKW(v > vm, v, vm);
	}
	nan |= vm != vm;
	float m = vm[0];
	for (int j = 1; j < W; j++) m = vm[j] > m ? vm[j] : m;
	for (; i < n; i++) {
		if (src[i] != src[i]) return 0;
		m = src[i] > m ? src[i] : m;
	}
	for (int j = 0; j < W; j++)
		if (nan[j]) return 0;
	if (m == __builtin_inff() || m == -__builtin_inff()) return 0; // inf - inf: the general path's NaN rules

	double sum = 0;
	for (i = 0; i + W <= n;) {
		VF a0 = {0}, a1 = {0};
		ptrdiff_t end = i + sumBlock < n ? i + sumBlock : n;
		for (; i + 2 * W <= end; i += 2 * W) {
			VF e0 = CAT(exp, W)(LOADW(src + i) - m), e1 = CAT(exp, W)(LOADW(src + i + W) - m);
			if (!log) STOREW(dst + i, e0), STOREW(dst + i + W, e1);
			a0 += e0;
			a1 += e1;
		}
		if (i + W <= end) {
			VF e = CAT(exp, W)(LOADW(src + i) - m);
			if (!log) STOREW(dst + i, e);
			a0 += e;
			i += W;
		}
		sum += HSUMW(a0 + a1);
	}
	for (; i < n; i++) {
		VF e = CAT(exp, W)((VF){src[i] - m});
		if (!log) dst[i] = e[0];
		sum += e[0];
	}
	if (log) {
		double ls = __builtin_log(sum);
		for (i = 0; i + 8 <= n; i += 8) store8(dst + i, affine8(load8(src + i) - m, 1, -ls));
		for (; i < n; i++) dst[i] = (float)((double)(src[i] - m) - ls);
		return 1;
	}
	float inv = (float)(1 / sum);
	for (i = 0; i + W <= n; i += W) STOREW(dst + i, LOADW(dst + i) * inv);
	for (; i < n; i++) dst[i] *= inv;
	return 1;
}

#undef CAT
#undef CAT_
