package lathe

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/philox"
)

// nextKey is the key that the next keyed op draws: the stream's next word,
// which it leaves as it is.
func nextKey() uint64 {
	s := rngState()
	return s.Uint64()
}

// dropoutWant is dropout of x (row-major values, exact in dt) under key,
// from internal/philox, in float64 or float32 as dt computes, rounded to
// dt: what every device must give.
func dropoutWant(x []float64, dt DType, p float64, key uint64) []float64 {
	m := ops.Mask{P: p, Key: key}
	out := make([]float64, len(x))
	for i, v := range x {
		keep := philox.Words(key, uint64(i))[i%4] >= m.Threshold()
		if dt == Float64 {
			out[i] = v * map[bool]float64{true: m.Scale(), false: 0}[keep]
			continue
		}
		f := float32(0)
		if keep {
			f = float32(m.Scale())
		}
		out[i] = float64(float32(v) * f)
	}
	if dt == Float16 || dt == BFloat16 {
		r, _ := FromSlice(CPU, out, len(out)).Cast(dt).Float64s()
		return r
	}
	return out
}

// TestDropoutMaskOnEveryDevice holds every device's dropout to the mask
// that internal/philox gives for the key the call drew, bit for bit, in
// every float dtype the device has: contiguous tensors of lengths that end
// part-way through a block and that the cpu cuts into pieces (from 2^18),
// a transposed view, a view off its storage's start and a broadcast one,
// which number their elements row-major as a copy would.
func TestDropoutMaskOnEveryDevice(t *testing.T) {
	type shaped struct {
		name string
		make func(dev Device, dt DType) *Tensor
	}
	ramp := func(dev Device, dt DType, n int) *Tensor {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i%61 - 30)
		}
		return FromSlice(CPU, v, n).Cast(dt).To(dev)
	}
	shapes := []shaped{
		{"7", func(dev Device, dt DType) *Tensor { return ramp(dev, dt, 7) }},
		{"1001", func(dev Device, dt DType) *Tensor { return ramp(dev, dt, 1001) }},
		{"300003", func(dev Device, dt DType) *Tensor { return ramp(dev, dt, 300003) }},
		{"37x29.T", func(dev Device, dt DType) *Tensor { return ramp(dev, dt, 37*29).Reshape(37, 29).Transpose(0, 1) }},
		{"600x700.T", func(dev Device, dt DType) *Tensor { return ramp(dev, dt, 600*700).Reshape(600, 700).Transpose(0, 1) }},
		{"offset", func(dev Device, dt DType) *Tensor { return ramp(dev, dt, 1030).Narrow(0, 3, 1025) }},
		{"broadcast", func(dev Device, dt DType) *Tensor { return ramp(dev, dt, 9).Reshape(9, 1).Expand(9, 300) }},
		{"empty", func(dev Device, dt DType) *Tensor { return ramp(dev, dt, 0).Reshape(0, 5) }},
		{"10 dims that do not merge", func(dev Device, dt DType) *Tensor {
			x := ramp(dev, dt, 59049).Reshape(3, 3, 3, 3, 3, 3, 3, 3, 3, 3)
			for d := range 10 {
				x = x.Narrow(d, d%2, 2)
			}
			return x
		}},
	}
	for _, dev := range Devices() {
		for _, dt := range []DType{Float32, Float64, Float16, BFloat16} {
			for _, s := range shapes {
				for _, p := range []float64{0.1, 0.5, 0.97} {
					t.Run(fmt.Sprintf("%s/%s/%s/p%v", dev, dt, s.name, p), func(t *testing.T) {
						x := s.make(dev, dt)
						if err := x.Err(); err != nil {
							if dt == Float64 && dev.Kind == WGPU(0).Kind {
								t.Skipf("%s has no float64: %v", dev, err)
							}
							t.Fatal(err)
						}
						Seed(11)
						key := nextKey()
						got, err := x.Dropout(p, true).To(CPU).Cast(Float64).Float64s()
						if err != nil {
							t.Fatal(err)
						}
						in, err := x.To(CPU).Cast(Float64).Float64s()
						if err != nil {
							t.Fatal(err)
						}
						want := dropoutWant(in, dt, p, key)
						for i := range want {
							if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
								t.Fatalf("element %d of %d is %v, want %v (x %v)", i, len(want), got[i], want[i], in[i])
							}
						}
					})
				}
			}
		}
	}
}

// TestFailedDropoutDrawsNothing: a dropout that fails after drawing its key
// (an output no device holds) puts the stream back, so the next draw gets
// that key.
func TestFailedDropoutDrawsNothing(t *testing.T) {
	Seed(5)
	key := nextKey()
	huge := Ones(CPU, Float32, 1, 1).Expand(1<<31, 1<<31)
	if err := huge.Dropout(0.5, true).Err(); !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("a dropout of 2^62 elements: %v, want ErrOutOfMemory", err)
	}
	if got := nextKey(); got != key {
		t.Errorf("after the failed dropout the stream's next key is %x, want %x (drawn nothing)", got, key)
	}
}

// TestEmptyDropoutDrawsNothing: a dropout of no elements draws no key, as
// torch's dropout of an empty tensor leaves its generator as it was, and
// as Rand and RandInt of no elements draw nothing: skipping an empty
// batch must not change the draws after it.
func TestEmptyDropoutDrawsNothing(t *testing.T) {
	for _, dev := range []Device{CPU, WGPU(0)} {
		if err := Zeros(dev, Float32, 1).Err(); err != nil {
			continue // random_test.go skips by name the devices that do not open
		}
		Seed(5)
		key := nextKey()
		x := Zeros(dev, Float32, 0, 3).RequireGrad()
		y := x.Dropout(0.5, true)
		if err := y.Err(); err != nil || y.Dim(0) != 0 || y.Dim(1) != 3 {
			t.Fatalf("%s: dropout of [0, 3]: %v, shape %v", dev, err, y.Shape())
		}
		if got := nextKey(); got != key {
			t.Errorf("%s: after a dropout of no elements the stream's next key is %x, want %x (drawn nothing)", dev, got, key)
		}
	}
}
