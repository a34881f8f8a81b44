package wgpu

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// contiguous and cast are one kernel family (copy.wgsl): a strided read,
// a conversion, a contiguous write. fill, from the same file, writes one
// word everywhere.
func init() {
	registerMove(ops.Contiguous, allTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		return copyInto(ops.Contiguous.Name, out, in[0])
	})
	// A cast to float64 never gets here: wgpu:0 cannot hold its output,
	// and dispatch's Empty says so.
	register(ops.Cast, allTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ ops.CastTo) error {
		return copyInto(ops.Cast.Name, out, in[0])
	})
}

// copyInto writes x, converted to out's dtype, into the contiguous out.
// The conversions are PyTorch's: float to int truncates toward zero (the
// most negative int where that is out of range, or for NaN, as on x86),
// nonzero is true, true is 1.
func copyInto(op string, out, x *dispatch.Tensor) error {
	if layout.Broadcast(out, x).Collapse().Rank() > maxRank {
		// Dims that do not merge, which the other kernels refuse: place
		// takes them, and the conversion then reads a contiguous copy.
		if out.DType == x.DType {
			return place(op, out.Shape, out, viewOf(out), x, view{x.Offset, layout.BroadcastStrides(x, out.Shape)})
		}
		c, err := dispatch.Empty(x.Device, x.DType, x.Shape)
		if err != nil {
			return err
		}
		defer c.Release()
		if err := copyInto(op, c, x); err != nil {
			return err
		}
		x = c
	}
	to, from := wgslType(out.DType), wgslType(x.DType)
	conv := convExpr(out.DType, x.DType)
	sh, err := shaderFor("copy/"+from+"->"+to, "copy", struct{ Out, In, Conv string }{to, from, conv})
	if err != nil {
		return err
	}
	n := out.Numel()
	if n == 0 {
		return nil
	}
	params, err := stridedParams(out, x)
	if err != nil {
		return err
	}
	return launch(op, sh, gridPer(n), params, out, x)
}

// convExpr is the WGSL expression that converts x of dtype from to dtype
// to, as the cpu's cast does (backends/cpu/cast.go); int64's conversions
// are int64.wgsl's.
func convExpr(to, from dispatch.DType) string {
	switch {
	case to == from:
		return "x"
	case to == dispatch.Bool && from == dispatch.Float32:
		// On the bits: shader compilers may take x != 0.0 to be false
		// for NaN (lavapipe does), and NaN is true.
		return "select(0u, 1u, (bitcast<u32>(x) & 0x7fffffffu) != 0u)"
	case to == dispatch.Bool && from == dispatch.Int64:
		return "select(0u, 1u, i64_nonzero(x))"
	case to == dispatch.Bool:
		return "select(0u, 1u, x != 0)"
	case to == dispatch.Int32 && from == dispatch.Float32:
		// WGSL's i32(x) saturates (to 2147483520, the largest float32
		// below 2³¹); the cpu and torch on x86 give the most negative
		// int32 for NaN and for what truncates outside int32's range,
		// |x| ≥ 2³¹ (bits 0x4f000000). Tested on the bits, which no
		// compiler takes for a NaN comparison.
		return "select(i32(x), bitcast<i32>(0x80000000u), (bitcast<u32>(x) & 0x7fffffffu) >= 0x4f000000u)"
	case from == dispatch.Int64:
		return map[dispatch.DType]string{dispatch.Float32: "i64_to_f32(x)", dispatch.Int32: "i64_to_i32(x)"}[to]
	case to == dispatch.Int64:
		return map[dispatch.DType]string{dispatch.Float32: "i64_of_f32(x)", dispatch.Int32: "i64_of_i32(x)", dispatch.Bool: "i64_of_u32(x)"}[from]
	}
	return wgslType(to) + "(x)"
}

// launchStrided runs an elementwise shader with one item per element of
// the contiguous out and the strided layout of the inputs.
func launchStrided(op string, sh *shader, out *dispatch.Tensor, in ...*dispatch.Tensor) error {
	n := out.Numel()
	if n == 0 {
		return nil
	}
	params, err := stridedParams(out, in...)
	if err != nil {
		return err
	}
	return launch(op, sh, grid(n), params, append([]*dispatch.Tensor{out}, in...)...)
}

// place copies the elements of src at sv into dst at dv, both walked over
// shape (layout.wgsl's place). It takes a walk of any rank: where more than
// maxRank dims remain once collapsed (a view whose dims do not merge), it
// launches once per index of the leading dims, so that a copy, which the
// other kernels' rankError asks for, never fails for want of dims.
func place(op string, shape []int, dst *dispatch.Tensor, dv view, src *dispatch.Tensor, sv view) error {
	w := layout.Walk{Shape: shape, Strides: [][]int{dv.strides, sv.strides}}.Collapse()
	n := dispatch.Numel(w.Shape)
	if n == 0 {
		return nil
	}
	w0 := wordType(dst.DType)
	sh, err := shaderFor("place/"+w0, "place", struct{ T string }{w0})
	if err != nil {
		return err
	}
	lead := max(w.Rank()-maxRank, 0)
	inner := layout.Walk{Shape: w.Shape[lead:], Strides: [][]int{w.Strides[0][lead:], w.Strides[1][lead:]}}
	items := dispatch.Numel(inner.Shape)
	for o := range n / items {
		offsets := []int{dv.offset, sv.offset}
		for d, rem := lead-1, o; d >= 0; d-- {
			i := rem % w.Shape[d]
			rem /= w.Shape[d]
			offsets[0] += i * w.Strides[0][d]
			offsets[1] += i * w.Strides[1][d]
		}
		params, err := layoutParams(inner, offsets)
		if err != nil {
			return err
		}
		if err := launch(op, sh, grid(items), params, dst, src); err != nil {
			return err
		}
	}
	return nil
}

// fill sets every element of the contiguous t to the word w: one 32-bit
// word, or for int64 w's two words, low first.
func fill(op string, t *dispatch.Tensor, w uint64) error {
	n := t.Numel()
	if n == 0 {
		return nil
	}
	wt := wordType(t.DType)
	sh, err := shaderFor("fill/"+wt, "fill", struct{ T string }{wt})
	if err != nil {
		return err
	}
	return launch(op, sh, gridPer(n), []uint32{uint32(n), uint32(w), uint32(w >> 32)}, t)
}
