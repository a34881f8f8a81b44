package cudaemu_test

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// unary.cu's, elementwise.cu's and binary.cu's kernels on the cases whose semantics are
// easy to get wrong. (where's broadcast condition and scalar y, and flip's
// backward read from a moved pointer, are TestKernelsMatchCPU's cases
// where/[2,1],[3],[] and flip, on every dtype.)

var nan = math.NaN()

func TestElementwise(t *testing.T) {
	h := newHost(t)
	negZero := math.Copysign(0, -1)

	t.Run("round/half-to-even", func(t *testing.T) {
		x := []float32{0.5, 1.5, 2.5, -0.5, -1.5, 2.4}
		want := []float32{0, 2, 2, float32(negZero), -2, 2}
		out := zeros[float32](h, 6)
		h.launch("round_f32", 2, 4, out, put(h, x...), int64(6), 0.0, 0.0) // a grid smaller than n
		for i, g := range get[float32](out, 6) {
			if g != want[i] || math.Signbit(float64(g)) != math.Signbit(float64(want[i])) {
				t.Errorf("round(%g) = %g, want %g", x[i], g, want[i])
			}
		}
	})

	t.Run("sign-of-nan/relu-passes-nan", func(t *testing.T) {
		x := put(h, nan, negZero, -3, 2)
		s, r := zeros[float64](h, 4), zeros[float64](h, 4)
		h.launch("sign_f64", 1, 32, s, x, int64(4), 0.0, 0.0)
		h.launch("relu_f64", 1, 32, r, x, int64(4), 0.0, 0.0)
		sg, rl := get[float64](s, 4), get[float64](r, 4)
		if sg[0] != 0 || math.Signbit(sg[0]) || sg[1] != 0 || sg[2] != -1 || sg[3] != 1 {
			t.Errorf("sign(NaN, -0, -3, 2) = %v, want [+0 0 -1 1]", sg)
		}
		if !math.IsNaN(rl[0]) || rl[2] != 0 || rl[3] != 2 {
			t.Errorf("relu(NaN, -0, -3, 2) = %v, want [NaN 0 0 2]", rl)
		}
	})

	t.Run("clamp/fractional-bounds", func(t *testing.T) {
		// An integer clamp rounds the bounds inwards: ceil(lo), floor(hi).
		out := zeros[int32](h, 6)
		h.launch("clamp_i32", 1, 32, out, put[int32](h, 0, 1, 2, 3, 4, 5), int64(6), 1.5, 3.5)
		if got, want := get[int32](out, 6), []int32{2, 2, 2, 3, 3, 3}; !slices.Equal(got, want) {
			t.Errorf("clamp_i32(0..5, 1.5, 3.5) = %v, want %v", got, want)
		}
		fo := zeros[float32](h, 4)
		h.launch("clamp_strided_f32", 1, 32, fo, put[float32](h, float32(nan), -5, 0.25, 9), int64(4), layout([]int64{4}, []int64{1}, []int64{1}), -1.0, 1.0)
		if g := get[float32](fo, 4); !math.IsNaN(float64(g[0])) || g[1] != -1 || g[2] != 0.25 || g[3] != 1 {
			t.Errorf("clamp_strided_f32(NaN, -5, 0.25, 9; -1, 1) = %v, want [NaN -1 0.25 1]", g)
		}
	})

	t.Run("abs-neg/most-negative-wraps", func(t *testing.T) {
		x := put[int64](h, math.MinInt64, -4)
		a, n := zeros[int64](h, 2), zeros[int64](h, 2)
		h.launch("abs_i64", 1, 32, a, x, int64(2), 0.0, 0.0)
		h.launch("neg_i64", 1, 32, n, x, int64(2), 0.0, 0.0)
		if ga, gn := get[int64](a, 2), get[int64](n, 2); ga[0] != math.MinInt64 || ga[1] != 4 || gn[0] != math.MinInt64 || gn[1] != 4 {
			t.Errorf("abs, neg of (MinInt64, -4) = %v, %v, want both [MinInt64 4]", ga, gn)
		}
	})

	t.Run("add/transposed-x-broadcast-y", func(t *testing.T) {
		// out [2,3] contiguous; x a [3,2] tensor read transposed (strides
		// 1, 2); y [3] broadcast along dim 0 (stride 0).
		x, y := []float32{0, 1, 2, 3, 4, 5}, []float32{10, 20, 30}
		out := zeros[float32](h, 6)
		L := layout([]int64{2, 3}, []int64{3, 1}, []int64{1, 2}, []int64{0, 1})
		h.launch("add_strided_f32", 3, 2, out, put(h, x...), put(h, y...), int64(6), L)
		got := get[float32](out, 6)
		for i := range 2 {
			for j := range 3 {
				if want := x[j*2+i] + y[j]; got[i*3+j] != want {
					t.Errorf("add[%d][%d] = %g, want %g", i, j, got[i*3+j], want)
				}
			}
		}
	})

	t.Run("maximum-minimum/nan-either-side", func(t *testing.T) {
		x, y := put(h, nan, 1, 3), put(h, 1, nan, 2)
		mx, mn := zeros[float64](h, 3), zeros[float64](h, 3)
		h.launch("maximum_f64", 1, 32, mx, x, y, int64(3), int64(3), int64(3))
		h.launch("minimum_f64", 1, 32, mn, x, y, int64(3), int64(3), int64(3))
		if g := get[float64](mx, 3); !math.IsNaN(g[0]) || !math.IsNaN(g[1]) || g[2] != 3 {
			t.Errorf("maximum = %v, want [NaN NaN 3]", g)
		}
		if g := get[float64](mn, 3); !math.IsNaN(g[0]) || !math.IsNaN(g[1]) || g[2] != 2 {
			t.Errorf("minimum = %v, want [NaN NaN 2]", g)
		}
	})

	t.Run("pow/int-wraps-negative-exponents", func(t *testing.T) {
		// By squaring, wrapping (2^64 is 0); a negative exponent as
		// PyTorch: 1 for 1, +-1 for -1, 0 for the rest.
		a, b := []int64{3, 2, 1, -1, -1, 5}, []int64{4, 64, -3, -3, -2, -1}
		want := []int64{81, 0, 1, -1, 1, 0}
		out := zeros[int64](h, 6)
		h.launch("pow_i64", 1, 32, out, put(h, a...), put(h, b...), int64(6), int64(6), int64(6))
		for i, g := range get[int64](out, 6) {
			if g != want[i] {
				t.Errorf("pow(%d, %d) = %d, want %d", a[i], b[i], g, want[i])
			}
		}
	})

	t.Run("pow/f32-negative-base-past-2^24", func(t *testing.T) {
		// Every float32 past 2^24 is an even integer: the sign is +, and
		// -1 to it is 1 however large (wgpu's powf once gave NaN past
		// 8e34, issue 15 defect 15); m_pow is powf, which knows it.
		inf := math.Inf(1)
		a := []float32{-1, -1, -1, -1, -1, -2, -0.5, -1}
		b := []float32{1e34, -1e34, 3e38, 1<<24 + 2, float32(inf), 1e30, 1e30, 1<<24 - 1}
		want := []float32{1, 1, 1, 1, 1, float32(inf), 0, -1}
		out := zeros[float32](h, len(a))
		h.launch("pow_f32", 1, 32, out, put(h, a...), put(h, b...), int64(len(a)), int64(len(a)), int64(len(a)))
		for i, g := range get[float32](out, len(a)) {
			if g != want[i] {
				t.Errorf("pow(%g, %g) = %g, want %g", a[i], b[i], g, want[i])
			}
		}
	})

	t.Run("compare/nan", func(t *testing.T) {
		// Bool bytes; NaN compares false but for ne.
		x, y := put[float32](h, 1, float32(nan), 2), put[float32](h, 1, float32(nan), 3)
		eq, ne, lt := zeros[uint8](h, 3), zeros[uint8](h, 3), zeros[uint8](h, 3)
		h.launch("eq_f32", 1, 32, eq, x, y, int64(3), int64(3), int64(3))
		h.launch("ne_f32", 1, 32, ne, x, y, int64(3), int64(3), int64(3))
		h.launch("lt_f32", 1, 32, lt, x, y, int64(3), int64(3), int64(3))
		ge, gn, gl := get[uint8](eq, 3), get[uint8](ne, 3), get[uint8](lt, 3)
		if ge[0] != 1 || ge[1] != 0 || ge[2] != 0 || gn[1] != 1 || gl[2] != 1 || gl[0] != 0 {
			t.Errorf("(1, NaN, 2) vs (1, NaN, 3): eq %v, ne %v, lt %v", ge, gn, gl)
		}
	})

	t.Run("logical/mixed-dtypes", func(t *testing.T) {
		// float32 x and int64 y (kinds 1 and 4): -0.0 is false, NaN true.
		x := put(h, float32(negZero), float32(nan), 1, 0)
		y := put[int64](h, 5, 0, 7, 0)
		a, o, n := zeros[uint8](h, 4), zeros[uint8](h, 4), zeros[uint8](h, 4)
		L := layout([]int64{4}, []int64{1}, []int64{1}, []int64{1})
		h.launch("logical_and", 1, 32, a, x, y, int64(4), L, int32(1), int32(4))
		h.launch("logical_or", 1, 32, o, x, y, int64(4), L, int32(1), int32(4))
		h.launch("logical_not", 1, 32, n, x, int64(4), L, int32(1))
		for _, c := range []struct {
			op        string
			got, want []uint8
		}{
			{"and", get[uint8](a, 4), []uint8{0, 0, 1, 0}},
			{"or", get[uint8](o, 4), []uint8{1, 1, 1, 0}},
			{"not", get[uint8](n, 4), []uint8{1, 0, 0, 1}},
		} {
			if !slices.Equal(c.got, c.want) {
				t.Errorf("logical_%s = %v, want %v", c.op, c.got, c.want)
			}
		}
	})

	t.Run("cast/truncation-truth", func(t *testing.T) {
		// Truncation toward zero, nonzero (not -0.0) is true, true is 1.
		x := put(h, -1.7, 2.9, 0, float32(negZero))
		i, b := zeros[int32](h, 4), zeros[uint8](h, 4)
		h.launch("cast_f32_i32", 1, 32, i, x, int64(4))
		h.launch("cast_f32_bool", 1, 32, b, x, int64(4))
		if g := get[int32](i, 3); !slices.Equal(g, []int32{-1, 2, 0}) {
			t.Errorf("cast f32->i32 (-1.7, 2.9, 0) = %v, want [-1 2 0]", g)
		}
		if g := get[uint8](b, 4); !slices.Equal(g, []uint8{1, 1, 0, 0}) {
			t.Errorf("cast f32->bool (-1.7, 2.9, 0, -0) = %v, want [1 1 0 0]", g)
		}
		d := zeros[float64](h, 2)
		h.launch("cast_bool_f64", 1, 32, d, put[uint8](h, 1, 0), int64(2))
		if g := get[float64](d, 2); g[0] != 1 || g[1] != 0 {
			t.Errorf("cast bool->f64 (true, false) = %v", g)
		}
	})

	t.Run("cast/out-of-range", func(t *testing.T) {
		// What truncates outside the integer's range, and NaN, gives the
		// most negative integer, as the cpu and torch on x86 do, not what
		// the GPU's cvt.rzi gives (saturation, NaN to 0); on the host
		// emulation C++ leaves it undefined, so elementwise.cu spells it
		// out (kernels/ptx's TestCastsTestTheRange checks the PTX does).
		inf := math.Inf(1)
		f32 := []float32{float32(inf), float32(-inf), float32(nan), 3e9, -3e9, 1 << 31, -1 << 31, -2.5, 2147483520}
		f64 := []float64{inf, nan, 1e19, -1e19, 1 << 63, -1 << 63, 2147483647.9, -2147483648.9, -2147483649, 9.2233720368547748e18}
		min32, min64 := int32(math.MinInt32), int64(math.MinInt64)
		for _, c := range []struct {
			fn   string
			x    uint64
			n    int
			want []int64
		}{
			{"cast_f32_i32", put(h, f32...), 9, []int64{int64(min32), int64(min32), int64(min32), int64(min32), int64(min32), int64(min32), int64(min32), -2, 2147483520}},
			{"cast_f32_i64", put(h, f32...), 9, []int64{min64, min64, min64, 3e9, -3e9, 1 << 31, -1 << 31, -2, 2147483520}},
			{"cast_f64_i32", put(h, f64...), 10, []int64{int64(min32), int64(min32), int64(min32), int64(min32), int64(min32), int64(min32), 2147483647, int64(min32), int64(min32), int64(min32)}},
			{"cast_f64_i64", put(h, f64...), 10, []int64{min64, min64, min64, min64, min64, min64, 2147483647, -2147483648, -2147483649, 9223372036854774784}},
		} {
			var got []int64
			if strings.HasSuffix(c.fn, "i32") {
				out := zeros[int32](h, c.n)
				h.launch(c.fn, 1, 32, out, c.x, int64(c.n))
				for _, v := range get[int32](out, c.n) {
					got = append(got, int64(v))
				}
			} else {
				out := zeros[int64](h, c.n)
				h.launch(c.fn, 1, 32, out, c.x, int64(c.n))
				got = get[int64](out, c.n)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s = %v, want %v", c.fn, got, c.want)
			}
		}
	})

	t.Run("activations/formulas", func(t *testing.T) {
		// Against their formulas in float64, out to where softplus turns
		// linear (x > 20) and sigmoid saturates.
		x := []float64{-30, -2, -0.5, 0, 0.5, 2, 25}
		xp := put(h, x...)
		got := map[string][]float64{}
		for _, op := range []string{"sigmoid", "silu", "softplus", "gelu", "gelu_tanh", "leaky_relu"} {
			out := zeros[float64](h, len(x))
			a, b := 0.1, 0.0 // a: leaky_relu's slope
			if op == "softplus" {
				a, b = 1, 20 // beta, threshold: torch's defaults
			}
			h.launch(op+"_f64", 1, 32, out, xp, int64(len(x)), a, b)
			got[op] = get[float64](out, len(x))
		}
		for i, v := range x {
			s := 1 / (1 + math.Exp(-v))
			sp := math.Log1p(math.Exp(v))
			if v > 20 {
				sp = v
			}
			lr := 0.1 * v
			if v > 0 {
				lr = v
			}
			for _, c := range []struct {
				op        string
				want, tol float64
			}{
				{"sigmoid", s, 1e-15},
				{"silu", v * s, 1e-15},
				{"softplus", sp, 1e-15},
				{"gelu", 0.5 * v * (1 + math.Erf(v/math.Sqrt(2))), 1e-15},
				{"gelu_tanh", 0.5 * v * (1 + math.Tanh(0.7978845608028654*(v+0.044715*v*v*v))), 1e-15},
				{"leaky_relu", lr, 0},
			} {
				if g := got[c.op][i]; !same(g, c.want, c.tol) {
					t.Errorf("%s(%g) = %.17g, want %.17g", c.op, v, g, c.want)
				}
			}
		}
	})

	t.Run("remainder-fmod/specials-and-large", func(t *testing.T) {
		// fmod is C's (exact: Go's math.Mod), remainder moves a remainder
		// whose sign is not y's by y (ATen's rule): an infinite y gives x
		// or ±Inf, a zero y NaN, and quotients far past 2^53 stay exact.
		inf := math.Inf(1)
		vals := []float64{0, negZero, 1.5, -1.5, 5.25, -5.25, inf, -inf, nan, 1.5 * 0x1p127, -1e10, 0x1p-20, 3 * 0x1p-10}
		var xs, ys []float64
		for _, x := range vals {
			for _, y := range vals {
				xs, ys = append(xs, x), append(ys, y)
			}
		}
		n := len(xs)
		for _, op := range []string{"fmod", "remainder"} {
			ref := func(x, y float64) float64 {
				m := math.Mod(x, y)
				if op == "remainder" && m != 0 && (y < 0) != (m < 0) {
					m += y
				}
				return m
			}
			out := zeros[float64](h, n)
			h.launch(op+"_f64", 1, 64, out, put(h, xs...), put(h, ys...), int64(n), int64(n), int64(n))
			x32, y32 := make([]float32, n), make([]float32, n)
			for i := range xs {
				x32[i], y32[i] = float32(xs[i]), float32(ys[i])
			}
			out32 := zeros[float32](h, n)
			h.launch(op+"_f32", 1, 64, out32, put(h, x32...), put(h, y32...), int64(n), int64(n), int64(n))
			g32 := get[float32](out32, n)
			for i, g := range get[float64](out, n) {
				if want := ref(xs[i], ys[i]); !same(g, want, 0) {
					t.Errorf("%s_f64(%g, %g) = %g, want %g", op, xs[i], ys[i], g, want)
				}
				m := float32(math.Mod(float64(x32[i]), float64(y32[i]))) // exact in float32
				if op == "remainder" && m != 0 && (y32[i] < 0) != (m < 0) {
					m += y32[i]
				}
				if !same(float64(g32[i]), float64(m), 0) {
					t.Errorf("%s_f32(%g, %g) = %g, want %g", op, x32[i], y32[i], g32[i], m)
				}
			}
		}
	})

	t.Run("remainder-fmod/int-extremes", func(t *testing.T) {
		// Truncating %, and remainder's sign rule; the least int64 over -1
		// is 0, and a zero divisor (refused before a launch) 0, never a trap.
		xs := []int64{math.MinInt64, math.MinInt64, -7, -7, 7, 7, math.MaxInt64, 5, math.MinInt64}
		ys := []int64{-1, 3, 2, -2, -3, 3, math.MinInt64, 0, math.MaxInt64}
		wantF := []int64{0, -2, -1, -1, 1, 1, math.MaxInt64, 0, -1}
		wantR := []int64{0, 1, 1, -1, -2, 1, -1, 0, math.MaxInt64 - 1}
		for _, c := range []struct {
			op   string
			want []int64
		}{{"fmod", wantF}, {"remainder", wantR}} {
			out := zeros[int64](h, len(xs))
			h.launch(c.op+"_i64", 1, 32, out, put(h, xs...), put(h, ys...), int64(len(xs)), int64(len(xs)), int64(len(xs)))
			if g := get[int64](out, len(xs)); !slices.Equal(g, c.want) {
				t.Errorf("%s_i64(%v, %v) = %v, want %v", c.op, xs, ys, g, c.want)
			}
		}
	})

	t.Run("fill/grid-stride", func(t *testing.T) {
		out := zeros[int32](h, 5)
		h.launch("fill_i32", 2, 2, out, int64(5), -7.0) // 4 threads for 5 elements
		for i, g := range get[int32](out, 5) {
			if g != -7 {
				t.Errorf("fill[%d] = %d, want -7", i, g)
			}
		}
	})
}
