package cpu

import (
	"fmt"
	"runtime"

	"github.com/lathe-ml/lathe/dispatch"
)

// buffer is a cpu tensor's memory: one typed Go slice.
type buffer struct{ data any }

// Free leaves the slice to the garbage collector.
func (*buffer) Free() {}

type backend struct{}

func init() { dispatch.RegisterBackend(backend{}) }

func (backend) Kind() dispatch.DeviceKind { return dispatch.KindCPU }
func (backend) Count() int                { return 1 }

func (backend) Open(index int) error {
	if index != 0 {
		return &dispatch.Error{Kind: dispatch.ErrUnavailable, Detail: fmt.Sprintf("cpu:%d does not exist", index), Fix: "use lathe.CPU"}
	}
	return nil
}

func (backend) Describe(int) string {
	return fmt.Sprintf("%d threads, Go loops, GEMM by %s", runtime.GOMAXPROCS(0), gemmName())
}

func (backend) Alloc(_ dispatch.Device, dt dispatch.DType, n int) (dispatch.Buffer, error) {
	if n < 0 {
		return nil, &dispatch.Error{Kind: dispatch.ErrValue, Detail: fmt.Sprintf("cannot allocate %d elements", n)}
	}
	switch dt {
	case dispatch.Float32:
		return &buffer{make([]float32, n)}, nil
	case dispatch.Float64:
		return &buffer{make([]float64, n)}, nil
	case dispatch.Int32:
		return &buffer{make([]int32, n)}, nil
	case dispatch.Int64:
		return &buffer{make([]int64, n)}, nil
	case dispatch.Bool:
		return &buffer{make([]bool, n)}, nil
	}
	return nil, &dispatch.Error{Kind: dispatch.ErrDType, Detail: "cannot allocate dtype " + dt.String()}
}

func (backend) Upload(_ dispatch.Device, data any) (dispatch.Buffer, error) {
	switch data.(type) {
	case []float32, []float64, []int32, []int64, []bool:
		return &buffer{data}, nil
	}
	return nil, &dispatch.Error{Kind: dispatch.ErrDType, Detail: fmt.Sprintf("cannot hold host data of type %T", data)}
}

func (backend) Read(_ dispatch.Device, b dispatch.Buffer, _ dispatch.DType, offset, n int) (any, error) {
	switch d := b.(*buffer).data.(type) {
	case []float32:
		return append([]float32(nil), d[offset:offset+n]...), nil
	case []float64:
		return append([]float64(nil), d[offset:offset+n]...), nil
	case []int32:
		return append([]int32(nil), d[offset:offset+n]...), nil
	case []int64:
		return append([]int64(nil), d[offset:offset+n]...), nil
	case []bool:
		return append([]bool(nil), d[offset:offset+n]...), nil
	}
	return nil, &dispatch.Error{Kind: dispatch.ErrDType, Detail: "unknown buffer"}
}

func (backend) Sync(dispatch.Device) error { return nil }

// elems returns a cpu tensor's backing slice (the whole storage; index it
// with the tensor's offset and strides).
func elems[T any](t *dispatch.Tensor) []T { return t.Storage.Buffer.(*buffer).data.([]T) }

// register adds a cpu kernel for op name.
func register(name string, k dispatch.Kernel) { dispatch.RegisterKernel(dispatch.KindCPU, name, k) }
