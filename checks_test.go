package lathe

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// TestValueChecksOnEveryDevice: an index, class or exponent that only the
// data can refuse is the same error, kind and text and call site, on every
// device. The cpu's op fails at once; a GPU checks where the values are
// and reports at the next sync (dispatch's ValueChecker), after which the
// device works again. The failed result, and what was made from it before
// the failure was known, stay failed: every read of them, and Err once the
// device has reported, give the check's error, and an op on them fails
// with it; a result made beside them reads back its values. (The first
// read-back of any tensor took the error, once, and the failed result's
// garbage read back as data after it.)
func TestValueChecksOnEveryDevice(t *testing.T) {
	cases := []struct {
		name string
		kind error
		run  func(dev Device) *Tensor
	}{
		{"index_select", ErrIndex, func(dev Device) *Tensor {
			return Arange(dev, Float32, 0, 12, 1).Reshape(3, 4).IndexSelect(1, FromSlice(CPU, []int32{0, 4}, 2).To(dev))
		}},
		{"index_select/negative", ErrIndex, func(dev Device) *Tensor {
			return Ones(dev, Float32, 3).IndexSelect(0, FromSlice(CPU, []int32{-1}, 1).To(dev))
		}},
		{"gather/transposed_index", ErrIndex, func(dev Device) *Tensor {
			idx := FromSlice(CPU, []int32{0, 1, 2, 9}, 2, 2).To(dev).Transpose(0, 1)
			return Ones(dev, Float32, 2, 4).Gather(1, idx)
		}},
		{"scatter_add", ErrIndex, func(dev Device) *Tensor {
			return Zeros(dev, Float32, 3).ScatterAdd(0, FromSlice(CPU, []int32{1, 3}, 2).To(dev), Ones(dev, Float32, 2))
		}},
		{"one_hot", ErrIndex, func(dev Device) *Tensor {
			return FromSlice(CPU, []int32{0, 5, 1}, 3).To(dev).OneHot(4)
		}},
		{"embedding", ErrIndex, func(dev Device) *Tensor {
			return Embedding(FromSlice(CPU, []int32{2, 7}, 2).To(dev), Ones(dev, Float32, 6, 3))
		}},
		{"max_unpool", ErrIndex, func(dev Device) *Tensor {
			idx := FromSlice(CPU, []int64{0, 2, 16, 15}, 1, 1, 2, 2).To(dev)
			return Ones(dev, Float32, 1, 1, 2, 2).MaxUnpool2d(idx, 2)
		}},
		// int64 values whose low word alone is in range are out of it.
		{"index_select/int64_past_2^32", ErrIndex, func(dev Device) *Tensor {
			return Arange(dev, Float32, 0, 12, 1).Reshape(3, 4).IndexSelect(1, FromSlice(CPU, []int64{0, 1<<32 + 1}, 2).To(dev))
		}},
		{"gather/int64_negative", ErrIndex, func(dev Device) *Tensor {
			return Ones(dev, Float32, 2, 4).Gather(1, FromSlice(CPU, []int64{0, 1, -1 << 32, 3}, 2, 2).To(dev))
		}},
		{"pow/int64_negative_exponent", ErrValue, func(dev Device) *Tensor {
			return FromSlice(CPU, []int64{2, 3}, 2).To(dev).Pow(FromSlice(CPU, []int64{1, -1 << 40}, 2).To(dev))
		}},
		{"cross_entropy/int64_target", ErrIndex, func(dev Device) *Tensor {
			return Ones(dev, Float32, 3, 4).CrossEntropy(FromSlice(CPU, []int64{1, 1<<32 + 2, 0}, 3).To(dev))
		}},
		{"pow/negative_exponent", ErrValue, func(dev Device) *Tensor {
			return FromSlice(CPU, []int32{2, 3}, 2).To(dev).Pow(FromSlice(CPU, []int32{1, -2}, 2).To(dev))
		}},
		{"cross_entropy/target", ErrIndex, func(dev Device) *Tensor {
			return Ones(dev, Float32, 3, 4).CrossEntropy(FromSlice(CPU, []int32{1, 4, 0}, 3).To(dev))
		}},
	}
	for _, dev := range Devices() {
		for _, c := range cases {
			t.Run(dev.String()+"/"+c.name, func(t *testing.T) {
				want := c.run(CPU).Err()
				if !errors.Is(want, c.kind) {
					t.Fatalf("the cpu gives %v, want a %v", want, c.kind)
				}
				bad := c.run(dev)
				derived := bad.Mul(bad)
				beside := FromSlice(CPU, []int32{5, 6}, 2).To(dev).IndexSelect(0, FromSlice(CPU, []int32{1}, 1).To(dev))
				got := bad.Err()
				if got == nil {
					got = Synchronize(dev) // a device reports at the next sync
				}
				if got == nil || got.Error() != want.Error() {
					t.Fatalf("error %v\nwant  %v", got, want)
				}
				// The failure is reported once and the device goes on.
				if err := Synchronize(dev); err != nil {
					t.Fatalf("the next sync: %v", err)
				}
				for i, err := range []error{bad.Err(), bad.To(CPU).Err(), bad.To(CPU).Err(), derived.To(CPU).Err(), derived.Err(), bad.Mul(bad).Err()} {
					if err == nil || err.Error() != want.Error() {
						t.Fatalf("the failed result and what was made from it, look %d: %v, want the check's error", i, err)
					}
				}
				if v, err := beside.Int32s(); err != nil || len(v) != 1 || v[0] != 6 {
					t.Fatalf("a result made beside the failed one: %v, %v", v, err)
				}
				v, err := FromSlice(CPU, []int32{1, 2}, 2).To(dev).IndexSelect(0, FromSlice(CPU, []int32{1}, 1).To(dev)).Int32s()
				if err != nil || len(v) != 1 || v[0] != 2 {
					t.Fatalf("an op after the failure: %v, %v", v, err)
				}
			})
		}
	}
}

// A class loss's ignored targets need not be classes.
func TestValueCheckIgnoresIgnoreIndex(t *testing.T) {
	for _, dev := range Devices() {
		target := FromSlice(CPU, []int32{1, -100, 0}, 3).To(dev)
		if _, err := Ones(dev, Float32, 3, 4).CrossEntropy(target).Float32s(); err != nil {
			t.Errorf("%v: %v", dev, err)
		}
	}
}

// TestFailedCheckStaysWithItsTensor: on a device that checks values where
// they live, a failed check's error goes with the tensors made from the
// checked values, on every device alike: a read of another tensor returns
// its own data even when it comes first, or from another goroutine at the
// same time; every read of the failed one returns the error; and a
// gradient made through the failed op reads as the error, every time. The
// first read-back of any tensor took the error, once: a valid read got
// another goroutine's error, and the failed tensor and its gradient then
// read back garbage as data.
func TestFailedCheckStaysWithItsTensor(t *testing.T) {
	for _, dev := range Devices() {
		t.Run(dev.String(), func(t *testing.T) {
			x := FromSlice(CPU, []float32{10, 11, 12, 13}, 4).To(dev)
			good := x.IndexSelect(0, FromSlice(CPU, []int64{1}, 1).To(dev))
			bad := x.Gather(0, FromSlice(CPU, []int64{7}, 1).To(dev))
			if v, err := good.Float32s(); err != nil || len(v) != 1 || v[0] != 11 {
				t.Errorf("the valid result, read first: %v, %v", v, err)
			}
			for i := range 2 {
				if v, err := bad.Float32s(); !errors.Is(err, ErrIndex) {
					t.Errorf("the failed result, read %d: %v, %v; want an ErrIndex", i, v, err)
				}
			}
			if _, err := bad.DataPtr(); !errors.Is(err, ErrIndex) {
				t.Errorf("the failed result's DataPtr: %v; want an ErrIndex (a library would read its garbage)", err)
			}

			p := FromSlice(CPU, []float32{1, 2, 3, 4}, 4).To(dev).RequireGrad()
			if err := p.Gather(0, FromSlice(CPU, []int64{1, 9}, 2).To(dev)).Sum().Backward(); err == nil {
				// A device learns of the failure after the backward pass:
				// the gradient it made is the failure's.
				for i := range 2 {
					if v, err := p.Grad().Float32s(); !errors.Is(err, ErrIndex) {
						t.Errorf("the gradient through the failed gather, read %d: %v, %v; want an ErrIndex", i, v, err)
					}
				}
			} else if p.Grad() != nil {
				t.Errorf("a failed backward left a gradient")
			}

			// Index and IndexPut wrap their indices before they gather, so
			// their backward ops never meet the bad value: the gradients
			// carry the loss's check. And a backward from a loss whose
			// failure is known fails at once, adding to no leaf.
			for name, loss := range map[string]func(x *Tensor) *Tensor{
				"index": func(x *Tensor) *Tensor { return x.Index(FromSlice(CPU, []int64{1, 9}, 2).To(dev)).Sum() },
				"index_put": func(x *Tensor) *Tensor {
					return x.IndexPut([]*Tensor{FromSlice(CPU, []int64{1, 9}, 2).To(dev)}, Ones(dev, Float32, 2), true).MulScalar(3).Sum()
				},
			} {
				x := FromSlice(CPU, []float32{1, 2, 3, 4}, 4).To(dev).RequireGrad()
				l := loss(x)
				if err := l.Backward(); err == nil {
					if v, err := x.Grad().Float32s(); !errors.Is(err, ErrIndex) {
						t.Errorf("%s: the gradient through the failed op: %v, %v; want an ErrIndex", name, v, err)
					}
				}
				Synchronize(dev)
				y := FromSlice(CPU, []float32{1, 2, 3, 4}, 4).To(dev).RequireGrad()
				l = x.Detach().Index(FromSlice(CPU, []int64{9}, 1).To(dev)).Add(y.Sum()).Sum()
				Synchronize(dev)
				if err := l.Backward(); !errors.Is(err, ErrIndex) || y.Grad() != nil {
					t.Errorf("%s: a backward from a loss known to have failed: %v (y's gradient %v), want an ErrIndex and none", name, err, y.Grad())
				}
			}

			// A wait for a tensor's many unsettled checks (more than 64)
			// leaves a failure that no tensor has reported to Synchronize.
			if dev != CPU {
				Synchronize(dev)
				unread := x.Gather(0, FromSlice(CPU, []int64{7}, 1).To(dev))
				gi := FromSlice(CPU, []int64{1}, 1).To(dev)
				y := x.IndexSelect(0, gi)
				for range 80 {
					y = y.Add(x.IndexSelect(0, gi))
				}
				if err := Synchronize(dev); !errors.Is(err, ErrIndex) {
					t.Errorf("Synchronize after a wait for many checks: %v, want the unread gather's ErrIndex", err)
				}
				if err := unread.Err(); !errors.Is(err, ErrIndex) {
					t.Errorf("the unread gather: %v, want an ErrIndex", err)
				}
				if v, err := y.Float32s(); err != nil || v[0] != 81*11 {
					t.Errorf("the sum beside it: %v, %v", v, err)
				}
			}

			// A composite's own check and its part's fail on the same bad
			// index: the read gives the composite's, and Synchronize does not
			// report the part's afterwards as a new failure (embedding's
			// index_select's did, and a later call's sync met it).
			if dev != CPU {
				Synchronize(dev)
				e := Embedding(FromSlice(CPU, []int64{5}, 1).To(dev), Ones(dev, Float32, 3, 2))
				var le *Error
				if _, err := e.Float32s(); !errors.As(err, &le) || le.Op != "embedding" {
					t.Errorf("embedding of a bad index: %v, want embedding's ErrIndex", err)
				}
				if err := Synchronize(dev); err != nil {
					t.Errorf("Synchronize after the failed embedding was read: %v, want nil (its part's failure is the same one)", err)
				}
			}

			// Two goroutines at once, one reading valid results, one failed.
			var wg sync.WaitGroup
			errs := make(chan string, 100)
			for g := range 2 {
				wg.Go(func() {
					for range 25 {
						idx := int64(2)
						if g == 1 {
							idx = 40
						}
						v, err := x.IndexSelect(0, FromSlice(CPU, []int64{idx}, 1).To(dev)).Float32s()
						switch {
						case g == 0 && (err != nil || v[0] != 12):
							errs <- fmt.Sprintf("a valid read: %v, %v", v, err)
						case g == 1 && !errors.Is(err, ErrIndex):
							errs <- fmt.Sprintf("a failed read: %v, %v", v, err)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
			Synchronize(dev) // what the failed reads left for the device-wide report
		})
	}
}

// TestFailedCallWithdrawsItsChecks: a call that queued a value check and
// then failed on another argument returned that error and made nothing;
// the check's failure must not come back from the device's next
// Synchronize as news (a failed call changes nothing). multi_margin_loss
// queues its target check before its body refuses the reduction.
func TestFailedCallWithdrawsItsChecks(t *testing.T) {
	for _, dev := range Devices() {
		t.Run(dev.String(), func(t *testing.T) {
			Synchronize(dev)
			x := Ones(dev, Float32, 2, 3)
			target := FromSlice(CPU, []int64{0, 7}, 2).To(dev)
			if err := x.MultiMarginLoss(target, WithReduction(Reduction(5))).Err(); err == nil {
				t.Fatal("a reduction of 5 and class 7 of 3 were accepted")
			}
			if err := Synchronize(dev); err != nil {
				t.Errorf("Synchronize after the failed call: %v; want nil (the call reported its own error)", err)
			}
			// The same check on a call that succeeds still reports.
			if _, err := x.MultiMarginLoss(target).Float32s(); !errors.Is(err, ErrIndex) {
				t.Errorf("reading the loss of class 7 of 3: %v; want an ErrIndex", err)
			}
		})
	}
}
