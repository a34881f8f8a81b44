// Package accel runs an example's test on every accelerator lathe knows
// (each device but the cpu: wgpu:0, cuda:0), so that the same test that
// checks wgpu:0 on lavapipe here checks cuda:0 on a GPU machine (make
// gpu-check runs the examples' test binaries there).
package accel

import (
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// Each runs f in a subtest named by each accelerator, skipped by name
// (testenv.SkipDevice: a failure where the run requires the device) where
// the device does not open.
func Each(t *testing.T, f func(t *testing.T, dev lathe.Device)) {
	t.Helper()
	for _, info := range lathe.DeviceStatus() {
		if info.Device == lathe.CPU {
			continue
		}
		t.Run(info.Device.String(), func(t *testing.T) {
			if !info.Available {
				testenv.SkipDevice(t, info.Device.String(), "%s is unavailable: %s", info.Device, info.Detail)
			}
			f(t, info.Device)
		})
	}
}
