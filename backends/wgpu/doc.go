// Package wgpu will be lathe's WebGPU backend: Dawn's webgpu.h through cgo,
// running WGSL shaders from kernels/. Until it lands it registers the wgpu
// kind as unavailable, with the reason, so that lathe reports wgpu:0 as
// skipped rather than missing.
package wgpu

import "github.com/lathe-ml/lathe/dispatch"

func init() {
	dispatch.RegisterBackend(dispatch.Unavailable(dispatch.KindWGPU,
		"the wgpu backend is not implemented in this version of lathe"))
}
