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
// a float16 matmul through the wrapper's wide temporaries and cuBLAS,
// bit for bit the cpu's (also from 8 goroutines at once), an int8 value
// check, and every temporary back in the pool.
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
	if after.Allocated != before.Allocated {
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
