package cuda

import (
	"bytes"
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
	"github.com/lathe-ml/lathe/internal/half"
)

// TestKernelsMatchCPU runs every registered kernel, launches and all, on the
// host emulation of the CUDA kernels (internal/cudaemu), on the same cases
// as TestKernelsLaunchWhatThePTXHas (those small enough to emulate), and
// compares each output with the cpu backend's for the same inputs. It tests
// the registrations' layouts and compositions (pad, concat, conv, the
// reductions' rows, ...) and the kernels together, end to end.
func TestKernelsMatchCPU(t *testing.T) {
	matchCPU(t, func(_ *dispatch.Schema, narrow bool) bool { return !narrow }, nil)
}

// TestElementwise64MatchCPU runs the elementwise families' cases that take
// a strided form (a transposed view, a broadcast column) with the 32-bit
// walk turned off (fits32 = 0), so that the 64-bit strided kernels, which
// only tensors past 2^31 elements reach, are checked against the cpu too.
func TestElementwise64MatchCPU(t *testing.T) {
	old := fits32
	fits32 = 0
	t.Cleanup(func() { fits32 = old })
	matchCPU(t, func(op *dispatch.Schema, narrow bool) bool { return !narrow && elementwiseOp(op) }, nil)
}

// TestElementwiseChunksMatchCPU runs the elementwise families' cases,
// narrow dtypes included, with the kernels' 32-bit limit lowered to 20
// elements, so that the dense launches past it go in chunks (denseChunk:
// 16 elements, or none where a period does not divide one, and the walk
// takes the 64-bit strided form), as a tensor past 2^31 elements does, and
// the narrow conversions too.
func TestElementwiseChunksMatchCPU(t *testing.T) {
	old := fits32
	fits32 = 20
	t.Cleanup(func() { fits32 = old })
	matchCPU(t, func(op *dispatch.Schema, _ bool) bool { return elementwiseOp(op) }, nil)
}

// elementwiseOp says whether op's cuda kernel is one of mapKernel's.
func elementwiseOp(op *dispatch.Schema) bool {
	for _, u := range ops.UnaryOps {
		if &u.Op.Schema == op {
			return true
		}
	}
	return isBinary(op) || op == &ops.Cast.Schema || op == &ops.Contiguous.Schema
}

// matchCPU runs the cases that keep takes (told the op and whether the
// case has a narrow dtype) on the emulation and compares them with the cpu backend;
// exact says which ops' narrow float results must match bit for bit (nil:
// none).
func matchCPU(t *testing.T, keep func(op *dispatch.Schema, narrow bool) bool, exact map[*dispatch.Schema]bool) {
	emulate(t)
	var allocs []uint64
	t.Cleanup(func() {
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
			narrow := dispatch.Narrow(dt)
			for _, x := range c.in {
				narrow = narrow || dispatch.Narrow(x.DType)
			}
			if !keep(op, narrow) {
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
				cpuIn = append(cpuIn, ct.View(x.Shape, x.Strides, x.Offset))
				p := cudaemu.Alloc(len(data))
				allocs = append(allocs, p)
				cudaemu.Write(p, data)
				e := tensor(x.DType, x.Shape, x.Strides...)
				e.Offset = x.Offset
				e.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, len(data)/x.DType.Size())
				emuIn = append(emuIn, e)
			}
			want, cpuErr := c.call(cpuIn)
			outBytes := dispatch.Numel(shape) * dt.Size()
			p := cudaemu.Alloc(outBytes)
			allocs = append(allocs, p)
			out := tensor(dt, shape)
			out.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, dispatch.Numel(shape))
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
			compare(t, label, dt, cudaemu.Read(p, outBytes), wantData, exact[op])
			ran++
		}
	}
	t.Logf("%d cases matched the cpu backend, and %d gave its error", ran, errorsFound)
}

// emulate points the launch hooks at the host emulation for the rest of
// the test: kernels run as they are enqueued, tensors of emuBuffer are its
// memory, and the value checks queue on slots in its memory (emuSlots),
// the queue that it returns. It skips the test where the emulation cannot
// be built, or under -short.
func emulate(t *testing.T) *checkQueue {
	t.Helper()
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
	mem := &emuSlots{}
	q := newCheckQueue(mem, checkSlots)
	oldE, oldA, oldB, oldC := enqueue, addressOf, borrow, checksOn
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
	checksOn = func(dispatch.Device) (*checkQueue, error) { return q, nil }
	oldM, oldS, oldG, oldBL, oldH := allocate, multiprocessors, gemm, blasOn, halfGemm
	allocate = func(_ dispatch.Device, dt dispatch.DType, n int) (dispatch.Buffer, error) {
		return emuBuffer{ptr: cudaemu.Alloc(n * dt.Size()), owned: true}, nil
	}
	multiprocessors = func(dispatch.Device) int { return 0 }
	// The emulation has the PTX kernels only, unless a test gives it a
	// reference cuBLAS (emuBLAS).
	gemm, blasOn, halfGemm = noBLAS, noDevice, noDevice
	oldD, oldDO := dnn, dnnOn
	dnn, dnnOn = noDNN, noDevice
	if emuBLAS != nil {
		yes := func(dispatch.Device) bool { return true }
		gemm, blasOn, halfGemm = emuBLAS, yes, yes
	}
	t.Cleanup(func() {
		allocate, multiprocessors, gemm, blasOn, halfGemm = oldM, oldS, oldG, oldBL, oldH
		dnn, dnnOn = oldD, oldDO
		enqueue, addressOf, borrow, checksOn = oldE, oldA, oldB, oldC
		for _, p := range mem.allocs {
			cudaemu.Free(p)
		}
	})
	return q
}

// emuBuffer is a tensor's memory in the emulation; an owned one (a wide
// temporary of dispatch.ViaCompute) is freed with its tensor, the others
// when the test ends.
type emuBuffer struct {
	ptr   uint64
	owned bool
}

func (b emuBuffer) Free() {
	if b.owned {
		cudaemu.Free(b.ptr)
	}
}

// emuSlots is the value checks' slot memory in the emulation, where a
// kernel has run by the time enqueue returns: read needs no wait. It
// counts the reads, which on a device are the checks' only waits.
type emuSlots struct {
	allocs []uint64
	reads  int
}

func (m *emuSlots) alloc(n int) (uint64, error) {
	p := cudaemu.Alloc(n)
	m.allocs = append(m.allocs, p)
	return p, nil
}

func (m *emuSlots) fill(p uint64, b byte, n int) error {
	cudaemu.Write(p, bytes.Repeat([]byte{b}, n))
	return nil
}

func (m *emuSlots) read(dst []byte, p uint64) error {
	m.reads++
	copy(dst, cudaemu.Read(p, len(dst)))
	return nil
}

// randomData is the bytes of a flat storage for x's view (from element 0,
// its offset included): small values, and
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
	n += x.Offset
	index := x.DType.IsInt() && (arg > 0 || op == &ops.OneHot.Schema) && !isBinary(op)
	// Attention's backward recomputes exp(score - lse) from the forward's
	// logsumexp column (the last of its out argument, lse): a random one
	// would make the probabilities vast and their differences all
	// rounding. Smaller values and a logsumexp of 2 keep them those of a
	// real forward.
	attn, lse := false, -1
	switch op {
	case &ops.Attention.Schema, &ops.AttentionMasked.Schema:
		attn = true
	case &ops.AttentionBackward.Schema:
		attn, lse = true, 3
	case &ops.AttentionMaskedBackward.Schema:
		attn, lse = true, 4 // after the mask
	}
	bnVar := op == &ops.BatchNormApply.Schema || op == &ops.BatchNormBackward.Schema
	sd := 2.0
	if attn {
		sd = 0.5
	}
	var b []byte
	float := func(i int) float64 {
		f := rng.NormFloat64() * sd
		if arg == lse && i%x.Shape[len(x.Shape)-1] == x.Shape[len(x.Shape)-1]-1 {
			f = 2
		}
		if bnVar && arg == 2 {
			f = math.Abs(f) + 0.1 // a variance: a negative one would make the channel NaN on both sides
		}
		return f
	}
	for i := range n {
		switch x.DType {
		case dispatch.Float32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(float(i))))
		case dispatch.Float64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float(i)))
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
		case dispatch.Float16:
			b = binary.LittleEndian.AppendUint16(b, half.Float16FromFloat32(float32(float(i))))
		case dispatch.BFloat16:
			b = binary.LittleEndian.AppendUint16(b, half.BFloat16FromFloat32(float32(float(i))))
		case dispatch.Int8:
			b = append(b, byte(int8(rng.IntN(11)-5)))
		case dispatch.Uint8:
			b = append(b, byte(rng.IntN(11)))
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
	case dispatch.Float16:
		return unsafe.Slice((*half.Float16)(unsafe.Pointer(&data[0])), n)
	case dispatch.BFloat16:
		return unsafe.Slice((*half.BFloat16)(unsafe.Pointer(&data[0])), n)
	case dispatch.Int8:
		return unsafe.Slice((*int8)(unsafe.Pointer(&data[0])), n)
	case dispatch.Uint8:
		return data[:n]
	}
	return unsafe.Slice((*bool)(unsafe.Pointer(&data[0])), n)
}

// compare checks got (the emulation's bytes) against want (the cpu's
// slice): integers and bools exactly, floats within a few ulps of their
// precision (the float32 kernels use single-precision functions where the
// cpu rounds float64 ones), NaN matching NaN. A 16-bit float result is
// one rounding of such a float32, so it may differ by its own ulp, unless
// exact: an op whose float32 result is correctly rounded on both sides
// (add, a copy, a cast) must give the cpu's bits.
func compare(t *testing.T, label string, dt dispatch.DType, got []byte, want any, exact bool) {
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
	case []half.Float16:
		for i, v := range w {
			g := half.Float16(binary.LittleEndian.Uint16(got[2*i:]))
			if !sameHalf(uint16(g), uint16(v), g.Float32(), v.Float32(), exact, 1.0/1024) {
				report(i, g.Float32(), v.Float32())
			}
		}
	case []half.BFloat16:
		for i, v := range w {
			g := half.BFloat16(binary.LittleEndian.Uint16(got[2*i:]))
			if !sameHalf(uint16(g), uint16(v), g.Float32(), v.Float32(), exact, 1.0/128) {
				report(i, g.Float32(), v.Float32())
			}
		}
	case []int8:
		for i, v := range w {
			if g := int8(got[i]); g != v {
				report(i, g, v)
			}
		}
	case []uint8:
		for i, v := range w {
			if g := got[i]; g != v {
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

// TestContiguousOfAnyRank copies a 10-dim view whose dims do not merge,
// which the kernels' layouts (8 dims) cannot walk at once: contiguous, the
// fix rankError gives, launches once per index of the 2 leading dims.
func TestContiguousOfAnyRank(t *testing.T) {
	emulate(t)
	x := deepView(dispatch.Int64)
	storage := make([]int64, 29525)
	for i := range storage {
		storage[i] = int64(i)
	}
	x.Storage = emuTensor(t, dispatch.Int64, storage, []int{len(storage)}, nil).Storage
	launches := emulatedLaunches(t)
	p := cudaemu.Alloc(8 * 1024)
	t.Cleanup(func() { cudaemu.Free(p) })
	out := tensor(dispatch.Int64, x.Shape)
	out.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, 1024)
	if err := caseOf(ops.Contiguous, dispatch.None{}, x).run(out, []*dispatch.Tensor{x}); err != nil {
		t.Fatal(err)
	}
	if n := len(*launches); n != 4 {
		t.Errorf("%d launches, want 4 (one per index of the 2 dims past 8)", n)
	}
	// Element i's offset is i's bits read as base-3 digits.
	got := cudaemu.Read(p, 8*1024)
	for i := range 1024 {
		want := 0
		for d, s := 0, 1; d < 10; d, s = d+1, s*3 {
			want += (i >> d & 1) * s
		}
		if g := int64(binary.LittleEndian.Uint64(got[8*i:])); g != int64(want) {
			t.Fatalf("element %d = %d, want %d", i, g, want)
		}
	}
}
