package lathe_test

import (
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe"
)

// narrowVec rebuilds build/torchref/narrow_mean.py's inputs: exact dyadic
// values, so that the float64 arithmetic here and there agree.
func narrowVec(dt lathe.DType, n int) *lathe.Tensor {
	v := make([]float64, n)
	for i := range v {
		if dt == lathe.Float16 {
			v[i] = float64((i*7919)%1999-896) / 256
		} else {
			v[i] = float64((i*613)%239+16) / 64
		}
	}
	return lathe.FromSlice(lathe.CPU, v).Cast(dt)
}

// TestNarrowMeanTorch compares mean, var and std of float16 and bfloat16
// vectors whose count passes what the dtype holds exactly (2048, 256) with
// torch 1.13's cpu, bit for bit (build/torchref/narrow_mean.py). torch
// 1.13's half mean rounds three times: at::sum's float32 sum to the dtype,
// the count to the dtype, and their quotient; lathe's mean composes sum and
// div the same way, so it matches. Its var and std accumulate in float32
// and round once, as lathe's kernels do through their float32 compute.
// once is the float32 mean rounded once, which newer PyTorch releases give.
func TestNarrowMeanTorch(t *testing.T) {
	for _, c := range []struct {
		dt                    lathe.DType
		n                     int
		mean, once, vari, std uint16
	}{
		{lathe.Float16, 5000, 0x3696, 0x3695, 0x4515, 0x4082}, // mean 0.41162109375, float32 mean rounded once 0.411376953125
		{lathe.Float16, 2049, 0x367e, 0x367d, 0x4514, 0x4082}, // mean 0.40576171875, float32 mean rounded once 0.405517578125
		{lathe.Float16, 5001, 0x3694, 0x3695, 0x4515, 0x4082}, // mean 0.4111328125, float32 mean rounded once 0.411376953125
		{lathe.BFloat16, 300, 0x4007, 0x4007, 0x3f96, 0x3f8a}, // mean 2.109375, float32 mean rounded once 2.109375
		{lathe.BFloat16, 257, 0x4007, 0x4006, 0x3f96, 0x3f8b}, // mean 2.109375, float32 mean rounded once 2.09375
		{lathe.BFloat16, 301, 0x4008, 0x4007, 0x3f95, 0x3f8a}, // mean 2.125, float32 mean rounded once 2.109375
	} {
		x := narrowVec(c.dt, c.n)
		for _, op := range []struct {
			name string
			got  *lathe.Tensor
			want uint16
		}{
			{"mean", x.Mean(), c.mean},
			{"var", x.Var(true), c.vari},
			{"std", x.Std(true), c.std},
			{"float32_mean", x.Cast(lathe.Float32).Mean().Cast(c.dt), c.once},
		} {
			t.Run(op.name+"/"+c.dt.String()+"/"+strconv.Itoa(c.n), func(t *testing.T) {
				b, err := op.got.HalfBits()
				if err != nil {
					t.Fatal(err)
				}
				if b[0] != op.want {
					t.Errorf("%#04x, want torch's %#04x", b[0], op.want)
				}
			})
		}
	}
}

// TestNarrowIntSum: the sum of int8 or uint8 is int64, as torch's, the
// true sum however many values there are (int8's and uint8's would wrap
// at 256).
func TestNarrowIntSum(t *testing.T) {
	i8 := make([]int8, 1000)
	u8 := make([]uint8, 1000)
	for i := range i8 {
		i8[i], u8[i] = 127, 255
	}
	i8[0], u8[0] = -128, 3
	for _, dev := range sortDevices(t) {
		gotI, err := lathe.FromSlice(dev, i8, 10, 100).Sum().Int64s()
		if err != nil || gotI[0] != 126745 { // 999·127 - 128
			t.Errorf("%s: int8 sum = %v, %v; want 126745", dev, gotI, err)
		}
		gotU, err := lathe.FromSlice(dev, u8, 10, 100).Sum(1).Int64s()
		if err != nil || gotU[0] != 25248 || gotU[1] != 25500 { // 99·255 + 3, 100·255
			t.Errorf("%s: uint8 sum(1) = %v, %v; want [25248 25500 ...]", dev, gotU, err)
		}
	}
}
