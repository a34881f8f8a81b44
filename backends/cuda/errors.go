package cuda

import (
	"fmt"

	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/dispatch"
)

// cuResult is a CUresult, the driver API's status code (CUDA_SUCCESS = 0).
// Only the codes that lathe treats specially are named; the driver's own
// cuGetErrorName and cuGetErrorString give every other one its words.
type cuResult int

const (
	cudaSuccess             cuResult = 0
	cudaErrorInvalidValue   cuResult = 1
	cudaErrorOutOfMemory    cuResult = 2
	cudaErrorNotInitialized cuResult = 3
	cudaErrorDeinitialized  cuResult = 4
	cudaErrorNoDevice       cuResult = 100
	cudaErrorInvalidDevice  cuResult = 101
	cudaErrorNotFound       cuResult = 500
	cudaErrorNotReady       cuResult = 600
)

// DriverError is the cause inside a *lathe.Error that a CUDA library
// returned: which library and call, its status code, and the library's own
// name and description of the code.
type DriverError struct {
	Library string // "libcuda" or "libcublas"
	Call    string // the entry point: "cuMemAlloc_v2"
	Code    int    // the CUresult or cublasStatus_t
	Name    string // the library's name for the code: "CUDA_ERROR_OUT_OF_MEMORY"
	Text    string // its description: "out of memory"
}

// Error says which call returned which status, in the library's words.
func (e *DriverError) Error() string {
	name := e.Name
	if name == "" {
		name = "unknown status"
	}
	if e.Text != "" {
		return fmt.Sprintf("%s returned %s (code %d: %s)", e.Call, name, e.Code, e.Text)
	}
	return fmt.Sprintf("%s returned %s (code %d)", e.Call, name, e.Code)
}

// resultKind is the lathe error kind of a failed driver call. A kernel's
// fault (an illegal address, say) leaves the context unusable for every
// later call, so it is ErrUnavailable, as is a driver that is not there.
func resultKind(r cuResult) error {
	switch r {
	case cudaErrorOutOfMemory:
		return dispatch.ErrOutOfMemory
	case cudaErrorInvalidValue:
		return dispatch.ErrValue
	case cudaErrorNotFound:
		return dispatch.ErrUnsupported
	}
	return dispatch.ErrUnavailable
}

// driverError turns a failed driver call on dev into a *dispatch.Error whose
// cause is the driver's own words for the code. where says what lathe was
// doing ("allocating 4096 bytes"); the op is filled in by dispatch.
func driverError(dev dispatch.Device, where, call string, r cuResult, name, text string) *dispatch.Error {
	return &dispatch.Error{
		Kind:   resultKind(r),
		Detail: dev.String() + ": " + where,
		Err:    &DriverError{Library: "libcuda", Call: call, Code: int(r), Name: name, Text: text},
	}
}

// cublasStatusNames are cublasStatus_t's names (cublas_api.h's enum, as
// the cuBLAS guide lists it), for libraries older than cublasGetStatusName
// (CUDA 11.4.2).
var cublasStatusNames = map[int]string{
	0:  "CUBLAS_STATUS_SUCCESS",
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// cublasError is driverError for a cuBLAS status. CUBLAS_STATUS_ALLOC_FAILED
// is cuBLAS failing to get its workspace: out of memory.
func cublasError(dev dispatch.Device, where, call string, status int, name, text string) *dispatch.Error {
	if name == "" {
		name = cublasStatusNames[status]
	}
	kind := dispatch.ErrUnavailable
	switch status {
	case 3:
		kind = dispatch.ErrOutOfMemory
	case 7, 15:
		kind = dispatch.ErrUnsupported
	}
	return &dispatch.Error{
		Kind:   kind,
		Detail: dev.String() + ": " + where,
		Err:    &DriverError{Library: "libcublas", Call: call, Code: status, Name: name, Text: text},
	}
}

// cudnnError is driverError for a cuDNN status, name its
// cudnnGetErrorString. cuDNN 9 numbers its statuses by class (1000s: not
// initialized, 2000s: a bad parameter, 3000s: not supported, 4000s:
// internal, 4003 and 4004 failed allocations, 5000s: execution failed);
// cuDNN 8 counted from 1 (2: an allocation failed, 3: a bad parameter, 9:
// not supported).
func cudnnError(dev dispatch.Device, where, call string, status, major int, name string) *dispatch.Error {
	kind := dispatch.ErrUnavailable
	switch {
	case major >= 9 && (status == 4003 || status == 4004), major < 9 && status == 2:
		kind = dispatch.ErrOutOfMemory
	case major >= 9 && (status/1000 == 2 || status/1000 == 3), major < 9 && (status == 3 || status == 9):
		kind = dispatch.ErrUnsupported
	}
	return &dispatch.Error{
		Kind:   kind,
		Detail: dev.String() + ": " + where,
		Err:    &DriverError{Library: "libcudnn", Call: call, Code: status, Name: name},
	}
}

// formatBytes writes a byte count for people: 512 B, 3.0 MiB, 1.50 GiB.
var formatBytes = alloc.FormatBytes
