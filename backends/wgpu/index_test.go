package wgpu_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestIndexAgainstCPU runs the indexing and layout ops on wgpu:0 with int32
// indices, which most conformance cases lack (torch's indices are int64),
// and with int64 ones, and compares each result with the cpu's, which the
// conformance suite checks against PyTorch. The comparison is exact: the
// kernels move words, and scatter_add adds in the cpu's order. Errors must
// be the cpu's too, message included.
func TestIndexAgainstCPU(t *testing.T) {
	dev := lathe.WGPU(0)
	if !available(dev) {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable")
	}
	for _, dt := range []lathe.DType{lathe.Int32, lathe.Int64} {
		t.Run(dt.String(), func(t *testing.T) { indexAgainstCPU(t, dev, dt) })
	}
}

func indexAgainstCPU(t *testing.T, dev lathe.Device, idt lathe.DType) {
	lathe.Seed(7)
	x345 := lathe.RandN(lathe.CPU, lathe.Float32, 3, 4, 5)
	x34 := lathe.RandN(lathe.CPU, lathe.Float32, 3, 4)
	src := lathe.RandN(lathe.CPU, lathe.Float32, 4, 6)
	many := lathe.RandN(lathe.CPU, lathe.Float32, 300)
	ints := lathe.Arange(lathe.CPU, lathe.Int32, 0, 12, 1).Reshape(3, 4)
	bools := lathe.FromSlice(lathe.CPU, []bool{true, false, false, true, true, false}, 2, 3)
	idx := func(v ...int32) *lathe.Tensor { return lathe.FromSlice(lathe.CPU, v).Cast(idt) }
	idx2 := func(r, c int, v ...int32) *lathe.Tensor { return lathe.FromSlice(lathe.CPU, v, r, c).Cast(idt) }
	wide := lathe.FromSlice(lathe.CPU, edges64[:24], 4, 6) // int64 data past 32 bits
	spread := make([]int32, 300)                           // 300 values into 5 places: long lines of sums
	for i := range spread {
		spread[i] = int32(i*7) % 5
	}

	spreadInts := lathe.Arange(lathe.CPU, lathe.Int32, -150, 150, 1)
	thirds := make([]int32, 200) // 100 rows of 2 into 3 rows: 2 lines of 100
	for i := range thirds {
		thirds[i] = int32(i*5) % 3
	}
	cases := []struct {
		name string
		run  func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor
		tol  float64 // for float sums in an order of the hardware's; else exact
	}{
		{"index_select/dim0", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x345).IndexSelect(0, on(idx(2, 0, 2, 1)))
		}, 0},
		{"index_select/dim-1/transposed", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x345).Transpose(0, 2).IndexSelect(-1, on(idx(1, 1, 0)))
		}, 0},
		{"index_select/strided_index", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x345).IndexSelect(1, on(idx(3, 9, 0, 9, 2, 9)).Slice(0, 0, 6, 2))
		}, 0},
		{"index_select/0d_index", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).IndexSelect(1, lathe.Scalar(on(x34).Device(), int32(3)).Cast(idt))
		}, 0},
		{"index_select/empty_index", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).IndexSelect(0, on(idx()))
		}, 0},
		{"index_select/0d_x", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(lathe.Scalar(lathe.CPU, float32(2.5))).IndexSelect(0, on(idx(0, 0)))
		}, 0},
		{"index_select/int32", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(ints).IndexSelect(1, on(idx(3, 0)))
		}, 0},
		{"index_select/bool", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(bools).IndexSelect(1, on(idx(2, 2, 1)))
		}, 0},
		{"index_select/out_of_range/error", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).IndexSelect(1, on(idx(0, 4, 7)))
		}, 0},
		{"index_select/negative/error", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).IndexSelect(0, on(idx(1, -1)))
		}, 0},
		{"gather/dim0", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).Gather(0, on(idx2(2, 4, 2, 0, 1, 2, 0, 0, 2, 1)))
		}, 0},
		{"gather/dim1/transposed_x", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).MT().Gather(1, on(idx2(4, 2, 0, 2, 1, 1, 2, 0, 0, 0)))
		}, 0},
		{"gather/transposed_index", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).Gather(1, on(idx2(2, 3, 3, 0, 1, 2, 2, 1)).MT())
		}, 0},
		{"gather/3d/dim1", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x345).Gather(1, on(lathe.FromSlice(lathe.CPU, []int32{3, 0, 1, 2, 2, 1, 0, 3, 3, 3, 0, 0}, 3, 1, 4).Cast(idt)))
		}, 0},
		{"gather/bad_later/error", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).Gather(1, on(idx2(2, 2, 0, 1, 9, -3)))
		}, 0},
		{"scatter/dim1/duplicates", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).Scatter(1, on(idx2(2, 5, 0, 0, 3, 1, 0, 2, 2, 2, 3, 2)), on(src))
		}, 0},
		{"scatter/dim0/transposed_src", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).Scatter(0, on(idx2(2, 3, 2, 0, 1, 1, 1, 2)), on(src).MT())
		}, 0},
		{"scatter/int32", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(ints).Scatter(0, on(idx2(1, 4, 2, 0, 1, 2)), on(ints.MulScalar(-1)))
		}, 0},
		{"scatter/error", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).Scatter(0, on(idx2(1, 2, 0, 3)), on(src))
		}, 0},
		{"scatter_add/dim1/duplicates", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).ScatterAdd(1, on(idx2(2, 5, 0, 0, 3, 1, 0, 2, 2, 2, 3, 2)), on(src))
		}, 0},
		// Few long lines: the atomic kernel.
		{"scatter_add/long_line", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(lathe.Zeros(lathe.CPU, lathe.Float32, 5)).ScatterAdd(0, on(lathe.FromSlice(lathe.CPU, spread).Cast(idt)), on(many))
		}, 1e-5},
		{"scatter_add/long_lines/dim0", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).ScatterAdd(0, on(lathe.FromSlice(lathe.CPU, thirds, 100, 2).Cast(idt)), on(many).Reshape(100, 3).MT().MT())
		}, 1e-5},
		{"scatter_add/long_line/int32", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(lathe.Zeros(lathe.CPU, lathe.Int32, 5)).ScatterAdd(0, on(lathe.FromSlice(lathe.CPU, spread).Cast(idt)), on(spreadInts))
		}, 0},
		{"scatter_add/long_line/bool", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			f := on(lathe.FromSlice(lathe.CPU, make([]bool, 5)))
			return f.ScatterAdd(0, on(lathe.FromSlice(lathe.CPU, spread).Cast(idt)), on(spreadInts.GtScalar(100)))
		}, 0},
		{"scatter_add/int32", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(ints).ScatterAdd(1, on(idx2(3, 2, 1, 1, 0, 3, 2, 2)), on(ints))
		}, 0},
		{"scatter_add/bool", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(bools).ScatterAdd(1, on(idx2(2, 2, 1, 1, 2, 0)), on(bools))
		}, 0},
		{"scatter_add/0d", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			one := on(lathe.Scalar(lathe.CPU, float32(1)))
			return one.ScatterAdd(0, on(lathe.Scalar(lathe.CPU, int32(0)).Cast(idt)), one)
		}, 0},
		{"index_select/int64", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(wide).IndexSelect(1, on(idx(5, 0, 3)))
		}, 0},
		{"gather/int64", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(wide).Gather(0, on(idx2(2, 6, 3, 0, 1, 2, 2, 1, 0, 3, 3, 3, 0, 0)))
		}, 0},
		{"scatter/int64", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(wide).Scatter(1, on(idx2(2, 3, 5, 0, 5, 1, 1, 2)), on(wide).Neg())
		}, 0},
		{"scatter_add/int64", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(wide).ScatterAdd(1, on(idx2(2, 3, 5, 0, 5, 1, 1, 2)), on(wide))
		}, 0},
		{"scatter_add/long_line/int64", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			big := on(spreadInts.Cast(lathe.Int64)).MulScalar(1<<33 + 12345)
			return on(wide.Narrow(0, 0, 1).Reshape(6).Narrow(0, 0, 5)).ScatterAdd(0, on(lathe.FromSlice(lathe.CPU, spread).Cast(idt)), big)
		}, 0},
		{"index/past_2^32/error", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).IndexSelect(0, on(lathe.FromSlice(lathe.CPU, []int64{1, 1<<32 + 1})))
		}, 0},
		{"gather/negative_high/error", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x34).Gather(1, on(lathe.FromSlice(lathe.CPU, []int64{0, -1<<32 + 2}, 1, 2)))
		}, 0},
		{"embedding", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return lathe.Embedding(on(idx2(2, 3, 2, 0, 2, 1, 1, 3)), on(x345).Reshape(-1, 5))
		}, 0},
		{"embedding/error", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return lathe.Embedding(on(idx(12)), on(x345).Reshape(-1, 5))
		}, 0},
		{"concat/mixed_layouts", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return lathe.Concat([]*lathe.Tensor{on(x34), on(x34).MT().MT(), on(x34).Narrow(0, 0, 0), on(src).Narrow(1, 0, 3).MT()}, 0)
		}, 0},
		{"concat/bool/dim1", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return lathe.Concat([]*lathe.Tensor{on(bools), on(bools).Flip(1)}, 1)
		}, 0},
		{"pad/crop_and_fill/transposed", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x345).Transpose(1, 2).Pad([]int{-1, 2, 1, -2}, -1.5)
		}, 0},
		{"pad/bool", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(bools).Pad([]int{1, 1, 0, 1}, 1)
		}, 0},
		{"pad/int32/empty", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(ints).Narrow(1, 0, 0).Pad([]int{2, 1}, 7)
		}, 0},
		{"flip/transposed", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(x345).Transpose(0, 2).Flip(0, 2)
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.run(func(x *lathe.Tensor) *lathe.Tensor { return x })
			got := c.run(func(x *lathe.Tensor) *lathe.Tensor { return x.To(dev) })
			if strings.HasSuffix(c.name, "/error") && want.Err() == nil {
				t.Fatal("the cpu gives no error")
			}
			if err := sameResult(got, want, c.tol); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestOneHotWGPU compares one_hot with the cpu's, int32 and int64 classes,
// errors included: int64 results on both.
func TestOneHotWGPU(t *testing.T) {
	dev := lathe.WGPU(0)
	if !available(dev) {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable")
	}
	for _, dt := range []lathe.DType{lathe.Int32, lathe.Int64} {
		t.Run(dt.String(), func(t *testing.T) { oneHotAgainstCPU(t, dev, dt) })
	}
}

func oneHotAgainstCPU(t *testing.T, dev lathe.Device, dt lathe.DType) {
	x := lathe.FromSlice(lathe.CPU, []int64{0, 3, 1, 1, 2, 0}, 2, 3).Cast(dt)
	big := lathe.FromSlice(lathe.CPU, []int64{1, 1<<32 + 1}).Cast(dt) // wraps to 1 as an int32
	cases := []struct {
		name string
		run  func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor
	}{
		{"[2,3]/4", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(x).OneHot(4) }},
		{"transposed/max+1", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(x).MT().OneHot(-1) }},
		{"0d", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(lathe.Scalar(lathe.CPU, int64(2)).Cast(dt)).OneHot(3)
		}},
		{"past_2^32", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(big).OneHot(3) }},
		{"empty", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(x).Narrow(0, 0, 0).OneHot(3) }},
		{"out_of_range/error", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(x).OneHot(3) }},
		{"zero_classes/error", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor { return on(x).OneHot(0) }},
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

// sameResult compares got (on any device) with want (on the cpu): the same
// error, or the same dtype, shape and elements, float ones within tol
// (relative and absolute).
func sameResult(got, want *lathe.Tensor, tol float64) error {
	gerr, werr := got.Err(), want.Err()
	if gerr == nil && werr != nil {
		// wgpu:0 checks values on the device and reports a bad one at the
		// next sync (dispatch's ValueChecker), not from the op.
		gerr = lathe.Synchronize(lathe.WGPU(0))
	}
	switch {
	case werr != nil || gerr != nil:
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			return fmt.Errorf("error %v, want %v", gerr, werr)
		}
		return nil
	case got.DType() != want.DType() || !slices.Equal(got.Shape(), want.Shape()):
		return fmt.Errorf("%s %v, want %s %v", got.DType(), got.Shape(), want.DType(), want.Shape())
	}
	var g, w any
	var err error
	switch want.DType() {
	case lathe.Float32:
		gf, err := got.Float32s()
		if err != nil {
			return err
		}
		wf, _ := want.Float32s()
		for i := range wf {
			if d := math.Abs(float64(gf[i]) - float64(wf[i])); d > tol*(1+math.Abs(float64(wf[i]))) {
				return fmt.Errorf("[%d] got %v want %v\ngot %v\nwant %v", i, gf[i], wf[i], gf, wf)
			}
		}
		return nil
	case lathe.Int32:
		g, err = got.Int32s()
		w, _ = want.Int32s()
	case lathe.Int64:
		g, err = got.Int64s()
		w, _ = want.Int64s()
	default:
		g, err = got.Bools()
		w, _ = want.Bools()
	}
	if err != nil {
		return err
	}
	if fmt.Sprint(g) != fmt.Sprint(w) {
		return fmt.Errorf("got %v\nwant %v", g, w)
	}
	return nil
}

// TestIndexGradAgainstCPU takes the gradients of the indexing ops on wgpu:0
// with int32 indices (their backward passes are scatter_add, scatter and
// gather) and compares them with the cpu's.
func TestIndexGradAgainstCPU(t *testing.T) {
	dev := lathe.WGPU(0)
	if !available(dev) {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable")
	}
	lathe.Seed(11)
	x := lathe.RandN(lathe.CPU, lathe.Float32, 4, 5)
	src := lathe.RandN(lathe.CPU, lathe.Float32, 2, 5)
	rows := lathe.FromSlice(lathe.CPU, []int32{3, 0, 3, 3, 1})
	index := lathe.FromSlice(lathe.CPU, []int32{0, 4, 4, 1, 2, 2, 2, 0, 3, 1}, 2, 5)
	cases := []struct {
		name string
		op   func(x, src, rows, index *lathe.Tensor) *lathe.Tensor
	}{
		{"index_select", func(x, _, rows, _ *lathe.Tensor) *lathe.Tensor { return x.IndexSelect(0, rows) }},
		{"gather", func(x, _, _, index *lathe.Tensor) *lathe.Tensor { return x.Gather(1, index) }},
		{"embedding", func(x, _, rows, _ *lathe.Tensor) *lathe.Tensor { return lathe.Embedding(rows.Reshape(5, 1), x) }},
		{"scatter", func(x, src, _, index *lathe.Tensor) *lathe.Tensor { return x.Scatter(1, index, src) }},
		{"scatter_add", func(x, src, _, index *lathe.Tensor) *lathe.Tensor { return x.ScatterAdd(1, index, src) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			grads := func(dev lathe.Device) []*lathe.Tensor {
				xd, sd := x.To(dev).RequireGrad(), src.To(dev).RequireGrad()
				y := c.op(xd, sd, rows.To(dev), index.To(dev))
				lathe.Seed(3)
				g := lathe.RandN(dev, lathe.Float32, y.Shape()...)
				wrt := []*lathe.Tensor{xd}
				if c.name == "scatter" || c.name == "scatter_add" {
					wrt = append(wrt, sd)
				}
				gs, err := lathe.Grad(y, wrt, lathe.WithGradient(g))
				if err != nil {
					t.Fatal(err)
				}
				return gs
			}
			want, got := grads(lathe.CPU), grads(dev)
			for i := range want {
				if err := sameResult(got[i], want[i], 1e-5); err != nil {
					t.Errorf("gradient %d: %v", i, err)
				}
			}
		})
	}
}
