package cpu

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

type backend struct{}

// kind is the host's: the cpu registers under dispatch.Host's name.
var kind = dispatch.RegisterBackend("cpu", backend{})

func (backend) Count() int { return 1 }

func (backend) Open(index int) error {
	if index != 0 {
		return &dispatch.Error{Kind: dispatch.ErrUnavailable, Detail: fmt.Sprintf("cpu:%d does not exist", index), Fix: "use lathe.CPU"}
	}
	return nil
}

func (backend) Describe(int) string {
	return fmt.Sprintf("%d threads, Go loops, GEMM by %s", runtime.GOMAXPROCS(0), gemmName()) + ignoredSettings()
}

// cpuSettings are the environment settings the cpu reads, with the values
// each takes; any other value is ignored.
var cpuSettings = []struct {
	name    string
	choices []string
}{
	{"LATHE_BLAS", []string{"gonum"}},
	{"LATHE_BF16_GEMM", []string{"dot", "float32"}},
	{"LATHE_CPU_POISON", []string{"0", "1"}},
}

// ignoredSettings names, for Describe, the settings set to none of their
// values, which the cpu ignores: a misspelt LATHE_BLAS=gonun would
// otherwise leave OpenBLAS in use unseen.
func ignoredSettings() string {
	var bad []string
	for _, s := range cpuSettings {
		if v := os.Getenv(s.name); v != "" && !slices.Contains(s.choices, v) {
			bad = append(bad, s.name+"="+strconv.Quote(v)+" (takes "+strings.Join(s.choices, " or ")+")")
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return "; ignored: " + strings.Join(bad, ", ")
}

func (backend) Alloc(_ dispatch.Device, dt dispatch.DType, n int) (dispatch.Buffer, error) {
	if n < 0 {
		return nil, &dispatch.Error{Kind: dispatch.ErrValue, Detail: fmt.Sprintf("cannot allocate %d elements", n)}
	}
	b, ok, err := pooled(dt, n)
	if !ok {
		return nil, &dispatch.Error{Kind: dispatch.ErrDType, Detail: "cannot allocate dtype " + dt.String()}
	}
	return b, err
}

func (backend) Upload(_ dispatch.Device, data any) (dispatch.Buffer, error) {
	switch d := data.(type) {
	case []float32:
		return &buffer[float32]{data: d}, nil
	case []float64:
		return &buffer[float64]{data: d}, nil
	case []int32:
		return &buffer[int32]{data: d}, nil
	case []int64:
		return &buffer[int64]{data: d}, nil
	case []bool:
		return &buffer[bool]{data: d}, nil
	case []half.Float16:
		return &buffer[half.Float16]{data: d}, nil
	case []half.BFloat16:
		return &buffer[half.BFloat16]{data: d}, nil
	case []int8:
		return &buffer[int8]{data: d}, nil
	case []uint8:
		return &buffer[uint8]{data: d}, nil
	}
	return nil, &dispatch.Error{Kind: dispatch.ErrDType, Detail: fmt.Sprintf("cannot hold host data of type %T", data)}
}

func (backend) Read(_ dispatch.Device, b dispatch.Buffer, _ dispatch.DType, offset, n int) (any, error) {
	switch b := b.(type) {
	case *buffer[float32]:
		return readOut(b, offset, n), nil
	case *buffer[float64]:
		return readOut(b, offset, n), nil
	case *buffer[int32]:
		return readOut(b, offset, n), nil
	case *buffer[int64]:
		return readOut(b, offset, n), nil
	case *buffer[bool]:
		return readOut(b, offset, n), nil
	case *buffer[half.Float16]:
		return readOut(b, offset, n), nil
	case *buffer[half.BFloat16]:
		return readOut(b, offset, n), nil
	case *buffer[int8]:
		return readOut(b, offset, n), nil
	case *buffer[uint8]:
		return readOut(b, offset, n), nil
	}
	return nil, &dispatch.Error{Kind: dispatch.ErrDType, Detail: "unknown buffer"}
}

func (backend) Sync(dispatch.Device) error { return nil }

// elems returns a cpu tensor's backing slice (the whole storage; index it
// with the tensor's offset and strides).
func elems[T any](t *dispatch.Tensor) []T { return t.Storage.Buffer.(*buffer[T]).data }

// readOut copies n elements from offset out of a buffer, for the host.
func readOut[T any](b *buffer[T], offset, n int) []T {
	return append([]T(nil), b.data[offset:offset+n]...)
}

// register adds a cpu kernel for op. The cpu has every dtype, so a kernel
// takes all that the op's schema lets through.
func register[A any](op *dispatch.Op[A], k dispatch.Kernel[A]) { registerFor(op, dispatch.AllTypes, k) }

// registerFor adds a cpu kernel for op that takes the dtypes given. k is
// written for the wide dtypes (dispatch.Wide) only: an argument or a result
// of a 16-bit float or an 8-bit integer reaches it widened to float32 or
// int32 and comes back rounded once (dispatch.ViaCompute), so a set that holds
// float16 takes it only where it holds float32 too, and int8 only with
// int32 (dispatch.Computable). A temporary that the pool refuses (newBuffer) is the
// kernel's error.
func registerFor[A any](op *dispatch.Op[A], dtypes dispatch.DTypeSet, k dispatch.Kernel[A]) {
	registerNative(op, dispatch.Computable(dtypes), dispatch.ViaCompute(backend{}, convert, k))
}

// registerFast is registerFor with kernels ahead of k that take some
// calls themselves, in their own dtypes: each reports whether it did, and
// k (through dispatch.ViaCompute) runs where none did and writes the whole
// result.
func registerFast[A any](op *dispatch.Op[A], dtypes dispatch.DTypeSet, k dispatch.Kernel[A], fast ...func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) bool) {
	wide := dispatch.ViaCompute(backend{}, convert, k)
	registerNative(op, dispatch.Computable(dtypes), func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) error {
		for _, f := range fast {
			if f(out, in, a) {
				return nil
			}
		}
		return wide(out, in, a)
	})
}

// A tileKernel is how bfloat16 products run on packed tiles (amx.go).
type tileKernel int

const (
	noTiles  tileKernel = iota // widened into the float32 GEMM
	dotTiles                   // AVX512-BF16's dot products
	amxTiles                   // AMX's tile registers
)

func (k tileKernel) String() string { return [...]string{"the float32 GEMM", "AVX512-BF16", "AMX"}[k] }

// registerTiled is registerFast with a bfloat16 kernel on packed tiles
// (amx.go): it runs where every argument is bfloat16, the result bfloat16
// or float32 (matmul_wide's), and the machine has a tileKernel.
func registerTiled[A any](op *dispatch.Op[A], dtypes dispatch.DTypeSet, k dispatch.Kernel[A], kernel func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) bool) {
	registerFast(op, dtypes, k, tiled(kernel))
}

// tiled is kernel where the machine has a tileKernel and the call is the
// tiles' (onTiles), false elsewhere.
func tiled[A any](kernel func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) bool) func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) bool {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) bool {
		return tiles != noTiles && onTiles(out, in) && kernel(out, in, a)
	}
}

func onTiles(out *dispatch.Tensor, in []*dispatch.Tensor) bool {
	for _, t := range in {
		if t.DType != dispatch.BFloat16 {
			return false
		}
	}
	return out.DType == dispatch.BFloat16 || out.DType == dispatch.Float32
}

// registerNative adds a cpu kernel for op that handles every dtype in
// dtypes itself, the narrow ones included: the ops that move elements
// without computing on them (contiguous, cast, where), which must keep
// every bit.
func registerNative[A any](op *dispatch.Op[A], dtypes dispatch.DTypeSet, k dispatch.Kernel[A]) {
	dispatch.RegisterKernel(kind, op, dtypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) error {
		return unwound(func() error { return k(out, in, a) })
	})
}
