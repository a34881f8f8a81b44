//go:build cgo

package cuda

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestRealDevice runs where cuda:0 opens (make gpu-check on a lent GPU):
// the host side against the real driver and cuBLAS.
func TestRealDevice(t *testing.T) {
	dev := dispatch.Device{Kind: kind}
	if err := cudaBackend.Open(0); err != nil {
		testenv.SkipDevice(t, "cuda:0", "cuda:0 is unavailable: %v", err)
	}
	t.Logf("cuda:0: %s", cudaBackend.Describe(0))
	// LATHE_CUDA_LIB may name the stand-in (testdata/fakecuda.c), which
	// runs no kernel of the real PTX, unless it runs them on the host
	// emulation (LATHE_FAKE_CUDA_EMU, TestEmulatedCUDA): the checks then
	// expect what it does.
	realDevice = d0(t).name != "Fake GPU"
	realKernels = realDevice || os.Getenv("LATHE_FAKE_CUDA_EMU") != ""
	t.Cleanup(func() { realDevice, realKernels = false, false })
	t.Run("copies", func(t *testing.T) { fakeCopies(t, dev) })
	t.Run("matmul", func(t *testing.T) { checkMatmul(t, dev) })
	t.Run("narrow dtypes", func(t *testing.T) { fakeNarrow(t, dev) })
	t.Run("half matmul", func(t *testing.T) { fakeHalfMatmul(t, dev) })
	t.Run("wide matmul", func(t *testing.T) { fakeWideMatmul(t, dev) })
	t.Run("conv products", func(t *testing.T) { fakeConvProducts(t, dev) })
	t.Run("out of memory", func(t *testing.T) {
		_, err := cudaBackend.Alloc(dev, dispatch.Float32, 1<<48) // 1 PiB
		if !errors.Is(err, dispatch.ErrOutOfMemory) || !strings.Contains(err.Error(), "out of memory: asked for") {
			t.Fatalf("1 PiB: %v", err)
		}
		// More than the device's total is refused before any driver call
		// (alloc's grow, step 1), so OOMRetries stays as it was.
		t.Logf("%v", err)
	})
	t.Run("reuse", func(t *testing.T) {
		a, _ := cudaBackend.Alloc(dev, dispatch.Float32, 3<<20)
		p := a.(*buffer).ptr()
		a.Free()
		b, _ := cudaBackend.Alloc(dev, dispatch.Float32, 3<<20)
		if b.(*buffer).ptr() != p {
			t.Errorf("a freed 12 MiB block was not reused")
		}
		b.Free()
		if err := emptyCacheOn(dev); err != nil {
			t.Fatal(err)
		}
		if err := cudaBackend.Sync(dev); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("upload after free", func(t *testing.T) {
		// A block freed while a copy into it is queued is reused by the
		// next upload; the stream orders them, so each reads its own data.
		for i := range 50 {
			x := upload(t, dev, []int32{int32(i), int32(i) + 1}, dispatch.Int32, 2)
			if got := read[int32](t, x); !slices.Equal(got, []int32{int32(i), int32(i) + 1}) {
				t.Fatalf("round %d: %v", i, got)
			}
			x.Release()
		}
	})
}
