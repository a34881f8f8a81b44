package lathe

import (
	"errors"
	"testing"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestDataPtrAndStream: on a device with a shared stream (cuda) a live
// contiguous tensor has a device address and WithStream hands f the
// stream; elsewhere both are ErrUnsupported. A strided view, a released
// tensor and a nil f are errors everywhere.
func TestDataPtrAndStream(t *testing.T) {
	for _, info := range DeviceStatus() {
		dev := info.Device
		t.Run(dev.String(), func(t *testing.T) {
			if !info.Available {
				testenv.SkipDevice(t, dev.String(), "%v cannot be opened here: %v", dev, info.Err)
			}
			x := Arange(dev, Float32, 0, 12, 1).Reshape(3, 4)
			defer x.Release()
			xt := x.Transpose(0, 1)
			if _, err := xt.DataPtr(); !errors.Is(err, ErrValue) {
				t.Errorf("a transposed view's DataPtr: %v, want ErrValue", err)
			}
			if err := WithStream(dev, nil); err != nil && !errors.Is(err, ErrValue) && !errors.Is(err, ErrUnsupported) {
				t.Errorf("WithStream with a nil f: %v", err)
			}
			p, err := x.DataPtr()
			var stream uintptr
			serr := WithStream(dev, func(s uintptr) error { stream = s; return nil })
			if dev.Kind != CUDA(0).Kind {
				if !errors.Is(err, ErrUnsupported) || !errors.Is(serr, ErrUnsupported) {
					t.Errorf("DataPtr %v, WithStream %v: want ErrUnsupported on %v", err, serr, dev)
				}
				return
			}
			if err != nil || p == 0 || serr != nil || stream == 0 {
				t.Fatalf("DataPtr %#x, %v; WithStream's stream %#x, %v", p, err, stream, serr)
			}
			// A view with an offset starts further on: row 1 of 4 float32s.
			row := x.Narrow(0, 1, 1)
			if q, err := row.DataPtr(); err != nil || q != p+16 {
				t.Errorf("row 1's DataPtr %#x (%v), want %#x", q, err, p+16)
			}
			stop := errors.New("f's own error")
			if err := WithStream(dev, func(uintptr) error { return stop }); err != stop {
				t.Errorf("WithStream returned %v, want f's error as it is", err)
			}
			y := Zeros(dev, Float32, 2)
			y.Release()
			if _, err := y.DataPtr(); !errors.Is(err, ErrReleased) {
				t.Errorf("a released tensor's DataPtr: %v, want ErrReleased", err)
			}
		})
	}
}
