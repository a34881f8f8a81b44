package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

func TestDriverError(t *testing.T) {
	dev := dispatch.Device{Kind: kind, Index: 1}
	cases := []struct {
		r    cuResult
		name string
		kind error
	}{
		{cudaErrorOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", dispatch.ErrOutOfMemory},
		{cudaErrorInvalidValue, "CUDA_ERROR_INVALID_VALUE", dispatch.ErrValue},
		{cudaErrorNotFound, "CUDA_ERROR_NOT_FOUND", dispatch.ErrUnsupported},
		{700, "CUDA_ERROR_ILLEGAL_ADDRESS", dispatch.ErrUnavailable},
		{cudaErrorNoDevice, "CUDA_ERROR_NO_DEVICE", dispatch.ErrUnavailable},
	}
	for _, c := range cases {
		err := driverError(dev, "doing it", "cuThing_v2", c.r, c.name, "what it means")
		if !errors.Is(err, c.kind) {
			t.Errorf("%s: kind %v, want %v", c.name, err.Kind, c.kind)
		}
		var de *DriverError
		if !errors.As(err, &de) || de.Code != int(c.r) || de.Call != "cuThing_v2" {
			t.Errorf("%s: cause %+v", c.name, de)
		}
		msg := err.Error()
		for _, want := range []string{"cuda:1: doing it", "cuThing_v2", c.name, "what it means"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%q lacks %q", msg, want)
			}
		}
	}
	if msg := driverError(dev, "x", "cuX", 9999, "", "").Error(); !strings.Contains(msg, "unknown status (code 9999)") {
		t.Errorf("a code the driver does not know: %q", msg)
	}
}

func TestCublasError(t *testing.T) {
	dev := dispatch.Device{Kind: kind}
	err := cublasError(dev, "a matrix product", "cublasSgemmStridedBatched", 3, "", "")
	if !errors.Is(err, dispatch.ErrOutOfMemory) || !strings.Contains(err.Error(), "CUBLAS_STATUS_ALLOC_FAILED") {
		t.Errorf("alloc failed: %v", err)
	}
	err = cublasError(dev, "a matrix product", "cublasSgemmStridedBatched", 7, "CUBLAS_STATUS_INVALID_VALUE", "an invalid numeric value was used as an argument")
	if !errors.Is(err, dispatch.ErrUnsupported) || !strings.Contains(err.Error(), "an invalid numeric value") {
		t.Errorf("invalid value: %v", err)
	}
}

// TestCudnnError: a cuDNN status's kind, by the numbering of its major
// (cuDNN 9's classes of a thousand, cuDNN 8's small numbers), and the
// message naming the call and cuDNN's name for the status.
func TestCudnnError(t *testing.T) {
	dev := dispatch.Device{Kind: kind}
	for _, c := range []struct {
		status, major int
		kind          error
	}{
		{4004, 9, dispatch.ErrOutOfMemory}, // INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
		{4003, 9, dispatch.ErrOutOfMemory}, // INTERNAL_ERROR_HOST_ALLOCATION_FAILED
		{2000, 9, dispatch.ErrUnsupported}, // BAD_PARAM
		{2002, 9, dispatch.ErrUnsupported}, // BAD_PARAM_NULL_POINTER
		{3000, 9, dispatch.ErrUnsupported}, // NOT_SUPPORTED
		{5000, 9, dispatch.ErrUnavailable}, // EXECUTION_FAILED
		{1008, 9, dispatch.ErrUnavailable}, // SUBLIBRARY_LOADING_FAILED
		{2, 8, dispatch.ErrOutOfMemory},    // ALLOC_FAILED
		{3, 8, dispatch.ErrUnsupported},    // BAD_PARAM
		{9, 8, dispatch.ErrUnsupported},    // NOT_SUPPORTED
		{8, 8, dispatch.ErrUnavailable},    // EXECUTION_FAILED
		{3, 9, dispatch.ErrUnavailable},    // not a cuDNN 9 class
	} {
		err := cudnnError(dev, "a convolution", "cudnnConvolutionForward", c.status, c.major, "CUDNN_STATUS_X")
		if !errors.Is(err, c.kind) {
			t.Errorf("status %d of cuDNN %d: %v, want %v", c.status, c.major, err, c.kind)
		}
		want := fmt.Sprintf("cuda:0: a convolution: cudnnConvolutionForward returned CUDNN_STATUS_X (code %d)", c.status)
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err.Error(), want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 3 << 20: "3.0 MiB", 3 << 29: "1.50 GiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
