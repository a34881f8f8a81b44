package dispatch

import (
	"errors"
	"slices"
	"testing"
)

// PoolTaps against the definition: tap k of window o reads place
// o·s - p + k·d, and counts when that place is inside [0, n).
func TestPoolTaps(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for k := 1; k <= 4; k++ {
			for s := 1; s <= 3; s++ {
				for d := 1; d <= 3; d++ {
					for p := 0; 2*p <= k; p++ {
						for _, ceil := range []bool{false, true} {
							w := Window{Kernel: []int{k}, Stride: []int{s}, Padding: []int{p}, Dilation: []int{d}, CeilMode: ceil}
							for o := range w.OutSize(0, n) {
								var want []int
								for j := range k {
									if at := o*s - p + j*d; at >= 0 && at < n {
										want = append(want, j)
									}
								}
								lo, hi := PoolTaps(w, 0, o, n)
								var got []int
								for j := lo; j < hi; j++ {
									got = append(got, j)
								}
								if !slices.Equal(got, want) {
									t.Fatalf("%+v n=%d o=%d: taps [%d, %d), want %v", w, n, o, lo, hi, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// The backward and gather ops, which the root package never calls with
// bad arguments but a program using dispatch can, validate too.
func TestPoolInferErrors(t *testing.T) {
	f64 := func(shape ...int) *Tensor { return &Tensor{DType: Float64, Shape: shape} }
	i64 := func(shape ...int) *Tensor { return &Tensor{DType: Int64, Shape: shape} }
	w := Window{Kernel: []int{2, 2}, Stride: []int{2, 2}, Padding: []int{0, 0}, Dilation: []int{1, 1}}
	back := AvgPoolBackward{AvgPool: AvgPool{Window: w}, InSize: []int{4, 4}}
	for name, c := range map[string]struct {
		op    string
		in    []*Tensor
		attrs any
		kind  error
	}{
		"avg/attrs":           {"avg_pool", []*Tensor{f64(1, 1, 4, 4)}, w, ErrValue},
		"avg_backward/grad":   {"avg_pool_backward", []*Tensor{f64(1, 1, 3, 2)}, back, ErrShape},
		"avg_backward/int":    {"avg_pool_backward", []*Tensor{i64(1, 1, 2, 2)}, back, ErrDType},
		"adaptive_back/rank":  {"adaptive_avg_pool_backward", []*Tensor{f64(1, 2, 2)}, AdaptivePoolBackward{InSize: []int{4, 4}}, ErrShape},
		"adaptive_back/empty": {"adaptive_avg_pool_backward", []*Tensor{f64(1, 1, 2, 2)}, AdaptivePoolBackward{InSize: []int{0, 4}}, ErrShape},
		"gather/rank":         {"pool_gather", []*Tensor{f64(4, 4), i64(4, 4)}, nil, ErrShape},
		"gather/channels":     {"pool_gather", []*Tensor{f64(1, 2, 4, 4), i64(1, 3, 2, 2)}, nil, ErrShape},
		"gather/int32":        {"pool_gather", []*Tensor{f64(1, 2, 4, 4), {DType: Int32, Shape: []int{1, 2, 2, 2}}}, nil, ErrDType},
		"scatter/shape":       {"max_pool_backward", []*Tensor{f64(1, 1, 2, 2), i64(1, 1, 2, 1)}, PoolScatter{Size: []int{4, 4}}, ErrShape},
		"scatter/size_count":  {"max_pool_backward", []*Tensor{f64(1, 1, 2, 2), i64(1, 1, 2, 2)}, PoolScatter{Size: []int{4}}, ErrShape},
		"scatter/size0":       {"max_unpool", []*Tensor{f64(1, 1, 2, 2), i64(1, 1, 2, 2)}, PoolScatter{Size: []int{0, 4}}, ErrValue},
		"scatter/no_size":     {"max_unpool", []*Tensor{f64(1, 1, 2, 2), i64(1, 1, 2, 2)}, PoolScatter{}, ErrValue},
		"indices/in_padding": {"max_pool_indices", []*Tensor{f64(1, 1, 2, 2)},
			Window{Kernel: []int{2, 2}, Stride: []int{1, 1}, Padding: []int{1, 1}, Dilation: []int{3, 3}}, ErrValue},
	} {
		_, _, err := Lookup(c.op).Infer(c.in, c.attrs)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, c.kind) {
			t.Errorf("%s: got %v, want %v", name, err, c.kind)
		}
	}
}
