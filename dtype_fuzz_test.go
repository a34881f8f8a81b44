package lathe

import (
	"math"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

// FuzzCast draws a cast between any two dtypes (and sometimes to a value
// that is no dtype), of contiguous or strided tensors with NaN, infinities
// and values past int32's range, and a move to wgpu:0 and back. The cast
// must give the dtype asked for and PyTorch's value where PyTorch defines
// one (truncation toward zero, nonzero is true, integers wrapping to a
// narrower one, float64 rounding to float32), round trips through a
// wider dtype must be exact, and wgpu:0 must agree with the cpu.
func FuzzCast(f *testing.F) {
	f.Add([]byte{0, 2, 2, 3, 1, 5, 9, 13, 17, 21, 25})
	f.Add([]byte{1, 0, 1, 4, 3, 7, 11, 15})
	f.Add([]byte{2, 4, 2, 2, 2, 1, 2, 3, 4})
	f.Add([]byte{3, 1, 1, 3, 200, 100, 7})
	f.Add([]byte{4, 0, 2, 2, 3, 0, 0, 0, 0, 0, 0})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		from := fzCastDTypes[r.intn(len(fzCastDTypes))]
		to := fzCastDTypes[r.intn(len(fzCastDTypes))]
		bad := r.intn(32) == 0
		if bad {
			to = DType(r.intn(256))
		}
		shape := r.shape(3, 27)
		x := fzOperand(r, from, shape)
		label := "cast/" + from.String() + dispatch.FormatShape(shape) + "->" + to.String()
		if bad && !to.Valid() {
			fzWant(t, label, x.Cast(to), ErrDType, nil, 0)
			return
		}
		xs, err := fzHost(x)
		if err != nil {
			t.Fatal(err)
		}
		out := fzDiff(t, label, 0, func(in []*Tensor) *Tensor { return in[0].Cast(to) }, x)
		fzWant(t, label, out, nil, shape, to)
		if out.Err() != nil {
			return
		}
		got, err := fzHost(out)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range xs {
			want, defined := fzCastRef(v, from, to)
			if defined && !fzClose(got[i], want, 0) {
				t.Fatalf("%s: element %d: %v became %v, want %v", label, i, v, got[i], want)
			}
		}
		// A round trip through a dtype that holds every value is exact.
		if wide := fzWider(from); wide != from {
			back, err := fzHost(x.Cast(wide).Cast(from))
			if err != nil {
				t.Fatalf("%s: round trip through %v: %v", label, wide, err)
			}
			for i := range xs {
				if !fzClose(back[i], xs[i], 0) {
					t.Fatalf("%s: round trip through %v: element %d %v came back %v", label, wide, i, xs[i], back[i])
				}
			}
		}
		// Moving to a device and back keeps every value, or says why not.
		if gpu := fzGPU(); gpu != nil {
			there := x.To(*gpu)
			if err := there.Err(); err != nil {
				if k := fzKind(t, label+" to "+gpu.String(), err); k != ErrUnsupported && k != ErrDType {
					t.Fatalf("%s: moving to %v: %v", label, gpu, err)
				}
				return
			}
			back, err := fzHost(there.To(CPU))
			if err != nil {
				t.Fatalf("%s: back from %v: %v", label, gpu, err)
			}
			if !slices.EqualFunc(back, xs, func(a, b float64) bool { return fzClose(a, b, 0) }) {
				t.Fatalf("%s: %v came back from %v as %v", label, xs, gpu, back)
			}
		}
	})
}

// fzCastDTypes are the dtypes FuzzCast draws: every one lathe has, the
// narrow ones too (which the other targets' oracles do not know yet).
var fzCastDTypes = append(slices.Clone(fzDTypes), Float16, BFloat16, Int8, Uint8)

// fzCastRef is PyTorch's value of v (of dtype from) cast to dtype to, and
// whether PyTorch defines it.
func fzCastRef(v float64, from, to DType) (float64, bool) {
	switch {
	case to == Bool:
		if v != 0 { // NaN is true
			return 1, true
		}
		return 0, true
	case to == Float32:
		return float64(float32(v)), true
	case to == Float64:
		return v, true
	case to == Float16: // through float32, as torch 1.13 rounds a float64
		return float64(half.Float16ToFloat32(half.Float16FromFloat32(float32(v)))), true
	case to == BFloat16:
		return float64(half.BFloat16ToFloat32(half.BFloat16FromFloat32(float32(v)))), true
	case to == Int8 || to == Uint8:
		// A float truncates to int32 first (NaN and values past its
		// range give its minimum), then keeps the low 8 bits, as torch on
		// x86; an integer keeps its low 8 bits.
		if from.IsFloat() {
			v, _ = fzCastRef(v, from, Int32)
		}
		i := int64(v)
		if to == Int8 {
			return float64(int8(i)), true
		}
		return float64(uint8(i)), true
	case from.IsFloat():
		t := math.Trunc(v)
		lo, end := float64(math.MinInt32), float64(1<<31) // end: the first value past the range
		if to == Int64 {
			lo, end = -(1 << 63), 1<<63
		}
		if math.IsNaN(v) || t < lo || t >= end {
			return lo, true // lathe's rule on every device (Cast's doc)
		}
		return t, true
	case to == Int32:
		return float64(int32(int64(v))), true // wraps, as C++'s conversion does
	}
	return v, true
}

// fzWider is a dtype that holds every value of dt (dt itself for the
// widest).
func fzWider(dt DType) DType {
	switch dt {
	case Float32:
		return Float64
	case Float16, BFloat16:
		return Float32
	case Int32:
		return Int64
	case Bool, Int8, Uint8:
		return Int32
	}
	return dt
}
