//go:build !cgo

package wgpu

import "github.com/lathe-ml/lathe/dispatch"

func init() {
	dispatch.RegisterBackend(dispatch.Unavailable(dispatch.KindWGPU,
		"this program was built without cgo (CGO_ENABLED=0), and the wgpu backend calls Dawn through cgo"))
}

// CacheStats reports wgpu:0's buffer pool: empty without cgo.
func CacheStats() Stats { return Stats{} }

// EmptyCache has nothing to do without cgo.
func EmptyCache() error { return nil }

// launch is never reached without cgo: the backend is unavailable, so
// dispatch runs no wgpu kernel.
func launch(op string, _ *shader, _ [3]uint32, _ []uint32, _ ...*dispatch.Tensor) error {
	return &dispatch.Error{Op: op, Kind: dispatch.ErrUnavailable, Detail: "wgpu:0 is unavailable in a build without cgo"}
}

func software() bool { return false }
