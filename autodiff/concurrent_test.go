package autodiff_test

import (
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe"
)

// eachDevice runs f on the cpu and on wgpu:0, skipping wgpu:0 by name where
// it does not open.
func eachDevice(t *testing.T, f func(t *testing.T, dev lathe.Device)) {
	for _, dev := range []lathe.Device{lathe.CPU, lathe.WGPU(0)} {
		t.Run(dev.String(), func(t *testing.T) {
			for _, info := range lathe.DeviceStatus() {
				if info.Device == dev && !info.Available {
					t.Skipf("%s is unavailable: %s", dev, info.Detail)
				}
			}
			f(t, dev)
		})
	}
}

// classifier is one worker's data for X·P → cross-entropy with a shared P.
type classifier struct{ x, y *lathe.Tensor }

func classifiers(dev lathe.Device, n, batch, in, classes int) []classifier {
	out := make([]classifier, n)
	for i := range out {
		labels := make([]int32, batch)
		for j := range labels {
			labels[j] = int32((i + j) % classes)
		}
		out[i] = classifier{lathe.RandN(dev, lathe.Float32, batch, in), lathe.FromSlice(dev, labels, batch)}
	}
	return out
}

func (c classifier) loss(p *lathe.Tensor) *lathe.Tensor { return c.x.MatMul(p).CrossEntropy(c.y) }

// floats reads a float32 tensor as float64s.
func floats(t *testing.T, x *lathe.Tensor) []float64 {
	t.Helper()
	if x == nil {
		t.Fatal("no gradient")
	}
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(v))
	for i := range v {
		out[i] = float64(v[i])
	}
	return out
}

// near fails unless got is want within float32 rounding of a sum of a few
// dozen terms.
func near(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s has %d elements, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-5+1e-4*math.Abs(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v (all: %v, want %v)", what, i, got[i], want[i], got, want)
		}
	}
}

// TestConcurrentBackwardSharedLeaf runs 16 goroutines, each training on
// its own batch against one shared parameter P (issue 15, defect 7): every
// pass's gradient must land in P.Grad, none lost to another's accumulation,
// so the result is the sum of the single-threaded gradients. Run it with
// -race: the accumulation into P, and RequireGrad on the shared P, must
// not race.
func TestConcurrentBackwardSharedLeaf(t *testing.T) {
	eachDevice(t, func(t *testing.T, dev lathe.Device) {
		const workers, rounds = 16, 3
		lathe.Seed(7)
		p := lathe.RandN(dev, lathe.Float32, 6, 4).RequireGrad()
		data := classifiers(dev, workers, 8, 6, 4)
		want := make([]float64, 6*4)
		for _, c := range data {
			g, err := lathe.Grad(c.loss(p), []*lathe.Tensor{p})
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range floats(t, g[0]) {
				want[i] += rounds * v
			}
		}
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for i, c := range data {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					if err := c.loss(p.RequireGrad()).Backward(); err != nil {
						errs[i] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("worker %d: %v", i, err)
			}
		}
		near(t, "P.Grad", floats(t, p.Grad()), want)
	})
}

// TestConcurrentBackwardOneGraph runs many backward passes through one
// graph at once. Passes that all retain the graph each add their gradient;
// of passes that free it, exactly one runs and the others are refused with
// ErrGrad, as a second pass through a freed graph is, instead of racing
// with the one that frees it.
func TestConcurrentBackwardOneGraph(t *testing.T) {
	eachDevice(t, func(t *testing.T, dev lathe.Device) {
		const workers = 16
		lathe.Seed(8)
		p := lathe.RandN(dev, lathe.Float32, 6, 4).RequireGrad()
		c := classifiers(dev, 1, 8, 6, 4)[0]
		loss := c.loss(p)
		g, err := lathe.Grad(loss, []*lathe.Tensor{p}, lathe.RetainGraph())
		if err != nil {
			t.Fatal(err)
		}
		single := floats(t, g[0])
		times := func(k int) []float64 {
			out := make([]float64, len(single))
			for i, v := range single {
				out[i] = float64(k) * v
			}
			return out
		}
		passes := func(retain func(i int) bool) (ok int) {
			errs := make([]error, workers)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if retain(i) {
						errs[i] = loss.Backward(lathe.RetainGraph())
					} else {
						errs[i] = loss.Backward()
					}
				}()
			}
			wg.Wait()
			for i, err := range errs {
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, lathe.ErrGrad):
					t.Fatalf("pass %d: %v, want success or ErrGrad", i, err)
				}
			}
			return ok
		}

		if ok := passes(func(int) bool { return true }); ok != workers {
			t.Fatalf("%d of %d retaining passes succeeded", ok, workers)
		}
		near(t, "P.Grad after retaining passes", floats(t, p.Grad()), times(workers))

		p.ZeroGrad()
		ok := passes(func(i int) bool { return i%2 == 0 })
		if ok == 0 {
			t.Fatal("no pass of a mixed set succeeded")
		}
		near(t, "P.Grad after mixed passes", floats(t, p.Grad()), times(ok))

		p.ZeroGrad()
		loss = c.loss(p)
		if ok := passes(func(int) bool { return false }); ok != 1 {
			t.Fatalf("%d passes freeing one graph succeeded, want 1", ok)
		}
		near(t, "P.Grad after freeing passes", floats(t, p.Grad()), single)
	})
}

// TestSharedLeafFromManyGoroutines calls RequireGrad, OnGrad, SetGrad,
// ZeroGrad, Grad and Backward on one shared leaf from many goroutines:
// under -race, none of them may race with another.
func TestSharedLeafFromManyGoroutines(t *testing.T) {
	eachDevice(t, func(t *testing.T, dev lathe.Device) {
		const workers, rounds = 16, 4
		lathe.Seed(9)
		p := lathe.RandN(dev, lathe.Float32, 6, 4).RequireGrad()
		data := classifiers(dev, workers, 8, 6, 4)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for i, c := range data {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.RequireGrad()
				p.OnGrad(func(g *lathe.Tensor) *lathe.Tensor { return nil })
				for r := range rounds {
					switch (i + r) % 3 {
					case 0:
						errs[i] = p.SetGrad(lathe.Zeros(dev, lathe.Float32, 6, 4))
					case 1:
						p.ZeroGrad()
					}
					_ = p.Grad()
					if err := c.loss(p).Backward(); err != nil {
						errs[i] = err
					}
					if errs[i] != nil {
						return
					}
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("worker %d: %v", i, err)
			}
		}
		if p.Grad() == nil {
			t.Fatal("no gradient after the last pass")
		}
	})
}

// TestMarkWhileShared marks a tensor as a leaf while other goroutines run
// ops on it: under -race the flag they read may not race with the mark.
func TestMarkWhileShared(t *testing.T) {
	x := lathe.Ones(lathe.CPU, lathe.Float32, 4)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if err := x.MulScalar(2).Err(); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	x.RequireGrad()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	if !x.RequiresGrad() {
		t.Fatal("x is not marked")
	}
}
