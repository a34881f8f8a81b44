package main

import (
	"errors"
	"testing"
	"time"
)

// TestWarmUp: the warm-up runs its steps, then single steps until they
// have taken warmSamples samples' time, and stops at a failed step.
func TestWarmUp(t *testing.T) {
	steps := 0
	step := func(n int) (time.Duration, error) {
		steps += n
		return time.Duration(n) * time.Millisecond, nil
	}
	if err := warmUp(step, 3, 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if want := warmSamples * 5; steps != want {
		t.Errorf("%d steps of 1 ms to warm up for %d samples of 5 ms, want %d", steps, warmSamples, want)
	}
	steps = 0
	if err := warmUp(step, 100, 5*time.Millisecond); err != nil || steps != 100 {
		t.Errorf("%d steps (%v) where the warm-up steps alone took long enough, want 100", steps, err)
	}
	broken := errors.New("broken")
	calls := 0
	fail := func(n int) (time.Duration, error) {
		calls++
		if calls == 2 {
			return 0, broken
		}
		return time.Millisecond, nil
	}
	if err := warmUp(fail, 1, time.Second); !errors.Is(err, broken) || calls != 2 {
		t.Errorf("warmUp returned %v after %d calls, want the second call's error", err, calls)
	}
}
