package wgpu_test

import (
	"runtime"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestTrainingStepReusesBuffers: once a training step has run, the steps
// after it take every buffer from wgpu:0's pool and make no new Dawn
// buffer. The forward activations that nobody releases go back when the
// garbage collector finds their handles, so each step ends with a
// collection, as a long-running program's steps would.
func TestTrainingStepReusesBuffers(t *testing.T) {
	dev := lathe.WGPU(0)
	lathe.Seed(1)
	model := nn.Sequential(nn.NewLinear(64, 32), nn.ReLU{}, nn.NewLinear(32, 10))
	if err := model.To(dev); err != nil {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
	opt, err := nn.NewSGD(model.Parameters(), 0.01)
	if err != nil {
		t.Fatal(err)
	}
	classes := make([]int32, 16)
	for i := range classes {
		classes[i] = int32(i % 10)
	}
	x := lathe.RandN(lathe.CPU, lathe.Float32, 16, 64).To(dev)
	y := lathe.FromSlice(dev, classes, 16)
	step := func() {
		loss := nn.CrossEntropy(model.Forward(x), y)
		opt.ZeroGrad()
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		if _, err := loss.Item(); err != nil {
			t.Fatal(err)
		}
		loss.Release()
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
	}
	for range 3 {
		step()
	}
	stats := func() lathe.MemStats {
		s, err := lathe.MemoryStats(dev)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := stats()
	for range 10 {
		step()
	}
	after := stats()
	misses := (after.Allocs - after.CacheHits) - (before.Allocs - before.CacheHits)
	t.Logf("10 steady steps: %d allocations from the pool, %d new buffers; %d bytes live, %d cached",
		after.CacheHits-before.CacheHits, misses, after.Allocated, after.Cached)
	if misses != 0 {
		t.Errorf("steady-state steps made %d new buffers; want none", misses)
	}
	if after.CacheHits == before.CacheHits {
		t.Errorf("no allocation was served from the pool")
	}
}
