package lathe

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestFromFuncWithData: FromFunc's fill writes a cpu tensor's own memory,
// zeroed first, and WithData lends it back without a copy; a strided view
// is lent as a row-major copy.
func TestFromFuncWithData(t *testing.T) {
	// The pool's next block of this size held ones.
	Full(CPU, Float32, 1, 64, 1024).Release()
	var filled *float32
	x := FromFunc(CPU, func(d []float32) error {
		for i, v := range d {
			if v != 0 {
				t.Fatalf("fill's data[%d] starts as %v, not 0", i, v)
			}
			d[i] = float32(i)
		}
		filled = &d[0]
		return nil
	}, 64, 1024)
	defer x.Release()
	if got := x.Shape(); !slices.Equal(got, []int{64, 1024}) {
		t.Fatalf("shape %v", got)
	}
	var lent *float32
	err := WithData(x, func(d []float32) error {
		lent = &d[0]
		if len(d) != 64*1024 || d[1000] != 1000 || d[len(d)-1] != 64*1024-1 {
			t.Errorf("lent %d elements, d[1000] %v, last %v", len(d), d[1000], d[len(d)-1])
		}
		return nil
	})
	if err != nil || lent != filled {
		t.Fatalf("WithData: %v; lent at %p, filled at %p (a copy, not x's memory)", err, lent, filled)
	}

	y := FromSlice(CPU, []int64{1, 2, 3, 4, 5, 6}, 2, 3)
	defer y.Release()
	yt := y.Transpose(0, 1)
	defer yt.Release()
	var got []int64
	if err := WithData(yt, func(d []int64) error { got = slices.Clone(d); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []int64{1, 4, 2, 5, 3, 6}; !slices.Equal(got, want) {
		t.Errorf("a transposed view lent %v, want %v", got, want)
	}

	b := FromFunc(CPU, func(d []bool) error { d[1] = true; return nil }, 3)
	defer b.Release()
	if v, err := b.Bools(); err != nil || !slices.Equal(v, []bool{false, true, false}) {
		t.Errorf("bools %v, %v", v, err)
	}
	s := FromFunc(CPU, func(d []float64) error { d[0] = 2.5; return nil })
	defer s.Release()
	if v, err := s.Item(); err != nil || s.Rank() != 0 || v != 2.5 {
		t.Errorf("0-d: rank %d, item %v, %v", s.Rank(), v, err)
	}
	e := FromFunc(CPU, func(d []int32) error {
		if len(d) != 0 {
			t.Errorf("an empty tensor's fill got %d elements", len(d))
		}
		return nil
	}, 4, 0)
	if err := e.Err(); err != nil || !slices.Equal(e.Shape(), []int{4, 0}) {
		t.Errorf("empty: %v %v", e.Shape(), err)
	}
}

// TestFromFuncWithDataErrors: each misuse is an error of its kind, f's
// and fill's own errors come back as they were, and neither function is
// called where the arguments are wrong.
func TestFromFuncWithDataErrors(t *testing.T) {
	mine := errors.New("mine")
	x := Ones(CPU, Float32, 3)
	defer x.Release()
	released := Ones(CPU, Float32, 3)
	released.Release()
	never := func(t *testing.T) func([]float32) error {
		return func([]float32) error { t.Error("called"); return nil }
	}
	for _, c := range []struct {
		name string
		err  error
		kind error
	}{
		{"nil x", WithData(nil, never(t)), ErrValue},
		{"failed x", WithData(x.Reshape(2), never(t)), ErrShape},
		{"released x", WithData(released, never(t)), ErrReleased},
		{"another dtype", WithData(x, func([]float64) error { t.Error("called"); return nil }), ErrDType},
		{"nil f", WithData[float32](x, nil), ErrValue},
		{"f's error", WithData(x, func([]float32) error { return mine }), mine},
		{"nil fill", FromFunc[float32](CPU, nil, 2).Err(), ErrValue},
		{"negative size", FromFunc(CPU, never(t), 2, -3).Err(), ErrShape},
		{"-1", FromFunc(CPU, never(t), -1).Err(), ErrShape},
		{"too many elements", FromFunc(CPU, never(t), 1<<40, 1<<40).Err(), ErrShape},
		{"no such device", FromFunc(CUDA(99), never(t), 2).Err(), ErrUnavailable},
		{"fill's error", FromFunc(CPU, func([]float32) error { return mine }, 2).Err(), mine},
	} {
		if !errors.Is(c.err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.kind)
		}
	}
}

// TestWithDataHoldsX: a Release while f runs hands x's memory back only
// when f returns, so a tensor made in between does not take it.
func TestWithDataHoldsX(t *testing.T) {
	x := Full(CPU, Float32, 7, 256, 1024)
	err := WithData(x, func(d []float32) error {
		var wg sync.WaitGroup
		wg.Go(x.Release)
		wg.Wait()
		y := Full(CPU, Float32, 9, 256, 1024) // the pool's block of this size, were x's back
		defer y.Release()
		if err := WithData(y, func(e []float32) error {
			if unsafe.SliceData(e) == unsafe.SliceData(d) {
				t.Error("a tensor made while x was lent took x's memory")
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
		if d[0] != 7 || d[len(d)-1] != 7 {
			t.Errorf("x's lent elements changed to %v, %v", d[0], d[len(d)-1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := WithData(x, func([]float32) error { return nil }); !errors.Is(err, ErrReleased) {
		t.Errorf("after the release: %v", err)
	}
}

// TestFromFuncWithDataWGPU: on a device whose memory is not the
// process's, both go through host copies with the same results.
func TestFromFuncWithDataWGPU(t *testing.T) {
	dev := WGPU(0)
	x := FromFunc(dev, func(d []float32) error {
		for i := range d {
			d[i] = float32(i) / 2
		}
		return nil
	}, 3, 5)
	if err := x.Err(); errors.Is(err, ErrUnavailable) {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 does not open: %v", err)
	}
	defer x.Release()
	xt := x.Transpose(0, 1)
	defer xt.Release()
	var got []float32
	if err := WithData(xt, func(d []float32) error { got = slices.Clone(d); return nil }); err != nil {
		t.Fatal(err)
	}
	want, err := xt.Float32s()
	if err != nil || !slices.Equal(got, want) || got[1] != 2.5 {
		t.Errorf("lent %v, Float32s %v (%v)", got, want, err)
	}
}

// TestFromSliceTakesThePool: FromSlice copies into the cpu pool's memory,
// so a batch made each step and released reuses one block, where a new
// Go slice each time cost a 16 MB batch 10-12 ms of zeroing and page
// faults (0.4 ms now); the copy is the tensor's own.
func TestFromSliceTakesThePool(t *testing.T) {
	data := make([]float32, 1<<20)
	data[5] = 3
	at := func(x *Tensor) (p *float32) {
		if err := WithData(x, func(d []float32) error { p = &d[0]; return nil }); err != nil {
			t.Fatal(err)
		}
		return p
	}
	x := FromSlice(CPU, data)
	first := at(x)
	x.Release()
	y := FromSlice(CPU, data)
	defer y.Release()
	if at(y) != first {
		t.Error("the second batch took new memory, not the block the first gave back")
	}
	data[5] = 4
	if v, _ := y.Float32s(); v[5] != 3 || unsafe.SliceData(data) == at(y) {
		t.Errorf("the tensor shares the slice's memory: y[5] = %v after the slice changed", v[5])
	}
}

// TestFromFuncFillPanics: a fill that panics gives the new block back at
// once, not when the collector finds it, and a lent slice ends where its
// view does, so an append in f cannot reach the elements after it.
func TestFromFuncFillPanics(t *testing.T) {
	before, err := MemoryStats(CPU)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { recover() }()
		FromFunc(CPU, func([]float32) error { panic("fill") }, 64, 1024)
	}()
	if after, _ := MemoryStats(CPU); after.Allocated > before.Allocated { // less is no leak: a collected tensor's cleanup
		t.Errorf("a fill that panicked left %d bytes allocated (%d before)", after.Allocated, before.Allocated)
	}

	x := FromSlice(CPU, []float32{1, 2, 3, 4, 5, 6}, 3, 2)
	defer x.Release()
	row := x.Narrow(0, 1, 1)
	defer row.Release()
	if err := WithData(row, func(d []float32) error {
		if len(d) != 2 || cap(d) != 2 {
			t.Errorf("a row lent as len %d, cap %d", len(d), cap(d))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestHalfBitsFunc: the 16-bit floats are lent and filled as their bits,
// in place on the cpu, a NaN's payload untouched; another dtype is an
// ErrDType; on wgpu:0 both go through copies with the same bits.
func TestHalfBitsFunc(t *testing.T) {
	bits := []uint16{0x3c00, 0x7e01, 0xfc00, 0x0001, 0x8000, 0x4248} // 1, a NaN with a payload, -Inf, a subnormal, -0, 3.14
	for _, dev := range []Device{CPU, WGPU(0)} {
		for _, dt := range []DType{Float16, BFloat16} {
			var filled *uint16
			x := FromHalfBitsFunc(dev, dt, func(b []uint16) error {
				filled = &b[0]
				copy(b, bits)
				return nil
			}, 2, 3)
			if err := x.Err(); errors.Is(err, ErrUnavailable) {
				testenv.SkipDevice(t, dev.String(), "%v does not open: %v", dev, err)
				continue
			}
			var lent *uint16
			var got []uint16
			if err := WithHalfBits(x, func(b []uint16) error { lent, got = &b[0], slices.Clone(b); return nil }); err != nil {
				t.Fatal(err)
			}
			if want, _ := x.HalfBits(); !slices.Equal(got, bits) || !slices.Equal(want, bits) || !slices.Equal(x.Shape(), []int{2, 3}) {
				t.Errorf("%v %v: lent %x, HalfBits %x, shape %v; want %x", dev, dt, got, want, x.Shape(), bits)
			}
			if (dev == CPU) != (lent == filled) {
				t.Errorf("%v %v: lent at %p, filled at %p", dev, dt, lent, filled)
			}
			x.Release()
		}
	}
	s := FromHalfBitsFunc(CPU, BFloat16, func(b []uint16) error { b[0] = 0x4040; return nil })
	defer s.Release()
	if v, err := s.Item(); err != nil || s.Rank() != 0 || v != 3 {
		t.Errorf("0-d: rank %d, %v, %v", s.Rank(), v, err)
	}
	f := Ones(CPU, Float32, 2)
	defer f.Release()
	if err := WithHalfBits(f, func([]uint16) error { return nil }); !errors.Is(err, ErrDType) {
		t.Errorf("float32: %v", err)
	}
	if err := FromHalfBitsFunc(CPU, Float32, func([]uint16) error { return nil }, 2).Err(); !errors.Is(err, ErrDType) {
		t.Errorf("float32: %v", err)
	}
	if err := WithHalfBits(s, nil); !errors.Is(err, ErrValue) {
		t.Errorf("nil f: %v", err)
	}
}
