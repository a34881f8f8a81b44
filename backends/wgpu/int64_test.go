package wgpu_test

import (
	"math"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// edges64 are int64 values where two 32-bit words go wrong if a carry,
// a borrow or a sign is lost: past 2³², around the word boundary, both
// ends of int64's range, and floats' rounding boundaries past 2²⁴.
var edges64 = []int64{
	0, 1, -1, 2, -2, 7, -7,
	1<<31 - 1, 1 << 31, -1 << 31, -1<<31 - 1,
	1<<32 - 1, 1 << 32, 1<<32 + 1, -1 << 32, -1<<32 - 1, -1<<32 + 1,
	1<<24 + 1, 1<<24 + 3, 1<<25 + 2, 1<<25 + 6, -(1<<24 + 1), 1<<40 + 1<<16, 1<<40 + 1<<16 + 1,
	3_000_000_000, -3_000_000_000, 123456789012345, -987654321098765,
	1<<53 + 1, 1<<62 + 1<<38 + 1, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
}

// TestInt64AgainstCPU runs int64 tensors through wgpu:0's storage, casts,
// arithmetic and comparisons (int64.wgsl) and compares each result with the
// cpu's exactly, errors included: wrapping add, sub, mul and neg, float32
// conversions rounded to nearest even, comparisons of values that differ in
// either word only.
func TestInt64AgainstCPU(t *testing.T) {
	dev := lathe.WGPU(0)
	if !available(dev) {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable")
	}
	n := len(edges64)
	// Every pair of edge values: a row each of a and b.
	as, bs := make([]int64, 0, n*n), make([]int64, 0, n*n)
	for _, a := range edges64 {
		for _, b := range edges64 {
			as, bs = append(as, a), append(bs, b)
		}
	}
	a := lathe.FromSlice(lathe.CPU, as, n, n)
	b := lathe.FromSlice(lathe.CPU, bs, n, n)
	e := lathe.FromSlice(lathe.CPU, edges64)
	floats := lathe.FromSlice(lathe.CPU, []float32{0, -0.5, 1.5, -2.75, 16777217, 3e9, -3e9, 1.2345e15, 9.2233715e18, -9.223372e18,
		1e19, -1e19, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 5e-40})
	// long has rows long enough to be split into parts (ops_reduce.go), of
	// values that carry past 32 bits when summed.
	lv := make([]int64, 70000)
	for i := range lv {
		lv[i] = edges64[i%n] / int64(1+i%5)
	}
	long := lathe.FromSlice(lathe.CPU, lv)
	type run = func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor
	cases := []struct {
		name string
		run  run
	}{
		{"roundtrip", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e) }},
		{"contiguous/transposed", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).MT().Contiguous() }},
		{"slice/strided", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Slice(1, 1, n, 3).Contiguous() }},
		{"full", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return lathe.Full(on(e).Device(), lathe.Int64, -5e12, 3, 70000).Sum(1)
		}},
		{"expand", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(e).Reshape(n, 1).Expand(n, 3).Contiguous()
		}},
		{"flip", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Flip(0, 1) }},
		{"concat", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return lathe.Concat([]*lathe.Tensor{on(a), on(b).MT()}, 1)
		}},
		{"pad", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Pad([]int{1, -2, 2, 0}, -3e12) }},
		{"where", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return lathe.Where(on(a).Lt(on(b)), on(a), on(b))
		}},

		{"cast/to_f32", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Cast(lathe.Float32) }},
		{"cast/to_i32", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).Cast(lathe.Int32) }},
		{"cast/to_bool", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).Cast(lathe.Bool) }},
		{"cast/from_f32", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(floats).Cast(lathe.Int64) }},
		{"cast/from_i32", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(e.Cast(lathe.Int32)).Cast(lathe.Int64)
		}},
		{"cast/from_bool", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(e.Cast(lathe.Bool)).Cast(lathe.Int64)
		}},

		{"add", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Add(on(b)) }},
		{"sub", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Sub(on(b)) }},
		{"mul", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Mul(on(b)) }},
		{"neg", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).Neg() }},
		{"abs", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).Abs() }},
		{"sign", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).Sign() }},
		{"square", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).Square() }},
		{"relu", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).ReLU() }},
		{"maximum", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Maximum(on(b)) }},
		{"minimum", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Minimum(on(b)) }},
		{"add/bcast", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Add(on(e).Reshape(n, 1)) }},
		{"add_scalar", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).AddScalar(1 << 40) }},
		{"mul_scalar", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).MulScalar(-3) }},
		{"eq", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Eq(on(b)) }},
		{"ne", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Ne(on(b)) }},
		{"lt", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Lt(on(b)) }},
		{"le", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Le(on(b)) }},
		{"gt", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Gt(on(b)) }},
		{"ge", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Ge(on(b)) }},
		{"lt_scalar", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).LtScalar(1 << 32) }},
		{"eq_scalar", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).EqScalar(-1 << 32) }},
		{"ge_scalar/negative", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).GeScalar(-3e9) }},
		{"pow", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(a).Pow(on(b).Abs().Narrow(1, 0, 1))
		}},
		{"pow/negative/error", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Pow(on(b)) }},
		{"clamp", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).Clamp(-3e9, 1<<40) }},
		{"clamp/lower_only", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).Clamp(-1.5, math.Inf(1)) }},
		{"matmul", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).MatMul(on(b).MT()) }},
		{"matmul/batched", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(a).Narrow(0, 0, 6).Reshape(2, 3, n).MatMul(on(b).Narrow(1, 0, 4))
		}},
		{"cumsum", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).CumSum(1) }},
		{"cumsum/long", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(long).CumSum(0) }},
		{"logical_and", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).LogicalAnd(on(b)) }},
		{"logical_not", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(e).LogicalNot() }},

		{"sum/all", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Sum() }},
		{"sum/dim0", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Sum(0) }},
		{"sum/long", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(long).Sum() }},
		{"sum/many_rows", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(long).Reshape(-1, 7).Sum(1) }},
		{"prod/dim1", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Prod(1) }},
		{"max/dim1", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).Max(1) }},
		{"min/all", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(b).Min() }},
		{"max/long", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(long).Max() }},
		{"argmax/dim1", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(a).ArgMax(1) }},
		{"argmin/dim0", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(b).ArgMin(0) }},
		{"argmax/long", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(long).ArgMax() }},
		{"argmin/long/columns", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(long).Reshape(-1, 2).ArgMin(0) }},
		{"argmax/f32/long", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(long.Cast(lathe.Float32)).ArgMax()
		}},
		{"argmax/i32/rows", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(long.Cast(lathe.Int32)).Reshape(-1, 10).ArgMax(1)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.run(func(x *lathe.Tensor) *lathe.Tensor { return x })
			got := c.run(func(x *lathe.Tensor) *lathe.Tensor { return x.To(dev) })
			if strings.HasSuffix(c.name, "/error") && want.Err() == nil {
				t.Fatal("the cpu gives no error")
			}
			if err := sameResult(got, want, 0); err != nil {
				t.Error(err)
			}
		})
	}
}
