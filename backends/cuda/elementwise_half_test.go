package cuda

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/cudaemu"
	"github.com/lathe-ml/lathe/internal/half"
)

// The elementwise families' float16 and bfloat16 kernels (native,
// ops_elementwise.go) compute each element in float32 in registers and
// round it once; dispatch.ViaCompute computes the same call with float32
// temporaries around the float32 kernels. The two must give the same bits,
// NaN payloads, infinities, -0 and subnormals included, in every form of
// every kernel, and a 16-bit call must launch its own kernel and no
// conversion.

// halfSpecials are 16-bit patterns that every rule of the conversions
// meets: ±0, the subnormals' ends, the normals' ends, ±Inf, quiet and
// signalling NaNs with payloads, and values whose sums, products or
// squares round past the largest finite value; the data repeats them
// between random values.
var halfSpecials = map[dispatch.DType][]uint16{
	dispatch.Float16: {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0200, 0x0400, 0x7bff, 0xfbff,
		0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01, 0x7d55, 0xfc3f, 0x3c00, 0xbc00, 0x3800, 0x3555, 0x3c01,
		0x7800, 0x5bff, 0x1400, 0x2e66},
	dispatch.BFloat16: {0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x807f, 0x0080, 0x7f7f, 0xff7f,
		0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x7fa5, 0xff81, 0x3f80, 0xbf80, 0x3f00, 0x3eab, 0x3f81,
		0x7f00, 0x5f7f, 0x0d00, 0x3dcd},
}

// wideSpecials are values of the other dtypes that a cast to a 16-bit
// float rounds at its edges: float16's rounding to Inf at 65520 and its
// ties below the subnormals, float32's NaN payloads and subnormals,
// float64's overflow of float32, and integers that float32 rounds first.
var wideSpecials = map[dispatch.DType][]float64{
	dispatch.Float32: {math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 65520, 65519.996, -65520,
		0x1p-25, 0x1.000002p-25, 0x1.8p-24, 0x1p-149, -0x1p-140, 3e38, 1e-30, 0.1, 1.0 / 3},
	dispatch.Float64: {math.NaN(), math.Inf(-1), 1e300, -1e300, 65520, 0x1.ffffffp-25, 0x1p-1074, 0x1.0000001p0,
		3.4028235677973366e38, 2049.0000000001, -0.0},
	dispatch.Int32: {0, 1, -1, 65504, 65520, 65536, 1<<24 + 1, math.MaxInt32, math.MinInt32, -3},
	dispatch.Int64: {0, 1, -1, 65519, 1<<40 + 1, -(1 << 62), math.MinInt64, 7},
	dispatch.Int8:  {0, 1, -1, 127, -128, 5},
	dispatch.Uint8: {0, 1, 255, 128, 7},
	dispatch.Bool:  {0, 1},
}

// halfData is n elements of dt's storage: the specials in turn from salt,
// every other one a random value, so that two operands with different
// salts pair every special with others.
func halfData(rng *rand.Rand, dt dispatch.DType, n, salt int) []byte {
	var b []byte
	for i := range n {
		if dispatch.Halves.Has(dt) {
			sp := halfSpecials[dt]
			h := sp[(i/2+salt)%len(sp)]
			if i%2 == 1 {
				f := float32(rng.NormFloat64() * 4)
				if dt == dispatch.Float16 {
					h = half.Float16FromFloat32(f)
				} else {
					h = half.BFloat16FromFloat32(f)
				}
			}
			b = binary.LittleEndian.AppendUint16(b, h)
			continue
		}
		sp := wideSpecials[dt]
		v := sp[(i+salt)%len(sp)]
		if i%3 == 2 && dt != dispatch.Bool {
			v = math.Round(rng.NormFloat64() * 40)
		}
		switch dt {
		case dispatch.Float32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
			if math.IsNaN(v) { // a payload, and a signalling one
				binary.LittleEndian.PutUint32(b[len(b)-4:], 0xff812345)
			}
		case dispatch.Float64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		case dispatch.Int32:
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(v)))
		case dispatch.Int64:
			b = binary.LittleEndian.AppendUint64(b, uint64(int64(v)))
		case dispatch.Int8:
			b = append(b, byte(int8(v)))
		default: // uint8, bool
			b = append(b, byte(v))
		}
	}
	return b
}

// hview is an operand's view of its storage.
type hview struct {
	shape, strides []int
	offset         int
}

// dense is a contiguous view of shape at element offset off.
func dense(off int, shape ...int) hview {
	return hview{shape, dispatch.ContiguousStrides(shape), off}
}

// span is the storage a view addresses, from element 0.
func (v hview) span() int {
	n := v.offset + 1
	for d, s := range v.shape {
		if s == 0 {
			return v.offset
		}
		n += (s - 1) * v.strides[d]
	}
	return n
}

// emuView is v of dt over a new emulation storage holding data.
func emuView(t *testing.T, dt dispatch.DType, v hview, data []byte) *dispatch.Tensor {
	t.Helper()
	p := cudaemu.Alloc(len(data))
	t.Cleanup(func() { cudaemu.Free(p) })
	cudaemu.Write(p, data)
	x := tensor(dt, v.shape, v.strides...)
	x.Offset = v.offset
	x.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, len(data)/dt.Size())
	return x
}

// halfCall is one call of an elementwise op with a 16-bit float among its
// tensors: the op's kernel and its attributes bound, the inputs' views and
// dtypes, the offset of out in its storage, and the form its native kernel
// takes ("": the dense form; "strided32_"; "strided_").
type halfCall struct {
	name      string
	fn        string // the kernel's name before its form and suffix: add, cast, ...
	run, wide func(out *dispatch.Tensor, in []*dispatch.Tensor) error
	infer     func(in []*dispatch.Tensor) (dispatch.DType, []int, error)
	dtypes    []dispatch.DType
	views     []hview
	outOff    int
	form      string
	// viaCompute: a cast with an 8-bit integer, which has no native
	// kernel and takes the float32 path.
	viaCompute bool
}

// callOf binds op's registered kernel to a and gives, beside it, the same
// kernel behind dispatch.ViaCompute: a call with a 16-bit float reaches the
// float32 kernel with float32 temporaries, as before the native kernels.
func callOf[A any](op *dispatch.Op[A], a A) (func(*dispatch.Tensor, []*dispatch.Tensor) error, func(*dispatch.Tensor, []*dispatch.Tensor) error, func([]*dispatch.Tensor) (dispatch.DType, []int, error)) {
	k := kernels[&op.Schema].(dispatch.Kernel[A])
	wide := dispatch.ViaCompute(computing{}, convert, k)
	return func(out *dispatch.Tensor, in []*dispatch.Tensor) error { return k(out, in, a) },
		func(out *dispatch.Tensor, in []*dispatch.Tensor) error { return wide(out, in, a) },
		func(in []*dispatch.Tensor) (dispatch.DType, []int, error) { return op.Infer(in, a) }
}

// halfCalls are the calls TestHalfKernelsMatchViaCompute makes, for
// float16 and bfloat16: every unary op, binary op (but the logical ones),
// comparison and where in the dense form (aligned, misaligned, a length
// past the last whole vector, a scalar, a row bias of whole vectors and
// one of parts) and the strided32 form (a transposed view, a broadcast
// column), and the casts to and from every dtype.
func halfCalls() []halfCall {
	var cs []halfCall
	add := func(name, fn string, run, wide func(*dispatch.Tensor, []*dispatch.Tensor) error, infer func([]*dispatch.Tensor) (dispatch.DType, []int, error), dts []dispatch.DType, outOff int, form string, vs ...hview) {
		cs = append(cs, halfCall{name: name, fn: fn, run: run, wide: wide, infer: infer, dtypes: dts, views: vs, outOff: outOff, form: form})
	}
	transposed := hview{[]int{5, 7}, []int{1, 5}, 0}
	for _, dt := range []dispatch.DType{dispatch.Float16, dispatch.BFloat16} {
		for _, u := range ops.UnaryOps {
			if !u.DTypes.Has(dt) {
				continue
			}
			run, wide, infer := callOf(u.Op, ops.Params{A: 0.5, B: 2})
			one := []dispatch.DType{dt}
			add(fmt.Sprintf("%s/%s/dense[37]", u.Name, dt), u.Name, run, wide, infer, one, 0, "", dense(0, 37))
			add(fmt.Sprintf("%s/%s/dense[8,8]", u.Name, dt), u.Name, run, wide, infer, one, 0, "", dense(0, 8, 8))
			add(fmt.Sprintf("%s/%s/misaligned[37]", u.Name, dt), u.Name, run, wide, infer, one, 1, "", dense(3, 37))
			add(fmt.Sprintf("%s/%s/transposed[5,7]", u.Name, dt), u.Name, run, wide, infer, one, 0, "strided32_", transposed)
		}
		for _, b := range ops.BinaryOps {
			if !b.DTypes.Has(dt) || b.Op == ops.LogicalAnd || b.Op == ops.LogicalOr {
				continue
			}
			run, wide, infer := callOf(b.Op, dispatch.None{})
			two := []dispatch.DType{dt, dt}
			for _, c := range []struct {
				layout string
				outOff int
				form   string
				x, y   hview
			}{
				{"[5,13]x[5,13]", 0, "", dense(0, 5, 13), dense(0, 5, 13)},
				{"[5,13]x[]", 0, "", dense(0, 5, 13), dense(4)},
				{"[]x[5,16]", 0, "", dense(2), dense(0, 5, 16)},
				{"row[5,16]x[16]", 0, "", dense(0, 5, 16), dense(0, 16)},
				{"row[5,13]x[13]", 0, "", dense(0, 5, 13), dense(0, 13)},
				{"misaligned[37]x[37]", 3, "", dense(1, 37), dense(2, 37)},
				{"transposed[5,7]x[5,7]", 0, "strided32_", transposed, dense(0, 5, 7)},
				{"column[5,13]x[5,1]", 0, "strided32_", dense(0, 5, 13), dense(0, 5, 1)},
			} {
				add(fmt.Sprintf("%s/%s/%s", b.Name, dt, c.layout), b.Name, run, wide, infer, two, c.outOff, c.form, c.x, c.y)
			}
		}
		run, wide, infer := callOf(ops.Where, dispatch.None{})
		three := []dispatch.DType{dispatch.Bool, dt, dt}
		add(fmt.Sprintf("where/%s/[5,16]x[5,16]x[]", dt), "where", run, wide, infer, three, 0, "", dense(0, 5, 16), dense(0, 5, 16), dense(0))
		add(fmt.Sprintf("where/%s/row[16]x[5,16]x[5,16]", dt), "where", run, wide, infer, three, 0, "", dense(0, 16), dense(0, 5, 16), dense(0, 5, 16))
		add(fmt.Sprintf("where/%s/misaligned[37]", dt), "where", run, wide, infer, three, 1, "", dense(1, 37), dense(1, 37), dense(3, 37))
		add(fmt.Sprintf("where/%s/[5,1]x[5,7]^Tx[7]", dt), "where", run, wide, infer, three, 0, "strided32_", dense(0, 5, 1), transposed, dense(0, 7))

		for _, other := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Int32, dispatch.Int64, dispatch.Bool,
			dispatch.Float16, dispatch.BFloat16, dispatch.Int8, dispatch.Uint8} {
			dirs := [][2]dispatch.DType{{dt, other}, {other, dt}}
			if dispatch.Halves.Has(other) {
				dirs = dirs[:1] // the other direction is the other dtype's
			}
			for _, dir := range dirs {
				run, wide, infer := callOf(ops.Cast, ops.CastTo{DType: dir[1]})
				from := []dispatch.DType{dir[0]}
				name := fmt.Sprintf("cast/%s-%s", dir[0], dir[1])
				add(name+"/dense[37]", "cast", run, wide, infer, from, 0, "", dense(0, 37))
				add(name+"/misaligned[37]", "cast", run, wide, infer, from, 1, "", dense(1, 37))
				add(name+"/transposed[5,7]", "cast", run, wide, infer, from, 0, "strided32_", transposed)
				if dispatch.Bytes.Has(dir[0]) || dispatch.Bytes.Has(dir[1]) {
					for i := len(cs) - 3; i < len(cs); i++ {
						cs[i].viaCompute = true
					}
				}
			}
		}
		run, wide, infer = callOf(ops.Contiguous, dispatch.None{})
		add(fmt.Sprintf("contiguous/%s/transposed[5,7]", dt), "cast", run, wide, infer, []dispatch.DType{dt}, 0, "strided32_", transposed)
	}
	return cs
}

// TestHalfKernelsMatchViaCompute runs halfCalls on the emulation, each
// through its native kernel and through dispatch.ViaCompute, and requires
// the same bytes, out's storage around it untouched included (a move,
// where or a copy, must give the bits it reads instead, a signalling NaN
// that the float32 path quiets too); then again
// with the 32-bit walk turned off (fits32 = 0), so that every call takes
// the 64-bit strided form. Each native call must launch one kernel of its
// form and dtypes, and no conversion; the casts with an int8 or uint8,
// which have no native kernel, must convert.
func TestHalfKernelsMatchViaCompute(t *testing.T) {
	emulate(t)
	fns := emulatedLaunches(t)
	calls := halfCalls()
	limit := fits32
	t.Cleanup(func() { fits32 = limit })
	for _, wide := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, c := range calls {
			name := c.name
			if wide {
				if c.viaCompute {
					continue // the float32 path, whose conversions have no strided form to take
				}
				name = "strided64/" + name
			}
			t.Run(name, func(t *testing.T) {
				var in []*dispatch.Tensor
				for k, v := range c.views {
					in = append(in, emuView(t, c.dtypes[k], v, halfData(rng, c.dtypes[k], v.span(), 5*k)))
				}
				dt, shape, err := c.infer(in)
				if err != nil {
					t.Fatal(err)
				}
				n := dispatch.Numel(shape)
				size := (c.outOff + n) * dt.Size()
				poison := bytes.Repeat([]byte{0xa5}, size)
				outOn := func() (*dispatch.Tensor, uint64) {
					p := cudaemu.Alloc(size)
					t.Cleanup(func() { cudaemu.Free(p) })
					cudaemu.Write(p, poison)
					out := tensor(dt, shape)
					out.Offset = c.outOff
					out.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, c.outOff+n)
					return out, p
				}
				out, p := outOn()
				*fns = (*fns)[:0]
				if wide {
					// Only around the native call: a conversion, which
					// has no strided form, cannot take fits32 = 0.
					fits32 = 0
				}
				err = c.run(out, in)
				fits32 = limit
				if err != nil {
					t.Fatal(err)
				}
				launched := slices.Clone(*fns)
				ref, q := outOn()
				*fns = (*fns)[:0]
				if err := c.wide(ref, in); err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(*fns, func(f string) bool { return strings.Contains(f, "/convert_") }) {
					t.Errorf("the float32 path launched %v, no conversion", *fns)
				}
				checkNative(t, c, dt, wide, launched)
				got, want := cudaemu.Read(p, size), cudaemu.Read(q, size)
				if !bytes.Equal(got[:c.outOff*dt.Size()], poison[:c.outOff*dt.Size()]) {
					t.Errorf("wrote before out's offset")
				}
				got, want = got[c.outOff*dt.Size():], want[c.outOff*dt.Size():]
				// A move (where, a copy, a cast to the same dtype) gives
				// the element it reads as it is, a signalling NaN too,
				// which the float32 path quiets.
				moves := c.fn == "where" || c.fn == "cast" && len(c.dtypes) == 1 && c.dtypes[0] == dt
				bad := 0
				for i := range n {
					g, w := got[i*dt.Size():(i+1)*dt.Size()], want[i*dt.Size():(i+1)*dt.Size()]
					if moves {
						if m := movedBits(c.fn, inputBitsAt(in, shape, i)); bitsOf(g) != m {
							if bad < 4 {
								t.Errorf("element %d: %#x, want the moved %#x (inputs %s)", i, bitsOf(g), m, elementsAt(in, shape, i))
							}
							bad++
						}
						continue
					}
					if !bytes.Equal(g, w) {
						if bad < 4 {
							t.Errorf("element %d: %#x, the float32 path %#x (inputs %s)", i, bitsOf(g), bitsOf(w), elementsAt(in, shape, i))
						}
						bad++
					}
				}
				if bad > 4 {
					t.Errorf("%d of %d elements differ", bad, n)
				}
			})
		}
	}
}

// checkNative checks the launches of a native call: one kernel of c's form
// (or of the 64-bit strided form, where strided64) and dtypes, in the
// module moduleOf names; a cast with an 8-bit integer, conversions.
func checkNative(t *testing.T, c halfCall, out dispatch.DType, strided64 bool, launched []string) {
	t.Helper()
	if c.viaCompute {
		if !slices.ContainsFunc(launched, func(f string) bool { return strings.Contains(f, "/convert_") }) {
			t.Errorf("a cast with an 8-bit integer launched %v: want the float32 path", launched)
		}
		return
	}
	dt := c.dtypes[len(c.dtypes)-1]
	sfx, mod := suffix(dt), binaryModule(c.fn, dt)
	switch {
	case c.fn == "cast":
		sfx, mod = suffix(c.dtypes[0])+"_"+suffix(out), moduleOf("elementwise", c.dtypes[0], out)
	case len(c.dtypes) == 1:
		mod = unaryModule(c.fn, dt)
	}
	form := c.form
	if strided64 {
		form = "strided_"
	}
	fn := c.fn
	if fn == "pow" && dispatch.Numel(c.views[1].shape) == 1 {
		fn = "pow_scalar" // an exponent of one element, as torch's scalar exponent
	}
	want := mod + "/" + fn + "_" + form + sfx
	if len(launched) != 1 || launched[0] != want {
		t.Errorf("launched %v, want %s alone", launched, want)
	}
}

// elementsAt describes the input elements that out's element i reads, for
// a failure's message.
func elementsAt(in []*dispatch.Tensor, shape []int, i int) string {
	var parts []string
	for k, v := range inputBitsAt(in, shape, i) {
		parts = append(parts, fmt.Sprintf("%s %#x", in[k].DType, v))
	}
	return strings.Join(parts, ", ")
}

// inputBitsAt is each input's element that out's element i reads, as bits.
func inputBitsAt(in []*dispatch.Tensor, shape []int, i int) []uint64 {
	var vals []uint64
	for _, x := range in {
		off := x.Offset
		rem := i
		for d := len(shape) - 1; d >= 0; d-- {
			c := rem % shape[d]
			rem /= shape[d]
			if k := d - (len(shape) - len(x.Shape)); k >= 0 && x.Shape[k] != 1 {
				off += c * x.Strides[k]
			}
		}
		b := cudaemu.Read(x.Storage.Buffer.(emuBuffer).ptr+uint64(off*x.DType.Size()), x.DType.Size())
		vals = append(vals, bitsOf(b))
	}
	return vals
}

// movedBits is the element that a move (a copy, a cast to the same dtype,
// or where, whose inputs are cond, x, y) writes, given its inputs'
// elements in: the one it reads, as it is.
func movedBits(fn string, in []uint64) uint64 {
	if fn != "where" {
		return in[0]
	}
	if in[0] != 0 {
		return in[1]
	}
	return in[2]
}

// bitsOf is an element's little-endian bytes as an integer.
func bitsOf(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// TestHalfCallsLaunchNativeKernels records what a 16-bit call of each
// elementwise family launches, without a device: its own kernel, which
// the PTX has with the arguments given, and no conversion; the calls that
// have no native kernel (a cast to int8, the logical ops) convert.
func TestHalfCallsLaunchNativeKernels(t *testing.T) {
	ents := entries(t)
	log := recordLaunches(t)
	none := dispatch.None{}
	for _, dt := range []dispatch.DType{dispatch.Float16, dispatch.BFloat16} {
		s := suffix(dt)
		x, y := tensor(dt, []int{4, 256}), tensor(dt, []int{256})
		for _, c := range []struct {
			c    kcase
			want string // "": conversions and the float32 kernel; "*": any launches but conversions
		}{
			{caseOf(ops.Add, none, x, x), "binary_" + s + "/add_" + s},
			{caseOf(ops.Mul, none, x, y), "binary_" + s + "/mul_" + s},
			{caseOf(ops.Lt, none, x, tensor(dt, []int{4, 256}, 1, 4)), "binary_" + s + "/lt_strided32_" + s},
			{caseOf(ops.Where, none, tensor(dispatch.Bool, []int{256}), x, tensor(dt, []int{})), "binary_" + s + "/where_" + s},
			{caseOf(ops.Exp, ops.Params{}, x), "unary_" + s + "/exp_" + s},
			{caseOf(ops.Sin, ops.Params{}, x), "trig_" + s + "/sin_" + s},
			{caseOf(ops.Cast, ops.CastTo{DType: dispatch.Float32}, x), "elementwise_half/cast_" + s + "_f32"},
			{caseOf(ops.Cast, ops.CastTo{DType: dt}, tensor(dispatch.Int64, []int{4, 256})), "elementwise_half/cast_i64_" + s},
			{caseOf(ops.Contiguous, none, tensor(dt, []int{256, 4}, 1, 256)), "elementwise_half/cast_strided32_" + s + "_" + s},
			// The copies made of cast and fill (ops_copy.go): a launch or
			// two of their own (fill's, a copy's per slice), no conversion.
			{caseOf(ops.Flip, ops.FlipDims{Dims: []int{0, 1}}, x), "*"},
			{caseOf(ops.Concat, ops.ConcatDim{Dim: 0}, x, x), "*"},
			{caseOf(ops.Pad, ops.Padding{Pads: []int{1, 2}, Value: 1}, x), "*"},
			{caseOf(ops.Cast, ops.CastTo{DType: dispatch.Int8}, x), ""},
			{caseOf(ops.LogicalAnd, none, x, x), ""},
		} {
			odt, shape, err := c.c.infer(c.c.in)
			if err != nil {
				t.Fatal(err)
			}
			*log = (*log)[:0]
			label := fmt.Sprintf("%s(%s)", c.c.op.Name, describe(c.c.in))
			if err := c.c.run(tensor(odt, shape), c.c.in); err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			var fns []string
			for _, l := range *log {
				fns = append(fns, l.mod+"/"+l.fn)
				checkLaunch(t, label, ents, l)
			}
			converts := slices.ContainsFunc(fns, func(f string) bool { return strings.HasPrefix(f, "narrow/convert_") })
			switch {
			case c.want == "" && !converts:
				t.Errorf("%s launched %v: want conversions around the float32 kernel", label, fns)
			case c.want == "*" && (converts || len(fns) == 0):
				t.Errorf("%s launched %v: want its own kernels, no conversion", label, fns)
			case c.want != "" && c.want != "*" && (len(fns) != 1 || fns[0] != c.want):
				t.Errorf("%s launched %v: want %s alone", label, fns, c.want)
			}
		}
	}
}

// emulatedLaunches records the module and function of each launch from
// here to the test's end, each still run on the emulation.
func emulatedLaunches(t *testing.T) *[]string {
	var fns []string
	run := enqueue
	enqueue = func(dev dispatch.Device, mod, fn string, grid, block [3]uint32, shared uint32, args ...any) error {
		fns = append(fns, mod+"/"+fn)
		return run(dev, mod, fn, grid, block, shared, args...)
	}
	t.Cleanup(func() { enqueue = run })
	return &fns
}

// TestIndexMovesKeepHalfBits runs index_select, gather and scatter of
// float16 and bfloat16 tensors holding signalling NaNs, a -0 and a
// subnormal on the emulation: each is one launch of its own 16-bit kernel
// (index.cu's u16 instantiations, no conversion), and every element comes
// back with the bits it was read from, where float32 temporaries quieted
// the signalling NaNs.
func TestIndexMovesKeepHalfBits(t *testing.T) {
	emulate(t)
	fns := emulatedLaunches(t)
	le16 := func(v []uint16) []byte {
		b := make([]byte, 2*len(v))
		for i, h := range v {
			b[2*i], b[2*i+1] = byte(h), byte(h>>8)
		}
		return b
	}
	le64 := func(v []int64) []byte {
		b := make([]byte, 8*len(v))
		for i, x := range v {
			for k := range 8 {
				b[8*i+k] = byte(uint64(x) >> (8 * k))
			}
		}
		return b
	}
	for _, dt := range []dispatch.DType{dispatch.Float16, dispatch.BFloat16} {
		snan := uint16(0x7d01)
		if dt == dispatch.BFloat16 {
			snan = 0x7f81
		}
		bits := []uint16{snan, 0x3c00, snan | 0x8000, 0x8000, 0x0001, 0x7c00}
		x := emuView(t, dt, dense(0, 2, 3), le16(bits))
		zeros := emuView(t, dt, dense(0, 2, 3), le16(make([]uint16, 6)))
		index := func(v []int64, shape ...int) *dispatch.Tensor {
			return emuView(t, dispatch.Int64, dense(0, shape...), le64(v))
		}
		dim1 := ops.IndexDim{Dim: 1}
		for _, c := range []struct {
			name string
			op   *dispatch.Op[ops.IndexDim]
			a    ops.IndexDim
			in   []*dispatch.Tensor
			from []int // out's elements as indices into bits (-1: 0)
		}{
			{"index_select", ops.IndexSelect, ops.IndexDim{Dim: 0}, []*dispatch.Tensor{x, index([]int64{1, 0}, 2)}, []int{3, 4, 5, 0, 1, 2}},
			{"gather", ops.Gather, dim1, []*dispatch.Tensor{x, index([]int64{2, 0, 1, 0, 2, 1}, 2, 3)}, []int{2, 0, 1, 3, 5, 4}},
			{"scatter", ops.Scatter, dim1, []*dispatch.Tensor{zeros, index([]int64{2, 1, 0}, 1, 3), x}, []int{2, 1, 0, -1, -1, -1}},
		} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				k := kernels[&c.op.Schema].(dispatch.Kernel[ops.IndexDim])
				_, shape, err := c.op.Infer(c.in, c.a)
				if err != nil {
					t.Fatal(err)
				}
				p := cudaemu.Alloc(2 * dispatch.Numel(shape))
				t.Cleanup(func() { cudaemu.Free(p) })
				out := tensor(dt, shape)
				out.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, dispatch.Numel(shape))
				*fns = (*fns)[:0]
				if err := k(out, c.in, c.a); err != nil {
					t.Fatal(err)
				}
				if slices.ContainsFunc(*fns, func(f string) bool { return strings.Contains(f, "/convert_") }) {
					t.Errorf("launched %v: want the 16-bit kernels, no conversion", *fns)
				}
				got := cudaemu.Read(p, 2*dispatch.Numel(shape))
				for i, j := range c.from {
					want := uint16(0)
					if j >= 0 {
						want = bits[j]
					}
					if g := uint16(got[2*i]) | uint16(got[2*i+1])<<8; g != want {
						t.Errorf("element %d is %#04x, want %#04x", i, g, want)
					}
				}
			})
		}
	}
}
