//go:build cgo

package wgpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
	"github.com/lathe-ml/lathe/layout"
)

// Layout copies (layout.wgsl and copy.wgsl): flip, concat and pad make a
// fresh tensor from strided reads of their inputs, as the cpu's do. They
// move words (32 bits, or int64's two), so one shader serves every dtype
// of wgpu:0.

func init() {
	registerMove(ops.Flip, allTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.FlipDims) error {
		// x read backward along the flipped dims: each from its last
		// element, with its stride negated.
		x := in[0]
		src := &dispatch.Tensor{Shape: x.Shape, Strides: append([]int(nil), x.Strides...), Offset: x.Offset,
			DType: x.DType, Device: x.Device, Storage: x.Storage}
		if x.Numel() > 0 {
			for _, d := range a.Of(x) {
				src.Offset += (x.Shape[d] - 1) * x.Strides[d]
				src.Strides[d] = -x.Strides[d]
			}
		}
		return copyInto(ops.Flip.Name, out, src)
	})
	registerMove(ops.Concat, allTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConcatDim) error {
		d := a.Of(in)
		at := 0
		for _, t := range in {
			stretch := view{out.Offset + at*out.Strides[d], out.Strides}
			if err := place(ops.Concat.Name, t.Shape, out, stretch, t, viewOf(t)); err != nil {
				return err
			}
			at += t.Shape[d]
		}
		return nil
	})
	pad := dispatch.ViaBits(registered, convertBits, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.Padding) error {
		// The fill everywhere, then what survives of x over it.
		x := in[0]
		if err := fill(ops.Pad.Name, out, fillWord(out.DType, a.Value)); err != nil {
			return err
		}
		shape, xSkip, outSkip, ok := layout.PadRegion(x, out, a.Pads)
		if !ok {
			return nil // everything of x is cropped away
		}
		return place(ops.Pad.Name, shape, out, view{out.Offset + outSkip, out.Strides}, x, view{x.Offset + xSkip, x.Strides})
	})
	// registerMove's, with the fill of a 16-bit float (carried as the
	// int32 of its bits) given as those bits; pad's Infer has checked
	// that the dtype holds the value exactly.
	dispatch.RegisterKernel(kind, ops.Pad, dispatch.Computable(allTypes), func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.Padding) error {
		switch out.DType {
		case dispatch.Float16:
			a.Value = float64(half.Float16FromFloat32(float32(a.Value)))
		case dispatch.BFloat16:
			a.Value = float64(half.BFloat16FromFloat32(float32(a.Value)))
		}
		return pad(out, in, a)
	})
}

// fillWord is the word that holds v in dtype dt on wgpu:0, 32 bits or
// int64's 64 (pad's Infer has checked that dt holds v exactly).
func fillWord(dt dispatch.DType, v float64) uint64 {
	switch dt {
	case dispatch.Float32:
		return uint64(math.Float32bits(float32(v)))
	case dispatch.Int32:
		return uint64(uint32(int32(v)))
	case dispatch.Int64:
		return uint64(int64(v))
	}
	if v != 0 {
		return 1
	}
	return 0
}
