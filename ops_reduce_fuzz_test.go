package lathe

import (
	"math"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// FuzzReduce draws a reduction (sum, prod, max, min, mean, var, std,
// logsumexp, argmax, argmin) over dims that may repeat or be out of range,
// with keepdim and a correction, or a scan (cumsum, softmax, log_softmax)
// along one dim, of any dtype and a shape with empty dims, over values with
// NaN and infinities. The result must follow the schema's rule (dtypes,
// the dims' normalisation, no empty max), and sum, prod, mean, max, min,
// argmax and argmin must equal a float64 reduction done here (NaN wins
// max and argmax, as in PyTorch; the first of equal values is the index);
// every op must match wgpu:0.
func FuzzReduce(f *testing.F) {
	f.Add([]byte{0, 0, 2, 3, 4, 1, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{3, 0, 3, 2, 2, 2, 2, 0, 1, 1, 0, 7, 11, 15, 19, 23, 27, 31, 35})
	f.Add([]byte{8, 1, 2, 2, 0, 1, 3, 0, 1})
	f.Add([]byte{10, 0, 2, 3, 4, 1, 7, 7, 7, 7, 0, 0, 0, 0, 3, 3, 3, 3})
	f.Add([]byte{6, 0, 1, 4, 0, 0, 12, 8, 0, 200})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		names := []string{"sum", "prod", "max", "min", "var", "std", "logsumexp", "argmax", "argmin", "mean", "cumsum", "softmax", "log_softmax"}
		name := names[r.intn(len(names))]
		dt := fzDTypes[r.intn(len(fzDTypes))]
		shape := r.shape(4, 64)
		x := fzOperand(r, dt, shape)
		label := name + "/" + dt.String() + dispatch.FormatShape(shape)
		if name == "cumsum" || name == "softmax" || name == "log_softmax" {
			fuzzScan(t, r, name, label, x, shape, dt)
			return
		}
		var dims []int
		for range r.intn(4) {
			dims = append(dims, r.dim(len(shape)))
		}
		keep := r.intn(2) == 1
		correction := r.intn(3)
		if r.intn(16) == 0 {
			correction = -1
		}
		a := ops.Reduce{Dims: dims, KeepDim: keep, Correction: correction}
		var rop ops.ReduceOp
		var op *dispatch.Op[ops.Reduce]
		for _, ro := range ops.ReduceOps {
			if ro.Op.Name == name {
				rop, op = ro, ro.Op
			}
		}
		if name == "mean" {
			rop, op = ops.ReduceOp{DTypes: ops.Floats}, ops.Mean
		}
		if name != "var" && name != "std" {
			a.Correction = 0
		}
		label += "/dims" + dispatch.FormatShape(dims)
		spread := fzSpread(x)
		tol := 1e-5 * spread
		if fzOverflows(x, name) {
			tol = -1
		}
		out := fzDiff(t, label, tol, func(in []*Tensor) *Tensor { return apply(op, a, in[0]) }, x)

		// The rule.
		reduced, oshape, refuse := fzReduceShape(shape, dims, keep)
		switch {
		case !rop.DTypes.Has(dt):
			refuse = ErrDType
		case rop.OneDim && len(dims) > 1:
			refuse = ErrValue
		case a.Correction < 0:
			refuse = ErrValue
		case refuse != nil:
		case rop.NoEmpty && slices.ContainsFunc(reduced, func(d int) bool { return shape[d] == 0 }):
			refuse = ErrShape
		}
		want := dt
		if rop.Indices {
			want = dispatch.Int64 // on every device, as in PyTorch
		}
		fzWant(t, label, out, refuse, oshape, want)
		if name == "sum" || name == "prod" {
			fuzzWideReduce(t, label+"/method", name, x, shape, dims, keep, tol)
		}
		if refuse != nil || out.Err() != nil {
			return
		}
		ref := fzReduceRef(t, name, x, shape, reduced)
		if ref == nil {
			return
		}
		got, err := fzHost(out)
		if err != nil {
			t.Fatal(err)
		}
		tol = 0
		if (name == "sum" || name == "mean" || name == "prod") && !dt.IsInt() {
			tol = 1e-5 * spread
		}
		for i := range ref {
			if !fzClose(got[i], ref[i], tol) {
				t.Fatalf("%s: element %d is %v, a float64 %s gives %v (got %v)", label, i, got[i], name, ref[i], got)
			}
		}
	})
}

// fuzzWideReduce checks the methods Sum, Prod and their KeepDim forms,
// which take integers and bools to int64 as torch does (the op above
// keeps the dtype): the rule, int64's result, and int64 values that equal
// the op's on x cast to int64 (which wrap only at 64 bits).
func fuzzWideReduce(t *testing.T, label, name string, x *Tensor, shape, dims []int, keep bool, tol float64) {
	method := map[string]func(x *Tensor, dims ...int) *Tensor{"sum": (*Tensor).Sum, "prod": (*Tensor).Prod,
		"sum/keep": (*Tensor).SumKeepDim, "prod/keep": (*Tensor).ProdKeepDim}
	if keep {
		name += "/keep"
	}
	dt := x.DType()
	wide := dt.IsInt() || dt == Bool
	if wide {
		tol = 0
	}
	out := fzDiff(t, label, tol, func(in []*Tensor) *Tensor { return method[name](in[0], dims...) }, x)
	_, oshape, refuse := fzReduceShape(shape, dims, keep)
	want := dt
	if wide {
		want = Int64
	}
	fzWant(t, label, out, refuse, oshape, want)
	if refuse != nil || !wide {
		return
	}
	wx := x.Cast(Int64)
	defer wx.Release()
	ref := method[name](wx, dims...)
	got, err := fzHost(out)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := fzHost(ref)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, exp) {
		t.Fatalf("%s: %v, the int64 %s of x gives %v", label, got, name, exp)
	}
}

// fzSpread is the sum of |x| (at least 1): the scale of rounding in a
// sum of x's elements, whatever their order.
func fzSpread(x *Tensor) float64 {
	v, err := fzHost(x)
	if err != nil {
		return 1
	}
	s := 1.0
	for _, e := range v {
		if !math.IsNaN(e) {
			s += math.Abs(e)
		}
	}
	return s
}

// fzReduceShape normalises dims as PyTorch does and returns the reduced
// dims, sorted, and the output shape, or the kind of refusal.
func fzReduceShape(shape, dims []int, keep bool) (reduced, out []int, refuse error) {
	rank := len(shape)
	is := make([]bool, rank)
	if len(dims) == 0 {
		for d := range is {
			is[d] = true
		}
	}
	seen := make([]bool, max(rank, 1))
	for _, d := range dims {
		nd, ok := normDim(d, rank)
		if !ok {
			return nil, nil, ErrIndex
		}
		if seen[nd] {
			return nil, nil, ErrValue
		}
		seen[nd] = true
		if nd < rank {
			is[nd] = true
		}
	}
	out = []int{}
	for d, s := range shape {
		switch {
		case is[d]:
			reduced = append(reduced, d)
			if keep {
				out = append(out, 1)
			}
		default:
			out = append(out, s)
		}
	}
	return reduced, out, nil
}

// fzReduceRef is the reduction computed here in float64 (wrapping as the
// dtype does for integers), or nil for the ops it does not compute.
func fzReduceRef(t *testing.T, name string, x *Tensor, shape, reduced []int) []float64 {
	switch name {
	case "sum", "prod", "max", "min", "mean", "argmax", "argmin":
	default:
		return nil
	}
	v, err := fzHost(x)
	if err != nil {
		t.Fatal(err)
	}
	is := make([]bool, len(shape))
	for _, d := range reduced {
		is[d] = true
	}
	// Each input element's output position and its index along the
	// reduced dims (row-major over them), for argmax's answer.
	nout := 1
	for d, s := range shape {
		if !is[d] {
			nout *= s
		}
	}
	type acc struct {
		v     float64
		i     int64 // integer sum and product, wrapping
		arg   int
		count int
	}
	accs := make([]acc, nout)
	idx := make([]int, len(shape))
	for _, e := range v {
		o, k := 0, 0
		for d, i := range idx {
			if is[d] {
				k = k*shape[d] + i
			} else {
				o = o*shape[d] + i
			}
		}
		a := &accs[o]
		switch {
		case a.count == 0:
			a.v, a.i, a.arg = e, int64(e), k
		case name == "sum" || name == "mean":
			a.v += e
			a.i += int64(e)
		case name == "prod":
			a.v *= e
			a.i *= int64(e)
		case name == "max" || name == "argmax":
			if !math.IsNaN(a.v) && (math.IsNaN(e) || e > a.v) {
				a.v, a.arg = e, k
			}
		case name == "min" || name == "argmin":
			if !math.IsNaN(a.v) && (math.IsNaN(e) || e < a.v) {
				a.v, a.arg = e, k
			}
		}
		a.count++
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	out := make([]float64, nout)
	for o, a := range accs {
		switch {
		case name == "argmax" || name == "argmin":
			out[o] = float64(a.arg)
		case name == "mean" && x.DType() == Float32:
			// The sum is a float32 before the division, as in PyTorch's
			// mean on the cpu (sum, then div_), so it may overflow.
			out[o] = float64(float32(a.v)) / float64(a.count)
		case name == "mean":
			out[o] = a.v / float64(a.count)
		case a.count == 0 && name == "sum":
			out[o] = 0
		case a.count == 0 && name == "prod":
			out[o] = 1
		case x.DType() == Int32 && (name == "sum" || name == "prod"):
			out[o] = float64(int32(a.i))
		case x.DType() == Int64 && (name == "sum" || name == "prod"):
			out[o] = float64(a.i)
		default:
			out[o] = a.v
		}
		if x.DType() == Float32 && name != "argmax" && name != "argmin" {
			out[o] = float64(float32(out[o]))
		}
	}
	return out
}

func fuzzScan(t *testing.T, r *fzReader, name, label string, x *Tensor, shape []int, dt DType) {
	dim := r.dim(len(shape))
	op := map[string]*dispatch.Op[ops.Scan]{"cumsum": ops.CumSum, "softmax": ops.Softmax, "log_softmax": ops.LogSoftmax}[name]
	tol := 1e-5 * fzSpread(x)
	if name != "cumsum" {
		tol = 1e-4 // exp's rounding, scaled by the largest term
	}
	if fzOverflows(x, name) {
		tol = -1
	}
	out := fzDiff(t, label, tol, func(in []*Tensor) *Tensor { return apply(op, ops.Scan{Dim: dim}, in[0]) }, x)
	var refuse error
	allowed := ops.Floats
	if name == "cumsum" {
		allowed = ops.Numeric
	}
	if !allowed.Has(dt) {
		refuse = ErrDType
	} else if _, ok := normDim(dim, len(shape)); !ok {
		refuse = ErrIndex
	}
	fzWant(t, label, out, refuse, shape, dt)
}

// fzOverflows reports whether a float32 reduction of x can overflow on
// the way (a sum past 3.4e38, a product, squares for var and std): then
// the cpu, which accumulates in float64, and wgpu, in float32 and another
// order, may give a number and Inf or NaN. PyTorch's devices differ there
// too, so the fuzzer compares them only where nothing overflows, and
// checks the rule alone where it may (issue 15 defect 15 is the class of
// disagreements on non-finite values).
func fzOverflows(x *Tensor, name string) bool {
	if x.DType() != Float32 {
		return false
	}
	v, err := fzHost(x)
	if err != nil {
		return false
	}
	sum, sq, prod := 0.0, 0.0, 1.0
	for _, e := range v {
		if math.IsNaN(e) || math.IsInf(e, 0) {
			continue // NaN and Inf give the same in any order
		}
		sum += math.Abs(e)
		sq += e * e
		prod *= max(math.Abs(e), 1)
	}
	const big = math.MaxFloat32
	switch name {
	case "prod":
		return prod > big
	case "var", "std":
		return sq > big
	}
	return sum > big
}
