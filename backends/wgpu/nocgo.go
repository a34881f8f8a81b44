//go:build !cgo

package wgpu

import "github.com/lathe-ml/lathe/dispatch"

var registered = dispatch.Unavailable("wgpu",
	"this program was built without cgo (CGO_ENABLED=0), and the wgpu backend calls Dawn through cgo")

var kind = dispatch.RegisterBackend("wgpu", registered)

// launch is never reached without cgo: the backend is unavailable, so
// dispatch runs no wgpu kernel.
func launch(op string, _ *shader, _ [3]uint32, _ []uint32, _ ...*dispatch.Tensor) error {
	return &dispatch.Error{Op: op, Kind: dispatch.ErrUnavailable, Detail: "wgpu:0 is unavailable in a build without cgo"}
}

func software() bool { return false }
