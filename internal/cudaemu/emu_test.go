package cudaemu_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/lathe-ml/lathe/internal/cudaemu"
	"github.com/lathe-ml/lathe/kernels/ptx"
)

// The tests here launch each family's kernels directly, with the
// arguments and grids their launch contracts allow, on the cases whose
// semantics are easy to get wrong, and compare with a direct transcription
// of the rule. The cuda backend's TestKernelsMatchCPU covers the rest:
// every registered kernel, launched as the backend launches it, against
// the cpu backend on random data.

// host is a test's handle on the emulation: launches checked against the
// PTX, and memory freed when the test ends.
type host struct {
	t   *testing.T
	emu *cudaemu.Emulator
}

func newHost(t *testing.T) *host {
	t.Helper()
	emu, err := cudaemu.Load("../..")
	if errors.Is(err, cudaemu.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &host{t, emu}
}

// launch runs kernel fn on a 1-D grid of blocks blocks of threads threads.
func (h *host) launch(fn string, blocks, threads uint32, args ...any) {
	h.t.Helper()
	h.launch3(fn, [3]uint32{blocks, 1, 1}, [3]uint32{threads, 1, 1}, args...)
}

// launch3 runs kernel fn over grid and block, after checking args against
// the PTX entry's parameters: a wrong Go type would be read as the wrong
// C type, silently.
func (h *host) launch3(fn string, grid, block [3]uint32, args ...any) {
	h.t.Helper()
	params, ok := entries()[fn]
	if !ok {
		h.t.Fatalf("no PTX entry %s", fn)
	}
	var kinds []string
	for _, a := range args {
		kinds = append(kinds, argKind(a))
	}
	if !slices.Equal(kinds, params) {
		h.t.Fatalf("%s(%s): the PTX entry takes (%s)", fn, strings.Join(kinds, ", "), strings.Join(params, ", "))
	}
	if err := h.emu.Launch(fn, grid, block, args...); err != nil {
		h.t.Fatal(err)
	}
}

// entries are the PTX kernels' parameter kinds by name: u64, u32, f64,
// f32, or b8[N] for a struct of N bytes.
var entries = sync.OnceValue(func() map[string][]string {
	out := map[string][]string{}
	head := regexp.MustCompile(`(?s)\.visible \.entry (\w+)\((.*?)\)`)
	param := regexp.MustCompile(`\.param (?:\.align \d+ )?\.(\w+) \w+?(\[\d+\])?[,\n]`)
	for _, mod := range ptx.Names() {
		src, _ := ptx.Module(mod)
		for _, m := range head.FindAllSubmatch(src, -1) {
			var e []string
			for _, p := range param.FindAllSubmatch(append(m[2], '\n'), -1) {
				e = append(e, string(p[1])+string(p[2]))
			}
			out[string(m[1])] = e
		}
	}
	return out
})

func argKind(a any) string {
	switch v := a.(type) {
	case uint64, int64:
		return "u64"
	case int32, uint32:
		return "u32"
	case float64:
		return "f64"
	case float32:
		return "f32"
	case []byte:
		return fmt.Sprintf("b8[%d]", len(v))
	}
	return fmt.Sprintf("%T", a)
}

// elem is a dtype's Go type as the kernels store it (bool as a uint8, a
// 16-bit float as its bits, uint16), or a float32's bits (uint32).
type elem interface {
	~float32 | ~float64 | ~int32 | ~int64 | ~uint8 | ~int8 | ~uint16 | ~uint32
}

// put copies xs to new device memory.
func put[T elem](h *host, xs ...T) uint64 {
	n := len(xs) * int(unsafe.Sizeof(*new(T)))
	p := cudaemu.Alloc(n)
	h.t.Cleanup(func() { cudaemu.Free(p) })
	if n > 0 {
		cudaemu.Write(p, unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), n))
	}
	return p
}

// zeros is n zeroed elements of device memory.
func zeros[T elem](h *host, n int) uint64 { return put(h, make([]T, n)...) }

// get reads n elements from p.
func get[T elem](p uint64, n int) []T {
	out := make([]T, n)
	if n > 0 {
		size := n * int(unsafe.Sizeof(out[0]))
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), size), cudaemu.Read(p, size))
	}
	return out
}

// at is element i's address from p.
func at[T elem](p uint64, i int) uint64 { return p + uint64(i*int(unsafe.Sizeof(*new(T)))) }

// cLayout is Layout (kernels/cuda/lathe.cuh), cRows Rows, cPoolGeom
// PoolGeom (window.cuh) and cMatmulStrides MatmulStrides (matmul.cu): every
// field an int64, so binary.Append lays them out as the kernels read them.
type (
	cLayout struct {
		Rank   int64
		Shape  [8]int64
		Stride [4][8]int64
		Offset [4]int64
	}
	cRows struct {
		OuterRank, InnerRank int64
		OuterShape           [8]int64
		OuterStride          [2][8]int64
		InnerShape           [8]int64
		InnerStride          [2][8]int64
		Offset               [2]int64
	}
	cPoolGeom struct {
		Dims                                          int64
		In, Out, Kernel, Stride, Padding, Dilation    [3]int64
		Adaptive, Exclude, Divisor, InPlane, OutPlane int64
	}
	cMatmulStrides struct{ A, B, C [3]int64 }
)

func bytesOf(v any) []byte {
	b, err := binary.Append(nil, binary.LittleEndian, v)
	if err != nil {
		panic(err)
	}
	return b
}

// layout is a Layout over shape whose operand k has strides[k].
func layout(shape []int64, strides ...[]int64) []byte {
	L := cLayout{Rank: int64(len(shape))}
	copy(L.Shape[:], shape)
	for k, s := range strides {
		copy(L.Stride[k][:], s)
	}
	return bytesOf(L)
}

// rows is a Rows of outer shape oshape and inner shape ishape, operand k
// (0 the output, 1 the input) with strides ostrides[k] and istrides[k].
func rows(oshape []int64, ostrides [2][]int64, ishape []int64, istrides [2][]int64) []byte {
	R := cRows{OuterRank: int64(len(oshape)), InnerRank: int64(len(ishape))}
	copy(R.OuterShape[:], oshape)
	copy(R.InnerShape[:], ishape)
	for k := range 2 {
		copy(R.OuterStride[k][:], ostrides[k])
		copy(R.InnerStride[k][:], istrides[k])
	}
	return bytesOf(R)
}

// same is equality that counts two NaNs as equal, within a relative
// tolerance.
func same(got, want, tol float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	return got == want || math.Abs(got-want) <= tol*math.Abs(want)
}

func TestStructSizes(t *testing.T) {
	// The sizes the kernels' static_asserts give.
	for _, c := range []struct {
		v    any
		size int
	}{{cLayout{}, 360}, {cRows{}, 416}, {cPoolGeom{}, 192}, {cMatmulStrides{}, 72}} {
		if n := binary.Size(c.v); n != c.size {
			t.Errorf("%T is %d bytes, the kernels' %d", c.v, n, c.size)
		}
	}
}
