package cuda

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// TestUnavailable runs where no GPU is (CI, development machines): cuda:0
// must be unavailable with a reason that says what is missing, and every
// entry point must return that error, not crash.
func TestUnavailable(t *testing.T) {
	b, err := dispatch.BackendFor(kind)
	if err != nil {
		t.Fatal(err)
	}
	dev := dispatch.Device{Kind: kind}
	if b.Open(0) == nil {
		t.Skipf("cuda:0 opened (%s): this test is for machines without a GPU", b.Describe(0))
	}
	err = b.Open(0)
	if !errors.Is(err, dispatch.ErrUnavailable) {
		t.Fatalf("Open(0): %v, want ErrUnavailable", err)
	}
	want := "libcuda.so.1"
	if !cgoEnabled {
		want = "CGO_ENABLED=0"
	} else if _, statErr := os.Stat("/dev/nvidiactl"); statErr == nil {
		want = "cuda:0" // a driver without a usable device gives its own reason
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("Open(0): %q does not name %s", err, want)
	}
	t.Logf("cuda:0: %v", err)
	if b.Count() != 0 {
		t.Errorf("Count() = %d with no usable driver", b.Count())
	}
	if _, err := b.Alloc(dev, dispatch.Float32, 4); !errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("Alloc: %v", err)
	}
	if _, err := b.Upload(dev, []float32{1}); !errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("Upload: %v", err)
	}
	if err := b.Sync(dev); !errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("Sync: %v", err)
	}
	if err := launch(dev, "matmul", "matmul_tiled_f32", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0); !errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("launch: %v", err)
	}
	if _, _, err := scratch(dev, 64); !errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("scratch: %v", err)
	}
	if err := emptyCacheOn(dev); !errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("EmptyCache: %v", err)
	}
	if _, err := memoryStatsOn(dev); !errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("MemoryStats: %v", err)
	}
	if _, err := dispatch.Empty(dev, dispatch.Float32, []int{2}); !errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("dispatch.Empty: %v", err)
	}
}
