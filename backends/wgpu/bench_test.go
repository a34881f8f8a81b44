package wgpu_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// BenchmarkDispatch is the cost of one small op on wgpu:0 (recorded, then
// submitted in batches), without read-back: lathe's own overhead plus
// Dawn's encoding, on whatever adapter opens (lavapipe in CI). The clock
// stops before the final Synchronize, so the device's execution is not in
// it: BenchmarkDispatchSynced is the whole cost.
func BenchmarkDispatch(b *testing.B) {
	dev := lathe.WGPU(0)
	x := lathe.FromSlice(dev, []float32{1, 2, 3, 4}, 2, 2).Transpose(0, 1)
	if err := x.Err(); err != nil {
		testenv.SkipDevice(b, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		y := x.Contiguous()
		y.Release()
	}
	if err := lathe.Synchronize(dev); err != nil {
		b.Fatal(err)
	}
}

// syncEvery is how many ops the synced benchmarks record between waits:
// about what lathe-bench's 25 ms sample holds of a 1-element add.
const syncEvery = 1024

// cpuTime is the CPU time the process has used so far, in all its threads
// (lavapipe's among them).
func cpuTime() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// BenchmarkDispatchSynced is a 1-element add on wgpu:0 with a wait for the
// device after every syncEvery adds, inside the timed region, so that a
// result is lathe's overhead, Dawn's encoding and submission, and the
// adapter's execution of the dispatch: what an op costs a program. It also
// reports the process's CPU time per op (cpu-ns/op, lavapipe's threads
// included), which a machine shared with other work disturbs less than
// the wall clock.
func BenchmarkDispatchSynced(b *testing.B) {
	dev := lathe.WGPU(0)
	x, y := lathe.Full(dev, lathe.Float32, 1, 1), lathe.Full(dev, lathe.Float32, 2, 1)
	if err := x.Err(); err != nil {
		testenv.SkipDevice(b, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
	b.ReportAllocs()
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		z := x.Add(y)
		z.Release()
		if i++; i%syncEvery == 0 {
			if err := lathe.Synchronize(dev); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := lathe.Synchronize(dev); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkMLPStepSynced is lathe-bench's "mlp step 784-256-10 b128" on
// wgpu:0: a training step (forward, cross-entropy, backward, SGD) waited
// for, so that the adapter's execution counts.
func BenchmarkMLPStepSynced(b *testing.B) {
	dev := lathe.WGPU(0)
	lathe.Seed(1)
	model := nn.Sequential(nn.NewLinear(784, 256), nn.ReLU{}, nn.NewLinear(256, 10))
	if err := model.To(dev); err != nil {
		testenv.SkipDevice(b, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
	opt, err := nn.NewSGD(model.Parameters(), 0.01)
	if err != nil {
		b.Fatal(err)
	}
	classes := make([]int32, 128)
	for i := range classes {
		classes[i] = int32(i % 10)
	}
	x, y := lathe.RandN(dev, lathe.Float32, 128, 784), lathe.FromSlice(dev, classes, 128)
	for b.Loop() {
		loss := nn.CrossEntropy(model.Forward(x), y)
		opt.ZeroGrad()
		if err := loss.Backward(); err != nil {
			b.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			b.Fatal(err)
		}
		loss.Release()
		if err := lathe.Synchronize(dev); err != nil {
			b.Fatal(err)
		}
	}
}
