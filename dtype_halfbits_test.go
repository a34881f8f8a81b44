package lathe

import (
	"errors"
	"slices"
	"testing"
)

// TestHalfBits checks that FromHalfBits and HalfBits keep every pattern as
// it is, a signalling NaN's payload included, through a view and To, and
// refuse the other dtypes.
func TestHalfBits(t *testing.T) {
	bits := []uint16{0x0000, 0x8000, 0x0001, 0x7bff, 0x7c00, 0xfc00, 0x7c01, 0xfe01, 0x7e00, 0x3c00}
	for _, dt := range []DType{Float16, BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			x := FromHalfBits(CPU, dt, bits, 2, 5)
			if x.DType() != dt {
				t.Fatalf("dtype %v, want %v", x.DType(), dt)
			}
			got, err := x.HalfBits()
			if err != nil || !slices.Equal(got, bits) {
				t.Fatalf("HalfBits = %04x, %v; want %04x", got, err, bits)
			}
			tr, err := x.Transpose(0, 1).Contiguous().Transpose(0, 1).To(CPU).HalfBits()
			if err != nil || !slices.Equal(tr, bits) {
				t.Fatalf("through a copy: %04x, %v; want %04x", tr, err, bits)
			}
		})
	}
	if _, err := Ones(CPU, Float32, 2).HalfBits(); !errors.Is(err, ErrDType) {
		t.Errorf("float32 HalfBits: %v, want ErrDType", err)
	}
	if err := FromHalfBits(CPU, Int8, bits).Err(); !errors.Is(err, ErrDType) {
		t.Errorf("FromHalfBits(int8): %v, want ErrDType", err)
	}
	if err := FromHalfBits(CPU, Float16, bits, 3, 3).Err(); !errors.Is(err, ErrShape) {
		t.Errorf("FromHalfBits([3, 3]) of 10: %v, want ErrShape", err)
	}
}

// TestMovesKeepHalfBits: the ops that move a 16-bit tensor's elements
// without computing on them give back each element's bits, a signalling
// NaN's (which a conversion through float32 makes quiet) and a negative
// zero's included, as torch's copies do, on every device: the cpu moves
// them as they are, wgpu:0 carries a 16-bit float as the int32 of its bits
// (dispatch.ViaBits) and its where selects the bits, and cuda's copies,
// where, gather and scatter run on the 16-bit words (the emulation's
// TestHalfKernelsMatchViaCompute and TestIndexMovesKeepHalfBits).
func TestMovesKeepHalfBits(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float16, BFloat16} {
			snan := uint16(0x7d01) // signalling: the mantissa's top bit clear
			if dt == BFloat16 {
				snan = 0x7f81
			}
			bits := []uint16{snan, 0x3c00, snan | 0x8000, 0x8000, 0x0001, 0x7c00}
			x := FromHalfBits(dev, dt, bits, 2, 3)
			moves := map[string]struct {
				y    *Tensor
				from []int // y's elements as indices into bits (-1: 0, -2: -2)
			}{
				"contiguous":   {x.Transpose(0, 1).Contiguous(), []int{0, 3, 1, 4, 2, 5}},
				"clone":        {x.Clone(), []int{0, 1, 2, 3, 4, 5}},
				"gather":       {x.Gather(1, FromSlice(dev, []int64{2, 0, 1, 0, 2, 1}, 2, 3)), []int{2, 0, 1, 3, 5, 4}},
				"index_select": {x.IndexSelect(0, FromSlice(dev, []int64{1, 0}, 2)), []int{3, 4, 5, 0, 1, 2}},
				"scatter":      {Zeros(dev, dt, 2, 3).Scatter(1, FromSlice(dev, []int64{2, 1, 0, 0, 1, 2}, 2, 3), x), []int{2, 1, 0, 3, 4, 5}},
				"where":        {Where(FromSlice(dev, []bool{true, true, true, true, true, true}, 2, 3), x, x), []int{0, 1, 2, 3, 4, 5}},
				"concat":       {Concat([]*Tensor{x.Narrow(1, 2, 1), x.Narrow(1, 0, 2)}, 1), []int{2, 0, 1, 5, 3, 4}},
				"flip":         {x.Flip(0, 1), []int{5, 4, 3, 2, 1, 0}},
				"pad":          {x.Narrow(0, 0, 1).Pad([]int{0, 0, 0, 1}, 0), []int{0, 1, 2, -1, -1, -1}},
				"pad -2":       {x.Narrow(0, 0, 1).Pad([]int{0, 0, 0, 1}, -2), []int{0, 1, 2, -2, -2, -2}},
				"repeat":       {x.Narrow(1, 0, 1).Repeat(1, 3), []int{0, 0, 0, 3, 3, 3}},
				"expand":       {x.Narrow(0, 0, 1).Expand(2, 3).Contiguous(), []int{0, 1, 2, 0, 1, 2}},
			}
			for name, m := range moves {
				t.Run(dev.String()+"/"+dt.String()+"/"+name, func(t *testing.T) {
					got, err := m.y.HalfBits()
					if err != nil {
						t.Fatal(err)
					}
					for i, j := range m.from {
						want := uint16(0) // -1: a zero
						switch {
						case j >= 0:
							want = bits[j]
						case j == -2:
							want = 0xc000 // -2 in either dtype
						}
						if got[i] == want {
							continue
						}
						t.Errorf("element %d is %04x, want %04x: %04x", i, got[i], want, got)
					}
				})
			}
		}
	}
}
