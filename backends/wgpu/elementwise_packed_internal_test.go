//go:build cgo

package wgpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// The elementwise kernels read and write the narrow dtypes in their words
// (ops_elementwise.go). The tests here run the family's ops that way,
// through dispatch, and the same kernels wrapped in dispatch.ViaCompute
// (the path that the other families take, and that these took before),
// and want the same bits, NaN payloads included; and they count the
// launches, so that a native call is known to be one launch and no
// conversion.

// elementwiseCase is one op of the family: call runs it through dispatch,
// viaCompute runs its kernel inside dispatch.ViaCompute on an output that
// Infer describes, and checked says the op has value checks (which, for a
// narrow int argument, convert it for their own kernels); backward is an
// activation's backward op, grad·f'(x).
type elementwiseCase struct {
	name              string
	op                *dispatch.Schema
	arity             int
	checked, backward bool
	call              func(in []*dispatch.Tensor) (*dispatch.Tensor, error)
	viaCompute        func(in []*dispatch.Tensor) (*dispatch.Tensor, error)
}

func caseOf[A any](op *dispatch.Op[A], a A, k dispatch.Kernel[A], arity int) elementwiseCase {
	return caseVia(op, a, dispatch.ViaCompute(registered, convert, k), arity)
}

// caseVia is caseOf with the reference path wide, k inside its wrapper:
// ViaCompute for the ops that compute, ViaBits for where, which moves a
// 16-bit float's bits as they are.
func caseVia[A any](op *dispatch.Op[A], a A, wide dispatch.Kernel[A], arity int) elementwiseCase {
	return elementwiseCase{name: op.Name, op: &op.Schema, arity: arity, checked: op.Checks != nil, backward: strings.HasSuffix(op.Name, "_backward"),
		call: func(in []*dispatch.Tensor) (*dispatch.Tensor, error) { return dispatch.Call(op, a, in...) },
		viaCompute: func(in []*dispatch.Tensor) (*dispatch.Tensor, error) {
			dt, shape, err := op.Infer(in, a)
			if err != nil {
				return nil, err
			}
			out, err := dispatch.Empty(in[0].Device, dt, shape)
			if err != nil {
				return nil, err
			}
			if err := wide(out, in, a); err != nil {
				out.Release()
				return nil, err
			}
			return out, nil
		}}
}

// elementwiseCases are the family's ops, each with the kernel that
// init registers for it; the unary ops' attributes are in the range of
// every dtype (clamp to [1, 20] for the ints).
func elementwiseCases() []elementwiseCase {
	var cs []elementwiseCase
	attrs := ops.Params{A: 0.75, B: 20.25}
	for _, u := range ops.UnaryOps {
		cs = append(cs, caseOf(u.Op, attrs, unaryKernel(u.Op, unaryExprs[u.Name]), 1))
	}
	for _, b := range ops.BinaryOps {
		cs = append(cs, caseOf(b.Op, dispatch.None{}, binaryKernel(b), 2))
	}
	return append(cs, caseOf(ops.LogicalNot, dispatch.None{}, logicalNot, 1),
		caseVia(ops.Where, dispatch.None{}, dispatch.ViaBits(registered, convertBits, where), 3))
}

// patterned is a flat tensor on wgpu:0 and its elements' bits.
type patterned struct {
	t    *dispatch.Tensor
	bits []uint16
}

// narrowPatterns are n elements of dt as bits: for the 16-bit floats
// their specials first (±0, subnormals, the least normal, the largest
// finite and values whose sum or product rounds to Inf, ±Inf, quiet and
// signaling NaNs with payloads, both signs), then small values where the
// functions change, then random patterns; for the 8-bit integers every
// value, shuffled. positive keeps out what an int op's value checks
// refuse (a negative exponent, a zero divisor).
func narrowPatterns(dt dispatch.DType, n int, seed uint64, positive bool) []uint16 {
	var pats []uint16
	r := rand.New(rand.NewPCG(seed, 7))
	switch dt {
	case dispatch.Float16:
		pats = []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x0155, 0x03ff, 0x83ff, 0x0400, 0x8400, 0x7bff, 0xfbff, 0x7bfe, 0x7800,
			0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7e01, 0x7dff, 0x7c01, 0xfd55, 0x3c00, 0xbc00, 0x3c01, 0x3555, 0x3800, 0x4000, 0x4248, 0x1400}
		for v := float32(-9); v < 9; v += 0.3 {
			pats = append(pats, half.Float16FromFloat32(v))
		}
	case dispatch.BFloat16:
		pats = []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x0055, 0x007f, 0x807f, 0x0080, 0x8080, 0x7f7f, 0xff7f, 0x7f7e, 0x7f00,
			0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7fc1, 0x7fbf, 0x7f81, 0xff95, 0x3f80, 0xbf80, 0x3f81, 0x3eab, 0x3f00, 0x4000, 0x4049, 0x3400}
		for v := float32(-9); v < 9; v += 0.3 {
			pats = append(pats, half.BFloat16FromFloat32(v))
		}
	default:
		for v := range 256 {
			pats = append(pats, uint16(v))
		}
		r.Shuffle(len(pats), func(i, j int) { pats[i], pats[j] = pats[j], pats[i] })
	}
	for len(pats) < n {
		pats = append(pats, uint16(r.Uint32()))
	}
	pats = slices.Clone(pats[:n])
	if dt == dispatch.Int8 || dt == dispatch.Uint8 {
		for i, p := range pats {
			pats[i] = p & 0xff
			if positive {
				pats[i] = max(p&0x7f, 1)
			}
		}
	}
	return pats
}

// upload puts bits, as elements of dt, on wgpu:0 as a flat tensor (a bool
// is bit 0; a float32 is the float16 bits widened).
func upload(t *testing.T, dt dispatch.DType, bits []uint16) patterned {
	t.Helper()
	var host any
	switch dt {
	case dispatch.Float16:
		host = convertSlice[half.Float16](bits)
	case dispatch.BFloat16:
		host = convertSlice[half.BFloat16](bits)
	case dispatch.Int8:
		host = convertSlice[int8](bits)
	case dispatch.Uint8:
		host = convertSlice[uint8](bits)
	case dispatch.Bool:
		b := make([]bool, len(bits))
		for i, v := range bits {
			b[i] = v&1 != 0
		}
		host = b
	case dispatch.Float32:
		f := make([]float32, len(bits))
		for i, v := range bits {
			f[i] = half.Float16ToFloat32(v)
		}
		host = f
	}
	dev := dispatch.Device{Kind: kind}
	buf, err := registered.Upload(dev, host)
	if err != nil {
		t.Fatal(err)
	}
	x := dispatch.NewTensor(dev, dt, []int{len(bits)}, buf)
	t.Cleanup(x.Release)
	return patterned{x, bits}
}

func convertSlice[T ~uint16 | ~int8 | ~uint8](bits []uint16) []T {
	out := make([]T, len(bits))
	for i, v := range bits {
		out[i] = T(v)
	}
	return out
}

// resultBits reads t (contiguous) back as the bits of each element.
func resultBits(t *dispatch.Tensor) ([]uint32, error) {
	data, err := registered.Read(t.Device, t.Storage.Buffer, t.DType, t.Offset, t.Numel())
	if err != nil {
		return nil, err
	}
	out := make([]uint32, t.Numel())
	for i := range out {
		switch v := data.(type) {
		case []half.Float16:
			out[i] = uint32(v[i])
		case []half.BFloat16:
			out[i] = uint32(v[i])
		case []int8:
			out[i] = uint32(uint8(v[i]))
		case []uint8:
			out[i] = uint32(v[i])
		case []bool:
			if v[i] {
				out[i] = 1
			}
		default:
			return nil, fmt.Errorf("read back %T", data)
		}
	}
	return out, nil
}

// isNaN reports whether bits are a NaN of dt.
func isNaN(dt dispatch.DType, bits uint32) bool {
	switch dt {
	case dispatch.Float16:
		return bits&0x7c00 == 0x7c00 && bits&0x3ff != 0
	case dispatch.BFloat16:
		return bits&0x7f80 == 0x7f80 && bits&0x7f != 0
	case dispatch.Float32:
		return bits&0x7fffffff > 0x7f800000
	}
	return false
}

// isInf reports whether bits are ±Inf of dt.
func isInf(dt dispatch.DType, bits uint32) bool {
	switch dt {
	case dispatch.Float16:
		return bits&0x7fff == 0x7c00
	case dispatch.BFloat16:
		return bits&0x7fff == 0x7f80
	}
	return false
}

// argView is a view of a flat base tensor.
type argView func(base *dispatch.Tensor) *dispatch.Tensor

func flat(n, off int) argView {
	return func(b *dispatch.Tensor) *dispatch.Tensor { return b.View([]int{n}, []int{1}, off) }
}

func viewAt(shape, strides []int, off int) argView {
	return func(b *dispatch.Tensor) *dispatch.Tensor { return b.View(shape, strides, off) }
}

func scalar(off int) argView { return viewAt([]int{}, []int{}, off) }

// packedLayouts are the arguments' layouts, for up to three arguments
// (a unary op takes the first, where the third as its cond) over bases of
// 1100 elements: flat at odd and even element offsets into the packed
// words, odd and even lengths (a tail of one to three elements in the last
// word of an 8-bit result), 0 and 1 elements, 0-d scalars either side, a
// transposed view, a broadcast row and column, an expanded row (stride
// 0), a step and a reversal.
var packedLayouts = []struct {
	name string
	args [3]argView
}{
	{"flat/n0", [3]argView{flat(0, 1), flat(0, 0), flat(0, 2)}},
	{"flat/n1/off1", [3]argView{flat(1, 1), flat(1, 0), flat(1, 3)}},
	{"flat/n2", [3]argView{flat(2, 0), flat(2, 3), flat(2, 1)}},
	{"flat/n3/off2", [3]argView{flat(3, 2), flat(3, 1), flat(3, 0)}},
	{"flat/n37/off1", [3]argView{flat(37, 1), flat(37, 4), flat(37, 0)}},
	{"flat/n38/off3", [3]argView{flat(38, 3), flat(38, 0), flat(38, 5)}},
	{"flat/n1001", [3]argView{flat(1001, 0), flat(1001, 7), flat(1001, 2)}},
	{"scalar_rhs", [3]argView{flat(37, 2), scalar(5), scalar(1)}},
	{"scalar_lhs", [3]argView{scalar(3), flat(38, 1), flat(38, 0)}},
	{"scalars", [3]argView{scalar(1), scalar(2), scalar(0)}},
	{"transposed[7,9]", [3]argView{viewAt([]int{7, 9}, []int{1, 7}, 1), viewAt([]int{7, 9}, []int{9, 1}, 2), viewAt([]int{7, 1}, []int{1, 1}, 3)}},
	{"bcast_row[7,9]", [3]argView{viewAt([]int{7, 9}, []int{9, 1}, 0), viewAt([]int{1, 9}, []int{9, 1}, 1), viewAt([]int{7, 1}, []int{1, 1}, 0)}},
	{"bcast_col[6,9]", [3]argView{viewAt([]int{6, 9}, []int{9, 1}, 1), viewAt([]int{6, 1}, []int{1, 1}, 3), viewAt([]int{1, 9}, []int{9, 1}, 0)}},
	{"expanded[7,9]", [3]argView{viewAt([]int{7, 9}, []int{0, 1}, 3), viewAt([]int{7, 9}, []int{9, 1}, 0), viewAt([]int{7, 9}, []int{0, 1}, 1)}},
	{"step_flip", [3]argView{viewAt([]int{37}, []int{2}, 1), viewAt([]int{37}, []int{-1}, 40), viewAt([]int{37}, []int{3}, 0)}},
}

// launchesOf runs f and returns the ops it recorded on wgpu:0, in order
// (convert for each conversion). f must not submit: no read-back.
func launchesOf(t *testing.T, f func()) []string {
	t.Helper()
	d, _ := open()
	d.mu.Lock()
	err := d.flush()
	d.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	f()
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.recorded)
}

// wgpuOrSkip skips where wgpu:0 cannot open.
func wgpuOrSkip(t *testing.T) {
	if _, err := open(); err != nil {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
}

// packedDTypes are the dtypes that the elementwise kernels take packed.
var packedDTypes = []dispatch.DType{dispatch.Float16, dispatch.BFloat16, dispatch.Int8, dispatch.Uint8}

// TestElementwisePackedEveryOp: each op of the family on each narrow
// dtype it takes gives ViaCompute's bits in one launch of its own and no
// conversion (but what the value checks of an int op convert). The unary
// ops see 2001 patterns from an odd element offset; a binary op every
// pair of a dtype's first 101 (every pair of 8-bit values), as a row from
// an odd element offset broadcast against a column; where the same, with
// a column of conditions.
func TestElementwisePackedEveryOp(t *testing.T) {
	wgpuOrSkip(t)
	cond := upload(t, dispatch.Bool, narrowPatterns(dispatch.Uint8, 256, 3, false))
	for _, dt := range packedDTypes {
		pairs := 101
		if dt.IsInt() {
			pairs = 256
		}
		a := upload(t, dt, narrowPatterns(dt, 2002, 1, false))
		b := upload(t, dt, narrowPatterns(dt, pairs+1, 2, false))
		positive := upload(t, dt, narrowPatterns(dt, pairs+1, 2, true))
		row := viewAt([]int{1, pairs}, []int{pairs, 1}, 1)
		col := viewAt([]int{pairs, 1}, []int{1, 1}, 0)
		for _, c := range elementwiseCases() {
			first := dt
			if c.op == &ops.Where.Schema {
				first = dispatch.Bool
			}
			if !c.op.KernelDTypes(kind).Has(first) {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", c.name, dt), func(t *testing.T) {
				var in []patterned
				switch c.arity {
				case 1:
					in = []patterned{{flat(2001, 1)(a.t), a.bits}}
				case 2:
					rhs := b
					if c.checked && dt.IsInt() {
						rhs = positive
					}
					in = []patterned{{row(a.t), a.bits}, {col(rhs.t), rhs.bits}}
				default:
					in = []patterned{{col(cond.t), cond.bits}, {row(a.t), a.bits}, {col(b.t), b.bits}}
				}
				comparePaths(t, c, in)
			})
		}
	}
}

// TestElementwisePackedLayouts: a unary op, a binary op of each kind of
// result (a narrow one, Bool) and where, for a 16-bit and an 8-bit dtype
// (two and four elements to a word), in each of packedLayouts.
func TestElementwisePackedLayouts(t *testing.T) {
	wgpuOrSkip(t)
	const n = 1100
	cond := upload(t, dispatch.Bool, narrowPatterns(dispatch.Uint8, n, 3, false))
	want := map[string]bool{"neg": true, "add": true, "lt": true, "where": true}
	for _, dt := range []dispatch.DType{dispatch.Float16, dispatch.Int8} {
		a := upload(t, dt, narrowPatterns(dt, n, 1, false))
		b := upload(t, dt, narrowPatterns(dt, n, 2, false))
		for _, c := range elementwiseCases() {
			if !want[c.name] {
				continue
			}
			for _, l := range packedLayouts {
				t.Run(fmt.Sprintf("%s/%s/%s", c.name, dt, l.name), func(t *testing.T) {
					in := []patterned{{l.args[0](a.t), a.bits}, {l.args[1](b.t), b.bits}}
					switch c.arity {
					case 1:
						in = in[:1]
					case 3:
						in = []patterned{{l.args[2](cond.t), cond.bits}, in[0], in[1]}
					}
					comparePaths(t, c, in)
				})
			}
		}
	}
}

// TestElementwisePackedMixed: the logical ops, which alone take arguments
// of two dtypes, with a narrow argument beside another dtype, each read
// in its own way.
func TestElementwisePackedMixed(t *testing.T) {
	wgpuOrSkip(t)
	const n = 256
	for _, pair := range [][2]dispatch.DType{
		{dispatch.Float16, dispatch.BFloat16}, {dispatch.BFloat16, dispatch.Float32}, {dispatch.Float32, dispatch.Float16},
		{dispatch.Int8, dispatch.Float16}, {dispatch.Uint8, dispatch.Bool}, {dispatch.Bool, dispatch.Int8},
	} {
		a := upload(t, pair[0], narrowPatterns(pair[0], n+1, 1, false))
		b := upload(t, pair[1], narrowPatterns(pair[1], n+1, 2, false))
		for _, c := range elementwiseCases() {
			if c.name != "logical_and" && c.name != "logical_or" {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s,%s", c.name, pair[0], pair[1]), func(t *testing.T) {
				comparePaths(t, c, []patterned{{viewAt([]int{1, n}, []int{n, 1}, 1)(a.t), a.bits}, {viewAt([]int{n, 1}, []int{1, 1}, 0)(b.t), b.bits}})
			})
		}
	}
}

// comparePaths runs c on in both ways and compares the bits, and the
// native call's launches. Where two NaNs meet in one float operation (both
// arguments of a binary op, or in an activation's backward op a NaN grad
// and f'(x) a NaN, at x NaN or ±Inf), which one's payload the result
// carries is the compiler's choice, and it chooses differently for a
// value read from memory and one widened in the shader: there any NaN is
// taken.
func comparePaths(t *testing.T, c elementwiseCase, in []patterned) {
	t.Helper()
	args := make([]*dispatch.Tensor, len(in))
	for k, p := range in {
		args[k] = p.t
	}
	var (
		got *dispatch.Tensor
		err error
	)
	launched := launchesOf(t, func() { got, err = c.call(args) })
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	want, err := c.viaCompute(args)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Release()
	switch {
	case got.Numel() == 0:
		if len(launched) != 0 {
			t.Errorf("an empty result launched %v", launched)
		}
	case c.checked && slices.ContainsFunc(args, func(x *dispatch.Tensor) bool { return x.DType.IsInt() }):
		if launched[len(launched)-1] != c.name {
			t.Errorf("launched %v, want %s last (ViaCompute would end with a convert)", launched, c.name)
		}
	case !slices.Equal(launched, []string{c.name}):
		t.Errorf("launched %v, want [%s] alone", launched, c.name)
	}
	g, err := resultBits(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := resultBits(want)
	if err != nil {
		t.Fatal(err)
	}
	bad, nans := 0, 0
	for i := range w {
		if g[i] == w[i] {
			continue
		}
		at := argsAt(in, i, got.Shape)
		dt := got.DType
		if isNaN(dt, g[i]) && isNaN(dt, w[i]) && len(at) == 2 &&
			(isNaN(dt, at[0]) && isNaN(dt, at[1]) || c.backward && isNaN(dt, at[0]) && (isNaN(dt, at[1]) || isInf(dt, at[1]))) {
			nans++
			continue
		}
		if bad++; bad <= 5 {
			t.Errorf("element %d is %#x, want ViaCompute's %#x (arguments %#x)", i, g[i], w[i], at)
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d elements differ", bad, len(w))
	}
	if nans > 0 {
		t.Logf("%d of %d elements are NaNs of two NaNs with another payload", nans, len(w))
	}
}

// argsAt are the bits of the arguments' elements at output element i (of
// out's shape, broadcasting each argument).
func argsAt(in []patterned, i int, shape []int) []uint32 {
	var at []uint32
	for _, p := range in {
		e, rem := p.t.Offset, i
		for d := len(shape) - 1; d >= 0; d-- {
			c := rem % shape[d]
			rem /= shape[d]
			if k := d - (len(shape) - len(p.t.Shape)); k >= 0 && p.t.Shape[k] != 1 {
				e += c * p.t.Strides[k]
			}
		}
		at = append(at, uint32(p.bits[e]))
	}
	return at
}
