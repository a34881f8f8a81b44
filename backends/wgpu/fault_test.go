//go:build cgo

package wgpu_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/backends/wgpu"
	"github.com/lathe-ml/lathe/internal/faulttest"
)

func gpu(t *testing.T) lathe.Device {
	t.Helper()
	dev := lathe.WGPU(0)
	if err := lathe.Ones(dev, lathe.Float32, 1).Err(); err != nil {
		t.Skipf("wgpu:0 does not open here: %v", err)
	}
	return dev
}

// TestAllocationFailures fails each raw allocation of a training step on
// wgpu:0 in turn (faulttest).
func TestAllocationFailures(t *testing.T) {
	dev := gpu(t)
	f, restore := wgpu.FaultyAllocs()
	defer restore()
	n := faulttest.AllocFailures(t, dev, f)
	t.Logf("failed each of a step's %d raw allocations in turn", n)
}

// TestDeviceLost: wgpu:0 lost between a step's forward and backward
// passes. The step fails with ErrUnavailable, saying the device was lost,
// nothing hangs, the cpu goes on working meanwhile, and releasing the
// lost device's tensors hands their buffers back.
func TestDeviceLost(t *testing.T) {
	dev := gpu(t)
	var heal func()
	err := faulttest.MidStep(t, dev, "the device lost", lathe.ErrUnavailable, func() {
		heal = wgpu.LoseDevice()
		err := lathe.Ones(dev, lathe.Float32, 3).AddScalar(1).Err()
		if err == nil {
			_, err = lathe.Ones(dev, lathe.Float32, 3).Float32s()
		}
		if !errors.Is(err, lathe.ErrUnavailable) || !strings.Contains(err.Error(), "lost") {
			t.Errorf("an op on the lost device: %v, want ErrUnavailable saying it was lost", err)
		}
		if v, err := lathe.Ones(lathe.CPU, lathe.Float32, 3).AddScalar(1).Float32s(); err != nil || v[2] != 2 {
			t.Errorf("the cpu while wgpu:0 is lost: %v, %v", v, err)
		}
	}, func() { heal() })
	if !errors.Is(err, lathe.ErrUnavailable) {
		t.Errorf("the step on a lost device: %v, want ErrUnavailable", err)
	}
}

// TestKernelError: a dispatch that Dawn refuses between a step's forward
// and backward passes. Its error comes back (from the launch, or from the
// step's next read-back, naming the broken op), nothing leaks, and the
// next step works.
func TestKernelError(t *testing.T) {
	dev := gpu(t)
	var launchErr error
	stepErr := faulttest.MidStep(t, dev, "a kernel error", lathe.ErrUnsupported, func() {
		launchErr = wgpu.BrokenKernel()
	}, nil)
	// Dawn's refusal comes back once, from the launch or from the step.
	err := launchErr
	if err == nil {
		err = stepErr
	} else if stepErr != nil {
		t.Errorf("the launch failed (%v), and the step too: %v", launchErr, stepErr)
	}
	if err == nil || !strings.Contains(err.Error(), "broken_kernel") {
		t.Errorf("the broken kernel's error: %v, want one naming broken_kernel", err)
	}
	t.Logf("the error came back as %v", err)
}
