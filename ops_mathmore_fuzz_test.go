package lathe

import (
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzMathMore draws the math, scan and linear-algebra functions of the
// last session (log2 to cdist, cumprod to argwhere, cholesky to qr) with
// operands of rank 0 to 3 that agree, broadcast or do not, of any dtype,
// dims in and out of range, and values NaN, infinite and extreme. Its
// oracle is lathe's promises, as FuzzLossMore's:
//
//   - nothing panics, and an error is a *lathe.Error of one of the kinds;
//   - wgpu:0 refuses what the cpu refuses, with the same kind, and where
//     the operands are moderate (multiples of ½ in [-4, 4]) the
//     elementwise functions and the scans give the cpu's values;
//   - the linear algebra, whose pivots round differently on each device
//     (a matrix singular on one may not be on the other), is held to the
//     first promise on each device alone.
func FuzzMathMore(f *testing.F) {
	// heaviside/int32[3, 4, 1] int32[4, 1]
	f.Add([]byte{12, 25, 62, 3, 8, 39, 46, 56, 41, 43, 1, 46, 52, 7, 0, 2, 29, 27, 43, 58, 11, 59, 29, 51, 17, 51, 48, 53, 48, 11, 24, 33, 18, 6, 39, 8, 0, 7, 8, 44})
	// logaddexp2/bfloat16[1] bfloat16[1]
	f.Add([]byte{3, 17, 13, 57, 41, 14, 63, 51, 12, 62, 6, 52, 57, 50, 63, 50, 3, 27, 31, 18, 15, 27, 60, 32, 42, 14, 6, 7, 21, 11, 1, 25, 12, 35, 27, 59, 52, 25, 1, 25})
	// nanmean/float32[]/dim 0
	f.Add([]byte{55, 62, 19, 36, 40, 4, 34, 54, 14, 13, 51, 61, 63, 19, 45, 24, 22, 55, 60, 37, 27, 28, 39, 50, 33, 6, 1, 20, 46, 29, 60, 61, 31, 36, 50, 4, 34, 23, 33, 21})
	// count_nonzero/float16[0, 0, 4]/dim -3
	f.Add([]byte{37, 4, 10, 51, 60, 35, 39, 44, 28, 39, 44, 33, 42, 50, 41, 30, 47, 52, 55, 58, 44, 0, 62, 19, 11, 12, 38, 21, 2, 3, 18, 58, 25, 2, 18, 24, 58, 26, 23, 6})
	// xlogy/float32[4, 0] float32[4, 0]
	f.Add([]byte{51, 14, 34, 10, 29, 15, 7, 13, 45, 6, 6, 3, 50, 14, 44, 12, 42, 34, 15, 2, 48, 36, 30, 3, 18, 28, 22, 21, 17, 47, 55, 55, 25, 21, 47, 19, 20, 33, 40, 2})
	// hardshrink/float32[3]/1e-06
	f.Add([]byte{15, 62, 18, 37, 13, 26, 58, 47, 25, 44, 45, 57, 33, 2, 58, 17, 5, 46, 56, 43, 30, 30, 14, 13, 21, 10, 52, 28, 4, 31, 46, 31, 33, 34, 61, 50, 35, 8, 44, 6})
	// frac/float32[]/+Inf
	f.Add([]byte{0, 25, 50, 4, 16, 44, 22, 21, 31, 60, 7, 60, 63, 36, 47, 60, 32, 22, 50, 6, 63, 42, 62, 37, 32, 39, 9, 63, 52, 4, 30, 48, 45, 28, 25, 2, 23, 3, 41, 19})
	// erfc/float16[0, 0, 2]/0
	f.Add([]byte{6, 52, 59, 23, 45, 45, 2, 20, 24, 30, 61, 9, 9, 14, 46, 9, 39, 52, 33, 3, 16, 16, 32, 63, 14, 32, 29, 24, 3, 34, 11, 6, 55, 54, 55, 46, 45, 21, 20, 48})
	// kron/float32[0, 1, 3] float32[0, 1, 3]
	f.Add([]byte{33, 36, 4, 27, 50, 16, 63, 18, 53, 53, 28, 62, 50, 13, 46, 63, 17, 17, 16, 32, 2, 34, 53, 42, 9, 46, 12, 52, 42, 6, 30, 49, 11, 12, 28, 47, 40, 15, 9, 27})
	// softmin/float32[2]/dim 0
	f.Add([]byte{25, 9, 4, 45, 27, 29, 50, 47, 7, 26, 26, 21, 24, 4, 53, 19, 43, 43, 52, 30, 29, 62, 36, 5, 47, 5, 36, 31, 8, 52, 5, 55, 23, 34, 22, 41, 49, 60, 15, 60})
	// exp2/float64[1]/3.5
	f.Add([]byte{39, 6, 57, 53, 36, 30, 9, 18, 36, 29, 48, 62, 56, 54, 4, 32, 10, 48, 30, 6, 53, 59, 23, 50, 30, 47, 43, 36, 50, 6, 34, 23, 62, 54, 2, 59, 8, 31, 57, 61})
	// deg2rad/float64[1, 2]/2
	f.Add([]byte{21, 12, 40, 2, 36, 42, 18, 37, 37, 42, 8, 34, 63, 31, 22, 44, 62, 29, 13, 21, 28, 7, 55, 63, 4, 41, 7, 57, 0, 55, 21, 3, 20, 42, 56, 35, 52, 31, 60, 15})
	// solve/float64[3, 3] [3, 2]/upper false
	f.Add([]byte{35, 9, 48, 22, 31, 48, 27, 17, 43, 45, 58, 34, 54, 7, 7, 8, 11, 55, 2, 42, 15, 48, 14, 23, 39, 63, 50, 26, 61, 58, 44, 63, 5, 36, 49, 30, 25, 5, 49, 14})
	// searchsorted right false/float64[3]/dim 2
	f.Add([]byte{31, 2, 22, 61, 18, 55, 10, 16, 3, 44, 28, 28, 10, 14, 22, 49, 58, 30, 20, 34, 62, 60, 23, 13, 52, 0, 42, 28, 22, 60, 36, 13, 54, 61, 3, 31, 1, 45, 63, 23})
	// cholesky/float32[4, 4] [4, 4]/upper true
	f.Add([]byte{41, 61, 39, 59, 14, 44, 10, 3, 32, 5, 58, 56, 9, 41, 41, 22, 43, 38, 17, 60, 45, 45, 53, 34, 18, 13, 20, 55, 3, 33, 15, 60, 7, 51, 27, 10, 15, 41, 18, 18})
	// cummax/float64[]/dim -1
	f.Add([]byte{40, 8, 25, 8, 4, 56, 3, 49, 6, 8, 18, 24, 38, 57, 25, 7, 18, 40, 9, 26, 43, 42, 18, 0, 3, 46, 45, 13, 55, 3, 47, 23, 32, 28, 1, 19, 15, 37, 10, 57})
	fzGPUFor(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		switch r.intn(3) {
		case 0:
			fuzzMathElementwise(t, r)
		case 1:
			fuzzMathScan(t, r)
		default:
			fuzzMathLinalg(t, r)
		}
	})
}

// mathUnary are the one-operand functions, with a parameter drawn for
// those that take one.
var mathUnary = []struct {
	name string
	call func(x *Tensor, p float64) *Tensor
}{
	{"log2", func(x *Tensor, _ float64) *Tensor { return x.Log2() }},
	{"log10", func(x *Tensor, _ float64) *Tensor { return x.Log10() }},
	{"exp2", func(x *Tensor, _ float64) *Tensor { return x.Exp2() }},
	{"trunc", func(x *Tensor, _ float64) *Tensor { return x.Trunc() }},
	{"frac", func(x *Tensor, _ float64) *Tensor { return x.Frac() }},
	{"logit", func(x *Tensor, _ float64) *Tensor { return x.Logit() }},
	{"logit eps", func(x *Tensor, p float64) *Tensor { return x.LogitEps(p) }},
	{"sinc", func(x *Tensor, _ float64) *Tensor { return x.Sinc() }},
	{"deg2rad", func(x *Tensor, _ float64) *Tensor { return x.Deg2Rad() }},
	{"rad2deg", func(x *Tensor, _ float64) *Tensor { return x.Rad2Deg() }},
	{"softshrink", func(x *Tensor, p float64) *Tensor { return x.Softshrink(p) }},
	{"hardshrink", func(x *Tensor, p float64) *Tensor { return x.Hardshrink(p) }},
	{"tanhshrink", func(x *Tensor, _ float64) *Tensor { return x.Tanhshrink() }},
	{"erfc", func(x *Tensor, _ float64) *Tensor { return x.Erfc() }},
	{"erfinv", func(x *Tensor, _ float64) *Tensor { return x.Erfinv() }},
	{"digamma", func(x *Tensor, _ float64) *Tensor { return x.Digamma() }},
	{"lgamma", func(x *Tensor, _ float64) *Tensor { return x.Lgamma() }},
}

// mathBinary are the two-operand elementwise functions.
var mathBinary = []struct {
	name string
	call func(x, y *Tensor) *Tensor
}{
	{"xlogy", (*Tensor).Xlogy},
	{"hypot", (*Tensor).Hypot},
	{"logaddexp", (*Tensor).LogAddExp},
	{"logaddexp2", (*Tensor).LogAddExp2},
	{"copysign", (*Tensor).Copysign},
	{"heaviside", (*Tensor).Heaviside},
	{"fmax", (*Tensor).Fmax},
	{"fmin", (*Tensor).Fmin},
	{"kron", (*Tensor).Kron},
}

// mathOperand is a tensor of dt and shape: moderate values when moderate
// is set, else the reader's (NaN, infinities and extremes among them).
func (r *fzReader) mathOperand(dt DType, shape []int, moderate bool) *Tensor {
	return fzTensor(r.moreLossValues(dispatch.Numel(shape), moderate), dt, shape)
}

// mathTol is the tolerance between devices for moderate operands of dt,
// or -1 (no comparison of values) for others.
func mathTol(dt DType, moderate bool) float64 {
	switch {
	case !moderate:
		return -1
	case dt == Float16 || dt == BFloat16:
		return 4 * fzEps(dt)
	}
	return 64 * fzEpsComp(dt)
}

// fzDevices runs call on the cpu operands and on copies on wgpu:0, checks
// that the device refuses what the cpu refuses, and compares the values
// within tol (none where tol is negative).
func fzDevices(t *testing.T, label string, tol float64, call func(in []*Tensor) *Tensor, in ...*Tensor) *Tensor {
	t.Helper()
	out := fzDiff(t, label, -1, call, in...)
	if gpu := fzGPU(); gpu != nil {
		if din, ok := fzOnDevice(*gpu, in...); ok {
			dev := call(din)
			if fzSameKind(t, label+" on "+gpu.String(), out, dev) && tol >= 0 {
				fzSame(t, label+" on "+gpu.String(), out, dev, tol)
			}
		}
	}
	return out
}

func fuzzMathElementwise(t *testing.T, r *fzReader) {
	dt := r.lossDType()
	shape := r.shape(3, 24)
	moderate := r.intn(4) != 0
	x := r.mathOperand(dt, shape, moderate)
	tol := mathTol(dt, moderate)
	if r.intn(2) == 0 {
		f := mathUnary[r.intn(len(mathUnary))]
		p := []float64{0.5, 0, 1e-6, -1, 2}[r.intn(5)]
		if r.intn(4) == 0 {
			p = r.value()
		}
		label := f.name + "/" + dt.String() + dispatch.FormatShape(shape) + "/" + strconv.FormatFloat(p, 'g', -1, 64)
		out := fzDevices(t, label, tol, func(in []*Tensor) *Tensor { return f.call(in[0], p) }, x)
		if out.Err() == nil && !slices.Equal(out.Shape(), shape) {
			t.Fatalf("%s: shape %v", label, out.Shape())
		}
		return
	}
	f := mathBinary[r.intn(len(mathBinary))]
	yt := dt
	if r.intn(8) == 0 {
		yt = r.lossDType()
	}
	ys := r.moreLossShape(shape)
	y := r.mathOperand(yt, ys, moderate)
	label := f.name + "/" + dt.String() + dispatch.FormatShape(shape) + " " + yt.String() + dispatch.FormatShape(ys)
	fzDevices(t, label, mathTol(max(dt, yt), moderate), func(in []*Tensor) *Tensor { return f.call(in[0], in[1]) }, x, y)
}

func fuzzMathScan(t *testing.T, r *fzReader) {
	dt := r.lossDType()
	shape := r.shape(3, 24)
	moderate := r.intn(4) != 0
	x := r.mathOperand(dt, shape, moderate)
	dim := r.dim(len(shape))
	tol := mathTol(dt, moderate)
	label := dt.String() + dispatch.FormatShape(shape) + "/dim " + strconv.Itoa(dim)
	var call func(in []*Tensor) *Tensor
	in := []*Tensor{x}
	switch k := r.intn(16); k {
	case 0:
		label, call = "cumprod/"+label, func(in []*Tensor) *Tensor { return in[0].CumProd(dim) }
	case 1:
		label, call = "cummax/"+label, func(in []*Tensor) *Tensor { v, i := in[0].CumMax(dim); return pairOf(v, i) }
	case 2:
		label, call = "cummin/"+label, func(in []*Tensor) *Tensor { v, i := in[0].CumMin(dim); return pairOf(v, i) }
	case 3:
		label, call = "logcumsumexp/"+label, func(in []*Tensor) *Tensor { return in[0].LogCumSumExp(dim) }
	case 4:
		n := r.intn(4) - 1
		var pre, app *Tensor
		if r.intn(2) == 0 {
			pre = r.mathOperand(dt, r.moreLossShape(shape), moderate)
			in = append(in, pre)
		}
		label = "diff n " + strconv.Itoa(n) + "/" + label
		call = func(in []*Tensor) *Tensor {
			if len(in) > 1 {
				return in[0].Diff(n, dim, in[1], app)
			}
			return in[0].Diff(n, dim, nil, app)
		}
	case 5:
		label, call = "nansum/"+label, func(in []*Tensor) *Tensor { return in[0].NanSum(dim) }
	case 6:
		label, call = "nanmean/"+label, func(in []*Tensor) *Tensor { return in[0].NanMeanKeepDim(dim) }
	case 7:
		label, call = "count_nonzero/"+label, func(in []*Tensor) *Tensor { return in[0].CountNonzero(dim) }
	case 8:
		label, call = "amax/"+label, func(in []*Tensor) *Tensor { return in[0].Amax(dim) }
	case 9:
		label, call = "amin/"+label, func(in []*Tensor) *Tensor { return in[0].AminKeepDim(dim) }
	case 10:
		label, call = "softmin/"+label, func(in []*Tensor) *Tensor { return in[0].Softmin(dim) }
	case 11:
		label, call = "glu/"+label, func(in []*Tensor) *Tensor { return in[0].GLU(dim) }
	case 12:
		// A sorted sequence (sorted here, so that the search is defined)
		// and values to place in it.
		seq := x
		if n := len(shape); n > 0 && moderate {
			seq, _ = x.Sort(n-1, false)
		}
		v := r.mathOperand(dt, r.moreLossShape(shape), moderate)
		right := r.intn(2) == 0
		label = "searchsorted right " + strconv.FormatBool(right) + "/" + label
		in = []*Tensor{seq, v}
		call = func(in []*Tensor) *Tensor {
			if right {
				return SearchSorted(in[0], in[1], SearchRight())
			}
			return SearchSorted(in[0], in[1])
		}
	case 13:
		minlength := r.intn(4)
		if r.intn(8) == 0 {
			minlength = r.size()
		}
		label = "bincount minlength " + strconv.Itoa(minlength) + "/" + label
		in = []*Tensor{r.mathOperand([4]DType{Int64, Int32, Int64, Float32}[r.intn(4)], shape, true).Abs()}
		call = func(in []*Tensor) *Tensor { return in[0].Bincount(nil, minlength) }
	case 14:
		bins, lo, hi := r.intn(5), r.value(), r.value()
		label = "histc " + strconv.Itoa(bins) + " [" + strconv.FormatFloat(lo, 'g', -1, 64) + ", " + strconv.FormatFloat(hi, 'g', -1, 64) + "]/" + label
		tol = -1 // a value on a bin's edge may fall either side on another device
		call = func(in []*Tensor) *Tensor { return in[0].Histc(bins, lo, hi) }
	default:
		y := r.mathOperand(dt, r.moreLossShape(shape), moderate)
		in = append(in, y)
		label, call = "cross/"+label, func(in []*Tensor) *Tensor { return in[0].Cross(in[1], dim) }
	}
	fzDevices(t, label, tol, call, in...)
}

// pairOf is values and indices as one tensor for the comparison (the
// indices cast to the values' dtype and stacked after them), or the first
// failure.
func pairOf(v, i *Tensor) *Tensor {
	if v.Err() != nil {
		return v
	}
	if i.Err() != nil {
		return i
	}
	return Concat([]*Tensor{v.Flatten(), i.Cast(v.DType()).Flatten()}, 0)
}

func fuzzMathLinalg(t *testing.T, r *fzReader) {
	dt := [6]DType{Float32, Float32, Float64, Float64, Float16, Int32}[r.intn(6)]
	n := r.intn(5)
	shape := []int{n, n}
	switch r.intn(8) {
	case 0:
		shape = r.shape(3, 36)
	case 1:
		shape = []int{r.intn(3), n, n}
	}
	moderate := r.intn(2) == 0
	a := r.mathOperand(dt, shape, moderate)
	if r.intn(2) == 0 && len(shape) >= 2 && dt.IsFloat() {
		// Symmetric and diagonally dominant now and then, so that the
		// factorisations get past their checks.
		a = a.Add(a.Transpose(-1, -2)).Add(Eye(CPU, dt, shape[len(shape)-1]).MulScalar(40))
	}
	bs := slices.Clone(shape)
	if len(bs) > 0 && r.intn(2) == 0 {
		bs[len(bs)-1] = r.intn(3)
	}
	if r.intn(8) == 0 {
		bs = r.shape(3, 24)
	}
	b := r.mathOperand(dt, bs, moderate)
	upper := r.intn(2) == 0
	label := dt.String() + dispatch.FormatShape(shape) + " " + dispatch.FormatShape(bs) + "/upper " + strconv.FormatBool(upper)
	var call func(a, b *Tensor) *Tensor
	switch r.intn(10) {
	case 0:
		label, call = "cholesky/"+label, func(a, _ *Tensor) *Tensor { return a.Cholesky(upper) }
	case 1:
		label, call = "solve_triangular/"+label, func(a, b *Tensor) *Tensor { return a.SolveTriangular(b, upper, true, false) }
	case 2:
		label, call = "cholesky_solve/"+label, func(a, b *Tensor) *Tensor { return b.CholeskySolve(a.Cholesky(upper), upper) }
	case 3:
		label, call = "solve/"+label, func(a, b *Tensor) *Tensor { return a.Solve(b) }
	case 4:
		label, call = "inv/"+label, func(a, _ *Tensor) *Tensor { return a.Inv() }
	case 5:
		label, call = "det/"+label, func(a, _ *Tensor) *Tensor { return a.Det() }
	case 6:
		label, call = "slogdet/"+label, func(a, _ *Tensor) *Tensor { s, l := a.SlogDet(); return pairOf(s, l) }
	case 7:
		label, call = "qr/"+label, func(a, _ *Tensor) *Tensor { q, r := a.QR(); return pairOf(q, r) }
	case 8:
		p := []float64{2, 1, 0, 3, 0.5}[r.intn(5)]
		label, call = "cdist/"+label, func(a, b *Tensor) *Tensor { return a.Cdist(b, p) }
	default:
		k := r.intn(3)
		label, call = "tensordot/"+label, func(a, b *Tensor) *Tensor {
			xd, yd := make([]int, k), make([]int, k)
			for i := range k {
				xd[i], yd[i] = a.Rank()-k+i, i
			}
			return a.TensorDot(b, xd, yd)
		}
	}
	for _, dev := range []*Device{&CPU, fzGPU()} {
		if dev == nil {
			continue
		}
		in, ok := fzOnDevice(*dev, a, b)
		if !ok {
			continue
		}
		out := call(in[0], in[1])
		err := out.Err()
		if err == nil {
			_, err = fzHost(out) // a device's value check reports at the read
		}
		if err != nil {
			fzKind(t, label+" on "+dev.String(), err)
		}
	}
}
