package wgpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Convolution, its two backward passes, unfold and fold (conv.wgsl): one
// direct kernel per op over a window of up to three spatial dims, each a
// gather, so that no two invocations write one place and no float atomics
// are needed. conv sums over its group's input channels and the kernel
// window; conv_input_backward (the transposed convolution) and fold sum
// over the window positions that read an input place; conv_weight_backward
// gives each weight element a workgroup that sums over the batch and the
// window positions.
func init() {
	for _, op := range []*dispatch.Op[ops.ConvParams]{ops.Conv, ops.ConvInputBackward, ops.ConvWeightBackward} {
		register(op, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) error {
			var g convGeometry
			switch op {
			case ops.Conv:
				x, w := in[0], in[1]
				g = convGeometry{a.WindowFor(w.Shape), a.Groups, x.Shape[2:], out.Shape[2:], x.Shape[0], x.Shape[1], w.Shape[0]}
			case ops.ConvInputBackward:
				gr, w := in[0], in[1]
				g = convGeometry{a.WindowFor(w.Shape), a.Groups, out.Shape[2:], gr.Shape[2:], gr.Shape[0], out.Shape[1], w.Shape[0]}
			default:
				x, gr := in[0], in[1]
				g = convGeometry{a.Window, a.Groups, x.Shape[2:], gr.Shape[2:], x.Shape[0], x.Shape[1], gr.Shape[1]}
			}
			return conv(op.Name, out, in, g)
		})
	}
	register(ops.Unfold, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.UnfoldParams) error {
		x := in[0]
		return conv(ops.Unfold.Name, out, in, convGeometry{a.Window, 1, x.Shape[2:], a.Window.OutShape(x.Shape[2:]), x.Shape[0], x.Shape[1], 0})
	})
	register(ops.Fold, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.UnfoldParams) error {
		return conv(ops.Fold.Name, out, in, convGeometry{a.Window, 1, a.OutputSize, a.Window.OutShape(a.OutputSize), out.Shape[0], out.Shape[1], 0})
	})
}

// spatialDims is the number of spatial dims the kernels of this family
// take; fewer are padded to it with leading dims of size 1.
const spatialDims = 3

// convGeometry is what conv.wgsl needs to know of an op of the family
// beyond its tensors' layouts.
type convGeometry struct {
	win            layout.Window
	groups         int
	image, windows []int // spatial sizes of the image and of the window positions
	nb, c, o       int   // batch, image channels, output channels (conv ops)
}

// fitsI32 reports whether conv.wgsl's i32 arithmetic over one spatial dim
// holds every place it forms: window position times stride, kernel tap
// times dilation, plus the image and the padding on both sides bound them
// all. The parameters went in as u32 words, so that a padding and dilation
// of 2^40 became 0 and a transposed conv summed the wrong taps.
func fitsI32(size, windows, k, s, pad, dil int) bool {
	a, ok1 := dispatch.CheckedMul(max(windows-1, 0), s)
	b, ok2 := dispatch.CheckedMul(max(k-1, 0), dil)
	if !ok1 || !ok2 {
		return false
	}
	sum := 0
	for _, v := range []int{a, b, size, pad, pad} {
		var ok bool
		if sum, ok = dispatch.CheckedAdd(sum, v); !ok {
			return false
		}
	}
	return sum <= math.MaxInt32
}

// conv launches conv.wgsl's kernel of op (its name) into out.
func conv(op string, out *dispatch.Tensor, in []*dispatch.Tensor, g convGeometry) error {
	n := out.Numel()
	if n == 0 {
		return nil
	}
	params := make([]uint32, 36) // p[35], padZero's word, stays 0
	params[0] = uint32(n)
	params[1], params[2], params[3], params[4] = uint32(g.nb), uint32(g.c), uint32(g.o), uint32(g.groups)
	for j := range g.image {
		if !fitsI32(g.image[j], g.windows[j], g.win.Kernel[j], g.win.Stride[j], g.win.Padding[j], g.win.Dilation[j]) {
			return &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported, Found: dispatch.FormatShape(g.win.Kernel),
				Detail: "wgpu:0: a window of kernel " + dispatch.FormatShape(g.win.Kernel) + ", stride " + dispatch.FormatShape(g.win.Stride) +
					", padding " + dispatch.FormatShape(g.win.Padding) + " and dilation " + dispatch.FormatShape(g.win.Dilation) +
					" over " + dispatch.FormatShape(g.image) + " reaches places past what conv.wgsl's i32 arithmetic counts",
				Fix: "run this op on the cpu"}
		}
	}
	lead := spatialDims - len(g.image)
	for d := range spatialDims {
		size, pos, k, s, pad, dil := 1, 1, 1, 1, 0, 1
		if j := d - lead; j >= 0 {
			size, pos, k = g.image[j], g.windows[j], g.win.Kernel[j]
			s, pad, dil = g.win.Stride[j], g.win.Padding[j], g.win.Dilation[j]
		}
		for f, v := range []int{size, pos, k, s, pad, dil} {
			params[5+3*f+d] = uint32(v)
		}
	}
	for k, t := range in {
		base := 23 + 6*k
		params[base] = uint32(int32(t.Offset))
		copy(params[base+1:base+6], windowStrides(t, op == ops.Fold.Name))
	}
	sh, err := shaderFor("conv/"+op, "conv", struct{ Op string }{op})
	if err != nil {
		return err
	}
	groupsGrid := grid(n)
	if op == ops.ConvWeightBackward.Name {
		groupsGrid = grid(n * workgroup) // a workgroup per element
	}
	return launch(op, sh, groupsGrid, params, append([]*dispatch.Tensor{out}, in...)...)
}

// windowStrides are the five stride words of an (N, C, d1, ..., dk)
// argument with its spatial dims padded to three at the front (stride 0
// for the padding dims). With flat set the tensor's own strides are given
// as they are (fold's (N, C·K, L) columns).
func windowStrides(t *dispatch.Tensor, flat bool) []uint32 {
	st := make([]uint32, 5)
	if flat {
		for d, s := range t.Strides {
			st[d] = uint32(int32(s))
		}
		return st
	}
	st[0], st[1] = uint32(int32(t.Strides[0])), uint32(int32(t.Strides[1]))
	lead := spatialDims - (t.Rank() - 2)
	for d, s := range t.Strides[2:] {
		st[2+lead+d] = uint32(int32(s))
	}
	return st
}
