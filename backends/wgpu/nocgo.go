//go:build !cgo

package wgpu

import "github.com/lathe-ml/lathe/dispatch"

func init() {
	dispatch.RegisterBackend(dispatch.Unavailable(dispatch.KindWGPU,
		"this program was built without cgo (CGO_ENABLED=0), and the wgpu backend calls Dawn through cgo"))
}
