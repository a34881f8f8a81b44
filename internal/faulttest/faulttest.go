// Package faulttest checks a backend under injected faults, for tests only:
// a training step of a small network (forward, cross-entropy, backward, an
// SGD update) runs while an allocation fails, the device is lost or a
// kernel reports an error, and the contract of DESIGN.md must hold. The
// step fails with a *lathe.Error of the fault's kind (never a panic, never
// a silent wrong value), every buffer it took goes back
// (lathe.MemoryStats' Allocated returns to its start once the caller's
// tensors are released), and the next step works and gives the values of a
// step with no fault.
//
// The faults come from the backends' own test hooks (an export_test.go
// that wraps the pool's raw memory, or sets Dawn's report of a lost
// device), so this package names no backend; like refbackend, nothing
// outside tests imports it.
package faulttest

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
)

// Allocs is a backend hook over its pool's raw memory: the n-th raw
// allocation from now (counting from 1) fails with ErrOutOfMemory, once;
// n = 0 fails none. Count is how many raw allocations have been asked for
// since the last Fail.
type Allocs interface {
	Fail(n int)
	Count() int
}

// Collector is an Allocs whose pool leaves the blocks that the garbage
// collector reclaims counted as allocated (the cpu's), and that counts
// them itself: Collected bytes so far.
type Collector interface {
	Collected() int64
}

// model is a two-layer perceptron and a batch on one device, and the
// hook that knows what the collector took from its pool, if any.
type model struct {
	dev          lathe.Device
	x, y, w1, w2 *lathe.Tensor
	collector    Collector
}

func newModel(t *testing.T, dev lathe.Device) *model {
	t.Helper()
	lathe.Seed(15)
	m := &model{dev: dev,
		x:  lathe.RandN(lathe.CPU, lathe.Float32, 8, 4).To(dev),
		y:  lathe.FromSlice(lathe.CPU, []int32{0, 1, 2, 1, 0, 2, 2, 1}).To(dev),
		w1: lathe.RandN(lathe.CPU, lathe.Float32, 4, 16).To(dev).RequireGrad(),
		w2: lathe.RandN(lathe.CPU, lathe.Float32, 16, 3).To(dev).RequireGrad(),
	}
	for _, p := range []*lathe.Tensor{m.x, m.y, m.w1, m.w2} {
		if err := p.Err(); err != nil {
			t.Fatalf("making the model on %v: %v", dev, err)
		}
	}
	return m
}

// step runs one training step, calling between (if not nil) after the
// forward pass, and returns the loss and the updated weights, read back,
// or the first error. It releases every tensor it made, the failed ones
// included, and the leaves' gradients, so that what stays allocated
// afterwards is lathe's doing.
func (m *model) step(between func()) ([]float32, error) {
	var made []*lathe.Tensor
	keep := func(x *lathe.Tensor) *lathe.Tensor { made = append(made, x); return x }
	defer func() {
		for _, x := range made {
			x.Release()
		}
		m.w1.ZeroGrad()
		m.w2.ZeroGrad()
	}()
	h := keep(keep(m.x.MatMul(m.w1)).ReLU())
	loss := keep(keep(h.MatMul(m.w2)).CrossEntropy(m.y))
	if between != nil {
		between()
	}
	if err := loss.Backward(); err != nil {
		return nil, err
	}
	var out []float32
	var err error
	lathe.NoGrad(func() {
		l, e := loss.Float32s()
		if e != nil {
			err = e
			return
		}
		out = append(out, l...)
		for _, w := range []*lathe.Tensor{m.w1, m.w2} {
			g := w.Grad()
			u := keep(w.Sub(keep(g.MulScalar(0.1))))
			v, e := u.Float32s()
			if e != nil {
				err = e
				return
			}
			out = append(out, v...)
		}
	})
	return out, err
}

// allocated is the device's Allocated figure once the garbage collector
// has run and the cleanups it queued (which hand back the buffers of
// tensors nobody released) are done: again until the figure stays, since
// a view's cleanup may leave its storage's buffer for the next cycle.
func allocated(t *testing.T, m *model) int64 {
	t.Helper()
	last := int64(-1)
	for range 8 {
		a := collectedFigure(t, m)
		if a == last {
			return a
		}
		last = a
	}
	return last
}

func collectedFigure(t *testing.T, m *model) int64 {
	t.Helper()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/cleanups/queued:cleanups"}, {Name: "/gc/cleanups/executed:cleanups"}}
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Uint64() >= s[0].Value.Uint64() {
			break
		}
	}
	st, err := lathe.MemoryStats(m.dev)
	if err != nil {
		t.Fatalf("memory stats of %v: %v", m.dev, err)
	}
	if m.collector != nil {
		return st.Allocated - m.collector.Collected()
	}
	return st.Allocated
}

// checkStep runs a step and checks the contract: an error of kind want
// (or, where want is nil, no error and the values of ref), then no leak
// (no more left allocated than a step with no fault leaves: drift) and a
// clean step after.
func checkStep(t *testing.T, m *model, label string, ref []float32, drift int64, want error, between, heal func()) error {
	t.Helper()
	start := allocated(t, m)
	got, err := safeStep(m, between)
	if heal != nil {
		heal()
	}
	switch {
	case err != nil && want == nil:
		t.Errorf("%s: %v", label, err)
	case err != nil:
		var e *lathe.Error
		if !errors.As(err, &e) || !errors.Is(err, want) || e.Op == "" {
			t.Errorf("%s: error %v, want a *lathe.Error of kind %v naming an op", label, err, want)
		}
	case !slices.Equal(got, ref):
		// A fault that no op noticed must leave no trace in the values.
		t.Errorf("%s: no error, but the step gave %v, not %v", label, got, ref)
	}
	if a := allocated(t, m); a-start > drift {
		t.Errorf("%s: %d bytes allocated before the step, %d after it and its tensors were released (a step with no fault leaves %d)", label, start, a, drift)
	}
	after, nextErr := safeStep(m, nil)
	if nextErr != nil || !slices.Equal(after, ref) {
		t.Errorf("%s: the next step gave %v, %v; want %v", label, after, nextErr, ref)
	}
	return err
}

// safeStep is step with a panic turned into an error that says so.
func safeStep(m *model, between func()) (out []float32, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return m.step(between)
}

// reference is a step with no fault, run twice: its values, and the bytes
// it leaves allocated, the same each time. That is 0 where the pool counts
// what the garbage collector reclaims (a GPU's); the cpu's does not, so
// there the intermediates that composite ops leave to the collector stay
// counted, a known and stable figure per step.
func reference(t *testing.T, m *model) ([]float32, int64) {
	t.Helper()
	// A first step makes what a device keeps for good (wgpu's log of value
	// checks, say).
	if _, err := m.step(nil); err != nil {
		t.Fatalf("a step with no fault on %v: %v", m.dev, err)
	}
	start := allocated(t, m)
	ref, err := m.step(nil)
	if err != nil {
		t.Fatalf("a step with no fault on %v: %v", m.dev, err)
	}
	mid := allocated(t, m)
	again, err := m.step(nil)
	if err != nil || !slices.Equal(again, ref) {
		t.Fatalf("a second step on %v gave %v, %v; want %v", m.dev, again, err, ref)
	}
	end := allocated(t, m)
	if mid-start != end-mid {
		t.Fatalf("steps with no fault on %v leave %d and then %d bytes allocated", m.dev, mid-start, end-mid)
	}
	if d := mid - start; d != 0 {
		t.Logf("a step with no fault leaves %d bytes counted as allocated on %v (buffers left to the garbage collector, which this pool does not count back)", d, m.dev)
	}
	return ref, mid - start
}

// AllocFailures fails each raw allocation of a training step on dev in
// turn (the pool's cache emptied first, so that every allocation is raw)
// and checks the contract after each. It returns how many it failed.
func AllocFailures(t *testing.T, dev lathe.Device, allocs Allocs) int {
	m := newModel(t, dev)
	m.collector, _ = allocs.(Collector)
	ref, drift := reference(t, m)
	emptied := func() {
		if err := lathe.EmptyCache(dev); err != nil {
			t.Fatal(err)
		}
	}
	emptied()
	allocs.Fail(0)
	if _, err := m.step(nil); err != nil {
		t.Fatal(err)
	}
	n := allocs.Count()
	if n == 0 {
		t.Fatalf("a step on %v with an empty cache made no raw allocation: the hook sees none", dev)
	}
	for i := 1; i <= n; i++ {
		emptied()
		allocs.Fail(i)
		checkStep(t, m, fmt.Sprintf("%v: allocation %d of %d fails", dev, i, n), ref, drift, lathe.ErrOutOfMemory, nil, func() { allocs.Fail(0) })
	}
	return n
}

// MidStep runs a step on dev with fault called between its forward and
// backward passes and heal after it, and checks the contract: an error of
// kind want (or none, and the values of a step with no fault), no leak,
// and (after heal) a step that works. It returns the step's error.
func MidStep(t *testing.T, dev lathe.Device, name string, want error, fault, heal func()) error {
	m := newModel(t, dev)
	ref, drift := reference(t, m)
	return checkStep(t, m, fmt.Sprintf("%v: %s mid-step", dev, name), ref, drift, want, fault, heal)
}
