// binary64.h: pow, atan2, fmod and remainder of float32s in float64 lanes,
// for shim.c's lathe_binary_f32 (which binary.go's float32 row loops call),
// where binary.go's Go functions took a call per element to math.Pow,
// math.Atan2 or libm's fmodf (pow 14 times torch's time, atan2 14,
// remainder 6). shim.c includes it once, after the float64-lane functions
// whose log4d, expd4, atan4d, abs4d and copysign4d it uses. pow and atan2
// give float32(math.F(x, y)) but where the float64 value lies within a few
// float64 ulps of a float32 rounding boundary (lathe_unary64_f32's
// terms); fmod and remainder are exact, as math.Mod is. BINARY64_LOOP is
// lathe_binary_f32's loop for them, which undefines it.
enum { binary64Pow, binary64Atan2, binary64FMod, binary64Remainder };

// pow4d is x^y with C99's special values, as math.Pow has them: |x|^y as
// e^(y·log|x|) (within 1e-13 of the true value for every float32 result,
// far below a float32 ulp), negated for a negative x (-0 too) and an odd
// integer y, NaN for a finite x < 0 and a y that is not an integer, and 1
// for y = ±0, for x = 1 (a NaN y too) and for x = -1 with y = ±Inf. A
// float32 y of 2^24 or more is an even integer.
AVX2 static inline v4d pow4d(v4d x, v4d y) {
	const double inf = __builtin_inf();
	v4d r = expd4(y * log4d(abs4d(x)));
	v4l integer = __builtin_ia32_roundpd256(y, 9) == y; // ±Inf too; NaN not
	v4d half = y * 0.5;
	v4l odd = integer & (__builtin_ia32_roundpd256(half, 9) != half);
	r = pick4d(odd & (bits4d(x) < 0), -r, r);
	r = pick4d((x < 0.0) & (x > -inf) & ~integer, splat4d(__builtin_nan("")), r);
	v4l one = (y == 0.0) | (x == 1.0) | ((abs4d(x) == 1.0) & (abs4d(y) == inf));
	return pick4d(one, splat4d(1.0), r);
}

// atan24d is atan2(y, x) as math.Atan2: atan(y/x), moved by π toward y's
// side where x < 0 (y/x of two float32s is exact to a float64 rounding and
// never overflows); y = ±0 gives y where x is +0 or more, else π with y's
// sign; x = ±0 gives π/2 with y's sign; two infinities give ±π/4 or
// ±3π/4; a NaN gives NaN. An infinite x or y alone comes out of y/x (±0
// or ±Inf) as it should.
AVX2 static inline v4d atan24d(v4d y, v4d x) {
	const double pi = 3.141592653589793, inf = __builtin_inf();
	v4d q = atan4d(y / x);
	q = pick4d(x < 0.0, q + copysign4d(splat4d(pi), y), q);
	q = pick4d(x == 0.0, copysign4d(splat4d(pi / 2), y), q); // y/x has x's sign too
	q = pick4d(y == 0.0, pick4d(bits4d(x) < 0, copysign4d(splat4d(pi), y), y), q);
	v4l both = (abs4d(y) == inf) & (abs4d(x) == inf);
	q = pick4d(both, copysign4d(pick4d(x > 0.0, splat4d(pi / 4), splat4d(3 * pi / 4)), y), q);
	return pick4d((x != x) | (y != y), x + y, q);
}

// fmod4d is C's fmod(x, y) for float32s: x - q·y with q = trunc(x/y),
// exact where |x/y| < 2^27, as q is then right (x/y would have to lie
// within 2^-26 of an integer without being it, and two float32s' quotient
// cannot: their difference from n·y is a multiple of the smaller ulp) and
// q·y fits a float64's 53 bits; the result takes x's sign (a zero too).
// Lanes past that, and a zero or infinite y, an infinite x and NaNs, are
// marked in slow for libm's fmodf.
AVX2 static inline v4d fmod4d(v4d x, v4d y, v4l *slow) {
	const double inf = __builtin_inf();
	v4d v = x / y;
	v4d q = __builtin_ia32_roundpd256(v, 11); // toward zero
	*slow = ~((abs4d(v) < 0x1p27) & (abs4d(y) < inf) & (abs4d(x) < inf) & (y != 0.0));
	return copysign4d(x - q * y, x);
}

AVX2 static inline v4f pick4f(v4i mask, v4f a, v4f b) {
	v4i ia, ib, r;
	memcpy(&ia, &a, sizeof ia);
	memcpy(&ib, &b, sizeof ib);
	r = (mask & ia) | (~mask & ib);
	v4f out;
	memcpy(&out, &r, sizeof out);
	return out;
}

// binary64_lanes is op of four pairs, rounded back to float32; fmod's slow
// lanes take fmodf, and remainder moves a nonzero fmod whose sign is not
// b's by b, in float32 as binary.go's remainder does.
AVX2 static inline v4f binary64_lanes(int op, v4f a, v4f b) {
	v4d x = __builtin_ia32_cvtps2pd256(a), y = __builtin_ia32_cvtps2pd256(b);
	if (op == binary64Pow) return __builtin_convertvector(pow4d(x, y), v4f);
	if (op == binary64Atan2) return __builtin_convertvector(atan24d(x, y), v4f);
	v4l slow;
	v4f m = __builtin_convertvector(fmod4d(x, y, &slow), v4f);
	if (__builtin_ia32_movmskpd256(from_bits4d(slow)))
		for (int l = 0; l < 4; l++)
			if (slow[l]) m[l] = fmodf(a[l], b[l]);
	if (op == binary64Remainder) m = pick4f((m != 0) & ((m < 0) != (b < 0)), m + b, m);
	return m;
}

// BINARY64_LOOP runs op over the n pairs four at a time (b the scalar s
// where q is NULL), the tail padded with 1s; op is a constant in each use,
// so that each loop is its own.
#define BINARY64_LOOP(OP)                                                                       \
	do {                                                                                    \
		ptrdiff_t i = 0;                                                                \
		const v4f sv = {s, s, s, s};                                                    \
		for (; i + 4 <= n; i += 4) {                                                    \
			v4f a, b = sv;                                                          \
			memcpy(&a, p + i, sizeof a);                                            \
			if (q) memcpy(&b, q + i, sizeof b);                                     \
			v4f r = binary64_lanes(OP, a, b);                                       \
			memcpy(dst + i, &r, sizeof r);                                          \
		}                                                                               \
		if (i < n) {                                                                    \
			v4f a = {1, 1, 1, 1}, b = sv;                                           \
			memcpy(&a, p + i, (n - i) * sizeof *p);                                 \
			if (q) {                                                                \
				b = (v4f){1, 1, 1, 1};                                          \
				memcpy(&b, q + i, (n - i) * sizeof *q);                         \
			}                                                                       \
			v4f r = binary64_lanes(OP, a, b);                                       \
			memcpy(dst + i, &r, (n - i) * sizeof *dst);                             \
		}                                                                               \
	} while (0)
