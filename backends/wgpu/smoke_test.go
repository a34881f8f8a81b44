package wgpu_test

import (
	"testing"

	"github.com/lathe-ml/lathe"
)

func TestSmoke(t *testing.T) {
	dev := lathe.WGPU(0)
	for _, d := range lathe.DeviceStatus() {
		t.Logf("%s %v %s", d.Device, d.Available, d.Detail)
	}
	x := lathe.FromSlice(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	y := x.Transpose(0, 1).Contiguous()
	v, err := y.Float32s()
	t.Log(v, err)
	c, err := x.Cast(lathe.Int32).Int32s()
	t.Log(c, err)
}
