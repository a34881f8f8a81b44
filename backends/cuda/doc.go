// Package cuda will be lathe's CUDA backend: the driver API through cgo,
// loaded with dlopen, running PTX kernels from kernels/. Until it lands it
// registers the cuda kind as unavailable, with the reason, so that lathe
// reports cuda:0 as skipped rather than missing.
package cuda

import "github.com/lathe-ml/lathe/dispatch"

func init() {
	dispatch.RegisterBackend(dispatch.Unavailable(dispatch.KindCUDA,
		"the cuda backend is not implemented in this version of lathe"))
}
