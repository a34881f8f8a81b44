package lathe

import (
	"errors"
	"testing"
)

// TestValueChecksOnEveryDevice: an index, class or exponent that only the
// data can refuse is the same error, kind and text and call site, on every
// device. The cpu's op fails at once; a GPU checks where the values are
// and reports at the next sync (dispatch's ValueChecker), after which the
// device works again.
func TestValueChecksOnEveryDevice(t *testing.T) {
	cases := []struct {
		name string
		kind error
		run  func(dev Device) *Tensor
	}{
		{"index_select", ErrIndex, func(dev Device) *Tensor {
			return Arange(dev, Float32, 0, 12, 1).Reshape(3, 4).IndexSelect(1, FromSlice(CPU, []int32{0, 4}, 2).To(dev))
		}},
		{"index_select/negative", ErrIndex, func(dev Device) *Tensor {
			return Ones(dev, Float32, 3).IndexSelect(0, FromSlice(CPU, []int32{-1}, 1).To(dev))
		}},
		{"gather/transposed_index", ErrIndex, func(dev Device) *Tensor {
			idx := FromSlice(CPU, []int32{0, 1, 2, 9}, 2, 2).To(dev).Transpose(0, 1)
			return Ones(dev, Float32, 2, 4).Gather(1, idx)
		}},
		{"scatter_add", ErrIndex, func(dev Device) *Tensor {
			return Zeros(dev, Float32, 3).ScatterAdd(0, FromSlice(CPU, []int32{1, 3}, 2).To(dev), Ones(dev, Float32, 2))
		}},
		{"one_hot", ErrIndex, func(dev Device) *Tensor {
			return FromSlice(CPU, []int32{0, 5, 1}, 3).To(dev).OneHot(4)
		}},
		{"embedding", ErrIndex, func(dev Device) *Tensor {
			return Embedding(FromSlice(CPU, []int32{2, 7}, 2).To(dev), Ones(dev, Float32, 6, 3))
		}},
		{"max_unpool", ErrIndex, func(dev Device) *Tensor {
			idx := FromSlice(CPU, []int64{0, 2, 16, 15}, 1, 1, 2, 2).To(dev)
			return Ones(dev, Float32, 1, 1, 2, 2).MaxUnpool2d(idx, 2)
		}},
		// int64 values whose low word alone is in range are out of it.
		{"index_select/int64_past_2^32", ErrIndex, func(dev Device) *Tensor {
			return Arange(dev, Float32, 0, 12, 1).Reshape(3, 4).IndexSelect(1, FromSlice(CPU, []int64{0, 1<<32 + 1}, 2).To(dev))
		}},
		{"gather/int64_negative", ErrIndex, func(dev Device) *Tensor {
			return Ones(dev, Float32, 2, 4).Gather(1, FromSlice(CPU, []int64{0, 1, -1 << 32, 3}, 2, 2).To(dev))
		}},
		{"pow/int64_negative_exponent", ErrValue, func(dev Device) *Tensor {
			return FromSlice(CPU, []int64{2, 3}, 2).To(dev).Pow(FromSlice(CPU, []int64{1, -1 << 40}, 2).To(dev))
		}},
		{"cross_entropy/int64_target", ErrIndex, func(dev Device) *Tensor {
			return Ones(dev, Float32, 3, 4).CrossEntropy(FromSlice(CPU, []int64{1, 1<<32 + 2, 0}, 3).To(dev))
		}},
		{"pow/negative_exponent", ErrValue, func(dev Device) *Tensor {
			return FromSlice(CPU, []int32{2, 3}, 2).To(dev).Pow(FromSlice(CPU, []int32{1, -2}, 2).To(dev))
		}},
		{"cross_entropy/target", ErrIndex, func(dev Device) *Tensor {
			return Ones(dev, Float32, 3, 4).CrossEntropy(FromSlice(CPU, []int32{1, 4, 0}, 3).To(dev))
		}},
	}
	for _, dev := range Devices() {
		for _, c := range cases {
			t.Run(dev.String()+"/"+c.name, func(t *testing.T) {
				want := c.run(CPU).Err()
				if !errors.Is(want, c.kind) {
					t.Fatalf("the cpu gives %v, want a %v", want, c.kind)
				}
				got := c.run(dev).Err()
				if got == nil {
					got = Synchronize(dev) // a device reports at the next sync
				}
				if got == nil || got.Error() != want.Error() {
					t.Fatalf("error %v\nwant  %v", got, want)
				}
				// The failure is reported once and the device goes on.
				if err := Synchronize(dev); err != nil {
					t.Fatalf("the next sync: %v", err)
				}
				v, err := FromSlice(CPU, []int32{1, 2}, 2).To(dev).IndexSelect(0, FromSlice(CPU, []int32{1}, 1).To(dev)).Int32s()
				if err != nil || len(v) != 1 || v[0] != 2 {
					t.Fatalf("an op after the failure: %v, %v", v, err)
				}
			})
		}
	}
}

// A class loss's ignored targets need not be classes.
func TestValueCheckIgnoresIgnoreIndex(t *testing.T) {
	for _, dev := range Devices() {
		target := FromSlice(CPU, []int32{1, -100, 0}, 3).To(dev)
		if _, err := Ones(dev, Float32, 3, 4).CrossEntropy(target).Float32s(); err != nil {
			t.Errorf("%v: %v", dev, err)
		}
	}
}
