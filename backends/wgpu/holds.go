//go:build cgo

package wgpu

import "github.com/lathe-ml/lathe/dispatch"

// Holds reports whether wgpu:0 can hold dt (dispatch.Holder): every dtype
// whose elements fit WGSL's 32-bit words (elemBytes), the narrow ones
// packed, all but float64, which dispatch refuses with ErrUnsupported
// naming the dtype and wgpu:0 before anything is allocated or uploaded.
func (backend) Holds(dt dispatch.DType) bool {
	_, err := elemBytes(dt)
	return err == nil
}
