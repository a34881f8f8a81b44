package lathe

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzWindow draws the window ops (conv and transposed conv, max and
// average pooling with padding, dilation and ceil mode, adaptive pooling,
// interpolation by size or scale, pixel shuffle) in one and two spatial
// dims, with kernels, strides, paddings and sizes that are mostly small
// and sometimes 0, negative or near int's edge, over values with NaN and
// infinities. The output shape must be PyTorch's formula's (an input it
// refuses must be refused), and wgpu:0 must give the cpu's values.
func FuzzWindow(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 2, 3, 3, 2, 1, 0, 1, 1})
	f.Add([]byte{0, 2, 1, 4, 3, 3, 3, 2, 2, 1, 1, 2})
	f.Add([]byte{1, 1, 1, 2, 3, 3, 2, 1, 0, 1, 0})
	f.Add([]byte{2, 2, 1, 1, 4, 4, 2, 2, 0, 1, 1})
	f.Add([]byte{3, 1, 2, 1, 3, 3, 2, 1, 1, 0, 1})
	f.Add([]byte{4, 2, 1, 2, 3, 3, 2})
	f.Add([]byte{5, 1, 1, 1, 3, 2, 1, 4})
	f.Add([]byte{6, 1, 1, 4, 2, 2, 1})
	fzGPU() // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		op := r.intn(7)
		nd := 1 + r.intn(2)
		n, c := r.intn(3), 1+r.intn(4)
		shape := []int{n, c}
		for range nd {
			shape = append(shape, r.intn(6))
		}
		dt := Float32
		if r.intn(8) == 0 {
			dt = []DType{Float64, Int32}[r.intn(2)]
		}
		x := r.tensor(dt, shape)
		switch op {
		case 0:
			fuzzConv(t, r, x, shape, nd)
		case 1:
			fuzzConvTranspose(t, r, x, shape)
		case 2, 3:
			fuzzPool(t, r, x, shape, nd, op == 2)
		case 4:
			fuzzAdaptive(t, r, x, shape, nd)
		case 5:
			fuzzInterp(t, r, x, shape, nd)
		default:
			if nd == 2 {
				fuzzShuffle(t, r, x, shape)
			}
		}
	})
}

// attr is a window attribute: mostly lo to lo+3, sometimes 0, negative or
// an extreme.
func (r *fzReader) attr(lo int) int {
	c := r.byte()
	switch {
	case c >= 248:
		return fzExtremes[int(c-248)%len(fzExtremes)]
	case c >= 232:
		return int(c)%3 - 1
	}
	return lo + int(c)%4
}

// fzWindowOut is PyTorch's output size of a window over size in with
// padding p on both sides (pooling's ceil mode optional), or ok false where
// it has none.
func fzWindowOut(in, k, s, p, d int, ceil bool) (int, bool) {
	span := in + 2*p - d*(k-1) - 1
	if span < 0 && !ceil {
		return 0, false
	}
	out := span/s + 1
	if span < 0 {
		out = 0
	}
	if ceil {
		out = int(math.Ceil(float64(span)/float64(s))) + 1
		if (out-1)*s >= in+p {
			out--
		}
	}
	return out, out >= 1
}

// fzWindowTol compares devices: a window's sum rounds in its own order.
// Where a float32 sum of finite terms can pass 3.4e38 on the way, the cpu
// (accumulating in float64) and wgpu may give a number and Inf or NaN, a
// disagreement of issue 15 defect 15's class: the devices are not compared
// (-1).
func fzWindowTol(xs ...*Tensor) float64 {
	tol, bound := 1e-5, 1.0
	for _, x := range xs {
		tol *= fzSpread(x)
		bound *= fzFiniteSpread(x)
	}
	if xs[0].DType() == Float32 && bound > math.MaxFloat32/16 {
		return -1
	}
	return tol
}

// fzFiniteSpread is 1 + the sum of x's finite |values|.
func fzFiniteSpread(x *Tensor) float64 {
	v, _ := fzHost(x)
	s := 1.0
	for _, e := range v {
		if !math.IsInf(e, 0) && !math.IsNaN(e) {
			s += math.Abs(e)
		}
	}
	return s
}

// fzExtreme reports whether any value is an extreme (at least 1<<20 in
// size), where the window ops' open defects (issue 15 defects 4, 5 and 9)
// panic, overflow or allocate without bound.
func fzExtreme(v ...int) bool {
	return slices.ContainsFunc(v, func(x int) bool { return x >= 1<<20 || x <= -(1<<20) })
}

// fzNonFinite reports whether x holds NaN or an infinity.
func fzNonFinite(x *Tensor) bool {
	v, _ := fzHost(x)
	return slices.ContainsFunc(v, func(e float64) bool { return math.IsNaN(e) || math.IsInf(e, 0) })
}

func fuzzConv(t *testing.T, r *fzReader, x *Tensor, shape []int, nd int) {
	groups := 1 + r.intn(2)
	if r.intn(16) == 0 {
		groups = r.intn(3) - 1
	}
	out := r.intn(4) + 1
	k, s, p, d := r.attr(1), r.attr(1), r.attr(0), r.attr(1)
	wshape := []int{out, shape[1] / max(groups, 1)}
	for range nd {
		wshape = append(wshape, max(k, 0))
	}
	if fzExtreme(k, s, p, d) {
		fzKnown(t, 9, "conv with kernel %d, stride %d, padding %d, dilation %d", k, s, p, d)
	}
	w := r.tensor(x.DType(), wshape)
	if p > 0 && (fzNonFinite(x) || fzNonFinite(w)) {
		fzKnown(t, 15, "wgpu's conv skips padded taps, so a NaN or Inf gives 0 at the border where the cpu gives NaN")
	}
	opts := []WindowOption{Stride(s), Padding(p), Dilation(d), Groups(groups)}
	label := "conv/" + dispatch.FormatShape(shape) + "*" + dispatch.FormatShape(wshape) + fzAttrs(s, p, d, groups)
	call := func(in []*Tensor) *Tensor {
		if nd == 1 {
			return in[0].Conv1d(in[1], nil, opts...)
		}
		return in[0].Conv2d(in[1], nil, opts...)
	}
	res := fzDiff(t, label, fzWindowTol(x, w), call, x, w)
	want := []int{shape[0], out}
	ok := groups >= 1 && shape[1]%groups == 0 && out%groups == 0 && wshape[1]*groups == shape[1] && k >= 1 && s >= 1 && p >= 0 && d >= 1 && x.DType() != Int32
	for _, in := range shape[2:] {
		o, fits := fzWindowOut(in, k, max(s, 1), p, d, false)
		ok = ok && fits
		want = append(want, o)
	}
	fzWantWindow(t, label, res, ok, want, shape)
}

// fzAttrs names stride, padding, dilation and groups for a label.
func fzAttrs(v ...int) string {
	s := ""
	for _, e := range v {
		s += "/" + strconv.Itoa(e)
	}
	return s
}

// fzWantWindow is fzWant for the window ops: a shape the formula gives, or
// a refusal of any kind. An empty batch or channel dim may be refused or
// not (PyTorch differs between ops).
func fzWantWindow(t *testing.T, label string, out *Tensor, ok bool, want, shape []int) {
	t.Helper()
	if !ok {
		fzWant(t, label, out, errAny, nil, 0)
		return
	}
	if slices.Contains(shape[:2], 0) && out.Err() != nil {
		fzKind(t, label, out.Err())
		return
	}
	fzWant(t, label, out, nil, want, dispatch.InvalidDType)
}

func fuzzConvTranspose(t *testing.T, r *fzReader, x *Tensor, shape []int) {
	if len(shape) != 3 {
		shape = shape[:3]
		x = x.Narrow(3, 0, 1).Squeeze(3)
		if x.Err() != nil {
			return
		}
	}
	out := 1 + r.intn(3)
	k, s, p, d, op := r.attr(1), r.attr(1), r.attr(0), r.attr(1), r.intn(3)
	if fzExtreme(k, s, p, d) {
		fzKnown(t, 5, "conv_transpose with kernel %d, stride %d, padding %d, dilation %d", k, s, p, d)
	}
	w := r.tensor(x.DType(), []int{shape[1], out, max(k, 0)})
	if p > 0 && (fzNonFinite(x) || fzNonFinite(w)) {
		fzKnown(t, 15, "wgpu's transposed conv skips padded taps")
	}
	label := "conv_transpose1d/" + dispatch.FormatShape(shape) + "/k" + fzAttrs(k, s, p, d, op)
	opts := []WindowOption{Stride(s), Padding(p), Dilation(d), OutputPadding(op)}
	res := fzDiff(t, label, fzWindowTol(x, w), func(in []*Tensor) *Tensor { return in[0].ConvTranspose1d(in[1], nil, opts...) }, x, w)
	if op >= s && op < d {
		fzNew(t, "conv_transpose refuses output_padding ≥ stride below the dilation, which PyTorch takes (output padding must be smaller than either stride or dilation)")
	}
	l := (shape[2]-1)*s - 2*p + d*(k-1) + op + 1
	ok := k >= 1 && s >= 1 && p >= 0 && d >= 1 && op < max(s, d) && l >= 1 && shape[2] >= 1 && x.DType() != Int32
	fzWantWindow(t, label, res, ok, []int{shape[0], out, l}, shape)
}

func fuzzPool(t *testing.T, r *fzReader, x *Tensor, shape []int, nd int, isMax bool) {
	k, s, p, d := r.attr(1), r.attr(1), r.attr(0), r.attr(1)
	ceil := r.intn(3) == 0
	if !isMax {
		d = 1
	}
	if fzExtreme(k, s, p, d) {
		fzKnown(t, 5, "pooling with kernel %d, stride %d, padding %d, dilation %d", k, s, p, d)
	}
	opts := []WindowOption{Stride(s), Padding(p)}
	if isMax {
		opts = append(opts, Dilation(d))
	}
	if ceil {
		opts = append(opts, CeilMode())
	}
	name := "avg_pool"
	if isMax {
		name = "max_pool"
	}
	label := name + strconv.Itoa(nd) + "d/" + dispatch.FormatShape(shape) + "/k" + fzAttrs(k, s, p, d) + "/ceil=" + strconv.FormatBool(ceil)
	want := slices.Clone(shape[:2])
	// PyTorch's pool2d_shape_check: pad at most half the kernel, dilation
	// aside.
	ok := k >= 1 && s >= 1 && d >= 1 && p >= 0 && 2*p <= k && x.DType() != Int32
	for _, in := range shape[2:] {
		o, fits := fzWindowOut(in, k, max(s, 1), p, d, ceil)
		if ceil && ok && fits && in+2*p < d*(k-1)+1 {
			fzKnown(t, 17, "%s: a window longer than the padded input in ceil mode", label)
		}
		if isMax && ok && fits && fzPaddingOnly(in, o, k, s, p, d) {
			fzNew(t, "max_pool refuses a dilated window that reads only padding; PyTorch gives -inf there")
		}
		if in == 0 && !isMax && ok && fits {
			fzNew(t, "avg_pool of an empty spatial dim with padding gives zeros; PyTorch refuses an empty input")
		}
		ok = ok && fits && in >= 1
		want = append(want, o)
	}
	call := func(in []*Tensor) *Tensor {
		switch {
		case isMax && nd == 1:
			return in[0].MaxPool1d(k, opts...)
		case isMax:
			return in[0].MaxPool2d(k, opts...)
		case nd == 1:
			return in[0].AvgPool1d(k, opts...)
		}
		return in[0].AvgPool2d(k, opts...)
	}
	res := fzDiff(t, label, fzWindowTol(x), call, x)
	fzWantWindow(t, label, res, ok, want, shape)
	if isMax && ok && res.Err() == nil && res.Numel() > 0 {
		// The indices pick the maxima: gathering x at them gives the values.
		_, idx := fzDiff2(t, label+"/indices", x, func(x *Tensor) (*Tensor, *Tensor) {
			if nd == 1 {
				return x.MaxPool1dWithIndices(k, opts...)
			}
			return x.MaxPool2dWithIndices(k, opts...)
		})
		if idx.Err() == nil {
			planes := shape[0] * shape[1]
			flat := x.Reshape(planes, -1) // the indices count within each (n, c) plane
			got := flat.Gather(1, idx.Reshape(planes, -1).Cast(Int64)).Reshape(want...)
			fzSame(t, label+"/gathered at the indices", res, got, 0)
		}
	}
}

// fzDiff2 is fzDiff for an op of two results: it returns the cpu's.
func fzDiff2(t *testing.T, label string, x *Tensor, f func(x *Tensor) (*Tensor, *Tensor)) (*Tensor, *Tensor) {
	t.Helper()
	v, i := f(x)
	if gpu := fzGPU(); gpu != nil && v.Err() == nil {
		if in, ok := fzOnDevice(*gpu, x); ok {
			gv, gi := f(in[0])
			fzSame(t, label+" values on "+gpu.String(), v, gv, 0)
			fzSame(t, label+" on "+gpu.String(), i, gi, 0)
		}
	}
	return v, i
}

func fuzzAdaptive(t *testing.T, r *fzReader, x *Tensor, shape []int, nd int) {
	size := r.attr(1)
	isMax := nd == 2 && r.intn(2) == 0
	if fzExtreme(size) {
		fzKnown(t, 5, "adaptive pooling to size %d", size)
	}
	label := "adaptive/" + dispatch.FormatShape(shape) + "/" + strconv.Itoa(size) + "/max=" + strconv.FormatBool(isMax)
	call := func(in []*Tensor) *Tensor {
		switch {
		case isMax:
			return in[0].AdaptiveMaxPool2d(size)
		case nd == 1:
			return in[0].AdaptiveAvgPool1d(size)
		}
		return in[0].AdaptiveAvgPool2d(size)
	}
	res := fzDiff(t, label, fzWindowTol(x), call, x)
	want := slices.Clone(shape[:2])
	ok := size >= 1 && x.DType() != Int32
	for _, in := range shape[2:] {
		ok = ok && in >= 1
		want = append(want, size)
	}
	fzWantWindow(t, label, res, ok, want, shape)
}

func fuzzInterp(t *testing.T, r *fzReader, x *Tensor, shape []int, nd int) {
	modes := []string{"nearest", "nearest-exact", "linear", "bilinear", "bicubic"}
	mode := modes[r.intn(len(modes))]
	bySize := r.intn(2) == 0
	align := r.intn(4) == 0
	size := r.attr(1)
	scale := float64(r.intn(13)) / 4
	if r.intn(16) == 0 {
		scale = []float64{math.NaN(), math.Inf(1), -1, 1e300, 1e-300}[r.intn(5)]
	}
	if bySize && fzExtreme(size) || !bySize && scale*float64(slices.Max(shape[2:])) >= 1<<20 {
		fzKnown(t, 5, "interpolation to size %d or by %v", size, scale)
	}
	opts := []InterpOption{Mode(mode)}
	if bySize {
		opts = append(opts, Size(size))
	} else {
		opts = append(opts, ScaleFactor(scale))
	}
	if align {
		opts = append(opts, AlignCorners())
	}
	want := slices.Clone(shape[:2])
	ok := x.DType() != Int32 && !(align && (mode == "nearest" || mode == "nearest-exact"))
	switch mode {
	case "linear":
		ok = ok && nd == 1
	case "bilinear", "bicubic":
		ok = ok && nd == 2
	}
	for _, in := range shape[2:] {
		o := size
		if !bySize {
			o = int(math.Floor(float64(in) * scale))
			ok = ok && scale > 0 && !math.IsInf(scale, 0)
			if mode == "nearest" && o == in && scale != 1 {
				fzKnown(t, 18, "nearest by scale %v where floor(%d·scale) is %d", scale, in, in)
			}
		}
		ok = ok && in >= 1 && o >= 1
		want = append(want, o)
	}
	label := "interpolate/" + mode + "/" + dispatch.FormatShape(shape) + "/size" + strconv.Itoa(size) + "/scale" + strconv.FormatFloat(scale, 'g', -1, 64)
	res := fzDiff(t, label, 10*fzWindowTol(x), func(in []*Tensor) *Tensor { return in[0].Interpolate(opts...) }, x)
	fzWantWindow(t, label, res, ok, want, shape)
}

func fuzzShuffle(t *testing.T, r *fzReader, x *Tensor, shape []int) {
	f := r.attr(1)
	un := r.intn(2) == 0
	if fzExtreme(f) {
		fzKnown(t, 9, "pixel shuffle by %d", f)
	}
	label := "pixel_shuffle/" + dispatch.FormatShape(shape) + "/" + strconv.Itoa(f) + "/un=" + strconv.FormatBool(un)
	res := fzDiff(t, label, 0, func(in []*Tensor) *Tensor {
		if un {
			return in[0].PixelUnshuffle(f)
		}
		return in[0].PixelShuffle(f)
	}, x)
	ok := f >= 1 && len(shape) == 4
	var want []int
	if ok && un {
		ok = shape[2]%f == 0 && shape[3]%f == 0
		want = []int{shape[0], shape[1] * f * f, shape[2] / max(f, 1), shape[3] / max(f, 1)}
	} else if ok {
		ok = shape[1]%(f*f) == 0
		want = []int{shape[0], shape[1] / max(f*f, 1), shape[2] * f, shape[3] * f}
	}
	fzWantWindow(t, label, res, ok, want, shape)
}

// fzPaddingOnly reports whether one of out windows over in elements reads
// only padding.
func fzPaddingOnly(in, out, k, s, p, d int) bool {
	for i := range out {
		inside := false
		for j := range k {
			if at := i*s - p + j*d; at >= 0 && at < in {
				inside = true
			}
		}
		if !inside {
			return true
		}
	}
	return false
}
