package lathe

import (
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzMathMore draws the math, scan, indexing and linear-algebra functions
// (log2 to cdist, cumprod to argwhere, take to vander, cholesky to qr,
// eigh to lstsq) with
// operands of rank 0 to 3 that agree, broadcast or do not, of any dtype,
// dims in and out of range, and values NaN, infinite and extreme. Its
// oracle is lathe's promises, as FuzzLossMore's:
//
//   - nothing panics, and an error is a *lathe.Error of one of the kinds;
//   - wgpu:0 refuses what the cpu refuses, with the same kind, and where
//     the operands are moderate (multiples of ½ in [-4, 4]) the
//     elementwise functions and the scans give the cpu's values;
//   - the linear algebra (the solves and factorisations, eigh, svd and
//     what is made of them), whose pivots round differently on each device
//     (a matrix singular on one may not be on the other), is held to the
//     first promise on each device alone.
func FuzzMathMore(f *testing.F) {
	// eigh/float32[3, 3] [3, 0]/upper true
	f.Add([]byte{11, 12, 38, 21, 2, 3, 18, 58, 25, 2, 18, 24, 58, 26, 23, 6, 51, 14, 34, 10, 29, 15, 7, 13, 45, 6, 6, 3, 50, 14, 44, 12, 42, 34, 15, 2, 48, 36, 30, 3, 18, 28, 22, 21, 17, 47, 55, 55})
	// svd/float32[2, 2] [4, 2]/upper true
	f.Add([]byte{39, 6, 57, 53, 36, 30, 9, 18, 36, 29, 48, 62, 56, 54, 4, 32, 10, 48, 30, 6, 53, 59, 23, 50, 30, 47, 43, 36, 50, 6, 34, 23, 62, 54, 2, 59, 8, 31, 57, 61, 25, 43, 62, 28, 55, 35, 10, 45})
	// cummax/float64[0, 2, 3]/dim 1
	f.Add([]byte{5, 58, 41, 43, 40, 17, 43, 57, 50, 17, 46, 20, 14, 16, 50, 32, 56, 48, 14, 26, 36, 47, 35, 43, 5, 34, 1, 56, 44, 59, 57, 55, 24, 54, 12, 44, 26, 29, 21, 51, 13, 17, 21, 40, 27, 25, 26, 25})
	// rot90 -3 -3/float32[2, 4, 2]/dim -2
	f.Add([]byte{62, 53, 33, 31, 62, 24, 32, 4, 35, 54, 14, 4, 47, 34, 26, 30, 50, 2, 27, 54, 10, 21, 37, 12, 10, 52, 31, 61, 6, 55, 55, 24, 56, 9, 49, 43, 47, 37, 17, 49, 52, 40, 19, 34, 28, 36, 52, 27})
	// log2/float32[1, 3, 2]/-3e+38
	f.Add([]byte{48, 54, 19, 19, 51, 63, 62, 1, 17, 2, 36, 21, 27, 27, 42, 0, 40, 32, 43, 61, 40, 13, 40, 24, 3, 11, 38, 28, 14, 24, 27, 59, 39, 19, 35, 45, 48, 8, 1, 2, 27, 54, 53, 12, 16, 18, 27, 50})
	// xlogy/bool[4, 1] bool[4, 1]
	f.Add([]byte{36, 13, 47, 22, 54, 36, 12, 26, 28, 8, 53, 25, 45, 22, 40, 41, 14, 30, 12, 32, 0, 29, 40, 57, 0, 33, 10, 24, 59, 55, 42, 55, 14, 58, 55, 47, 34, 36, 30, 19, 56, 10, 44, 30, 20, 48, 21, 5})
	// matrix_exp/float64[1, 1] [1, 0]/upper false
	f.Add([]byte{3, 3, 61, 42, 61, 9, 25, 10, 3, 43, 63, 16, 59, 14, 5, 3, 9, 41, 27, 12, 1, 29, 22, 59, 9, 19, 30, 17, 2, 0, 35, 50, 40, 28, 45, 57, 8, 13, 19, 40, 18, 42, 48, 59, 27, 20, 46, 11})
	// take_along_dim/int32[0, 2]/dim 1
	f.Add([]byte{46, 58, 14, 62, 50, 7, 35, 13, 20, 43, 28, 13, 60, 62, 43, 47, 12, 38, 46, 29, 42, 52, 28, 47, 41, 44, 16, 7, 53, 1, 10, 2, 53, 25, 2, 15, 47, 12, 11, 35, 48, 14, 40, 55, 61, 16, 8, 20})
	// cholesky/float32[4, 4] [4, 4]/upper false
	f.Add([]byte{39, 49, 29, 30, 38, 43, 62, 15, 34, 36, 23, 23, 2, 12, 58, 19, 34, 54, 47, 43, 39, 53, 7, 18, 15, 16, 30, 50, 17, 34, 56, 12, 56, 32, 22, 42, 1, 6, 21, 8, 55, 0, 53, 49, 58, 6, 50, 31})
	// index_add/float16[0, 2, 0]/dim -2
	f.Add([]byte{50, 21, 59, 7, 35, 7, 20, 23, 26, 55, 7, 14, 2, 63, 62, 14, 50, 7, 58, 4, 38, 28, 63, 25, 10, 54, 61, 62, 61, 7, 26, 30, 36, 43, 2, 35, 21, 27, 51, 41, 20, 45, 50, 22, 41, 22, 37, 22})
	// cumprod/float32[1, 4, 2]/dim 2
	f.Add([]byte{29, 55, 49, 7, 61, 29, 52, 17, 58, 50, 12, 4, 38, 33, 1, 39, 33, 48, 22, 0, 28, 0, 0, 7, 56, 5, 62, 58, 42, 6, 35, 38, 37, 21, 63, 20, 31, 35, 5, 44, 24, 61, 1, 15, 36, 8, 53, 23})
	// scatter_reduce amax/float64[0, 1]/dim 1
	f.Add([]byte{62, 35, 8, 14, 40, 61, 28, 32, 2, 59, 41, 53, 45, 27, 33, 52, 54, 40, 38, 29, 54, 8, 57, 7, 50, 43, 49, 58, 44, 59, 49, 36, 37, 33, 54, 17, 58, 17, 8, 57, 17, 46, 46, 4, 18, 37, 39, 8})
	// searchsorted right true/bfloat16[0]/dim -1
	f.Add([]byte{17, 51, 29, 9, 20, 56, 6, 28, 59, 38, 42, 42, 57, 37, 17, 53, 23, 1, 57, 57, 36, 49, 59, 8, 3, 0, 52, 51, 26, 56, 22, 15, 40, 22, 36, 43, 47, 4, 20, 2, 47, 62, 39, 26, 47, 15, 8, 6})
	// lstsq/float64[0, 0] [0, 0]/upper false
	f.Add([]byte{7, 15, 40, 21, 27, 47, 1, 54, 3, 53, 2, 37, 37, 61, 25, 12, 23, 1, 10, 44, 61, 12, 36, 63, 52, 41, 44, 49, 31, 25, 26, 54, 44, 58, 46, 50, 56, 2, 53, 53, 34, 3, 24, 6, 48, 30, 5, 3})
	// solve/float64[4, 4] [4, 0]/upper true
	f.Add([]byte{63, 51, 9, 60, 28, 22, 5, 60, 17, 1, 13, 49, 3, 36, 50, 56, 9, 48, 22, 40, 26, 28, 52, 45, 37, 28, 57, 9, 25, 29, 63, 20, 42, 18, 40, 60, 38, 3, 57, 7, 22, 56, 55, 3, 53, 43, 42, 5})
	fzGPUFor(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		switch r.intn(4) {
		case 0:
			fuzzElementwise(t, r, mathUnary, mathBinary)
		case 1:
			fuzzMathScan(t, r)
		case 2:
			fuzzMathIndex(t, r)
		default:
			fuzzMathLinalg(t, r)
		}
	})
}

// fzUnary is a one-operand function, with a parameter drawn for those that
// take one; fzBinary a two-operand elementwise function.
type (
	fzUnary struct {
		name string
		call func(x *Tensor, p float64) *Tensor
	}
	fzBinary struct {
		name string
		call func(x, y *Tensor) *Tensor
	}
)

// mathUnary are FuzzMathMore's one-operand functions.
var mathUnary = []fzUnary{
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

// mathBinary are its two-operand elementwise functions.
var mathBinary = []fzBinary{
	{"xlogy", (*Tensor).Xlogy},
	{"hypot", (*Tensor).Hypot},
	{"logaddexp", (*Tensor).LogAddExp},
	{"logaddexp2", (*Tensor).LogAddExp2},
	{"copysign", (*Tensor).Copysign},
	{"heaviside", (*Tensor).Heaviside},
	{"fmax", (*Tensor).Fmax},
	{"fmin", (*Tensor).Fmin},
	{"kron", (*Tensor).Kron},
	// y is isin's test: from 16 elements on (10·24^0.145) it is sorted
	// and searched.
	{"isin", func(x, y *Tensor) *Tensor { return Isin(x, y, false) }},
	{"isin invert", func(x, y *Tensor) *Tensor { return Isin(x, y, true) }},
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

// fuzzElementwise draws one of unary or binary and its operands.
func fuzzElementwise(t *testing.T, r *fzReader, unary []fzUnary, binary []fzBinary) {
	dt := r.lossDType()
	shape := r.shape(3, 24)
	moderate := r.intn(4) != 0
	x := r.mathOperand(dt, shape, moderate)
	tol := mathTol(dt, moderate)
	if r.intn(2) == 0 {
		f := unary[r.intn(len(unary))]
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
	f := binary[r.intn(len(binary))]
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

// fuzzMathIndex draws the indexing and shape functions (take to vander)
// with indices mostly in range (now and then past either end, or of a
// float dtype), of the shape each op takes or another, and dims mostly in
// range.
func fuzzMathIndex(t *testing.T, r *fzReader) {
	dt := r.lossDType()
	shape := r.shape(3, 24)
	moderate := r.intn(4) != 0
	x := r.mathOperand(dt, shape, moderate)
	rank := len(shape)
	dim := r.dim(rank)
	if rank > 0 && r.intn(8) != 0 {
		dim = r.intn(2*rank) - rank // in range
	}
	size := 1
	if dim >= -rank && dim < rank {
		size = shape[(dim+rank)%max(rank, 1)]
	}
	// indexOf is an index tensor of shape s: Int64 mostly, its values in
	// [-size, size) but one time in 64 past either end.
	indexOf := func(s []int) *Tensor {
		v := make([]float64, dispatch.Numel(s))
		for i := range v {
			v[i] = float64(r.intn(2*max(size, 1)) - size)
			if r.intn(64) == 0 {
				v[i] = float64([4]int{size, -size - 1, 1 << 40, -(1 << 40)}[r.intn(4)])
			}
		}
		return fzTensor(v, [16]DType{Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int32, Int32, Int32, Float32}[r.intn(16)], s)
	}
	// along is x's shape with dim's size m (the shape an index or source
	// along dim takes), or now and then another.
	along := func(m int) []int {
		s := slices.Clone(shape)
		if dim >= -rank && dim < rank && rank > 0 {
			s[(dim+rank)%rank] = m
		}
		if r.intn(16) == 0 {
			s = r.moreLossShape(shape)
		}
		return s
	}
	m := r.intn(4)
	var in []*Tensor
	var call func(in []*Tensor) *Tensor
	label := dt.String() + dispatch.FormatShape(shape) + "/dim " + strconv.Itoa(dim)
	switch r.intn(12) {
	case 0:
		in = []*Tensor{x, indexOf(r.shape(2, 8))}
		label, call = "take/"+label, func(in []*Tensor) *Tensor { return in[0].Take(in[1]) }
	case 1:
		in = []*Tensor{x, indexOf(along(m))}
		label, call = "take_along_dim/"+label, func(in []*Tensor) *Tensor { return in[0].TakeAlongDim(in[1], dim) }
	case 2:
		alpha := []float64{1, 2, -0.5, 0}[r.intn(4)]
		in = []*Tensor{x, indexOf([]int{m}), r.mathOperand(dt, along(m), moderate)}
		label, call = "index_add/"+label, func(in []*Tensor) *Tensor { return in[0].IndexAdd(dim, in[1], in[2], alpha) }
	case 3:
		in = []*Tensor{x, indexOf([]int{m}), r.mathOperand(dt, along(m), moderate)}
		label, call = "index_copy/"+label, func(in []*Tensor) *Tensor { return in[0].IndexCopy(dim, in[1], in[2]) }
	case 4:
		v := r.value()
		in = []*Tensor{x, indexOf([]int{m})}
		label, call = "index_fill/"+label, func(in []*Tensor) *Tensor { return in[0].IndexFill(dim, in[1], v) }
	case 5:
		reduce := []string{"sum", "prod", "mean", "amax", "amin", "max"}[r.intn(6)]
		self := r.intn(2) == 0
		is := along(min(m, size))
		in = []*Tensor{x, indexOf(is), r.mathOperand(dt, is, moderate)}
		label, call = "scatter_reduce "+reduce+"/"+label, func(in []*Tensor) *Tensor {
			return in[0].ScatterReduce(dim, in[1], in[2], reduce, self)
		}
	case 6:
		k, d2 := r.intn(9)-4, r.dim(rank)
		if rank >= 2 && r.intn(8) != 0 {
			d2 = (dim + 1 + r.intn(rank-1)) % rank // in range, another dim
		}
		in = []*Tensor{x}
		label, call = "rot90 "+strconv.Itoa(k)+" "+strconv.Itoa(d2)+"/"+label, func(in []*Tensor) *Tensor { return in[0].Rot90(k, dim, d2) }
	case 7:
		off, d2 := r.intn(5)-2, r.dim(rank+1)
		in = []*Tensor{x}
		label, call = "diag_embed/"+label, func(in []*Tensor) *Tensor { return in[0].DiagEmbed(off, dim, d2) }
	case 8:
		sections := r.intn(5) - 1
		in = []*Tensor{x}
		label, call = "tensor_split "+strconv.Itoa(sections)+"/"+label, func(in []*Tensor) *Tensor {
			parts, err := in[0].TensorSplit(sections, dim)
			if err != nil {
				return failed(err)
			}
			return Concat(parts, dim)
		}
	case 9:
		in = []*Tensor{x}
		label, call = "vander "+strconv.Itoa(m)+"/"+label, func(in []*Tensor) *Tensor { return in[0].Vander(m, dim > 0) }
	case 10:
		in = []*Tensor{x, r.mathOperand(dt, r.shape(2, 8), moderate)}
		label, call = "block_diag/"+label, func(in []*Tensor) *Tensor { return BlockDiag(in[0], in[1]) }
	default:
		in = []*Tensor{x}
		label, call = "stacks/"+label, func(in []*Tensor) *Tensor {
			return Concat([]*Tensor{HStack(in).Flatten(), VStack(in).Flatten(), DStack(in).Flatten()}, 0)
		}
	}
	fzDevices(t, label, mathTol(dt, moderate), call, in...)
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

// linalgOperands draws a matrix (or a batch of them, or another shape)
// and a right-hand side for the linear-algebra functions, with the label
// that names them and a flag (upper) for the functions that take one.
func linalgOperands(r *fzReader) (a, b *Tensor, label string, upper bool) {
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
	a = r.mathOperand(dt, shape, moderate)
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
	b = r.mathOperand(dt, bs, moderate)
	upper = r.intn(2) == 0
	label = dt.String() + dispatch.FormatShape(shape) + " " + dispatch.FormatShape(bs) + "/upper " + strconv.FormatBool(upper)
	return a, b, label, upper
}

func fuzzMathLinalg(t *testing.T, r *fzReader) {
	a, b, label, upper := linalgOperands(r)
	var call func(a, b *Tensor) *Tensor
	switch r.intn(18) {
	case 10:
		label, call = "eigh/"+label, func(a, _ *Tensor) *Tensor { w, v := a.Eigh(upper); return pairOf(w, v) }
	case 11:
		full := upper
		label, call = "svd/"+label, func(a, _ *Tensor) *Tensor {
			u, s, vh := a.SVD(full)
			return pairOf(pairOf(u, s), vh)
		}
	case 12:
		label, call = "pinv/"+label, func(a, _ *Tensor) *Tensor { return a.Pinv() }
	case 13:
		label, call = "matrix_rank/"+label, func(a, _ *Tensor) *Tensor { return a.MatrixRank() }
	case 14:
		ord := MatrixOrd(r.intn(9)) // one past OrdNeg2 is none
		label, call = "matrix_norm "+strconv.Itoa(int(ord))+"/"+label, func(a, _ *Tensor) *Tensor { return a.MatrixNorm(ord) }
	case 15:
		k := r.intn(7) - 3
		label, call = "matrix_power "+strconv.Itoa(k)+"/"+label, func(a, _ *Tensor) *Tensor { return a.MatrixPower(k) }
	case 16:
		label, call = "matrix_exp/"+label, func(a, _ *Tensor) *Tensor { return a.MatrixExp() }
	case 17:
		label, call = "lstsq/"+label, func(a, b *Tensor) *Tensor { return a.Lstsq(b) }
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
	fzEachDevice(t, label, call, a, b)
}

// fzEachDevice calls call on a and b on the cpu and on wgpu:0, and holds
// each result, read back, to the first promise alone: no panic, and an
// error of one of the kinds (where the devices' pivots round differently,
// a matrix singular on one need not be on the other).
func fzEachDevice(t *testing.T, label string, call func(a, b *Tensor) *Tensor, a, b *Tensor) {
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
