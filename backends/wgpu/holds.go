//go:build cgo

package wgpu

import "github.com/lathe-ml/lathe/dispatch"

// Holds reports whether wgpu:0 can hold dt (dispatch.Holder): the dtypes
// whose elements a WGSL word holds (elemBytes) and that the kernels take.
// float16, bfloat16, int8 and uint8 have no kernels here yet, so dispatch
// refuses them with ErrUnsupported naming the dtype and wgpu:0 before
// anything is allocated or uploaded.
func (backend) Holds(dt dispatch.DType) bool {
	_, err := elemBytes(dt)
	return err == nil && !(dispatch.Halves | dispatch.Bytes).Has(dt)
}
