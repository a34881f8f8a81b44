//go:build cgo

package cuda

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
)

// fakeNarrow runs the narrow dtypes through the backend's own host code,
// against the stand-in driver (whose convert_* kernels round with the C
// compiler's _Float16) or a real device: storage of every narrow dtype,
// a float16 matmul (cuBLAS's GemmEx on the 16-bit storage; fakeHalfMatmul
// has the other paths), bit for bit the cpu's (also from 8 goroutines at
// once), an int8 value check, and every temporary back in the pool.
func fakeNarrow(t *testing.T, dev dispatch.Device) {
	// The device's value-check slots are allocated at its first check and
	// kept for its life: a passing int32 check first, so that they are in
	// before's figure (on a real device this subtest may be the first to
	// check values).
	ok := upload(t, dev, []int32{2, 0}, dispatch.Int32, 2)
	c := ops.Pow.Checks([]*dispatch.Tensor{ok, ok}, dispatch.None{})[0]
	c.Op = ops.Pow.Name
	if err := cudaBackend.CheckValues(ok, &c); err != nil {
		t.Fatalf("CheckValues of int32: %v", err)
	}
	if err := cudaBackend.Sync(dev); err != nil {
		t.Fatalf("Sync after a passing int32 check: %v", err)
	}
	ok.Release()

	before, err := cudaBackend.MemoryStats(dev)
	if err != nil {
		t.Fatal(err)
	}

	h := []half.Float16{0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x7c00}
	bf := []half.BFloat16{0x3f80, 0xff80, 0x0001}
	i8 := []int8{-128, -1, 0, 127}
	u8 := []uint8{0, 1, 128, 255}
	xh, xb, x8 := upload(t, dev, h, dispatch.Float16, 6), upload(t, dev, bf, dispatch.BFloat16, 3), upload(t, dev, i8, dispatch.Int8, 4)
	if got := read[half.Float16](t, xh); !slices.Equal(got, h) {
		t.Errorf("float16s came back as %#04x", got)
	}
	if got := read[half.BFloat16](t, xb); !slices.Equal(got, bf) {
		t.Errorf("bfloat16s came back as %#04x", got)
	}
	if got := read[int8](t, x8); !slices.Equal(got, i8) {
		t.Errorf("int8s came back as %v", got)
	}
	xu := upload(t, dev, u8, dispatch.Uint8, 4)
	if got, err := cudaBackend.Read(dev, xu.Storage.Buffer, dispatch.Uint8, 1, 3); err != nil || !slices.Equal(got.([]uint8), u8[1:]) {
		t.Errorf("uint8s read from offset 1: %v %v", got, err)
	}
	for _, x := range []*dispatch.Tensor{xh, xb, x8, xu} {
		x.Release()
	}

	// [2, 3] × [3, 2] in float16, the rhs transposed: small integers and
	// halves, whose products and sums float32 holds exactly, and a sum
	// (2048 + 1) that float16 rounds to even (2048).
	a := []half.Float16{f16(1), f16(-2), f16(0.5), f16(2048), f16(1), f16(0)}
	b := []half.Float16{f16(1), f16(1), f16(-1), f16(0.25), f16(1), f16(4)} // [2, 3] storage of b's transpose
	want, err := matmulOn(dispatch.Device{Kind: dispatch.Host}, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := matmulOn(dev, a, b); err != nil || !slices.Equal(got, want) {
		t.Fatalf("float16 matmul = %#04x (%v), the cpu's %#04x", got, err, want)
	}
	if want[2] != f16(2048) {
		t.Errorf("the cpu's 2048 + 1 in float16 is %#04x, want 2048 (ties to even)", want[2])
	}
	// The same from many goroutines: each call's temporaries are its own.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got, err := matmulOn(dev, a, b); err != nil || !slices.Equal(got, want) {
					t.Errorf("float16 matmul from a goroutine = %#04x (%v), the cpu's %#04x", got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()

	// An int8 exponent's value check runs on the exponents widened to
	// int32, and names the bad value.
	e := upload(t, dev, []int8{2, 0, -3, 1}, dispatch.Int8, 4)
	c = ops.Pow.Checks([]*dispatch.Tensor{e, e}, dispatch.None{})[0]
	c.Op = ops.Pow.Name
	if err := cudaBackend.CheckValues(e, &c); err != nil {
		t.Fatalf("CheckValues of int8: %v", err)
	}
	if err := cudaBackend.Sync(dev); err == nil || !strings.Contains(err.Error(), "pow: argument \"rhs\" has a negative exponent") {
		t.Errorf("Sync after an int8 pow check with -3: %v", err)
	}
	e.Release()

	after, err := cudaBackend.MemoryStats(dev)
	if err != nil {
		t.Fatal(err)
	}
	// Less is no leak: an earlier subtest's tensor, left to the collector,
	// may be released by its cleanup meanwhile (a CI run met 93184 bytes
	// before and 65536 after).
	if after.Allocated > before.Allocated {
		t.Errorf("%d bytes allocated before, %d after: a wide temporary was kept", before.Allocated, after.Allocated)
	}
}

func f16(v float32) half.Float16 { return half.Float16(half.Float16FromFloat32(v)) }

// matmulOn is a [2, 3] × (b's [2, 3] storage transposed) in float16 on
// dev, read back. It returns its error rather than failing the test, as
// goroutines call it.
func matmulOn(dev dispatch.Device, a, b []half.Float16) ([]half.Float16, error) {
	x, err := dispatch.Upload(dev, slices.Clone(a), dispatch.Float16, []int{2, 3})
	if err != nil {
		return nil, err
	}
	defer x.Release()
	ys, err := dispatch.Upload(dev, slices.Clone(b), dispatch.Float16, []int{2, 3})
	if err != nil {
		return nil, err
	}
	defer ys.Release()
	y := ys.View([]int{3, 2}, []int{1, 3}, 0)
	defer y.Release()
	out, err := dispatch.Call(ops.MatMul, dispatch.None{}, x, y)
	if err != nil {
		return nil, fmt.Errorf("matmul on %s: %w", dev, err)
	}
	defer out.Release()
	got, err := dispatch.ReadHost(out)
	if err != nil {
		return nil, err
	}
	return got.([]half.Float16), nil
}

// fakeHalfMatmul runs float16 and bfloat16 products of every layout
// through dispatch: those whose operands cuBLAS reads go to
// cublasGemmStridedBatchedEx on their own storage (one call per outer
// batch index, no conversion launched), the others, and every product
// where cuBLAS lacks the Ex entry point, through float32 temporaries; each
// result bit for bit the cpu's. The values are small multiples of 1/4,
// whose products and sums float32 holds exactly, so that every correct
// path rounds the same exact sum once.
func fakeHalfMatmul(t *testing.T, dev dispatch.Device) {
	d := d0(t)
	if d.blas == nil {
		t.Skip("no cuBLAS")
	}
	type view struct {
		shape, strides []int
		offset         int
	}
	cases := []struct {
		name        string
		sizeA       int
		va          view
		sizeB       int
		vb          view
		gemms       int // cuBLAS calls in place; 0: the PTX kernel
		roundsTwice bool
	}{
		{"batched row-major", 24, view{[]int{2, 3, 4}, []int{12, 4, 1}, 0}, 20, view{[]int{4, 5}, []int{5, 1}, 0}, 1, false},
		{"batched both", 24, view{[]int{2, 3, 4}, []int{12, 4, 1}, 0}, 40, view{[]int{2, 4, 5}, []int{20, 5, 1}, 0}, 1, false},
		{"rhs transposed", 24, view{[]int{2, 3, 4}, []int{12, 4, 1}, 0}, 20, view{[]int{4, 5}, []int{1, 4}, 0}, 1, false},
		{"lhs transposed, offset", 13, view{[]int{3, 4}, []int{1, 3}, 1}, 20, view{[]int{4, 5}, []int{5, 1}, 0}, 1, false},
		{"leading dims past the row, offsets", 40, view{[]int{3, 4}, []int{7, 1}, 3}, 50, view{[]int{4, 5}, []int{9, 1}, 5}, 1, false},
		{"batch strides past the matrix", 60, view{[]int{2, 3, 4}, []int{30, 4, 1}, 0}, 20, view{[]int{4, 5}, []int{5, 1}, 0}, 1, false},
		{"cross broadcast", 24, view{[]int{2, 1, 3, 4}, []int{12, 12, 4, 1}, 0}, 60, view{[]int{1, 3, 4, 5}, []int{60, 20, 5, 1}, 0}, 2, false},
		{"1-d lhs", 4, view{[]int{4}, []int{1}, 0}, 20, view{[]int{4, 5}, []int{5, 1}, 0}, 1, false},
		{"1-d rhs", 12, view{[]int{3, 4}, []int{4, 1}, 0}, 8, view{[]int{4}, []int{2}, 0}, 1, false},
		// [big, 1, 1, 0]·[1, 1, 1, 1] with big 2048 in float16, 256 in
		// bfloat16: big + 2 exactly, which the dtype holds; a split-K sum
		// rounded to the dtype per half of k gives big + 1 → big first
		// (the stand-in does that unless the math mode forbids it).
		{"one rounding", 4, view{[]int{1, 4}, []int{4, 1}, 0}, 4, view{[]int{4, 1}, []int{1, 1}, 0}, 1, true},
		{"every other column: the PTX kernel", 24, view{[]int{3, 4}, []int{8, 2}, 0}, 20, view{[]int{4, 5}, []int{5, 1}, 0}, 0, false},
	}
	seq := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(i%7-3) + float32(i%4)/4
		}
		return s
	}
	defer func(ex bool) { d.blas.ex = ex }(d.blas.ex)
	d.blas.ex = false
	if desc := cudaBackend.Describe(dev.Index); !strings.Contains(desc, "float16 and bfloat16 through float32") {
		t.Errorf("Describe without the Ex entry point: %q does not say so", desc)
	}
	for _, c := range cases {
		for _, dt := range []dispatch.DType{dispatch.Float16, dispatch.BFloat16} {
			for _, ex := range []bool{true, false} {
				name := fmt.Sprintf("%s/%s/gemmEx=%v", c.name, dt, ex)
				t.Run(name, func(t *testing.T) {
					d.blas.ex = ex
					ha, hb := seq(c.sizeA), seq(c.sizeB)
					big, exact := float32(2048), half.Float16FromFloat32(2050)
					if dt == dispatch.BFloat16 {
						big, exact = 256, half.BFloat16FromFloat32(258)
					}
					if c.roundsTwice {
						ha, hb = []float32{big, 1, 1, 0}, []float32{1, 1, 1, 1}
					}
					var op string // the last launch on dev, and their count
					var n int64
					on := func(dev dispatch.Device) ([]uint16, error) {
						a, err := uploadHalves(dev, ha, dt)
						if err != nil {
							return nil, err
						}
						defer a.Release()
						b, err := uploadHalves(dev, hb, dt)
						if err != nil {
							return nil, err
						}
						defer b.Release()
						va, vb := a.View(c.va.shape, c.va.strides, c.va.offset), b.View(c.vb.shape, c.vb.strides, c.vb.offset)
						defer va.Release()
						defer vb.Release()
						if dev.Kind == kind { // launches counts from the last sync
							if err := cudaBackend.Sync(dev); err != nil {
								return nil, err
							}
						}
						out, err := dispatch.Call(ops.MatMul, dispatch.None{}, va, vb)
						if err != nil {
							return nil, err
						}
						if dev.Kind == kind {
							op, n = *d.lastOp.Load(), d.launches.Load()
						}
						defer out.Release()
						got, err := dispatch.ReadHost(out)
						if err != nil {
							return nil, err
						}
						return halfBits(got), nil
					}
					want, err := on(dispatch.Device{Kind: dispatch.Host})
					if err != nil {
						t.Fatal(err)
					}
					got, err := on(dev)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Errorf("%#04x, the cpu's %#04x", got, want)
					}
					if c.roundsTwice && want[0] != exact {
						t.Errorf("the cpu's %v+1+1+0 is %#04x, want %#04x", big, want[0], exact)
					}
					if ex && c.gemms > 0 {
						if op != "cublasGemmStridedBatchedEx" || n != int64(c.gemms) {
							t.Errorf("%d launches, the last %s; want %d cublasGemmStridedBatchedEx and no conversion", n, op, c.gemms)
						}
					} else if op != "narrow.convert_f32_"+suffix(dt) || n < 4 {
						t.Errorf("%d launches, the last %s; want conversions around the float32 product", n, op)
					}
				})
			}
		}
	}
}

// uploadHalves uploads vs rounded to dt, a 16-bit float.
func uploadHalves(dev dispatch.Device, vs []float32, dt dispatch.DType) (*dispatch.Tensor, error) {
	if dt == dispatch.Float16 {
		h := make([]half.Float16, len(vs))
		for i, v := range vs {
			h[i] = half.Float16(half.Float16FromFloat32(v))
		}
		return dispatch.Upload(dev, h, dt, []int{len(vs)})
	}
	h := make([]half.BFloat16, len(vs))
	for i, v := range vs {
		h[i] = half.BFloat16(half.BFloat16FromFloat32(v))
	}
	return dispatch.Upload(dev, h, dt, []int{len(vs)})
}

// halfBits are the bits of a []half.Float16 or []half.BFloat16.
func halfBits(v any) []uint16 {
	var out []uint16
	switch s := v.(type) {
	case []half.Float16:
		for _, h := range s {
			out = append(out, uint16(h))
		}
	case []half.BFloat16:
		for _, h := range s {
			out = append(out, uint16(h))
		}
	}
	return out
}
