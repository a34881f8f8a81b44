package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/cudaemu"
)

// TestKernelsMatchCPU runs every registered kernel, launches and all, on the
// host emulation of the CUDA kernels (internal/cudaemu), on the same cases
// as TestKernelsLaunchWhatThePTXHas (those small enough to emulate), and
// compares each output with the cpu backend's for the same inputs. It tests
// the registrations' layouts and compositions (pad, concat, conv, the
// reductions' rows, ...) and the kernels together, end to end.
func TestKernelsMatchCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("emulating the kernels takes a while")
	}
	emu, err := cudaemu.Load("../..")
	if errors.Is(err, cudaemu.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var allocs []uint64
	oldE, oldA, oldB, oldR := enqueue, addressOf, borrow, readInts
	enqueue = func(_ dispatch.Device, mod, fn string, grid, block [3]uint32, _ uint32, args ...any) error {
		return emu.Launch(fn, grid, block, args...)
	}
	addressOf = func(t *dispatch.Tensor) uint64 {
		return t.Storage.Buffer.(emuBuffer).ptr + uint64(int64(t.Offset*t.DType.Size()))
	}
	borrow = func(_ dispatch.Device, n int) (uint64, func(), error) {
		p := cudaemu.Alloc(n)
		return p, func() { cudaemu.Free(p) }, nil
	}
	readInts = func(x *dispatch.Tensor) ([]int64, error) { return emuInts(x), nil }
	t.Cleanup(func() {
		enqueue, addressOf, borrow, readInts = oldE, oldA, oldB, oldR
		for _, p := range allocs {
			cudaemu.Free(p)
		}
	})
	byOp, registered := casesByOp()
	rng := rand.New(rand.NewPCG(1, 2))
	ran, errorsFound := 0, 0
	for _, op := range registered {
		for ci, c := range byOp[op] {
			big := false
			for _, x := range c.in {
				big = big || x.Numel() > 1<<16
			}
			if big {
				continue
			}
			dt, shape, err := c.infer(c.in)
			if err != nil {
				continue
			}
			label := fmt.Sprintf("%s#%d(%s)", op.Name, ci, describe(c.in))
			// The same data on both sides: a flat storage per input, viewed
			// through the case's shape and strides.
			var cpuIn, emuIn []*dispatch.Tensor
			for ai, x := range c.in {
				data := randomData(rng, x, op, ai)
				ct, err := dispatch.Upload(dispatch.Device{Kind: dispatch.Host}, decode(data, x.DType), x.DType, []int{len(data) / x.DType.Size()})
				if err != nil {
					t.Fatal(err)
				}
				cpuIn = append(cpuIn, ct.View(x.Shape, x.Strides, 0))
				p := cudaemu.Alloc(len(data))
				allocs = append(allocs, p)
				cudaemu.Write(p, data)
				e := tensor(x.DType, x.Shape, x.Strides...)
				e.Storage = dispatch.NewStorage(emuBuffer{p}, len(data)/x.DType.Size())
				emuIn = append(emuIn, e)
			}
			want, cpuErr := c.call(cpuIn)
			outBytes := dispatch.Numel(shape) * dt.Size()
			p := cudaemu.Alloc(outBytes)
			allocs = append(allocs, p)
			out := tensor(dt, shape)
			out.Storage = dispatch.NewStorage(emuBuffer{p}, dispatch.Numel(shape))
			err = c.run(out, emuIn)
			var ce, ke *dispatch.Error
			switch {
			case cpuErr != nil && (!errors.As(cpuErr, &ce) || !errors.As(err, &ke) || ce.Kind != ke.Kind):
				// An error of the data (an integer pow's negative exponent):
				// the cuda kernel must find it too, not compute on.
				t.Errorf("%s: the cpu says %v, cuda %v", label, cpuErr, err)
				continue
			case cpuErr != nil:
				errorsFound++
				continue
			case err != nil:
				t.Errorf("%s: %v", label, err)
				continue
			}
			wantData, err := dispatch.ReadHost(want)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, label, dt, cudaemu.Read(p, outBytes), wantData)
			ran++
		}
	}
	t.Logf("%d cases matched the cpu backend, and %d gave its error", ran, errorsFound)
}

// emuInts reads an integer tensor of the emulation in row-major order.
func emuInts(x *dispatch.Tensor) []int64 {
	size := x.DType.Size()
	out := make([]int64, 0, x.Numel())
	idx := make([]int, x.Rank())
	for range x.Numel() {
		at := x.Offset
		for d, i := range idx {
			at += i * x.Strides[d]
		}
		b := cudaemu.Read(x.Storage.Buffer.(emuBuffer).ptr+uint64(at*size), size)
		var v int64
		for k := size - 1; k >= 0; k-- {
			v = v<<8 | int64(b[k])
		}
		if size == 4 {
			v = int64(int32(v))
		}
		out = append(out, v)
		for d := x.Rank() - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < x.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// emuBuffer is a tensor's memory in the emulation.
type emuBuffer struct{ ptr uint64 }

func (emuBuffer) Free() {}

// randomData is the bytes of a flat storage for x's view: small values, and
// for index arguments (integer inputs after the first, and one_hot's) the
// values 0 and 1, which every case's indexed sizes hold.
func randomData(rng *rand.Rand, x *dispatch.Tensor, op *dispatch.Schema, arg int) []byte {
	n := 1
	for d, s := range x.Shape {
		if s == 0 {
			n = 1
			break
		}
		n += (s - 1) * max(x.Strides[d], 0)
	}
	index := x.DType.IsInt() && (arg > 0 || op == &ops.OneHot.Schema) && !isBinary(op)
	var b []byte
	for range n {
		switch x.DType {
		case dispatch.Float32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(rng.NormFloat64()*2)))
		case dispatch.Float64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(rng.NormFloat64()*2))
		case dispatch.Int32:
			v := int32(rng.IntN(11) - 5)
			if index {
				v = int32(rng.IntN(2))
			}
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		case dispatch.Int64:
			v := int64(rng.IntN(11) - 5)
			if index {
				v = int64(rng.IntN(2))
			}
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		case dispatch.Bool:
			b = append(b, byte(rng.IntN(2)))
		}
	}
	return b
}

func isBinary(op *dispatch.Schema) bool {
	for _, b := range ops.BinaryOps {
		if &b.Op.Schema == op {
			return true
		}
	}
	return op == &ops.Where.Schema
}

// decode is data as the Go slice of dt.
func decode(data []byte, dt dispatch.DType) any {
	n := len(data) / dt.Size()
	switch dt {
	case dispatch.Float32:
		return unsafe.Slice((*float32)(unsafe.Pointer(&data[0])), n)
	case dispatch.Float64:
		return unsafe.Slice((*float64)(unsafe.Pointer(&data[0])), n)
	case dispatch.Int32:
		return unsafe.Slice((*int32)(unsafe.Pointer(&data[0])), n)
	case dispatch.Int64:
		return unsafe.Slice((*int64)(unsafe.Pointer(&data[0])), n)
	}
	return unsafe.Slice((*bool)(unsafe.Pointer(&data[0])), n)
}

// compare checks got (the emulation's bytes) against want (the cpu's
// slice): integers and bools exactly, floats within a few ulps of their
// precision (the float32 kernels use single-precision functions where the
// cpu rounds float64 ones), NaN matching NaN.
func compare(t *testing.T, label string, dt dispatch.DType, got []byte, want any) {
	t.Helper()
	bad := 0
	report := func(i int, g, w any) {
		if bad < 3 {
			t.Errorf("%s: element %d = %v, cpu %v", label, i, g, w)
		}
		bad++
	}
	close := func(g, w, tol float64) bool {
		if math.IsNaN(g) || math.IsNaN(w) {
			return math.IsNaN(g) && math.IsNaN(w)
		}
		return g == w || math.Abs(g-w) <= tol*max(1, math.Abs(w))
	}
	switch w := want.(type) {
	case []float32:
		for i, v := range w {
			if g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); !close(float64(g), float64(v), 1e-5) {
				report(i, g, v)
			}
		}
	case []float64:
		for i, v := range w {
			if g := math.Float64frombits(binary.LittleEndian.Uint64(got[8*i:])); !close(g, v, 1e-12) {
				report(i, g, v)
			}
		}
	case []int32:
		for i, v := range w {
			if g := int32(binary.LittleEndian.Uint32(got[4*i:])); g != v {
				report(i, g, v)
			}
		}
	case []int64:
		for i, v := range w {
			if g := int64(binary.LittleEndian.Uint64(got[8*i:])); g != v {
				report(i, g, v)
			}
		}
	case []bool:
		for i, v := range w {
			if g := got[i] != 0; g != v {
				report(i, g, v)
			}
		}
	default:
		t.Fatalf("%s: cpu result is a %T", label, want)
	}
	if bad > 3 {
		t.Errorf("%s: %d elements differ in all (dtype %s)", label, bad, dt)
	}
}
