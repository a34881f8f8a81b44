package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// TestUnaryVector: shim.c's float32 unary loops against elementwise.go's
// float64 functions rounded to float32, over a million values spread
// log-uniformly from 1e-40 to 1e6 of both signs and the values the ops
// treat apart (±0, ±Inf, NaN, halves, the tanh split at 0.5625, sigmoid's
// and tanh's saturation). The exact ops must give the same bits (a NaN
// as any NaN, rsqrt within 1 ulp: its square root and division round
// twice); sigmoid, silu and tanh are held to the ulps below, a million
// values' worst (2, 3 and 1 ulps) with a margin, and a result under 2^-100
// to within 2^-120 (silu's there has a subnormal sigmoid's few bits, and
// torch's gives -0). The exponential's ops run in AVX2's lanes and in
// AVX-512's.
func TestUnaryVector(t *testing.T) { eachWidth(t, testUnaryVector) }

func testUnaryVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		0.5, -0.5, 1.5, -2.5, 0.5625, -0.5625, 0.56249994, 9, -9, 88.7, -88.7, 104, -104, 1e-45, -1e-45, 1 << 24, 3e38}
	const n = 1 << 20
	src := make([]float32, n+5) // a tail past the last full vector
	for i := range src {
		switch {
		case i < len(special):
			src[i] = special[i]
		default:
			v := float32(math.Pow(10, -40+46*rng.Float64()))
			if rng.IntN(2) == 0 {
				v = -v
			}
			src[i] = v
		}
	}
	params := ops.Params{A: -0.75, B: 1.25} // clamp's bounds; leaky_relu takes A as its slope
	for _, c := range []struct {
		name string
		op   unaryOp
		ulps int64 // 0: the same bits
	}{
		{"neg", unaryNeg, 0}, {"abs", unaryAbs, 0}, {"square", unarySquare, 0}, {"reciprocal", unaryReciprocal, 0},
		{"rsqrt", unaryRsqrt, 1}, {"floor", unaryFloor, 0}, {"ceil", unaryCeil, 0}, {"round", unaryRound, 0},
		{"sign", unarySign, 0}, {"clamp", unaryClamp, 0}, {"leaky_relu", unaryLeakyReLU, 0},
		{"sigmoid", unarySigmoid, 3}, {"silu", unarySiLU, 4}, {"tanh", unaryTanh, 2},
	} {
		f := via64[float32](floatUnary[c.name](params))
		got := make([]float32, len(src))
		if !unaryFloat32(c.op, got, src, float32(params.A), float32(params.B)) {
			t.Fatalf("%s: the C loop refused %d values", c.name, len(src))
		}
		worst, at := int64(0), 0
		for i, x := range src {
			want := f(x)
			if want != want && got[i] != got[i] {
				continue
			}
			if math.Abs(float64(want)) < 0x1p-100 && math.Abs(float64(got[i])-float64(want)) < 0x1p-120 {
				continue // a result this small to an absolute bound (torch's silu gives -0 there)
			}
			if d := ulps(got[i], want); d > worst || (d == 0 && math.Float32bits(got[i]) != math.Float32bits(want) && worst == 0) {
				if d == 0 {
					d = 1 // a zero of the other sign
				}
				worst, at = d, i
			}
		}
		if worst > c.ulps {
			t.Errorf("%s(%g) = %g, want %g: %d ulps off, more than %d", c.name, src[at], got[at], f(src[at]), worst, c.ulps)
		}
	}

	// gelu_tanh rounds its tanh's argument and 1 + tanh in float32, as
	// torch's float32 kernel does: where tanh is near -1 the sum cancels,
	// so the bound is 4 ulps of the result and an ulp of 1 times x/2.
	f := via64[float32](floatUnary["gelu_tanh"](params))
	got := make([]float32, len(src))
	if !unaryFloat32(unaryGELUTanh, got, src, 0, 0) {
		t.Fatal("gelu_tanh: the C loop refused")
	}
	for i, x := range src {
		want := f(x)
		if (want != want && got[i] != got[i]) || got[i] == want {
			continue
		}
		bound := 4*ulp(want) + math.Abs(float64(x))*0x1p-24
		if d := math.Abs(float64(got[i]) - float64(want)); !(d <= bound) {
			t.Errorf("gelu_tanh(%g) = %g, want %g within %g", x, got[i], want, bound)
			break
		}
	}
}

// ulp is the gap from |v| to the next float32 away from zero.
func ulp(v float32) float64 {
	a := float32(math.Abs(float64(v)))
	return float64(math.Nextafter32(a, float32(math.Inf(1))) - a)
}

// TestBinaryVector: shim.c's maximum and minimum give binary.go's
// functions' bits, a NaN in either operand and ties of ±0 among the pairs,
// with the rhs a run (vv) and one value (vs), and a tail past the last
// full vector.
func TestBinaryVector(t *testing.T) {
	if !haveAVX2 {
		t.Skip("the C loops need AVX2, which this cpu lacks")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	nan, negZero := float32(math.NaN()), float32(math.Copysign(0, -1))
	pick := []float32{nan, 0, negZero, 1, -1, float32(math.Inf(1)), float32(math.Inf(-1))}
	const n = 4096 + 5
	p, q := make([]float32, n), make([]float32, n)
	for i := range p {
		p[i], q[i] = pick[rng.IntN(len(pick))], pick[rng.IntN(len(pick))]
		if rng.IntN(2) == 0 {
			p[i], q[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
	}
	k := binaryKernels()
	for _, name := range []string{"maximum", "minimum"} {
		rows, f := float32Binary[name], k[name].f32
		for _, s := range []float32{nan, negZero, 0, 0.5} {
			got := make([]float32, n)
			rows.vv(got, p, q)
			for i := range got {
				if want := f(p[i], q[i]); math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("%s(%g, %g) = %g, want %g", name, p[i], q[i], got[i], want)
				}
			}
			rows.vs(got, p, s)
			for i := range got {
				if want := f(p[i], s); math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("%s(%g, %g) = %g, want %g", name, p[i], s, got[i], want)
				}
			}
		}
	}
}

// TestPowScalarExponents: pow by the exponents that torch's kernel takes
// apart gives what it takes instead (x·x, x·x·x, 1/(x·x), √x, 1/√x, 1/x
// in float32: -0 and -Inf to the 0.5 are -0 and NaN, as torch's), and
// another exponent math.Pow's value, on runs long enough for the C loops
// and short ones.
func TestPowScalarExponents(t *testing.T) {
	negZero, inf := float32(math.Copysign(0, -1)), float32(math.Inf(1))
	for _, n := range []int{7, 300} {
		p := make([]float32, n)
		for i := range p {
			p[i] = float32(i)*0.37 + 0.01
		}
		p[0], p[1], p[2] = negZero, -inf, 4
		for _, c := range []struct {
			s    float32
			want func(x float32) float32
		}{
			{2, func(x float32) float32 { return x * x }},
			{0.5, func(x float32) float32 { return float32(math.Sqrt(float64(x))) }},
			{-0.5, func(x float32) float32 { return 1 / float32(math.Sqrt(float64(x))) }},
			{-1, func(x float32) float32 { return 1 / x }},
			{3, func(x float32) float32 { return x * x * x }},
			{-2, func(x float32) float32 { return 1 / (x * x) }},
			{2.5, func(x float32) float32 { return float32(math.Pow(float64(x), 2.5)) }},
		} {
			got := make([]float32, n)
			if rows, ok := powByExponent32[c.s]; ok {
				rows(got, p)
			} else {
				float32Binary["pow"].vs(got, p, c.s)
			}
			for i, x := range p {
				if w := c.want(x); math.Float32bits(got[i]) != math.Float32bits(w) && !(w != w && got[i] != got[i]) {
					t.Fatalf("n=%d: pow(%g, %g) = %g, want %g", n, x, c.s, got[i], w)
				}
			}
		}
	}
}

// TestFModVector: lathe_binary_f32's fmod and remainder (float64 lanes,
// libm's fmodf past a quotient of 2^27) give binary.go's (math.Mod's,
// exact) bit for bit, over dividends and divisors of both signs, zeros,
// infinities and NaN, quotients either side of 2^27 and pairs spread over
// float32's whole range, with the divisor a run and one value.
func TestFModVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0.7, -0.7, 3, 1e-30, 1e30}
	const n = 1 << 16
	p, q := make([]float32, n+3), make([]float32, n+3)
	for i := range p {
		switch i % 4 {
		case 0:
			p[i], q[i] = special[rng.IntN(len(special))], special[rng.IntN(len(special))]
		case 1:
			p[i], q[i] = float32(rng.NormFloat64()*100), float32(rng.NormFloat64())
		case 2: // quotients near 2^27, where the float64 lanes hand over to fmodf
			q[i] = float32(rng.NormFloat64())
			p[i] = q[i] * float32(math.Ldexp(1+rng.Float64(), 25+rng.IntN(4)))
		default:
			p[i], q[i] = float32(math.Pow(10, -45+83*rng.Float64())), float32(math.Pow(10, -45+83*rng.Float64()))
			if rng.IntN(2) == 0 {
				p[i] = -p[i]
			}
			if rng.IntN(2) == 0 {
				q[i] = -q[i]
			}
		}
	}
	k := binaryKernels()
	for _, name := range []string{"fmod", "remainder"} {
		rows, f := float32Binary[name], k[name].f32
		got := make([]float32, n)
		rows.vv(got, p, q)
		for i := range got {
			if w := f(p[i], q[i]); math.Float32bits(got[i]) != math.Float32bits(w) && !(w != w && got[i] != got[i]) {
				t.Fatalf("%s(%g, %g) = %g, want %g", name, p[i], q[i], got[i], w)
			}
		}
		for _, s := range append(special, 1e-40, 7e-3, -2.5e7) {
			rows.vs(got, p, s)
			for i := range got {
				if w := f(p[i], s); math.Float32bits(got[i]) != math.Float32bits(w) && !(w != w && got[i] != got[i]) {
					t.Fatalf("%s(%g, %g) = %g, want %g", name, p[i], s, got[i], w)
				}
			}
		}
	}
}

// TestPowAtan2Vector: lathe_binary_f32's pow and atan2 in float64 lanes
// give binary.go's float32(math.Pow) and float32(math.Atan2): the same
// bits, or one ulp off where the float64 value lies within 2^-40 of a tie
// between two float32s (pow's e^(y·log|x|) is good to about 1e-14: x^1.5
// for x = 2^24 - 1 lies 1.3e-15 above such a tie), over bases and first
// operands of every magnitude and both signs with the specials, and
// exponents that are small integers, halves, normal draws, large enough to
// overflow, even past 2^24 and the specials, the rhs a run and one value.
func TestPowAtan2Vector(t *testing.T) {
	if !haveAVX2 {
		t.Skip("the C loops need AVX2, which this cpu lacks")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	nan, inf, negZero := float32(math.NaN()), float32(math.Inf(1)), float32(math.Copysign(0, -1))
	special := []float32{0, negZero, inf, -inf, nan, 1, -1, 2, -2, 0.5, -0.5, 3, -3, 1 << 24, -(1 << 24), 16777215, -16777215, 1e-45, -1e-45, 3.4e38}
	const n = 1 << 20
	p, q := make([]float32, n+3), make([]float32, n+3)
	for i := range p {
		p[i] = float32(math.Pow(10, -45+83*rng.Float64()))
		if rng.IntN(2) == 0 {
			p[i] = -p[i]
		}
		switch rng.IntN(6) {
		case 0:
			q[i] = float32(rng.IntN(11) - 5)
		case 1:
			q[i] = float32(rng.IntN(11)-5) + 0.5
		case 2:
			q[i] = float32(rng.NormFloat64() * 3)
		case 3:
			q[i] = float32(rng.NormFloat64() * 1e4)
		case 4:
			q[i] = special[rng.IntN(len(special))]
		default:
			q[i] = -p[i] * float32(rng.Float64())
		}
		if i%16 == 0 {
			p[i] = special[rng.IntN(len(special))]
		}
	}
	k := binaryKernels()
	for _, name := range []string{"pow", "atan2"} {
		rows, f, f64 := float32Binary[name], k[name].f32, k[name].f64
		off := 0
		check := func(got []float32, s float32, one bool) {
			for i := range got {
				b := q[i]
				if one {
					b = s
				}
				w := f(p[i], b)
				switch d := ulps(got[i], w); {
				case math.Float32bits(got[i]) == math.Float32bits(w) || w != w && got[i] != got[i]:
				case d == 1 && nearTie(f64(float64(p[i]), float64(b))):
					off++
				default:
					t.Fatalf("%s(%g, %g) = %g, want %g (bits %#x, %#x)", name, p[i], b, got[i], w, math.Float32bits(got[i]), math.Float32bits(w))
				}
			}
		}
		got := make([]float32, len(p))
		rows.vv(got, p, q)
		check(got, 0, false)
		for _, s := range []float32{2.5, -1.5, 7, nan, inf, 1e-3} {
			rows.vs(got, p, s)
			check(got, s, true)
		}
		t.Logf("%s: %d of %d values an ulp off, next to a tie", name, off, 7*len(p))
	}
}

// nearTie says whether v lies within 2^-40 of v of the midpoint between
// the two float32s around it.
func nearTie(v float64) bool {
	f := float32(v)
	other := math.Nextafter32(f, float32(math.Copysign(math.Inf(1), v-float64(f))))
	mid := (float64(f) + float64(other)) / 2
	return math.Abs(v-mid) <= math.Abs(v)*0x1p-40
}

// TestFloat64Rows: the float64 row loops give floatUnary's functions'
// bits, over the values they treat apart; and clampF's builtin min and max
// give math.Min's and math.Max's (NaN, ±0, bounds the wrong way round).
func TestFloat64Rows(t *testing.T) {
	src := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 0.5, -0.5, 1.5, -2.5, 2.5, 1e-310, -3e300, 0.75, -1.25}
	for _, b := range [][2]float64{{-0.75, 1.25}, {1, -1}, {0, 0}, {math.Copysign(0, -1), 0}, {0, math.Copysign(0, -1)}, {math.Inf(-1), math.NaN()}} {
		for _, x := range src {
			want := x
			if x == x {
				want = math.Min(math.Max(x, b[0]), b[1])
			}
			if got := clampF(x, b[0], b[1]); math.Float64bits(got) != math.Float64bits(want) && !(want != want && got != got) {
				t.Errorf("clampF(%g, %g, %g) = %g, want math.Min/Max's %g", x, b[0], b[1], got, want)
			}
		}
	}
	for _, p := range []ops.Params{{A: -0.75, B: 1.25}, {A: 1, B: -1}, {A: 0.01}} {
		for name, rows := range float64Unary {
			f := floatUnary[name](p)
			got := make([]float64, len(src))
			rows(p)(got, src)
			for i, x := range src {
				if w := f(x); math.Float64bits(got[i]) != math.Float64bits(w) && !(w != w && got[i] != got[i]) {
					t.Errorf("%s(%g) with %+v = %g, want %g", name, x, p, got[i], w)
				}
			}
		}
	}
}

// TestUnary64Vector: log, log1p, expm1, sin, cos, tan, sinh, cosh, asinh,
// acosh, atanh, atan, asin, acos, softplus, lgamma, digamma, trigamma and erfc
// in float64 lanes give floatUnary's float64 functions rounded to float32
// (trigamma's, its float32 reflection): the same
// bits, or one ulp off where the float64 result lies near a float32
// rounding boundary, which may happen to a handful of a million values
// (the test says how many). The inputs: NaN, ±Inf, ±0, subnormals, ±1 and
// the ends of each op's domain and pieces (log1p at -1, expm1 at ±ln2/2,
// softplus at its threshold), float32s nearest multiples of π/2 (where sin
// or cos nearly cancels), |x| past 2^20 (libm's sin and cos), the largest
// float32s, and a million values spread over 10^-40 to 10^6 of both signs,
// with a tail past the last vector.
func TestUnary64Vector(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2: the ops run per element")
	}
	rng := rand.New(rand.NewPCG(25, 26))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		1, -1, math.Nextafter32(-1, 0), math.Nextafter32(-1, -2), math.Nextafter32(1, 2), math.Nextafter32(1, 0),
		0.34657359, -0.34657359, 0.3465736, -0.3465736, 20, math.Nextafter32(20, 21), 19.999998, 1e-45, -1e-45, 1e-38, -1e-38,
		88.72, 88.73, -103.9, -104, 709, 710, -745, 1048576, 1048577, -1048577, 1 << 29, 3e38, -3e38, 3.4028235e38,
		// the gamma family's pieces: its recurrences' ends (8, 10), digamma's
		// constant at 10 and its zero, trigamma's reflection at 1/2, and
		// the poles and their neighbours
		2, 8, math.Nextafter32(8, 0), 10, math.Nextafter32(10, 0), 1.4616321, 0.5, math.Nextafter32(0.5, 0),
		-2, math.Nextafter32(-2, 0), math.Nextafter32(-2, -3), -2.5, -100.3, -1e7 - 0.5,
		// erfc's pieces' ends
		0.25, 0.84375, math.Nextafter32(0.84375, 0), 1.25, math.Nextafter32(1.25, 0), 2.857143, 2.857142, 6, -6, 28, -28,
		9.3, 10, 10.05, 26.5, -0.25, -0.84375, -1.25}
	for k := 1; k < 200; k++ { // the float32s around k·π/2
		v := float32(float64(k) * math.Pi / 2)
		special = append(special, v, math.Nextafter32(v, 0), math.Nextafter32(v, 1e9), -v)
	}
	const n = 1 << 20
	src := make([]float32, n+3)
	for i := range src {
		if i < len(special) {
			src[i] = special[i]
			continue
		}
		v := float32(math.Pow(10, -40+46*rng.Float64()))
		if rng.IntN(2) == 0 {
			v = -v
		}
		src[i] = v
	}
	params := ops.Params{A: 1, B: 20} // softplus's beta and threshold, torch's defaults
	for _, c := range []struct {
		name string
		op   unary64Op
		p    ops.Params
	}{
		{"log", unary64Log, params}, {"log1p", unary64Log1p, params}, {"expm1", unary64Expm1, params},
		{"sin", unary64Sin, params}, {"cos", unary64Cos, params}, {"softplus", unary64Softplus, params},
		{"softplus", unary64Softplus, ops.Params{A: 0.5, B: 3}},
		{"tan", unary64Tan, params}, {"sinh", unary64Sinh, params}, {"cosh", unary64Cosh, params},
		{"asinh", unary64Asinh, params}, {"acosh", unary64Acosh, params}, {"atanh", unary64Atanh, params},
		{"atan", unary64Atan, params}, {"asin", unary64Asin, params}, {"acos", unary64Acos, params},
		{"lgamma", unary64Lgamma, params}, {"digamma", unary64Digamma, params}, {"erfc", unary64Erfc, params},
		{"polygamma", unary64Trigamma, ops.Params{A: 1}}, // trigamma
	} {
		f := via64[float32](floatUnary[c.name](c.p))
		if c.op == unary64Trigamma {
			f = trigamma[float32] // its reflection in float32, as torch's
		}
		got := make([]float32, len(src))
		if !unary64Float32(c.op, got, src, c.p.A, c.p.B) {
			t.Fatalf("%s: the C loop refused %d values", c.name, len(src))
		}
		off := 0
		for i, x := range src {
			want := f(x)
			switch d := ulps(got[i], want); {
			case math.Float32bits(got[i]) == math.Float32bits(want) || want != want && got[i] != got[i]:
			case d == 1 && got[i] != 0 && want != 0 && !math.IsInf(float64(want), 0):
				off++
			default:
				t.Fatalf("%s%v(%g) = %g, want %g (bits %#x, %#x)", c.name, c.p, x, got[i], want, math.Float32bits(got[i]), math.Float32bits(want))
			}
		}
		if off > 8 {
			t.Errorf("%s%v: %d of %d values an ulp off, more than a handful", c.name, c.p, off, len(src))
		}
		t.Logf("%s%v: %d of %d values an ulp off", c.name, c.p, off, len(src))
	}
}
