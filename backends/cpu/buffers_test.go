package cpu

import (
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

func TestPoolReusesReleasedBuffers(t *testing.T) {
	emptyCache()
	a := dispatch.NewTensor(cpu0, dispatch.Float32, []int{1000}, newBuffer(dispatch.Float32, 1000))
	data := elems[float32](a)
	for i := range data {
		data[i] = 7
	}
	view := a.View([]int{10, 100}, []int{100, 1}, 0)
	a.Release()
	if cached, _, _ := CacheStats(); cached != 0 {
		t.Fatalf("a buffer with a live view went to the pool (%d bytes cached)", cached)
	}
	view.Release()
	if cached, _, _ := CacheStats(); cached != 1008*4 {
		t.Fatalf("cached %d bytes after the last release, want %d (1000 rounded up to its class)", cached, 1008*4)
	}
	_, hits, _ := CacheStats()
	b := dispatch.NewTensor(cpu0, dispatch.Float32, []int{1001}, newBuffer(dispatch.Float32, 1001))
	got := elems[float32](b)
	if _, h, _ := CacheStats(); h != hits+1 || &got[0] != &data[0] {
		t.Fatal("a buffer of the same class was not reused")
	}
	if len(got) != 1001 {
		t.Fatalf("reused buffer has %d elements, want 1001", len(got))
	}
	for i, v := range got {
		if v != 0 {
			t.Fatalf("reused buffer not zeroed: [%d] = %v", i, v)
		}
	}
	b.Release()
	emptyCache()
	if cached, _, _ := CacheStats(); cached != 0 {
		t.Fatalf("EmptyCache left %d bytes", cached)
	}
}

func TestPoolNeverTakesUploadedSlices(t *testing.T) {
	emptyCache()
	host := []float64{1, 2, 3}
	buf, err := backend{}.Upload(cpu0, host)
	if err != nil {
		t.Fatal(err)
	}
	dispatch.NewTensor(cpu0, dispatch.Float64, []int{3}, buf).Release()
	if cached, _, _ := CacheStats(); cached != 0 {
		t.Fatalf("a caller's slice went to the pool (%d bytes cached)", cached)
	}
}

func TestPoolLimit(t *testing.T) {
	emptyCache()
	defer cacheLimit.Store(defaultCacheLimit)
	cacheLimit.Store(1 << 12)
	small := dispatch.NewTensor(cpu0, dispatch.Int64, []int{256}, newBuffer(dispatch.Int64, 256)) // 2 KiB
	big := dispatch.NewTensor(cpu0, dispatch.Int64, []int{1024}, newBuffer(dispatch.Int64, 1024)) // 8 KiB
	small.Release()
	big.Release()
	if cached, _, _ := CacheStats(); cached != 2048 {
		t.Fatalf("cached %d bytes with a 4 KiB limit, want only the 2 KiB buffer", cached)
	}
	emptyCache()
}

func TestSizeClass(t *testing.T) {
	for _, c := range [][2]int{{0, 16}, {1, 16}, {16, 16}, {17, 32}, {1000, 1008}, {32768, 32768}} {
		if got := sizeClass(c[0]); got != c[1] {
			t.Errorf("sizeClass(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}
