//go:build !cgo

package cuda

import "github.com/lathe-ml/lathe/dispatch"

// Without cgo there is no way to call the driver: cuda is registered as
// unavailable, with the reason, and every entry point says the same.

const noCgo = "lathe was built without cgo (CGO_ENABLED=0), and the cuda backend calls the driver through cgo"

var kind = dispatch.RegisterBackend("cuda", dispatch.Unavailable("cuda", noCgo))

func unavailable() error {
	return &dispatch.Error{Kind: dispatch.ErrUnavailable, Detail: "cuda is unavailable: " + noCgo,
		Fix: "build with CGO_ENABLED=1; or use lathe.CPU"}
}

func launch(dispatch.Device, string, string, [3]uint32, [3]uint32, uint32, ...any) error {
	return unavailable()
}

func multiprocessorsOf(dispatch.Device) int { return 0 }

func bufferOn(dispatch.Device, dispatch.DType, int) (dispatch.Buffer, error) {
	return nil, unavailable()
}

func scratch(dispatch.Device, int) (uint64, func(), error) { return 0, func() {}, unavailable() }

func emptyCacheOn(dispatch.Device) error { return unavailable() }

func memoryStatsOn(dispatch.Device) (dispatch.MemoryStats, error) {
	return dispatch.MemoryStats{}, unavailable()
}

func gemmOn(dispatch.Device, dispatch.DType, gemmArgs) (bool, error) { return false, unavailable() }

func hasBLAS(dispatch.Device) bool { return false }

func convolveOn(dispatch.Device, dnnJob) (bool, error) { return false, unavailable() }

func hasDNN(dispatch.Device) bool { return false }

func halfGemmOn(dispatch.Device) bool { return false }

func zeroOn(dispatch.Device, uint64, int) error { return unavailable() }

func checksOf(dispatch.Device) (*checkQueue, error) { return nil, unavailable() }
