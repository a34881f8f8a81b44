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
