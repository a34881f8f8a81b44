package wgpu

import (
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/kernels/wgsl"
	"github.com/lathe-ml/lathe/layout"
)

// This file is what the op families (ops_*.go) build on: shaders rendered
// once per specialisation, the workgroup grid, and the parameter words of
// a strided layout. The launch itself is launch (launch.go).

// shader is one specialisation of a kernel family: its WGSL and the key
// under which its compiled pipeline is cached.
type shader struct {
	key  string
	code string
}

var (
	shadersMu sync.Mutex
	shaders   = map[string]*shader{}
)

// shaderFor renders family's template with data the first time key is
// asked for (key must name every field of data that changes the source).
func shaderFor(key, family string, data any) (*shader, error) {
	shadersMu.Lock()
	defer shadersMu.Unlock()
	if sh, ok := shaders[key]; ok {
		return sh, nil
	}
	code, err := wgsl.Render(family, data)
	if err != nil {
		return nil, fmt.Errorf("wgpu: rendering %s: %w", key, err)
	}
	sh := &shader{key: key, code: code}
	shaders[key] = sh
	return sh, nil
}

// The dtype sets of wgpu's kernels. A tensor on wgpu:0 is float32, int32,
// bool (a u32 word per element), int64 (two u32 words, int64.wgsl) or a
// narrow dtype packed in u32 words (float16 and bfloat16 two to a word,
// int8 and uint8 four), which most kernels see widened to float32 or
// int32 (register) and the elementwise ones read and write in their words
// (registerPacked); WGSL has no float64, so Alloc refuses it and no kernel
// meets it.
const (
	floatTypes   = dispatch.DTypeSet(1<<dispatch.Float32) | dispatch.Halves
	int32Types   = floatTypes | 1<<dispatch.Int32 | dispatch.Bytes
	numericTypes = int32Types | 1<<dispatch.Int64
	allTypes     = numericTypes | 1<<dispatch.Bool
)

// i64 is the WGSL type that holds an int64 (int64.wgsl): low word first.
const i64 = "vec2<u32>"

// register gives op a wgpu kernel for a first argument of a dtype in set
// (less those wgpu:0 cannot hold); dispatch refuses every other dtype with
// its uniform ErrUnsupported, so a kernel never checks in[0]'s dtype. k is
// written for the wide dtypes only: a float16, bfloat16, int8 or uint8
// argument or result reaches it widened to float32 or int32 and comes back
// rounded once (dispatch.ViaCompute through convert, narrow.go), so set
// takes a narrow dtype only where it holds its compute dtype too
// (dispatch.Computable). The kernels that only move elements go through
// registerMove instead.
func register[A any](op *dispatch.Op[A], set dispatch.DTypeSet, k dispatch.Kernel[A]) {
	dispatch.RegisterKernel(kind, op, dispatch.Computable(set&allTypes), counted(op, dispatch.ViaCompute(registered, convert, k)))
}

// registerMove is register for a kernel that moves elements without
// computing on them (contiguous, index_select, gather, scatter, flip,
// concat, pad): a 16-bit float reaches it as the int32 of its bits
// (dispatch.ViaBits, convertBits), so every pattern moves as it is, where
// a float32 carrier quieted a signalling NaN.
func registerMove[A any](op *dispatch.Op[A], set dispatch.DTypeSet, k dispatch.Kernel[A]) {
	// Not counted: a move walks its output (or, scattering, its index),
	// whose count Alloc bounds, and reaches an input only through its
	// strides, which are 0 along any dim too long for a storage; so the
	// rows picked from a broadcast view of 2^32 rows are right.
	dispatch.RegisterKernel(kind, op, dispatch.Computable(set&allTypes), dispatch.ViaBits(registered, convertBits, k))
}

// registerPacked is register for a kernel k that takes the narrow dtypes
// of set itself, in their packed words (elementwise.wgsl), and gives
// ViaCompute's bits for them: it is registered as it is.
func registerPacked[A any](op *dispatch.Op[A], set dispatch.DTypeSet, k dispatch.Kernel[A]) {
	dispatch.RegisterKernel(kind, op, dispatch.Computable(set&allTypes), counted(op, k))
}

// maxElements is the most elements a tensor that a wgpu kernel takes may
// show: the kernels count elements, rows and reduced lengths in u32
// parameter words and index with i32 arithmetic. A stored tensor never
// comes near it (Alloc stops at maxStorageBufferBindingSize), but a
// broadcast view (Expand, stride 0) shows as many elements as its shape
// says over a storage of one, and its count went in cut to 32 bits: the sum
// of 2^32+8 expanded ones was 8, and a matmul over an expanded inner dim of
// that length summed 8 products.
const maxElements = math.MaxInt32

// counted is k behind a check that every tensor argument shows at most
// maxElements elements, so that a count past the kernels' 32 bits is an
// error naming the op and the argument, not a wrong result.
func counted[A any](op *dispatch.Op[A], k dispatch.Kernel[A]) dispatch.Kernel[A] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) error {
		for i, t := range in {
			if t == nil {
				continue
			}
			if n := t.Numel(); n > maxElements {
				return &dispatch.Error{Op: op.Name, Arg: op.ArgName(i), Kind: dispatch.ErrUnsupported,
					Expected: "at most " + strconv.Itoa(maxElements) + " elements", Found: strconv.Itoa(n) + " elements",
					Detail: "shows " + strconv.Itoa(n) + " elements (shape " + dispatch.FormatShape(t.Shape) +
						"), more than " + t.Device.String() + "'s kernels count with 32-bit integers (" + strconv.Itoa(maxElements) + "); a broadcast view counts every element it shows",
					Fix: "run the op in parts (Split or Chunk along a dim and combine), or on the cpu"}
			}
		}
		return k(out, in, a)
	}
}

// wgslType is the WGSL element type that holds a dtype on wgpu:0: f32, i32,
// i64 (vec2<u32>) for int64, or u32 for bool.
func wgslType(dt dispatch.DType) string {
	switch dt {
	case dispatch.Float32:
		return "f32"
	case dispatch.Int32:
		return "i32"
	case dispatch.Int64:
		return i64
	}
	return "u32"
}

// wordType is the WGSL type of the words that hold one element of dt, for
// the kernels that move elements without reading them (place, gather,
// scatter, fill): u32, or vec2<u32> for int64.
func wordType(dt dispatch.DType) string {
	if dt == dispatch.Int64 {
		return i64
	}
	return "u32"
}

// wgslTypes is the set of dtypes whose WGSL types (wgslType) key exprs,
// with the narrow dtypes that compute in them (register, registerPacked).
func wgslTypes(exprs map[string]string) dispatch.DTypeSet {
	var set dispatch.DTypeSet
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Int32, dispatch.Int64, dispatch.Bool} {
		if exprs[wgslType(dt)] != "" {
			set |= 1 << dt
		}
	}
	return set | dispatch.Halves | dispatch.Bytes
}

// workgroup is the number of invocations per workgroup in every kernel
// (prelude.wgsl's WG), and perItem the elements an invocation of a flat
// kernel takes (its ITEM_ELEMENTS: elementwise, copy, fill and convert;
// the prelude says why).
const (
	workgroup = 256
	perItem   = 8
)

// gridPer returns the workgroups that cover n elements of a flat kernel,
// perItem an invocation.
func gridPer(n int) [3]uint32 { return grid((n + perItem - 1) / perItem) }

// grid returns the workgroups that cover n items, workgroup per group:
// x up to 65535 (WebGPU's least maxComputeWorkgroupsPerDimension), then y.
func grid(n int) [3]uint32 {
	groups := (n + workgroup - 1) / workgroup
	if groups <= 65535 {
		return [3]uint32{uint32(max(groups, 1)), 1, 1}
	}
	y := (groups + 65534) / 65535
	return [3]uint32{uint32((groups + y - 1) / y), uint32(y), 1}
}

// maxRank is the most dims of a walk that the prelude's layout words hold.
const maxRank = 8

// rankError is what a kernel returns for a walk that still has rank dims,
// more than the most its parameters hold, once layout.Walk.Collapse has
// merged what it can: a view whose dims step over storage unevenly.
func rankError(rank, most int) *dispatch.Error {
	return &dispatch.Error{Kind: dispatch.ErrUnsupported, Found: strconv.Itoa(rank) + " dims",
		Detail: "needs " + strconv.Itoa(rank) + " dims that do not merge, but the wgpu kernels walk at most " + strconv.Itoa(most),
		Fix:    "make the tensor contiguous first (.Contiguous()) or reshape it to fewer dims"}
}

// view is one operand of a walk: an element offset in its storage and one
// stride per dim of the walk's shape (0 repeats an element, a negative
// stride walks backward).
type view struct {
	offset  int
	strides []int
}

// viewOf is t's own layout.
func viewOf(t *dispatch.Tensor) view { return view{t.Offset, t.Strides} }

// stridedParams are the prelude's layout words of an elementwise launch:
// out (contiguous, so that item i is its element i) and each input
// broadcast to out's shape, collapsed together; the inputs are the
// layout's arguments, in order.
func stridedParams(out *dispatch.Tensor, in ...*dispatch.Tensor) ([]uint32, error) {
	w := layout.Broadcast(out, in...).Collapse()
	w.Strides = w.Strides[1:]
	offsets := make([]int, len(in))
	for k, t := range in {
		offsets[k] = t.Offset
	}
	return layoutParams(w, offsets)
}

// walkParams are the prelude's layout words of a walk over shape with each
// view as an argument, in order (collapsed, so item i is the i-th element
// in row-major order over shape), followed by the kernel's extra words.
func walkParams(shape []int, views []view, extra ...int) ([]uint32, error) {
	w := layout.Walk{Shape: shape, Strides: make([][]int, len(views))}
	offsets := make([]int, len(views))
	for k, v := range views {
		w.Strides[k], offsets[k] = v.strides, v.offset
	}
	return layoutParams(w.Collapse(), offsets, extra...)
}

// layoutParams writes a collapsed walk as the prelude's words: n, the rank
// and the shape, then each argument's offset and strides (9 words each),
// then extra from 10 + 9·len(offsets), each as int32 bits.
func layoutParams(w layout.Walk, offsets []int, extra ...int) ([]uint32, error) {
	if w.Rank() > maxRank {
		return nil, rankError(w.Rank(), maxRank)
	}
	base := 10 + 9*len(offsets)
	p := make([]uint32, base, base+len(extra))
	p[0] = uint32(dispatch.Numel(w.Shape))
	p[1] = uint32(w.Rank())
	for d, s := range w.Shape {
		p[2+d] = uint32(s)
	}
	for k, off := range offsets {
		at := 10 + 9*k
		p[at] = uint32(int32(off))
		for d, s := range w.Strides[k] {
			p[at+1+d] = uint32(int32(s))
		}
	}
	for _, e := range extra {
		p = append(p, uint32(int32(e)))
	}
	return p, nil
}
