//go:build cgo

package wgpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// Layout copies (layout.wgsl and copy.wgsl): flip, concat and pad make a
// fresh tensor from strided reads of their inputs, as the cpu's do. They
// move 32-bit words, so one shader serves every dtype of wgpu:0.

func init() {
	register("flip", func(out *dispatch.Tensor, in []*dispatch.Tensor, attrs any) error {
		// x read backward along the flipped dims: each from its last
		// element, with its stride negated.
		x := in[0]
		src := &dispatch.Tensor{Shape: x.Shape, Strides: append([]int(nil), x.Strides...), Offset: x.Offset,
			DType: x.DType, Device: x.Device, Storage: x.Storage}
		if x.Numel() > 0 {
			for _, d := range dispatch.FlipDims(x, attrs) {
				src.Offset += (x.Shape[d] - 1) * x.Strides[d]
				src.Strides[d] = -x.Strides[d]
			}
		}
		return copyInto("flip", out, src)
	})
	register("concat", func(out *dispatch.Tensor, in []*dispatch.Tensor, attrs any) error {
		d := dispatch.ConcatDim(in, attrs)
		sh, err := shaderFor("place", "place", nil)
		if err != nil {
			return err
		}
		at := 0
		for _, t := range in {
			if n := t.Numel(); n > 0 {
				stretch := view{out.Offset + at*out.Strides[d], out.Strides}
				params, err := walkParams("concat", t.Shape, []view{stretch, viewOf(t)})
				if err != nil {
					return err
				}
				if err := launch("concat", sh, grid(n), params, out, t); err != nil {
					return err
				}
			}
			at += t.Shape[d]
		}
		return nil
	})
	register("pad", func(out *dispatch.Tensor, in []*dispatch.Tensor, attrs any) error {
		a, x := attrs.(dispatch.Pad), in[0]
		n := out.Numel()
		if n == 0 {
			return nil
		}
		fill, ok := fillWord(out.DType, a.Value)
		if !ok {
			return dispatch.Unsupported(out.Device, "pad", out.DType)
		}
		left := make([]int, maxRank)
		for i := 0; i < len(a.Pads); i += 2 {
			left[x.Rank()-1-i/2] = a.Pads[i]
		}
		sizes := make([]int, maxRank)
		copy(sizes, x.Shape)
		extra := append(append(left, sizes...), int(int32(fill)))
		params, err := walkParams("pad", out.Shape, []view{viewOf(x)}, extra...)
		if err != nil {
			return err
		}
		sh, err := shaderFor("pad", "pad", nil)
		if err != nil {
			return err
		}
		return launch("pad", sh, grid(n), params, out, x)
	})
}

// fillWord is the 32-bit word that holds v in dtype dt on wgpu:0
// (dispatch has checked that dt holds v exactly).
func fillWord(dt dispatch.DType, v float64) (uint32, bool) {
	switch dt {
	case dispatch.Float32:
		return math.Float32bits(float32(v)), true
	case dispatch.Int32:
		return uint32(int32(v)), true
	case dispatch.Bool:
		if v != 0 {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}
