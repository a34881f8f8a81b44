package nn_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
	"github.com/lathe-ml/lathe/nn"
)

// Concurrency (DESIGN.md, Tests): goroutines that share read-only tensors
// and each train a model of their own; run it under the race detector
// (go test -race -run TestConcurrentTraining ./nn/). Backward into shared
// leaves is autodiff/concurrent_test.go's.

// eachDevice runs f on the cpu, cuda:0 and wgpu:0, skipping a GPU by name
// where it does not open (failing where LATHE_REQUIRE_DEVICES names it).
func eachDevice(t *testing.T, f func(t *testing.T, dev lathe.Device)) {
	for _, dev := range []lathe.Device{lathe.CPU, lathe.CUDA(0), lathe.WGPU(0)} {
		t.Run(dev.String(), func(t *testing.T) {
			testenv.SkipParentRuns(t, dev.String())
			for _, info := range lathe.DeviceStatus() {
				if info.Device == dev && !info.Available {
					testenv.SkipDevice(t, dev.String(), "%s is unavailable: %s", dev, info.Detail)
				}
			}
			f(t, dev)
		})
	}
}

// worker is one goroutine's model and optimizer.
type worker struct {
	model *nn.Seq
	opt   *nn.SGD
}

// newWorker makes the same model every time (the seed is reset), so that
// workers that train on the same data must end with the same weights.
func newWorker(t *testing.T, dev lathe.Device) worker {
	lathe.Seed(7)
	m := nn.Sequential(nn.NewLinear(8, 16, nn.OnDevice(dev)), nn.ReLU{}, nn.NewLinear(16, 3, nn.OnDevice(dev)))
	opt, err := nn.NewSGD(m.Parameters(), 0.1, nn.Momentum(0.9))
	if err != nil {
		t.Fatal(err)
	}
	return worker{m, opt}
}

// train runs steps of SGD on features of the shared x (through the shared,
// frozen f) and returns the losses and the final weights. Every other
// step's intermediates are released, the rest left to the collector, so
// that releases and cleanups run beside the other goroutines' reads.
func (w worker) train(x, y, f *lathe.Tensor, steps int) (losses []float32, weights []float32, err error) {
	for step := range steps {
		w.opt.ZeroGrad()
		feat := x.MatMul(f).Tanh()
		view := x.Narrow(0, step%4, 4).MT() // a view of shared storage, released below
		logits := w.model.Forward(feat)
		loss := nn.CrossEntropy(logits, y)
		if err := loss.Backward(); err != nil {
			return nil, nil, err
		}
		if err := w.opt.Step(); err != nil {
			return nil, nil, err
		}
		l, err := loss.Float32s()
		if err != nil {
			return nil, nil, err
		}
		if err := view.Sum().Err(); err != nil {
			return nil, nil, err
		}
		losses = append(losses, l[0])
		view.Release()
		if step%2 == 0 {
			for _, t := range []*lathe.Tensor{feat, logits, loss} {
				t.Release()
			}
		}
	}
	for _, p := range w.model.Parameters() {
		v, err := p.T.Float32s()
		if err != nil {
			return nil, nil, err
		}
		weights = append(weights, v...)
	}
	return losses, weights, nil
}

// TestConcurrentTraining: 16 goroutines per device train models of their
// own on one shared batch and one shared frozen layer. Each must learn
// (its loss falls), all must end with the weights of the same training run
// alone (no goroutine's work leaks into another's), and the shared tensors
// must hold their values.
func TestConcurrentTraining(t *testing.T) {
	eachDevice(t, func(t *testing.T, dev lathe.Device) {
		const goroutines, steps = 16, 20
		lathe.Seed(3)
		x := lathe.RandN(lathe.CPU, lathe.Float32, 12, 8).To(dev)
		f := lathe.RandN(lathe.CPU, lathe.Float32, 8, 8).To(dev)
		labels := make([]int32, 12)
		for i := range labels {
			labels[i] = int32(i % 3)
		}
		y := lathe.FromSlice(lathe.CPU, labels).To(dev)
		xBefore, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}

		alone := newWorker(t, dev)
		wantLoss, wantWeights, err := alone.train(x, y, f, steps)
		if err != nil {
			t.Fatal(err)
		}
		if wantLoss[steps-1] >= wantLoss[0] {
			t.Fatalf("training alone does not learn: losses %v", wantLoss)
		}

		workers := make([]worker, goroutines)
		for i := range workers {
			workers[i] = newWorker(t, dev)
		}
		var wg sync.WaitGroup
		errs := make([]error, goroutines)
		losses := make([][]float32, goroutines)
		weights := make([][]float32, goroutines)
		for i, w := range workers {
			wg.Go(func() { losses[i], weights[i], errs[i] = w.train(x, y, f, steps) })
		}
		// Meanwhile, read the shared tensors from here too.
		for range steps {
			if v, err := x.Add(x).Float32s(); err != nil || v[0] != 2*xBefore[0] {
				t.Errorf("x + x while the workers train: %v, %v", v, err)
				break
			}
		}
		wg.Wait()
		for i := range workers {
			switch {
			case errs[i] != nil:
				t.Errorf("goroutine %d: %v", i, errs[i])
			case !slices.Equal(losses[i], wantLoss):
				t.Errorf("goroutine %d: losses %v, want those of training alone %v", i, losses[i], wantLoss)
			case !slices.Equal(weights[i], wantWeights):
				t.Errorf("goroutine %d: its final weights differ from training alone", i)
			}
		}
		if after, err := x.Float32s(); err != nil || !slices.Equal(after, xBefore) {
			t.Errorf("the shared x changed: %v, %v", after, err)
		}
	})
}
