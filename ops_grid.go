package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Spatial transformers: torch.nn.functional.grid_sample and affine_grid.
//
//	grid := lathe.AffineGrid(theta, []int{n, c, h, w}, false) // theta: (N, 2, 3)
//	y := lathe.GridSample(x, grid, lathe.GridPadding("border"))

// GridOption sets an option of GridSample.
type GridOption func(*gridOptions)

type gridOptions struct {
	mode, padding string
	alignCorners  bool
}

// GridMode sets how GridSample reads between pixels, by PyTorch's name:
// "bilinear" (the default; trilinear for 5-d input), "nearest" or
// "bicubic" (4-d input only; Keys' kernel with A = -0.75 over 4×4 pixels,
// each padded by itself).
func GridMode(m string) GridOption { return func(o *gridOptions) { o.mode = m } }

// GridPadding sets what GridSample reads outside the input, by PyTorch's
// name: "zeros" (the default), "border" (the nearest edge pixel) or
// "reflection" (the input mirrored at its edges).
func GridPadding(p string) GridOption { return func(o *gridOptions) { o.padding = p } }

// GridAlignCorners makes -1 and 1 the centres of the corner pixels instead
// of the outer edges of the corner pixels (PyTorch's align_corners=True).
func GridAlignCorners() GridOption { return func(o *gridOptions) { o.alignCorners = true } }

var (
	gridModes    = map[string]int{"bilinear": ops.GridBilinear, "nearest": ops.GridNearest, "bicubic": ops.GridBicubic}
	gridPaddings = map[string]int{"zeros": ops.GridZeros, "border": ops.GridBorder, "reflection": ops.GridReflection}
)

// GridSample samples x, (N, C, H, W) or (N, C, D, H, W), at the points that
// grid, (N, Ho, Wo, 2) or (N, Do, Ho, Wo, 3), gives in coordinates
// normalised to [-1, 1] across x's spatial dims, the last grid dim holding
// (x, y[, z]) with x along W. The result is (N, C, Ho, Wo) or
// (N, C, Do, Ho, Wo), as torch.nn.functional.grid_sample gives, with
// gradients for x and grid (and their gradients in turn).
//
// A NaN grid value reads as torch 1.13's cpu reads it: with zeros padding,
// NaN (bilinear, 2-d) or 0; with border or reflection, the first pixel in
// 2-d and the last in 3-d.
//
// Errors: an unknown mode or padding, or bicubic on 5-d input, is ErrValue
// naming the option; x and grid of other ranks or a grid
// whose last dim or batch does not fit is ErrShape; x and grid must be
// floats of one dtype (ErrDType) on one device (ErrDevice).
func GridSample(x, grid *Tensor, opts ...GridOption) *Tensor {
	const op = "grid_sample"
	for i, t := range []*Tensor{x, grid} {
		if err := t.CheckArg(op, [...]string{"x", "grid"}[i]); err != nil {
			return failed(err)
		}
	}
	o := gridOptions{mode: "bilinear", padding: "zeros"}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	a := ops.GridSample{AlignCorners: o.alignCorners}
	var ok bool
	if a.Mode, ok = gridModes[o.mode]; !ok {
		return failed(errorf(op, ErrValue, "mode", "is "+strconv.Quote(o.mode)+", not a grid sampling mode",
			`use "bilinear", "nearest" or "bicubic"`))
	}
	if a.Padding, ok = gridPaddings[o.padding]; !ok {
		return failed(errorf(op, ErrValue, "padding_mode", "is "+strconv.Quote(o.padding)+", not a padding mode",
			`use "zeros", "border" or "reflection"`))
	}
	y := apply(ops.GridSampler, a, x, grid)
	if e, ok := y.err.(*Error); ok && e.Op == ops.GridSampler.Name {
		// The op's own refusal: name the function the caller called.
		c := *e
		c.Op = op
		return failed(&c)
	}
	return relabel(y, op)
}

// AffineGrid is torch.nn.functional.affine_grid: the sampling grid of the
// affine maps theta, (N, 2, 3) for a 4-d size (N, C, H, W) or (N, 3, 4) for
// a 5-d size (N, C, D, H, W), applied to the normalised coordinates of
// every output pixel (with alignCorners, -1 and 1 are the corner pixels'
// centres; without, their outer edges). The result, (N, H, W, 2) or
// (N, D, H, W, 3), is what GridSample takes; it is differentiable in theta.
//
// Errors: a size that is not 4 or 5 sizes of at least 1 is ErrValue; a
// theta of the wrong shape for it is ErrShape, one of an integer dtype
// ErrDType.
func AffineGrid(theta *Tensor, size []int, alignCorners bool) *Tensor {
	const op = "affine_grid"
	if err := theta.CheckArg(op, "theta"); err != nil {
		return failed(err)
	}
	if len(size) != 4 && len(size) != 5 {
		return failed(errorf(op, ErrValue, "size", "is "+dispatch.FormatShape(size)+", but affine_grid takes a 4-d (N, C, H, W) or 5-d (N, C, D, H, W) size",
			"give the size of the output GridSample is to make"))
	}
	for _, s := range size {
		if s < 1 {
			return failed(errorf(op, ErrValue, "size", "is "+dispatch.FormatShape(size)+", but every size must be at least 1",
				"give a positive size for every dim"))
		}
	}
	if !dispatch.Floats.Has(theta.t.DType) {
		return failed(errorf(op, ErrDType, "theta", "is "+theta.t.DType.String()+", but affine maps are floats",
			"cast it with .Cast(lathe.Float32)"))
	}
	k := len(size) - 2
	want := []int{size[0], k, k + 1}
	if shape := theta.t.Shape; len(shape) != 3 || shape[0] != want[0] || shape[1] != want[1] || shape[2] != want[2] {
		e := errorf(op, ErrShape, "theta", "has shape "+dispatch.FormatShape(shape)+", but size "+dispatch.FormatShape(size)+
			" needs a batch of "+strconv.Itoa(k)+"-d affine maps "+dispatch.FormatShape(want), "give one (k, k+1) matrix per batch entry")
		e.Expected, e.Found = dispatch.FormatShape(want), dispatch.FormatShape(shape)
		return failed(e)
	}
	spatial := size[2:]
	points := 1
	for _, s := range spatial {
		var ok bool
		if points, ok = dispatch.CheckedMul(points, s); !ok {
			return failed(errorf(op, ErrOutOfMemory, "size", "is "+dispatch.FormatShape(size)+", more grid points than an int counts",
				"use a smaller size"))
		}
	}
	if err := checkHost(op, "size", points, 8*(k+1)); err != nil {
		return failed(err)
	}
	// The base grid: one row (x, y[, z], 1) per output pixel, row-major
	// over (D,) H, W, x running along W.
	axes := make([][]float64, k)
	for j := range k {
		axes[j] = normalisedAxis(spatial[k-1-j], alignCorners)
	}
	base := make([]float64, 0, points*(k+1))
	at := make([]int, k) // the pixel's index along (D,) H, W
	for range points {
		for j := range k {
			base = append(base, axes[j][at[k-1-j]])
		}
		base = append(base, 1)
		for d := k - 1; d >= 0; d-- {
			if at[d]++; at[d] < spatial[d] {
				break
			}
			at[d] = 0
		}
	}
	b := hostTensor(op, theta.t.Device, theta.t.DType, base, []int{points, k + 1})
	grid := b.MatMul(theta.Transpose(1, 2)).Reshape(append([]int{size[0]}, append(append([]int{}, spatial...), k)...)...)
	return relabel(grid, op)
}

// normalisedAxis is the normalised coordinates of n pixels: from -1 to 1
// through their centres with alignCorners, else scaled by (n-1)/n so the
// outer edges are ±1; one pixel sits at 0 (torch's linspace_from_neg_one).
func normalisedAxis(n int, alignCorners bool) []float64 {
	out := make([]float64, n)
	if n == 1 {
		return out
	}
	for i := range out {
		v := -1 + 2*float64(i)/float64(n-1)
		if !alignCorners {
			v = v * float64(n-1) / float64(n)
		}
		out[i] = v
	}
	return out
}
