package lathe

import (
	"math"
	"math/big"
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
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
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
// padding p on both sides (pooling's ceil mode optional, as
// pooling_output_shape gives it), or ok false where it has none. It counts
// in big integers, so that no attribute near int's edge wraps: a window
// whose dilated span, or an input whose padded size, passes an int has no
// output size here, and lathe refuses it.
func fzWindowOut(in, k, s, p, d int, ceil bool) (int, bool) {
	if k < 1 || s < 1 || p < 0 || d < 1 {
		return 0, false
	}
	b := func(v int) *big.Int { return big.NewInt(int64(v)) }
	maxInt := b(math.MaxInt)
	reach := new(big.Int).Mul(b(d), b(k-1)) // the span less one
	padded := new(big.Int).Add(b(in), new(big.Int).Mul(b(2), b(p)))
	if reach.Cmp(new(big.Int).Sub(maxInt, b(1))) > 0 || padded.Cmp(maxInt) > 0 {
		return 0, false
	}
	span := new(big.Int).Sub(padded, reach)
	span.Sub(span, b(1))
	if span.Sign() < 0 && !ceil {
		return 0, false
	}
	// Quo truncates toward 0: the floor for span ≥ 0; in ceil mode the
	// ceiling is -floor(-span / s).
	q := new(big.Int).Quo(span, b(s))
	if ceil {
		q.Neg(new(big.Int).Div(new(big.Int).Neg(span), b(s)))
		// The last window must start inside the input or its left padding.
		if new(big.Int).Mul(q, b(s)).Cmp(b(in+p)) >= 0 {
			q.Sub(q, b(1))
		}
	}
	out := q.Int64() + 1
	return int(out), out >= 1
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

// fzWeight is a tensor of dt and shape from the reader's values, or, past
// 4096 elements (a kernel size near int's edge), one value expanded to the
// shape, so that the test holds no more than that; a shape whose size
// passes an int gives Expand's refusal.
func (r *fzReader) weight(dt DType, shape []int) *Tensor {
	if !fzProdOverflows(shape...) && dispatch.Numel(shape) <= 1<<12 {
		return r.tensor(dt, shape)
	}
	ones := make([]int, len(shape))
	for i := range ones {
		ones[i] = 1
	}
	return r.tensor(dt, ones).Expand(shape...)
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
	w := r.weight(x.DType(), wshape)
	opts := []WindowOption{Stride(s), Padding(p), Dilation(d), Groups(groups)}
	label := "conv/" + dispatch.FormatShape(shape) + "*" + dispatch.FormatShape(wshape) + fzAttrs(s, p, d, groups)
	call := func(in []*Tensor) *Tensor {
		if nd == 1 {
			return in[0].Conv1d(in[1], nil, opts...)
		}
		return in[0].Conv2d(in[1], nil, opts...)
	}
	want := []int{shape[0], out}
	ok := groups >= 1 && shape[1]%groups == 0 && out%groups == 0 && wshape[1]*groups == shape[1] && k >= 1 && s >= 1 && p >= 0 && d >= 1 && x.DType() != Int32
	ok = ok && !fzProdOverflows(wshape...)
	for _, in := range shape[2:] {
		o, fits := fzWindowOut(in, k, max(s, 1), p, d, false)
		ok = ok && fits
		want = append(want, o)
	}
	ok = ok && !fzProdOverflows(want...)
	fzSizeBound(t, label, ok, want)
	fzSizeBound(t, label+"/weight", true, wshape) // the kernels copy an expanded weight
	res := fzDiff(t, label, fzWindowTol(x, w), call, x, w)
	fzWantWindow(t, label, res, ok, want, shape)
}

// fzSizeBound skips an input whose result, which the rule gives, has more
// than 2^22 elements: PyTorch would compute it as lathe does, but a fuzz
// input that allocates gigabytes and walks them runs past the fuzzer's
// deadline (one such adaptive pool or interpolation to size 2^31 killed a
// worker). Past an int's count, or with no result, there is nothing to
// allocate: those run.
func fzSizeBound(t *testing.T, label string, ok bool, want []int) {
	t.Helper()
	if n, fits := dispatch.CheckedNumel(want); ok && fits && n > 1<<22 {
		t.Skipf("%s: a result of %d elements, too large to compute in a fuzz input", label, n)
	}
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
	wshape := []int{shape[1], out, max(k, 0)}
	w := r.weight(x.DType(), wshape)
	label := "conv_transpose1d/" + dispatch.FormatShape(shape) + "/k" + fzAttrs(k, s, p, d, op)
	opts := []WindowOption{Stride(s), Padding(p), Dilation(d), OutputPadding(op)}
	// PyTorch's output size, (L-1)·s - 2p + d·(k-1) + op + 1, which must
	// fit an int, as must the conv's padded size l + 2p and its span.
	ok := k >= 1 && s >= 1 && p >= 0 && d >= 1 && op >= 0 && op < max(s, d) && shape[2] >= 1 && x.DType() != Int32 && !fzProdOverflows(wshape...)
	l := 0
	if ok {
		b := func(v int) *big.Int { return big.NewInt(int64(v)) }
		n := new(big.Int).Mul(b(shape[2]-1), b(s))
		n.Sub(n, new(big.Int).Mul(b(2), b(p)))
		n.Add(n, new(big.Int).Mul(b(d), b(k-1)))
		n.Add(n, b(op+1))
		ok = n.Sign() > 0 && n.IsInt64()
		if ok {
			l = int(n.Int64())
			_, ok = fzWindowOut(l, k, s, p, d, false)
		}
	}
	ok = ok && !fzProdOverflows(shape[0], out, l)
	fzSizeBound(t, label, ok, []int{shape[0], out, l})
	fzSizeBound(t, label+"/weight", true, wshape)
	res := fzDiff(t, label, fzWindowTol(x, w), func(in []*Tensor) *Tensor { return in[0].ConvTranspose1d(in[1], nil, opts...) }, x, w)
	fzWantWindow(t, label, res, ok, []int{shape[0], out, l}, shape)
}

func fuzzPool(t *testing.T, r *fzReader, x *Tensor, shape []int, nd int, isMax bool) {
	k, s, p, d := r.attr(1), r.attr(1), r.attr(0), r.attr(1)
	ceil := r.intn(3) == 0
	if !isMax {
		d = 1
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
		// A dilated window that reads only padding has no maximum: lathe
		// refuses it (PyTorch 1.13 gives -inf with an index outside the
		// plane, which its own backward then writes through).
		padOnly := isMax && ok && fits && fzPaddingOnly(in, o, k, s, p, d)
		ok = ok && fits && in >= 1 && !padOnly
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
	want := slices.Clone(shape[:2])
	ok := size >= 1 && x.DType() != Int32
	for _, in := range shape[2:] {
		ok = ok && in >= 1
		want = append(want, size)
	}
	ok = ok && !fzProdOverflows(want...)
	fzSizeBound(t, label, ok, want)
	res := fzDiff(t, label, fzWindowTol(x), call, x)
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
			// PyTorch's floor(in·scale) in float64; lathe refuses a size
			// past 2^53, which a float64 no longer counts exactly.
			f := math.Floor(float64(in) * scale)
			ok = ok && scale > 0 && !math.IsInf(scale, 0) && f <= 1<<53
			o = int(min(f, 1<<53))
		}
		ok = ok && in >= 1 && o >= 1
		want = append(want, o)
	}
	ok = ok && !fzProdOverflows(want...)
	label := "interpolate/" + mode + "/" + dispatch.FormatShape(shape) + "/size" + strconv.Itoa(size) + "/scale" + strconv.FormatFloat(scale, 'g', -1, 64)
	fzSizeBound(t, label, ok, want)
	res := fzDiff(t, label, 10*fzWindowTol(x), func(in []*Tensor) *Tensor { return in[0].Interpolate(opts...) }, x)
	fzWantWindow(t, label, res, ok, want, shape)
}

func fuzzShuffle(t *testing.T, r *fzReader, x *Tensor, shape []int) {
	f := r.attr(1)
	un := r.intn(2) == 0
	label := "pixel_shuffle/" + dispatch.FormatShape(shape) + "/" + strconv.Itoa(f) + "/un=" + strconv.FormatBool(un)
	res := fzDiff(t, label, 0, func(in []*Tensor) *Tensor {
		if un {
			return in[0].PixelUnshuffle(f)
		}
		return in[0].PixelShuffle(f)
	}, x)
	// A factor whose square, or whose product with a size of the split
	// views, passes an int is refused.
	ok := f >= 1 && len(shape) == 4 && !fzProdOverflows(f, f)
	var want []int
	if ok && un {
		ok = shape[2]%f == 0 && shape[3]%f == 0 && !fzProdOverflows(shape[1], f, f)
		want = []int{shape[0], shape[1] * f * f, shape[2] / f, shape[3] / f}
	} else if ok {
		ok = shape[1]%(f*f) == 0 && !fzProdOverflows(shape[2], f) && !fzProdOverflows(shape[3], f)
		want = []int{shape[0], shape[1] / (f * f), shape[2] * f, shape[3] * f}
	}
	fzWantWindow(t, label, res, ok, want, shape)
}

// fzPaddingOnly reports whether one of out windows over in elements reads
// only padding. Window i's first tap inside the input's left edge is lo
// (kernels and dilations are too long to walk tap by tap); the window
// reads the input if that tap exists and lies before the right edge.
func fzPaddingOnly(in, out, k, s, p, d int) bool {
	for i := range out {
		start, lo := i*s-p, 0
		if start < 0 {
			lo = (-start + d - 1) / d
		}
		if lo >= k || start+lo*d >= in {
			return true
		}
	}
	return false
}
