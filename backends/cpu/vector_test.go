package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// TestSumFloat32 checks the vector sum against the float64 sum, to the
// cascade's bound (shim.c: at most sumBlock/64 + 6 float32 roundings per
// value, 22 in all, so 24·2⁻²⁴·Σ|x|), on values of one sign (where a long
// float32 running sum would drift far past it) and of both.
func TestSumFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 15, 16, 17, 255, 256, 257, 1000, 100003, 1 << 22} {
		for _, positive := range []bool{false, true} {
			v := make([]float32, n)
			want, abs := 0.0, 0.0
			for i := range v {
				v[i] = float32(rng.NormFloat64())
				if positive {
					v[i] = float32(1 + rng.Float64()/3)
				}
				want += float64(v[i])
				abs += math.Abs(float64(v[i]))
			}
			bound := 24 * 0x1p-24 * abs
			for _, sum := range []func([]float32) float64{sumFloat32, sumFloat32Go} {
				if got := sum(v); math.Abs(got-want) > bound {
					t.Errorf("n=%d positive=%v: sum %v, want %v within %g", n, positive, got, want, bound)
				}
			}
		}
	}
}

// ulps is how many float32 steps apart a and b are.
func ulps(a, b float32) int64 {
	d := int64(math.Float32bits(a)) - int64(math.Float32bits(b))
	return max(d, -d)
}

// TestSoftmaxRowFloat32 checks the vector softmax, in AVX2's lanes and
// (where the cpu has them) AVX-512's, against float64's math.Exp, to three
// float32 ulps (the exponential's two and the rounding of the scale by
// 1/sum; log_softmax near 0 to 2^-21, its sum's error), over rows that
// reach exp's subnormal range, short rows (from 8 values, several to a
// call) and long ones, and that rows the vector path leaves alone are
// refused.
func TestSoftmaxRowFloat32(t *testing.T) { eachWidth(t, testSoftmaxRows) }

// eachWidth runs test with the C loops in AVX2's lanes ("avx2") and in
// AVX-512's ("avx512", skipped by name where the cpu has none).
func eachWidth(t *testing.T, test func(t *testing.T)) {
	for _, wide := range []bool{false, true} {
		t.Run(map[bool]string{false: "avx2", true: "avx512"}[wide], func(t *testing.T) {
			switch {
			case !haveAVX2:
				t.Skip("cpu: no AVX2")
			case wide && !haveAVX512:
				t.Skip("cpu: no AVX-512")
			}
			defer func(old bool) { useAVX512 = old }(useAVX512)
			useAVX512 = wide
			test(t)
		})
	}
}

func testSoftmaxRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{8, 9, 15, 16, 17, 31, 98, 1000 + rng.IntN(40)} {
		rows := max(1, 600/n)
		for _, spread := range []float64{1, 30, 120} {
			for _, log := range []bool{false, true} {
				src := make([]float32, rows*n)
				for i := range src {
					src[i] = float32(spread * (rng.Float64() - 0.5))
				}
				dst := make([]float32, rows*n)
				if got := softmaxRowsFloat32(dst, src, n, log); got != rows {
					if !haveAVX2 {
						t.Skip("no vector path in this build")
					}
					t.Fatalf("n %d spread %v: took %d of %d finite rows", n, spread, got, rows)
				}
				for r := range rows {
					row, out := src[r*n:(r+1)*n], dst[r*n:(r+1)*n]
					m := float32(math.Inf(-1))
					for _, v := range row {
						m = max(m, v)
					}
					sum := 0.0
					for _, v := range row {
						sum += math.Exp(float64(v - m))
					}
					for i, v := range row {
						want := float32(math.Exp(float64(v-m)) / sum)
						if log {
							want = float32(float64(v-m) - math.Log(sum))
						}
						// log: x - max - log(sum), where the sum of float32
						// exponentials is good to a few float32 roundings, so
						// a value near 0 is good to that absolutely.
						u, abs := ulps(out[i], want), math.Abs(float64(out[i]-want))
						if u > 3 && abs > 1e-45 && !(log && abs <= 0x1p-21) {
							t.Fatalf("n %d spread %v log %v: row %d [%d] = %g, want %g (%d ulps)", n, spread, log, r, i, out[i], want, u)
						}
					}
				}
			}
		}
	}
	row := make([]float32, 512)
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		row[300] = bad
		if softmaxRowsFloat32(make([]float32, 512), row, 512, false) != 0 {
			t.Errorf("a row holding %v took the vector path", bad)
		}
	}
}

func BenchmarkSoftmaxRow1024(b *testing.B) {
	src := make([]float32, 1024)
	for i := range src {
		src[i] = float32(i%17) - 8
	}
	dst := make([]float32, 1024)
	b.Run("vector", func(b *testing.B) {
		for b.Loop() {
			softmaxRowsFloat32(dst, src, len(src), false)
		}
	})
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			softmaxRowGo(dst, src, 0, 1024, 1, false)
		}
	})
}

// BenchmarkSumFloat32Loop times the vector sum (float32 lanes in blocks)
// against the Go loop (float64 accumulators) on 32 MB.
func BenchmarkSumFloat32Loop(b *testing.B) {
	v := make([]float32, 1<<23)
	for i := range v {
		v[i] = float32(i % 7)
	}
	b.SetBytes(4 << 23)
	b.Run("vector", func(b *testing.B) {
		for b.Loop() {
			sumFloat32(v)
		}
	})
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			sumFloat32Go(v)
		}
	})
}

// TestSoftmaxRowsResume checks that softmax over many rows takes the rows
// that the vector loop leaves (a NaN, an infinite max) to the general path
// and resumes the vector loop after them: each row equals softmaxRowGo's.
func TestSoftmaxRowsResume(t *testing.T) {
	const rows, n = 7, 300
	x := dispatch.NewTensor(cpu0, dispatch.Float32, []int{rows, n}, newBuffer(dispatch.Float32, rows*n))
	defer x.Release()
	src := elems[float32](x)
	for i := range src {
		src[i] = float32(i%13) - 6
	}
	src[2*n+17] = float32(math.NaN())
	src[3*n+5] = float32(math.Inf(1))
	src[6*n+299] = float32(math.NaN())
	for _, log := range []bool{false, true} {
		out := dispatch.NewTensor(cpu0, dispatch.Float32, []int{rows, n}, newBuffer(dispatch.Float32, rows*n))
		softmax[float32](out, x, 1, log)
		want := make([]float32, rows*n)
		for r := range rows {
			softmaxRowGo(want, src, r*n, n, 1, log)
		}
		for i, v := range elems[float32](out)[:rows*n] {
			if u := ulps(v, want[i]); u > 2 && !(math.IsNaN(float64(v)) && math.IsNaN(float64(want[i]))) {
				t.Fatalf("log %v: [%d] (row %d) = %g, want %g", log, i, i/n, v, want[i])
			}
		}
		out.Release()
	}
}

// specialFloat32s are values whose arithmetic has edge cases: signed
// zeros, infinities, NaN, subnormals and the extremes.
var specialFloat32s = []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.NaN()), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 1e-38, 3.5}

// TestArithFloat32 checks the vector add, sub, mul, div and relu against
// the per-element Go functions bit for bit (NaN as any NaN), on rows of
// every length around the vector width, against a row and a scalar; and
// TestArithFloat64 the float64 add, sub, mul and div the same way.
func TestArithFloat32(t *testing.T) {
	testArith(t, specialFloat32s, arithFloat32, func(p []float32) {
		dst := make([]float32, len(p))
		if !reluFloat32(dst, p) {
			t.Fatalf("relu n %d: refused", len(p))
		}
		for i, v := range p {
			if want := max(v, 0); !sameFloat32(dst[i], want) {
				t.Fatalf("relu n %d: [%d] relu(%g) = %g, want %g", len(p), i, v, dst[i], want)
			}
		}
	})
}

func TestArithFloat64(t *testing.T) {
	special := []float64{0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64,
		-math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 1e-308, 3.5}
	testArith(t, special, arithFloat64, nil)
}

// testArith runs vector (arithFloat32 or arithFloat64) over rows of the
// lengths around the vector width and past shim.c's streamMin, and each
// (where not nil) over each length's first operand.
func testArith[T float](t *testing.T, special []T, vector func(op arithOp, dst, p, q []T, s T) bool, each func(p []T)) {
	if !haveAVX2 || vectorMin > 1<<20 {
		t.Skip("no vector path on this machine or build")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	pickValue := func() T {
		if rng.IntN(3) == 0 {
			return special[rng.IntN(len(special))]
		}
		return T(rng.NormFloat64() * 1e3)
	}
	same := func(a, b T) bool {
		return a == b && math.Signbit(float64(a)) == math.Signbit(float64(b)) || a != a && b != b
	}
	scalarOps := map[arithOp]func(a, b T) T{
		opAdd: func(a, b T) T { return a + b }, opSub: func(a, b T) T { return a - b },
		opMul: func(a, b T) T { return a * b }, opDiv: func(a, b T) T { return a / b },
	}
	// The last two sizes take the streaming stores (shim.c's streamMin),
	// the last one with dst off the 32-byte alignment.
	for k, n := range []int{vectorMin, vectorMin + 1, vectorMin + 7, vectorMin + 8, 1000, 1<<22 + 13, 1<<22 + 13} {
		p, q, dst := make([]T, n), make([]T, n), make([]T, n+1)
		if k == 6 {
			dst = dst[1:]
		} else {
			dst = dst[:n]
		}
		for i := range p {
			p[i], q[i] = pickValue(), pickValue()
		}
		if each != nil {
			each(p)
		}
		for op, f := range scalarOps {
			// Every special value as the scalar: a -0 must stay -0 in
			// every lane (x·-0 and x + -0 keep the sign Go gives).
			for j := -1; j < len(special); j++ {
				scalar := j >= 0
				if scalar && n > 1<<20 && j > 1 {
					continue // the streaming sizes: -0 and +0 suffice
				}
				s := q[3]
				qq := q
				if scalar {
					s, qq = special[j], nil
				}
				if !vector(op, dst, p, qq, s) {
					t.Fatalf("op %d n %d: refused", op, n)
				}
				for i := range dst {
					want := f(p[i], s)
					if !scalar {
						want = f(p[i], q[i])
					}
					if !same(dst[i], want) {
						t.Fatalf("op %d n %d scalar %v: [%d] %g ∘ %g = %g, want %g", op, n, scalar, i, p[i], q[i], dst[i], want)
					}
				}
			}
		}
	}
}

// TestExpRowFloat32 checks the vector e^(x - shift) of attention's blocks,
// in each width, against math.Exp to two float32 ulps (or below float32's smallest normal),
// its sum against the float64 sum, and that a shift of -Inf gives zeros.
func TestExpRowFloat32(t *testing.T) { eachWidth(t, testExpRow) }

func testExpRow(t *testing.T) {
	if vectorMin > 1<<20 {
		t.Skip("no vector path in this build")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{16, 17, 64, 127, 1000} {
		row := make([]float32, n)
		for i := range row {
			row[i] = float32(40 * (rng.Float64() - 0.9))
		}
		row[0] = float32(math.Inf(-1))
		shift := float32(4.25)
		want, wantSum := make([]float32, n), 0.0
		for i, x := range row {
			e := math.Exp(float64(x - shift))
			want[i], wantSum = float32(e), wantSum+e
		}
		sum, ok := expRowFloat32(row, shift)
		if !ok {
			t.Fatalf("n %d: refused", n)
		}
		for i, v := range row {
			if ulps(v, want[i]) > 2 && math.Abs(float64(v-want[i])) > 1e-38 {
				t.Fatalf("n %d: [%d] = %g, want %g", n, i, v, want[i])
			}
		}
		if math.Abs(sum-wantSum) > 1e-6*wantSum {
			t.Errorf("n %d: sum %g, want %g", n, sum, wantSum)
		}
		if sum, _ := expRowFloat32(row, float32(math.Inf(-1))); sum != 0 || row[5] != 0 {
			t.Errorf("n %d: shift -Inf gave sum %g, [5] = %g; want zeros", n, sum, row[5])
		}
	}
}

// TestBatchNormLoopsFloat32 checks batch norm's AVX2 loops (shim.c) against
// batchnorm.go's Go loops: the float64 sums to 1e-12 of their scale (the
// order differs), the float32 results to two roundings of their terms'
// scale (C fuses a multiply and an add that Go rounds twice), on lengths
// around the vector width.
func TestBatchNormLoopsFloat32(t *testing.T) {
	if !haveAVX2 || vectorMin > 1<<20 {
		t.Skip("no vector path in this build or on this machine")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	near := func(got, want, scale float64) bool { return math.Abs(got-want) <= 1e-12*max(scale, 1) }
	for _, n := range []int{vectorMin, vectorMin + 1, vectorMin + 7, 1000, 4099} {
		x, g := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], g[i] = float32(3+rng.NormFloat64()), float32(rng.NormFloat64())
		}
		const shift = 3.1
		one := bnChannel{1, n, n}
		s, q, ok := bnMomentsFloat32(x, one, shift)
		if !ok {
			t.Fatalf("n=%d: the moments loop refused", n)
		}
		abs := 0.0
		for _, v := range x {
			abs += math.Abs(float64(v))
		}
		if want := sum64(x) - shift*float64(n); !near(s, want, abs) {
			t.Errorf("n=%d: Σ(x - shift) %v, want %v", n, s, want)
		}
		if want := sqdev64(x, shift); !near(q, want, want) {
			t.Errorf("n=%d: Σ(x - shift)² %v, want %v", n, q, want)
		}
		sg, sgx, ok := bnSumProdFloat32(g, x, one, shift)
		wg, wgx := sumProd64(g, x, shift)
		if !ok || !near(sg, wg, float64(n)) || !near(sgx, wgx, float64(n)) {
			t.Errorf("n=%d: Σg, Σg·(x - shift) %v %v (%v), want %v %v", n, sg, sgx, ok, wg, wgx)
		}
		dst := make([]float32, n)
		const a, b, k, d, mean = float32(0.7), float32(-1.3), float32(0.05), float32(0.2), float32(3)
		if !bnApplyFloat32(dst, x, a, b) {
			t.Fatalf("n=%d: the apply loop refused", n)
		}
		// Two float32 roundings of the terms' scale apart: the result
		// may be far smaller than its terms.
		within := func(got, want float32, terms float64) bool { return math.Abs(float64(got-want)) <= 0x1p-22*terms }
		for i, v := range x {
			if want := v*a + b; !within(dst[i], want, math.Abs(float64(v*a))+math.Abs(float64(b))) {
				t.Fatalf("n=%d: apply[%d] = %v, want %v", n, i, dst[i], want)
			}
		}
		if !bnGradFloat32(dst, g, x, a, k, mean, d) {
			t.Fatalf("n=%d: the grad loop refused", n)
		}
		for i := range x {
			want := float32(float64(a)*float64(g[i]) + float64(k)*float64(x[i]-mean) + float64(d))
			terms := math.Abs(float64(a*g[i])) + math.Abs(float64(k*(x[i]-mean))) + math.Abs(float64(d))
			if !within(dst[i], want, terms) {
				t.Fatalf("n=%d: grad[%d] = %v, want %v", n, i, dst[i], want)
			}
		}
	}
}

// TestBatchNormChannelSums: a channel's sums in one call over planes
// stride apart are its planes' sums, each taken alone, added in plane order
// (batchnorm.go's Go loop adds them so, and the mixed-dtype tests compare
// the 16-bit path with the float32 one bit for bit), in float32 and in both
// 16-bit dtypes.
func TestBatchNormChannelSums(t *testing.T) {
	if !haveF16C || vectorMin > 1<<20 {
		t.Skip("no vector path in this build or on this machine")
	}
	rng := rand.New(rand.NewPCG(15, 16))
	const planes, mean = 5, 0.3
	n, stride := vectorMin+13, vectorMin+40 // variables: without cgo vectorMin is 2^62
	x, g := make([]float32, planes*stride), make([]float32, planes*stride)
	for i := range x {
		x[i], g[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	ch, one := bnChannel{planes, stride, n}, bnChannel{1, n, n}
	type sums func(p int, c bnChannel) (float64, float64, float64, float64)
	for name, f := range map[string]sums{
		"float32": func(p int, c bnChannel) (float64, float64, float64, float64) {
			s, q, _ := bnMomentsFloat32(x[p*stride:], c, mean)
			a, b, _ := bnSumProdFloat32(g[p*stride:], x[p*stride:], c, mean)
			return s, q, a, b
		},
		"bfloat16": halfSums(x, g, stride, mean, true),
		"float16":  halfSums(x, g, stride, mean, false),
	} {
		var want [4]float64
		for p := range planes {
			s, q, a, b := f(p, one)
			want[0], want[1], want[2], want[3] = want[0]+s, want[1]+q, want[2]+a, want[3]+b
		}
		s, q, a, b := f(0, ch)
		if got := [4]float64{s, q, a, b}; got != want {
			t.Errorf("%s: the channel's sums %v, its planes' added %v", name, got, want)
		}
	}
}

// halfSums is TestBatchNormChannelSums's sums on x and g rounded to 16
// bits.
func halfSums(x, g []float32, stride int, mean float64, bf bool) func(p int, c bnChannel) (float64, float64, float64, float64) {
	x16, g16 := make([]uint16, len(x)), make([]uint16, len(g))
	roundHalf(x16, x, bf)
	roundHalf(g16, g, bf)
	return func(p int, c bnChannel) (float64, float64, float64, float64) {
		s, q, _ := bnMomentsHalf(x16[p*stride:], c, mean, bf)
		a, b, _ := bnSumProdHalf(g16[p*stride:], x16[p*stride:], c, mean, bf)
		return s, q, a, b
	}
}

// sameFloat32 says whether a and b have the same bits, or are both NaN.
func sameFloat32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// mixedFloat32s is n values, a third of them specialFloat32s, the others
// normal with a spread of 100.
func mixedFloat32s(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		if rng.IntN(3) == 0 {
			v[i] = specialFloat32s[rng.IntN(len(specialFloat32s))]
		} else {
			v[i] = float32(rng.NormFloat64() * 100)
		}
	}
	return v
}

// TestArithBroadcastFloat32 checks float32 add, sub, mul and div with one
// operand broadcast (a row repeated down the rows, or a value per row, on
// either side, from a view with an offset), which run as one C loop
// (arith.go's arithBroadcastFloat32), against the per-element results bit
// for bit; and a transposed operand, which the row walk takes.
func TestArithBroadcastFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	values := func(n int) []float32 { return mixedFloat32s(rng, n) }
	scalarOps := []struct {
		op *dispatch.Op[dispatch.None]
		f  func(a, b float32) float32
	}{
		{ops.Add, func(a, b float32) float32 { return a + b }}, {ops.Sub, func(a, b float32) float32 { return a - b }},
		{ops.Mul, func(a, b float32) float32 { return a * b }}, {ops.Div, func(a, b float32) float32 { return a / b }},
	}
	call := func(op any, a any, in ...*dispatch.Tensor) *dispatch.Tensor {
		t.Helper()
		var out *dispatch.Tensor
		var err error
		switch op := op.(type) {
		case *dispatch.Op[dispatch.None]:
			out, err = dispatch.Call(op, dispatch.None{}, in...)
		case *dispatch.Op[ops.NarrowRange]:
			out, err = dispatch.Call(op, a.(ops.NarrowRange), in...)
		case *dispatch.Op[ops.TransposeDims]:
			out, err = dispatch.Call(op, a.(ops.TransposeDims), in...)
		}
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The last size is split over goroutines (past 2·minParallel), so a
	// value per row must follow each goroutine's first row.
	for _, cols := range []int{1, 7, 8, 9, 64, 100, 2*minParallel/4093 + 1} {
		rows := max(37, 300/cols)
		if cols > 100 {
			rows = 4093
		}
		full := values(rows * cols)
		long := values(rows + cols + 3) // the broadcast operand is a narrow of this, at offset 3
		for _, c := range []struct {
			name   string
			perRow bool // b[r] for row r, else b[c] for column c
			bLeft  bool
			transp bool // the full operand is a transposed view
		}{{"row", false, false, false}, {"row-left", false, true, false}, {"per-row", true, false, false},
			{"per-row-left", true, true, false}, {"row-transposed", false, false, true}} {
			n := cols
			bShape := []int{cols}
			if c.perRow {
				n, bShape = rows, []int{rows, 1}
			}
			b := call(ops.Narrow, ops.NarrowRange{Dim: 0, Start: 3, Length: n}, tensorOf(dispatch.Float32, long, len(long)))
			b, err := dispatch.Call(ops.View, ops.ViewShape{Shape: bShape}, b)
			if err != nil {
				t.Fatal(err)
			}
			x := tensorOf(dispatch.Float32, full, rows, cols)
			if c.transp {
				x = call(ops.Transpose, ops.TransposeDims{Dim0: 0, Dim1: 1}, tensorOf(dispatch.Float32, full, cols, rows))
			}
			at := func(r, col int) float32 {
				if c.transp {
					return full[col*rows+r]
				}
				return full[r*cols+col]
			}
			for _, s := range scalarOps {
				lhs, rhs := x, b
				if c.bLeft {
					lhs, rhs = b, x
				}
				got := elems[float32](call(s.op, nil, lhs, rhs))
				for r := range rows {
					for col := range cols {
						bv := long[3+col]
						if c.perRow {
							bv = long[3+r]
						}
						want := s.f(at(r, col), bv)
						if c.bLeft {
							want = s.f(bv, at(r, col))
						}
						if g := got[r*cols+col]; !sameFloat32(g, want) {
							t.Fatalf("%s %s, %d×%d: [%d,%d] = %g, want %g", c.name, s.op.Name, rows, cols, r, col, g, want)
						}
					}
				}
			}
		}
	}
}

// TestArithChannelFloat32 checks float32 add, sub, mul and div of an
// [N, C, H, W] batch and a per-channel [C, 1, 1] operand on either side
// (arith.go's arithBlocksFloat32), against the per-element results bit for
// bit: shapes whose rows split over goroutines inside an image and across
// images, and a channel operand at an offset.
func TestArithChannelFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	values := func(n int) []float32 { return mixedFloat32s(rng, n) }
	fs := map[*dispatch.Op[dispatch.None]]func(a, b float32) float32{
		ops.Add: func(a, b float32) float32 { return a + b }, ops.Sub: func(a, b float32) float32 { return a - b },
		ops.Mul: func(a, b float32) float32 { return a * b }, ops.Div: func(a, b float32) float32 { return a / b },
	}
	for _, shape := range [][]int{{2, 3, 5, 7}, {4, 16, 8, 8}, {3, 7, 1, 90}, {32, 16, 32, 32}, {1, 5, 300, 301}} {
		n, c, hw := shape[0], shape[1], shape[2]*shape[3]
		full := values(n * c * hw)
		long := values(c + 2)
		x := tensorOf(dispatch.Float32, full, shape...)
		b := tensorOf(dispatch.Float32, long, c+2)
		b = b.View([]int{c, 1, 1}, []int{1, 0, 0}, 2) // at offset 2
		for op, f := range fs {
			for _, left := range []bool{false, true} {
				lhs, rhs := x, b
				if left {
					lhs, rhs = b, x
				}
				out, err := dispatch.Call(op, dispatch.None{}, lhs, rhs)
				if err != nil {
					t.Fatal(err)
				}
				got := elems[float32](out)
				for i, v := range full {
					bv := long[2+i/hw%c]
					want := f(v, bv)
					if left {
						want = f(bv, v)
					}
					if !sameFloat32(got[i], want) {
						t.Fatalf("%v %s, b left %v: element %d = %g, want %g", shape, op.Name, left, i, got[i], want)
					}
				}
				out.Release()
			}
		}
	}
}

// TestSumColsFloat32 checks the column sums (a bias's gradient) against
// float64 sums of the same values: each term passes at most colBlock
// float32 roundings (shim.c), so the error is within (64 + 2)·2⁻²⁴·Σ|x|,
// on values of both signs and on rows that cancel, for widths around the
// 64-column chunk, row counts around the block, and a row stride past the
// width.
func TestSumColsFloat32(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no vector path on this machine or build")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, cols := range []int{1, 7, 63, 64, 65, 130, 256} {
		for _, rows := range []int{1, 63, 64, 65, 512} {
			for _, cancel := range []bool{false, true} {
				stride := cols + 3
				x := make([]float32, rows*stride)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
					if cancel {
						x[i] = float32(rng.NormFloat64() * 1e6)
						if i/stride%2 == 1 { // each odd row nearly undoes the one above
							x[i] = -x[i-stride] + float32(rng.NormFloat64())
						}
					}
				}
				dst := make([]float32, cols)
				if !sumColsFloat32(dst, x, rows, stride) {
					t.Fatal("refused")
				}
				for j := range cols {
					sum, abs := 0.0, 0.0
					for i := range rows {
						v := float64(x[i*stride+j])
						sum += v
						abs += math.Abs(v)
					}
					if err := math.Abs(float64(dst[j]) - sum); err > 66*0x1p-24*abs+math.Abs(sum)*0x1p-24 {
						t.Fatalf("%d×%d (cancel %v), column %d: %g, want %g (error %g, bound %g)", rows, cols, cancel, j, dst[j], sum, err, 66*0x1p-24*abs)
					}
				}
			}
		}
	}
}

// TestAttentionEachWidth runs float32 attention, forward and backward,
// with the C rows in each width (row_max and exp_row, vec_exp.h) against
// the float64 kernels, which stay in Go: rows past and short of a block,
// causal or not.
func TestAttentionEachWidth(t *testing.T) {
	eachWidth(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, causal := range []bool{false, true} {
			const n, h, l, e = 1, 2, 150, 16
			qkv := make([][]float64, 3)
			for i := range qkv {
				qkv[i] = randomHalves(rng, n*h*l*e)
			}
			shape := []int{n, h, l, e}
			a := ops.AttentionParams{Scale: 0.25, Causal: causal}
			run := func(dt dispatch.DType) ([]float64, []float64) {
				args := []*dispatch.Tensor{floatTensor(dt, qkv[0], shape), floatTensor(dt, qkv[1], shape), floatTensor(dt, qkv[2], shape)}
				out, err := dispatch.Call(ops.Attention, a, args...)
				if err != nil {
					t.Fatal(err)
				}
				grad := floatTensor(dt, randomHalves(rand.New(rand.NewPCG(1, 1)), out.Numel()), out.Shape)
				back, err := dispatch.Call(ops.AttentionBackward, a, append(args, out, grad)...)
				if err != nil {
					t.Fatal(err)
				}
				return toF64(out), toF64(back)
			}
			gotOut, gotBack := run(dispatch.Float32)
			wantOut, wantBack := run(dispatch.Float64)
			for name, pair := range map[string][2][]float64{"forward": {gotOut, wantOut}, "backward": {gotBack, wantBack}} {
				for i := range pair[1] {
					if math.Abs(pair[0][i]-pair[1][i]) > 2e-4*max(1, math.Abs(pair[1][i])) {
						t.Fatalf("causal %v %s [%d] = %v, want %v", causal, name, i, pair[0][i], pair[1][i])
					}
				}
			}
		}
	})
}

// toF64 is a float32 or float64 tensor's elements as float64s.
func toF64(t *dispatch.Tensor) []float64 {
	out := make([]float64, t.Numel())
	for i := range out {
		if t.DType == dispatch.Float32 {
			out[i] = float64(span[float32](t)[i])
		} else {
			out[i] = span[float64](t)[i]
		}
	}
	return out
}

// TestSoftmaxColsFloat32: softmax and log_softmax along a dim that is not
// the last (softmaxCols: C's lanes over eight columns at a time, the
// columns past the last eight in Go) against float64's, to softmax rows'
// three ulps, over blocks whose inner size leaves no tail, a tail, and
// several tasks of columns; a column holding a NaN or +Inf is NaN
// throughout, as its row would be, and its neighbours are untouched.
func TestSoftmaxColsFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, shape := range [][3]int{{1, 3, 8}, {2, 5, 13}, {3, 300, 70}, {2, 1, 16}} {
		outer, n, inner := shape[0], shape[1], shape[2]
		for _, log := range []bool{false, true} {
			src := make([]float32, outer*n*inner)
			for i := range src {
				src[i] = float32(30 * (rng.Float64() - 0.5))
			}
			bad := map[int]bool{}
			if n > 1 {
				src[1*inner+3] = float32(math.NaN()) // column 3 of block 0
				src[(n-1)*inner+4] = float32(math.Inf(1))
				bad[3], bad[4] = true, true
			}
			dst := make([]float32, len(src))
			softmaxCols(dst, src, n, inner, log)
			for o := range outer {
				for c := range inner {
					base := o*n*inner + c
					if o == 0 && bad[c] {
						for j := range n {
							if v := dst[base+j*inner]; v == v {
								t.Fatalf("%v log %v: column %d holds a NaN or +Inf, but [%d] = %g", shape, log, c, j, v)
							}
						}
						continue
					}
					m := float32(math.Inf(-1))
					for j := range n {
						m = max(m, src[base+j*inner])
					}
					sum := 0.0
					for j := range n {
						sum += math.Exp(float64(src[base+j*inner] - m))
					}
					for j := range n {
						v := src[base+j*inner]
						want := float32(math.Exp(float64(v-m)) / sum)
						if log {
							want = float32(float64(v-m) - math.Log(sum))
						}
						got := dst[base+j*inner]
						u, abs := ulps(got, want), math.Abs(float64(got-want))
						if u > 3 && abs > 1e-45 && !(log && abs <= 0x1p-21) {
							t.Fatalf("%v log %v: block %d column %d [%d] = %g, want %g (%d ulps)", shape, log, o, c, j, got, want, u)
						}
					}
				}
			}
		}
	}
}

// TestWhereBits: lathe_where32 and lathe_where64 (whereBits) give c ? a : b
// bit for bit (NaN payloads too), with both operands runs and with either
// one value, on runs around their vector widths and random masks.
func TestWhereBits(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2: where runs in Go")
	}
	testWhereBits[uint32](t)
	testWhereBits[uint64](t)
}

func testWhereBits[U uint32 | uint64](t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	for _, n := range []int{vectorMin, vectorMin + 1, vectorMin + 3, vectorMin + 7, 1000, 4099} {
		c, a, b := make([]bool, n), make([]U, n), make([]U, n)
		for i := range c {
			c[i], a[i], b[i] = rng.IntN(2) == 0, U(rng.Uint64()), U(rng.Uint64())
		}
		as, bs := U(rng.Uint64()), U(rng.Uint64())
		for _, k := range []struct {
			name   string
			a, b   []U
			as, bs U
		}{{"runs", a, b, 0, 0}, {"b one value", a, nil, 0, bs}, {"a one value", nil, b, as, 0}} {
			dst := make([]U, n)
			if !whereBits(dst, c, k.a, k.b, k.as, k.bs) {
				t.Fatalf("%T n %d %s: refused", dst, n, k.name)
			}
			for i, got := range dst {
				want := k.bs
				if k.b != nil {
					want = k.b[i]
				}
				if c[i] {
					want = k.as
					if k.a != nil {
						want = k.a[i]
					}
				}
				if got != want {
					t.Fatalf("%T n %d %s: [%d] = %#x, want %#x", dst, n, k.name, i, got, want)
				}
			}
		}
	}
}

// TestCompare32: lathe_compare32 (compare32) gives Go's comparisons of
// float32s (NaN, ±0, ±Inf among them: only != holds for a NaN, and -0
// equals +0) and int32s (the extremes among them), a run against a run
// and against one value, on runs around the vector width.
func TestCompare32(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2: comparisons run in Go")
	}
	rng := rand.New(rand.NewPCG(39, 40))
	ints := []int32{0, 1, -1, math.MaxInt32, math.MinInt32, 7}
	for _, n := range []int{vectorMin, vectorMin + 1, vectorMin + 7, 1003} {
		fp, fq := make([]float32, n), make([]float32, n)
		ip, iq := make([]int32, n), make([]int32, n)
		for i := range fp {
			fp[i], fq[i] = specialFloat32s[rng.IntN(len(specialFloat32s))], specialFloat32s[rng.IntN(len(specialFloat32s))]
			ip[i], iq[i] = ints[rng.IntN(len(ints))], int32(rng.Uint32())
			if rng.IntN(2) == 0 {
				iq[i] = ints[rng.IntN(len(ints))]
			}
		}
		for op := opEq; op <= opGe; op++ {
			testCompare32(t, op, fp, fq, specialFloat32s)
			testCompare32(t, op, ip, iq, ints)
		}
	}
}

func testCompare32[T float32 | int32](t *testing.T, op cmpOp, p, q, scalars []T) {
	t.Helper()
	dst := make([]bool, len(p))
	check := func(s T, one bool) {
		for i, got := range dst {
			b := s
			if !one {
				b = q[i]
			}
			if want := cmp(op, p[i], b); got != want {
				t.Fatalf("%T op %d n %d: [%d] %v against %v gives %v, want %v", p[0], op, len(p), i, p[i], b, got, want)
			}
		}
	}
	if !compare32(op, dst, p, q, 0) {
		t.Fatalf("%T op %d n %d: refused", p[0], op, len(p))
	}
	check(0, false)
	for _, s := range scalars {
		compare32(op, dst, p, nil, s)
		check(s, true)
	}
}
