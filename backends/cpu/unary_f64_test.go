package cpu

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// float64Ops are lathe_unary_f64's ops by floatUnary's names.
var float64Ops = []struct {
	name string
	op   float64Op
}{{"exp", f64Exp}, {"log", f64Log}, {"tanh", f64Tanh}, {"sigmoid", f64Sigmoid}, {"silu", f64SiLU}, {"sin", f64Sin}, {"cos", f64Cos}}

// float64Inputs is the special values then values drawn as three kinds in
// turn: magnitudes from 10^-320 to 10^308, exp's whole range and [-3, 3],
// each of either sign.
func float64Inputs(n int, seed uint64) []float64 {
	src := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1, -1, 2, 0.5,
		5e-324, -5e-324, 0x1p-1022, math.Nextafter(0x1p-1022, 0), 1e-300, 1e-20, -1e-20,
		math.Sqrt2, math.Nextafter(math.Sqrt2, 0), math.Sqrt2 / 2, math.Nextafter(1, 0), math.Nextafter(1, 2),
		7.09782712893383973096e+02, math.Nextafter(7.09782712893383973096e+02, 800), 709.5, 710, 1000,
		-7.45133219101941108420e+02, math.Nextafter(-7.45133219101941108420e+02, -800), -745, -740, -708.4, -708.3, -1000,
		0.625, math.Nextafter(0.625, 0), -0.625, 44, 44.02, 18.7, 19, -19, 36.8, -36.8, math.MaxFloat64, -math.MaxFloat64,
		math.Pi / 2, math.Pi, 3 * math.Pi / 2, 1e6 * math.Pi, 0x1p30, math.Nextafter(0x1p30, 2e9), -0x1p30, 1e22}
	for k := 1; k < 100; k++ { // the float64s around k·π/2
		v := float64(k) * math.Pi / 2
		src = append(src, v, math.Nextafter(v, 0), math.Nextafter(v, 1e9), -v)
	}
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for i := len(src); i < n; i++ {
		var v float64
		switch i % 3 {
		case 0:
			v = math.Pow(10, -320+628*rng.Float64())
		case 1:
			v = -750 + 1462*rng.Float64()
		default:
			v = -3 + 6*rng.Float64()
		}
		if rng.IntN(2) == 0 {
			v = -v
		}
		src = append(src, v)
	}
	return src
}

// TestUnaryFloat64Vector checks lathe_unary_f64's exp, log, tanh, sigmoid
// and silu against floatUnary's Go functions (math.Exp and the rest, the
// per-element path of short runs) over a million values with a tail past
// the last vector: the same special values (±0 with their signs, ±Inf,
// NaN, 0 for an underflow, finite where the other is) and at most three
// ulps apart elsewhere, since each side may be off by one or two
// (TestUnaryFloat64Accuracy measures them against the true values). silu
// below -708.4, x times a subnormal sigmoid, is held to two of that
// sigmoid's ulps times |x|: both sides have its few bits. sin and cos
// past 2^30 are libm's in C and math's Payne-Hanek reduction in Go, which
// differ by up to 25 ulps there (glibc's is correctly rounded): 1e-12.
func TestUnaryFloat64Vector(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2: the ops run per element")
	}
	src := float64Inputs(1<<20+3, 27)
	for _, c := range float64Ops {
		f := floatUnary[c.name](ops.Params{})
		got := make([]float64, len(src))
		if !unaryFloat64(c.op, got, src) {
			t.Fatalf("%s: the C loop refused %d values", c.name, len(src))
		}
		var off [4]int
		for i, x := range src {
			want := f(x)
			d := int64(math.Float64bits(got[i])) - int64(math.Float64bits(want))
			d = max(d, -d)
			switch {
			case d == 0 || want != want && got[i] != got[i]:
			case d <= 3 && !math.IsInf(want, 0) && want != 0 && got[i] != 0:
				off[d]++
			case c.name == "silu" && x < -708.4 && math.Abs(got[i]-want) <= 2*5e-324*-x && got[i] < 0 && want < 0:
			case (c.name == "sin" || c.name == "cos") && math.Abs(x) > 0x1p30 && math.Abs(got[i]-want) <= 1e-12:
			default:
				t.Errorf("%s(%g) = %g, want %g (bits %#x, %#x)", c.name, x, got[i], want, math.Float64bits(got[i]), math.Float64bits(want))
			}
		}
		t.Logf("%s: of %d values, %d one ulp from Go's, %d two, %d three", c.name, len(src), off[1], off[2], off[3])
	}
}

// TestUnaryFloat64Accuracy measures lathe_unary_f64's ops and the Go
// functions of the per-element path against values taken in 256-bit
// big.Float arithmetic (bigExp, bigLog), in ulps of the result, over 5000
// of float64Inputs' values. The limits are what 20000 values measured,
// rounded up (C, Go): exp 1.00 and 1.36, log 0.74 and 0.74, tanh 1.04 and
// 1.10, sigmoid 1.89 and 1.90 (1/(1 + e^-|x|) rounds three times), silu
// 2.50 and 2.11 (and x times that); sin 1.19 and 1.41, cos 1.27 and 1.28
// (|x| ≤ 1e9, where bigSinCos reduces).
func TestUnaryFloat64Accuracy(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2: the ops run per element")
	}
	src := float64Inputs(5000, 29)
	limit := map[string][2]float64{"exp": {1, 1.5}, "log": {1, 1}, "tanh": {1.1, 1.2}, "sigmoid": {2, 2}, "silu": {2.5, 2.5},
		"sin": {1.25, 1.5}, "cos": {1.3, 1.3}}
	for _, c := range float64Ops {
		f := floatUnary[c.name](ops.Params{})
		got := make([]float64, len(src))
		if !unaryFloat64(c.op, got, src) {
			t.Fatalf("%s: the C loop refused %d values", c.name, len(src))
		}
		var worst [2]float64
		for i, x := range src {
			ref, ok := bigUnary(c.name, x)
			if !ok {
				continue
			}
			for side, v := range [2]float64{got[i], f(x)} {
				e := ulpError(v, ref)
				worst[side] = max(worst[side], e)
				if e > limit[c.name][side] {
					t.Errorf("%s(%g): %s gives %g, %.2f ulps from %s", c.name, x, [2]string{"C", "Go"}[side], v, e, ref.Text('g', 20))
				}
			}
		}
		t.Logf("%s: at most %.2f ulps (C), %.2f (Go)", c.name, worst[0], worst[1])
	}
}

// ulpError is |v - ref| in ulps of ref rounded to a float64 (of the
// smallest subnormal, below the normal range); +Inf where v is infinite
// and ref is not, or the two differ in sign.
func ulpError(v float64, ref *big.Float) float64 {
	r, _ := ref.Float64()
	if math.IsInf(v, 0) || math.IsNaN(v) || math.Signbit(v) != math.Signbit(r) && v != 0 && r != 0 {
		if v == r {
			return 0
		}
		return math.Inf(1)
	}
	exp := math.Ilogb(r)
	if r == 0 || exp < -1022 {
		exp = -1022
	}
	ulp := math.Ldexp(1, exp-52)
	d := new(big.Float).SetPrec(256).Sub(new(big.Float).SetPrec(256).SetFloat64(v), ref)
	e, _ := d.Float64()
	return math.Abs(e) / ulp
}

// bigUnary is op(x) in 256-bit arithmetic, where x is finite and inside
// op's domain (ok is false elsewhere: the special values are
// TestUnaryFloat64Vector's).
func bigUnary(op string, x float64) (_ *big.Float, ok bool) {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil, false
	}
	bx := newBig().SetFloat64(x)
	one := newBig().SetInt64(1)
	switch op {
	case "exp":
		if x > 710 || x < -746 {
			return nil, false
		}
		return bigExp(bx), true
	case "log":
		if x <= 0 {
			return nil, false
		}
		return bigLog(bx), true
	case "tanh":
		if math.Abs(x) < 1e-30 { // x - x³/3, past what 256 bits of e^2x - 1 keep
			return newBig().Sub(bx, newBig().Quo(newBig().Mul(bx, newBig().Mul(bx, bx)), newBig().SetInt64(3))), true
		}
		if math.Abs(x) > 400 {
			return newBig().SetFloat64(math.Copysign(1, x)), true
		}
		e := bigExp(newBig().Mul(bx, newBig().SetInt64(2)))
		return newBig().Quo(newBig().Sub(e, one), newBig().Add(e, one)), true
	case "sin", "cos":
		if math.Abs(x) > 1e9 { // past the lanes' reduction: libm's
			return nil, false
		}
		return bigSinCos(bx, op == "cos"), true
	case "sigmoid", "silu":
		if x < -700 || x > 700 { // past both ends the ops saturate or underflow; bigExp's range is exp's
			return nil, false
		}
		s := newBig().Quo(one, newBig().Add(one, bigExp(newBig().Neg(bx))))
		if op == "silu" {
			s.Mul(s, bx)
		}
		return s, true
	}
	return nil, false
}

func newBig() *big.Float { return new(big.Float).SetPrec(256) }

// bigLn2 is ln 2 = Σ 1/(k·2^k), k ≥ 1, to 256 bits.
var bigLn2 = func() *big.Float {
	sum, term := newBig(), newBig()
	for k := int64(1); k < 270; k++ {
		term.SetMantExp(newBig().Quo(newBig().SetInt64(1), newBig().SetInt64(k)), -int(k))
		sum.Add(sum, term)
	}
	return sum
}()

// bigExp is e^x = 2^k·e^r, r = x - k·ln2, e^r by its series.
func bigExp(x *big.Float) *big.Float {
	xf, _ := x.Float64()
	k := math.Round(xf / math.Ln2)
	r := newBig().Sub(x, newBig().Mul(newBig().SetFloat64(k), bigLn2))
	sum, term := newBig().SetInt64(1), newBig().SetInt64(1)
	for n := int64(1); term.Sign() != 0 && term.MantExp(nil) > -270; n++ {
		term.Quo(term.Mul(term, r), newBig().SetInt64(n))
		sum.Add(sum, term)
	}
	return sum.SetMantExp(sum, int(k))
}

// bigLog is log x = e·ln2 + 2·atanh(s), x = m·2^e with m in [1, 2) and s =
// (m - 1)/(m + 1) ≤ 1/3, atanh by its series.
func bigLog(x *big.Float) *big.Float {
	m := newBig()
	e := x.MantExp(m) // m in [0.5, 1)
	m.SetMantExp(m, 1)
	e--
	one := newBig().SetInt64(1)
	s := newBig().Quo(newBig().Sub(m, one), newBig().Add(m, one))
	s2 := newBig().Mul(s, s)
	sum, pow := newBig(), newBig().Set(s)
	for n := int64(1); pow.Sign() != 0 && pow.MantExp(nil) > -270; n += 2 {
		sum.Add(sum, newBig().Quo(pow, newBig().SetInt64(n)))
		pow.Mul(pow, s2)
	}
	sum.Mul(sum, newBig().SetInt64(2))
	return sum.Add(sum, newBig().Mul(newBig().SetInt64(int64(e)), bigLn2))
}

// TestSoftmaxRowFloat64 checks lathe_softmax_f64 against softmaxRowGo,
// the per-element loop (math.Exp, a division by the sum), over rows of 4
// values to a thousand, spreads that reach exp's underflow, -Inf entries,
// and softmax and log_softmax: within sixteen ulps, 4e-15 (each side's
// exponentials to one or two ulps, sums of a hundred terms in another
// order, a division against a scale by 1/sum: nine measured), or for
// log_softmax 2^-50 where
// the value is near 0; a row with a NaN or an infinite max is left to the
// Go loop, with the rows before it written.
func TestSoftmaxRowFloat64(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2: softmax rows run in Go")
	}
	rng := rand.New(rand.NewPCG(33, 34))
	for _, n := range []int{4, 5, 7, 8, 33, 100, 1031} {
		rows := max(2, 2000/n)
		for _, spread := range []float64{1, 30, 1500} {
			for _, log := range []bool{false, true} {
				src := make([]float64, rows*n)
				for i := range src {
					src[i] = spread * (rng.Float64() - 0.5)
				}
				src[n/2] = math.Inf(-1)
				got, want := make([]float64, len(src)), make([]float64, len(src))
				if done := softmaxRowsFloat64(got, src, n, log); done != rows && len(src) >= vectorMin {
					t.Fatalf("n %d spread %v: took %d of %d finite rows", n, spread, done, rows)
				} else if len(src) < vectorMin {
					continue
				}
				for r := range rows {
					softmaxRowGo(want, src, r*n, n, 1, log)
				}
				for i := range got {
					d := int64(math.Float64bits(got[i])) - int64(math.Float64bits(want[i]))
					if max(d, -d) > 16 && !(log && math.Abs(got[i]-want[i]) <= 0x1p-50) && got[i] != want[i] {
						t.Fatalf("n %d spread %v log %v: [%d] = %v, want %v", n, spread, log, i, got[i], want[i])
					}
				}
			}
		}
	}
	rows := make([]float64, 3*512)
	for _, bad := range []float64{math.NaN(), math.Inf(1)} {
		rows[512+300] = bad
		if done := softmaxRowsFloat64(make([]float64, len(rows)), rows, 512, false); done != 1 {
			t.Errorf("rows with %v in the second: %d written, want the first alone", bad, done)
		}
	}
}

// bigPi is π = 16·atan(1/5) - 4·atan(1/239) (Machin), to 256 bits.
var bigPi = func() *big.Float {
	atanInv := func(k int64) *big.Float { // atan(1/k) by its series
		sum, pow := newBig(), newBig().Quo(newBig().SetInt64(1), newBig().SetInt64(k))
		k2 := newBig().SetInt64(k * k)
		for n := int64(1); pow.Sign() != 0 && pow.MantExp(nil) > -270; n += 2 {
			term := newBig().Quo(pow, newBig().SetInt64(n))
			if n%4 == 3 {
				term.Neg(term)
			}
			sum.Add(sum, term)
			pow.Quo(pow, k2)
		}
		return sum
	}
	pi := newBig().Mul(atanInv(5), newBig().SetInt64(16))
	return pi.Sub(pi, newBig().Mul(atanInv(239), newBig().SetInt64(4)))
}()

// bigSinCos is sin x (cosine: cos x) for |x| ≤ 1e9: x = n·π/2 + r, then
// the series of sin r or cos r as n mod 4 says, with its sign.
func bigSinCos(x *big.Float, cosine bool) *big.Float {
	xf, _ := x.Float64()
	n := math.Round(xf / (math.Pi / 2))
	halfPi := newBig().Quo(bigPi, newBig().SetInt64(2))
	r := newBig().Sub(x, newBig().Mul(newBig().SetFloat64(n), halfPi))
	q := int64(n) % 4
	if cosine {
		q++
	}
	q = (q%4 + 4) % 4
	r2 := newBig().Mul(r, r)
	sum, term := newBig(), newBig().Set(r) // sin r: r - r³/3! + ...
	k := int64(1)
	if q%2 == 1 { // cos r: 1 - r²/2! + ...
		term.SetInt64(1)
		k = 0
	}
	for range 40 { // |r| ≤ π/4: r^80/80! is far below 2^-256
		sum.Add(sum, term)
		term.Quo(term.Mul(term, r2), newBig().SetInt64(-(k+1)*(k+2)))
		k += 2
	}
	if q >= 2 {
		sum.Neg(sum)
	}
	return sum
}

// TestSumFloat64 checks lathe_sum_f64 bit for bit against the order it
// promises (sixteen lanes, four vectors added pairwise, then the tail), on
// lengths around its blocks of sixteen, and within n·2^-53·Σ|x| of the
// exact sum, on values spread over thirty orders of magnitude.
func TestSumFloat64(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2: float64 sums run in Go")
	}
	rng := rand.New(rand.NewPCG(35, 36))
	for _, n := range []int{1, 15, 16, 17, 255, 256, 1000, 1 << 16, 1<<16 + 13} {
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Pow(10, -15+30*rng.Float64()) * float64(1-2*rng.IntN(2))
		}
		got, ok := sumFloat64(v)
		if !ok {
			t.Fatalf("n %d: refused", n)
		}
		var lanes [16]float64
		i := 0
		for ; i+16 <= n; i += 16 {
			for l := range lanes {
				lanes[l] += v[i+l]
			}
		}
		var a [4]float64
		for l := range a {
			a[l] = (lanes[l] + lanes[4+l]) + (lanes[8+l] + lanes[12+l])
		}
		want := (a[0] + a[1]) + (a[2] + a[3])
		for ; i < n; i++ {
			want += v[i]
		}
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("n %d: %v, the promised order gives %v", n, got, want)
		}
		exact, abs := new(big.Float).SetPrec(2048), 0.0
		for _, x := range v {
			exact.Add(exact, new(big.Float).SetFloat64(x))
			abs += math.Abs(x)
		}
		e, _ := exact.Float64()
		if bound := float64(n) * 0x1p-53 * abs; math.Abs(got-e) > bound {
			t.Errorf("n %d: %v, %v off the exact sum, past %v", n, got, math.Abs(got-e), bound)
		}
	}
}
