// unary_f64.h: float64 ops in float64 lanes, four at a time: add, sub, mul
// and div (lathe_arith_f64, arith.go's float64 rows), and exp, log, tanh,
// sigmoid, silu, sin and cos (lathe_unary_f64, which unary64.go's float64
// row loops call), and softmax rows (lathe_softmax_f64). shim.c includes
// it once, after the float32-in-float64 functions whose expd4, sincos4d,
// pick4d, abs4d and copysign4d it uses. Each is within an ulp
// or two of the Go function that elementwise.go's floatUnary names (math.Exp
// and the rest, which take a call per element: 4-8 times torch's time),
// with the same special values. Numbered as unary64.go's float64Op.
enum { f64Exp, f64Log, f64Tanh, f64Sigmoid, f64SiLU, f64Sin, f64Cos };

AVX2 static inline void stream4d(double *p, v4d v) { __builtin_ia32_movntpd256(p, v); }

// lathe_sum_f64 is the sum of the n doubles at x in sixteen float64 lanes,
// four vectors that each add every fourth group of four, added pairwise at
// the end (a, b, c, d as (a + b) + (c + d), then the lanes so), the tail
// after them one at a time: reduce.go's accumulate, whose Go loop keeps
// four scalar sums, took two and a half times torch's time.
AVX2 double lathe_sum_f64(const double *x, ptrdiff_t n) {
	v4d a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
	ptrdiff_t i = 0;
	for (; i + 16 <= n; i += 16) {
		a0 += load4d(x + i);
		a1 += load4d(x + i + 4);
		a2 += load4d(x + i + 8);
		a3 += load4d(x + i + 12);
	}
	v4d a = (a0 + a1) + (a2 + a3);
	double s = (a[0] + a[1]) + (a[2] + a[3]);
	for (; i < n; i++) s += x[i];
	return s;
}

// lathe_arith_f64 is lathe_arith_f32 for float64s: IEEE's add, sub, mul
// and div lane by lane, the Go loops' values bit for bit.
#define ARITH_F64(OP) ARITH_LOOP(OP, v4d, 4, load4d, store4d, stream4d, splat4d)

AVX2 void lathe_arith_f64(int op, double *dst, const double *p, const double *q, double s, ptrdiff_t n) {
	ptrdiff_t i = 0;
	ARITH_SWITCH(ARITH_F64)
}

#undef ARITH_F64

// log_f64x4 is fdlibm's e_log.c as Go's math.Log has it: x = 2^k·(1 + f)
// with 1 + f in [√½, √2), s = f/(2 + f), log(1 + f) = f - hfsq + s·(hfsq +
// R(s²)), R the minimax polynomial Lg1..Lg7 of that code, and k·ln2 with
// ln2 split so that k·hi is exact. A subnormal x is scaled by 2^54 first.
AVX2 static inline v4d log_f64x4(v4d x) {
	v4l tiny = (x < 0x1p-1022) & (x > 0.0);
	v4l b = bits4d(pick4d(tiny, x * 0x1p54, x));
	v4l k = ((b >> 52) & 0x7ff) - 1023 - (tiny & 54);
	v4d m = from_bits4d((b & 0x000fffffffffffffLL) | 0x3ff0000000000000LL); // in [1, 2)
	v4l big = m >= 1.4142135623730951;
	m = pick4d(big, m * 0.5, m);
	k -= big; // big is -1 where true
	v4d f = m - 1.0, s = f / (2.0 + f), z = s * s, w = z * z;
	v4d t1 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01 + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
	v4d t2 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
	v4d hfsq = 0.5 * f * f, kd = __builtin_convertvector(__builtin_convertvector(k, v4i), v4d);
	v4d r = kd * 6.93147180369123816490e-01 - ((hfsq - (s * (hfsq + t1 + t2) + kd * 1.90821492927058770002e-10)) - f);
	// 0 → -Inf, below 0 → NaN, +Inf → +Inf, NaN → itself.
	r = pick4d(x == 0.0, splat4d(-__builtin_inf()), r);
	r = pick4d(x < 0.0, splat4d(__builtin_nan("")), r);
	r = pick4d(x == __builtin_inf(), x, r);
	return pick4d(x != x, x, r);
}

// tanh_f64x4 is Go's math.Tanh (after Cephes): from |x| = 0.625 on, 1 -
// 2/(e^2|x| + 1), which is 1 once e^2|x| passes 2^54 (infinite |x| too);
// below it, Cephes's rational function x + x³·P(x²)/Q(x²); ±0 are
// themselves.
AVX2 static inline v4d tanh_f64x4(v4d x) {
	v4d a = abs4d(x), z = x * x;
	v4d far = 1.0 - 2.0 / (expd4(2.0 * a) + 1.0);
	v4d p = (-9.64399179425052238628e-01 * z - 9.92877231001918586564e+01) * z - 1.61468768441708447952e+03;
	v4d q = ((z + 1.12811678491632931402e+02) * z + 2.23548839060100448583e+03) * z + 4.84406305325125486048e+03;
	v4d r = pick4d(a >= 0.625, copysign4d(far, x), x + x * z * (p / q));
	return pick4d((x != x) | (x == 0.0), x, r);
}

// sigmoid_f64x4 is elementwise.go's sigmoid: from e = e^-|x|, 1/(1 + e)
// for x ≥ 0 and e/(1 + e) below, so that neither side cancels.
AVX2 static inline v4d sigmoid_f64x4(v4d x) {
	v4d e = expd4(-abs4d(x));
	v4d r = pick4d(x < 0.0, e / (1.0 + e), 1.0 / (1.0 + e));
	return pick4d(x != x, x, r);
}


AVX2 static inline v4d unary_f64(int op, v4d x) {
	switch (op) {
	case f64Exp: return expd4(x);
	case f64Log: return log_f64x4(x);
	case f64Tanh: return tanh_f64x4(x);
	case f64Sigmoid: return sigmoid_f64x4(x);
	case f64Sin:
	case f64Cos: {
		v4d y = sincos4d(x, op == f64Cos);
		v4l far = ~(abs4d(x) <= 0x1p30); // NaN and ±Inf too
		if (__builtin_ia32_movmskpd256(from_bits4d(far)))
			for (int l = 0; l < 4; l++)
				if (far[l]) y[l] = op == f64Sin ? sin(x[l]) : cos(x[l]);
		return y;
	}
	default: return x * sigmoid_f64x4(x);
	}
}

// UNARY_F64_LOOP runs op over the n doubles four at a time, the tail
// padded with 1 (inside every op's domain); op is a constant in each use,
// so that each loop is its own.
#define UNARY_F64_LOOP(OP)                                                                   \
	do {                                                                                 \
		ptrdiff_t i = 0;                                                             \
		for (; i + 4 <= n; i += 4) {                                                 \
			v4d x;                                                               \
			memcpy(&x, src + i, sizeof x);                                       \
			v4d r = unary_f64(OP, x);                                            \
			memcpy(dst + i, &r, sizeof r);                                       \
		}                                                                            \
		if (i < n) {                                                                 \
			v4d x = splat4d(1.0);                                                \
			memcpy(&x, src + i, (n - i) * sizeof *src);                          \
			v4d r = unary_f64(OP, x);                                            \
			memcpy(dst + i, &r, (n - i) * sizeof *dst);                          \
		}                                                                            \
	} while (0)

AVX2 void lathe_unary_f64(int op, double *dst, const double *src, ptrdiff_t n) {
	switch (op) {
	case f64Exp: UNARY_F64_LOOP(f64Exp); break;
	case f64Log: UNARY_F64_LOOP(f64Log); break;
	case f64Tanh: UNARY_F64_LOOP(f64Tanh); break;
	case f64Sigmoid: UNARY_F64_LOOP(f64Sigmoid); break;
	case f64SiLU: UNARY_F64_LOOP(f64SiLU); break;
	case f64Sin: UNARY_F64_LOOP(f64Sin); break;
	case f64Cos: UNARY_F64_LOOP(f64Cos); break;
	}
}

#undef UNARY_F64_LOOP

// softmax_row_f64 is softmax.go's softmaxRowGo for a float64 row of n ≥ 4
// values: the max, then e^(x - max) (expd4) and their sum in four lanes,
// then the values times 1/sum, or for log_softmax (x - max) - log(sum)
// with libm's log. It returns 0, having written nothing, for a row whose
// max is a NaN or infinite, which the Go loop takes.
AVX2 static inline int softmax_row_f64(double *dst, const double *src, ptrdiff_t n, int log) {
	v4d m4, x;
	memcpy(&m4, src, sizeof m4);
	v4l nan = m4 != m4;
	ptrdiff_t i = 4;
	for (; i + 4 <= n; i += 4) {
		memcpy(&x, src + i, sizeof x);
		nan |= x != x;
		m4 = __builtin_ia32_maxpd256(m4, x);
	}
	double m = m4[0];
	for (int l = 1; l < 4; l++) m = m4[l] > m ? m4[l] : m;
	for (; i < n; i++) {
		if (src[i] != src[i]) return 0;
		m = src[i] > m ? src[i] : m;
	}
	if (__builtin_ia32_movmskpd256(from_bits4d(nan)) || m - m != 0) return 0;
	v4d sum = splat4d(0), shift = splat4d(m);
	for (i = 0; i + 4 <= n; i += 4) {
		memcpy(&x, src + i, sizeof x);
		v4d e = expd4(x - shift);
		sum += e;
		if (!log) memcpy(dst + i, &e, sizeof e);
	}
	double total = (sum[0] + sum[1]) + (sum[2] + sum[3]);
	for (; i < n; i++) {
		double e = expd4(splat4d(src[i] - m))[0];
		total += e;
		if (!log) dst[i] = e;
	}
	if (log) {
		double ls = __builtin_log(total);
		for (i = 0; i < n; i++) dst[i] = (src[i] - m) - ls;
		return 1;
	}
	double inv = 1 / total;
	for (i = 0; i < n; i++) dst[i] *= inv;
	return 1;
}

// lathe_softmax_f64 runs softmax_row_f64 over rows consecutive rows of n
// values and returns how many it wrote before the first that it left to
// the caller (rows when it wrote them all).
AVX2 ptrdiff_t lathe_softmax_f64(double *dst, const double *src, ptrdiff_t rows, ptrdiff_t n, int log) {
	for (ptrdiff_t r = 0; r < rows; r++)
		if (!softmax_row_f64(dst + r * n, src + r * n, n, log)) return r;
	return rows;
}
