package lathe

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

// FuzzLoss draws softmax and log_softmax along any dim (out of range and
// negative too), cross_entropy and nll_loss of inputs of rank 0 to 4
// (class dim 1, as torch's (N, C, d1, ...); [C] with a 0-d target)
// against int64 or int32 class targets that may be out of range, negative
// or the ignore index (near int64's edges too), with class weights (of the
// wrong length or dtype, negative, summing to zero) and each reduction,
// mse_loss of two tensors of any dtypes whose shapes agree or not, and
// dropout with p in [0, 1] or outside it or NaN, in training or not, over
// values with NaN, -Inf rows and large magnitudes, in every float dtype.
// An input the rule refuses must be refused with its kind (ErrIndex for
// the dim and a class out of range, ErrShape, ErrDType, ErrValue for p
// and the reduction); an accepted one must have torch's shape and dtype
// and the values of a reference computed here in float64, rounded to the
// dtype where lathe rounds (dropout's mask is internal/philox's under the
// key the call draws: exact), and wgpu:0 must give the cpu's values.
//
// lathe documents two rules of its own that the oracle follows: a class
// target may be int32 (torch wants int64), and mse_loss does not broadcast
// (torch warns and does). Two more differ from torch 1.13 undocumented,
// and the oracle follows lathe there too: mse_loss of two integer or bool
// tensors is computed in float32 (torch has no kernel for them), and
// dropout refuses an integer or bool x even where torch returns it (train
// false, p 0 or 1).
func FuzzLoss(f *testing.F) {
	// softmax float32 [3, 4] dim 1
	f.Add([]byte{0, 24, 7, 3, 7, 33, 29, 9, 26, 44, 42, 57, 53, 32, 45, 29, 15, 18, 39, 55, 22, 39})
	// log_softmax float16 [2, 2] dim 0
	f.Add([]byte{0, 13, 63, 59, 12, 17, 2, 45, 31, 10, 45, 26, 39, 3})
	// cross_entropy float32 [2, 3], mean
	f.Add([]byte{1, 24, 33, 1, 29, 45, 54, 54, 7, 23, 16, 4, 18, 12, 4, 8, 38, 63})
	// cross_entropy float32 [3, 2, 1], ignore 0, class weights, sum
	f.Add([]byte{1, 38, 0, 50, 50, 29, 47, 9, 6, 28, 47, 21, 21, 19, 1, 10, 28, 22, 21, 24, 28, 59, 17, 32, 48, 55, 47, 63, 37, 5, 58, 5})
	// nll_loss float64 [3], int32 0-d target, none
	f.Add([]byte{1, 23, 0, 57, 36, 38, 50, 18, 62, 62, 43, 60, 40, 29, 58, 41, 43, 7, 11, 34, 6})
	// nll_loss, ignore 1<<62 + 1
	f.Add([]byte{1, 57, 18, 48, 41, 55, 15, 62, 19, 63, 35, 47, 63, 15, 43, 46, 22, 46, 60, 57, 25, 7, 63, 0, 23, 51, 12, 46, 57, 3, 6, 43, 1})
	// mse_loss bfloat16 and float32 [4, 3], sum
	f.Add([]byte{2, 40, 13, 12, 47, 34, 42, 4, 48, 61, 46, 10, 23, 38, 58, 10, 51, 29, 57, 43, 16, 42, 0, 18, 7, 62, 28, 3, 8, 62, 19, 29, 60, 38, 35, 13, 15, 6, 9})
	// dropout float32 [2, 2], p 0.5
	f.Add([]byte{3, 26, 32, 37, 27, 7, 59, 16, 48, 10, 40, 12, 27, 19, 42, 51})
	// dropout bfloat16 [4], p 1
	f.Add([]byte{3, 59, 44, 36, 39, 28, 2, 40, 17, 4, 9, 59, 50, 31})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		switch r.intn(4) {
		case 0:
			fuzzSoftmax(t, r)
		case 1:
			fuzzClassLoss(t, r)
		case 2:
			fuzzMSE(t, r)
		default:
			fuzzDropout(t, r)
		}
	})
}

// lossDType is the dtype of a loss's input: a float mostly, one time in
// eight one of the others, which the losses refuse (but mse_loss).
func (r *fzReader) lossDType() DType {
	other := [2]DType{Int64, Bool}[r.intn(2)]
	return [16]DType{Float32, Float32, Float32, Float32, Float32, Float32, Float64, Float64, Float64, Float64,
		Float16, Float16, BFloat16, BFloat16, Int32, other}[r.intn(16)]
}

// lossValues are n values for a loss's input: the reader's values (NaN,
// infinities and float32's edges among them), or, one draw in eight,
// values of large magnitude, and one in eight half -Inf (rows of -Inf).
func (r *fzReader) lossValues(n int) []float64 {
	mode := r.intn(8)
	v := make([]float64, n)
	for i := range v {
		v[i] = r.value()
		switch {
		case mode == 0:
			v[i] *= 2e3
		case mode == 1 && r.intn(2) == 0:
			v[i] = math.Inf(-1)
		}
	}
	return v
}

// lossOperand is a tensor of dt and shape holding lossValues, transposed
// from a copy now and then, so that the kernels see views.
func (r *fzReader) lossOperand(dt DType, shape []int) *Tensor {
	n := dispatch.Numel(shape)
	if len(shape) >= 2 && r.intn(4) == 0 {
		ts := slices.Clone(shape)
		ts[0], ts[1] = ts[1], ts[0]
		return fzTensor(r.lossValues(n), dt, ts).Transpose(0, 1)
	}
	return fzTensor(r.lossValues(n), dt, shape)
}

// fzEps is the relative rounding of one operation in dt, and fzEpsComp of
// the arithmetic behind it (float32 for the 16-bit floats, which every
// device computes in float32 between conversions).
func fzEps(dt DType) float64 {
	switch dt {
	case Float64:
		return 0x1p-53
	case Float16:
		return 0x1p-11
	case BFloat16:
		return 0x1p-8
	}
	return 0x1p-24
}

func fzEpsComp(dt DType) float64 { return fzEps(fzCompDType(dt)) }

// fzCompDType is the dtype a device computes dt's arithmetic in.
func fzCompDType(dt DType) DType {
	if dt == Float64 {
		return Float64
	}
	return Float32
}

// fzRound is v rounded to float dt as a device rounds a float32 result to
// it; float64 stays.
func fzRound(v float64, dt DType) float64 {
	switch dt {
	case Float32:
		return float64(float32(v))
	case Float16:
		return float64(half.Float16ToFloat32(half.Float16FromFloat32(float32(v))))
	case BFloat16:
		return float64(half.BFloat16ToFloat32(half.BFloat16FromFloat32(float32(v))))
	}
	return v
}

// fzFinite is v, or 0 where v is an infinity or NaN.
func fzFinite(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}

// fzNear reports whether got is want within abs; NaN matches NaN, an
// infinity its own sign, and past dt's largest finite value over 16 a
// number of that sign matches an infinity (one rounding may overflow where
// another does not).
func fzNear(got, want, abs float64, dt DType) bool {
	big := fzMaxFinite(dt) / 16
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return got == want || math.Abs(got) > big && math.Abs(want) > big && math.Signbit(got) == math.Signbit(want)
	}
	return math.Abs(got-want) <= abs
}

// fzSoftmaxRef is softmax (or log_softmax) of x's values v along dim d of
// shape in float64 as torch computes it (x - max, exp, sum, log), each
// row's x - max rounded to dt as a device rounds it, and for each element
// the scale of its rounding: 1 + |x - max| (where finite) + log of the
// row's size.
func fzSoftmaxRef(v []float64, shape []int, d int, log bool, dt DType) (out, scale []float64) {
	n, inner := 1, 1
	if len(shape) > 0 {
		n, inner = shape[d], dispatch.Numel(shape[d+1:])
	}
	outer := len(v) / max(n*inner, 1)
	out, scale = make([]float64, len(v)), make([]float64, len(v))
	for o := range outer {
		for in := range inner {
			at := func(i int) int { return (o*n+i)*inner + in }
			m := math.Inf(-1)
			for i := range n {
				m = math.Max(m, v[at(i)]) // NaN wins, as in torch
			}
			s := 0.0
			for i := range n {
				s += math.Exp(fzRound(v[at(i)]-m, fzCompDType(dt)))
			}
			for i := range n {
				z := fzRound(v[at(i)]-m, fzCompDType(dt))
				if log {
					out[at(i)] = z - math.Log(s)
				} else {
					out[at(i)] = math.Exp(z) / s
				}
				scale[at(i)] = 1 + math.Log(float64(n)) + fzFinite(math.Abs(z))
			}
		}
	}
	return out, scale
}

func fuzzSoftmax(t *testing.T, r *fzReader) {
	log := r.intn(2) == 1
	dt := r.lossDType()
	shape := r.shape(4, 48)
	x := r.lossOperand(dt, shape)
	dim := r.dim(len(shape))
	name := "softmax"
	if log {
		name = "log_softmax"
	}
	label := name + "/" + dt.String() + dispatch.FormatShape(shape) + "/dim" + strconv.Itoa(dim)
	d, dimOK := normDim(dim, len(shape))
	var refuse error
	if !dt.IsFloat() {
		refuse = ErrDType
	}
	if !dimOK {
		refuse = orEither(refuse, ErrIndex)
	}
	var want, scale []float64
	devTol := -1.0
	if refuse == nil {
		xv, err := fzHost(x)
		if err != nil {
			t.Fatal(err)
		}
		want, scale = fzSoftmaxRef(xv, shape, d, log, dt)
		devTol = 0
		for i := range want {
			devTol = max(devTol, 8*(fzEps(dt)+fzEpsComp(dt)*scale[i]))
		}
	}
	out := fzDiff(t, label, devTol, func(in []*Tensor) *Tensor {
		if log {
			return in[0].LogSoftmax(dim)
		}
		return in[0].Softmax(dim)
	}, x)
	fzWant(t, label, out, refuse, shape, dt)
	if refuse != nil || out.Err() != nil {
		return
	}
	got, err := fzHost(out)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		w := fzRound(want[i], dt)
		if !fzNear(got[i], w, 4*fzEps(dt)*math.Abs(w)+8*fzEpsComp(dt)*scale[i], dt) {
			t.Fatalf("%s: element %d is %v, a float64 %s gives %v (got %v)", label, i, got[i], name, w, got)
		}
	}
}

// fzIgnores are ignore indices near int64's edges, some of which float64
// does not hold exactly.
var fzIgnores = []int{1<<62 + 1, math.MaxInt, math.MinInt, 1<<53 + 1, -(1 << 53) - 1, 1 << 40, math.MinInt32, math.MaxInt32}

// classTarget is a class target of dt and shape: classes in [0, c) and
// the ignore index, and in one target of four also -1, c and extremes
// (saturated to int32's range for an int32 target). A float or bool
// target holds classes as numbers.
func (r *fzReader) classTarget(dt DType, shape []int, c int, ignore int64) *Tensor {
	wild := r.intn(4) == 0
	v := make([]int64, dispatch.Numel(shape))
	for i := range v {
		k := r.intn(16)
		if !wild {
			k %= 13
		}
		switch {
		case k < 11:
			v[i] = int64(r.intn(max(c, 1)))
		case k < 13:
			v[i] = ignore
		case k == 13:
			v[i] = -1
		case k == 14:
			v[i] = int64(c)
		default:
			v[i] = int64(fzIgnores[r.intn(len(fzIgnores))])
		}
	}
	switch dt {
	case Int64:
		return FromSlice(CPU, v).Reshape(shape...)
	case Int32:
		w := make([]int32, len(v))
		for i, e := range v {
			w[i] = int32(min(max(e, math.MinInt32), math.MaxInt32))
		}
		return FromSlice(CPU, w).Reshape(shape...)
	}
	f := make([]float64, len(v))
	for i, e := range v {
		f[i] = float64(e)
	}
	return fzTensor(f, dt, shape)
}

func fuzzClassLoss(t *testing.T, r *fzReader) {
	ce := r.intn(2) == 0
	dt := r.lossDType()
	rank := 1 + r.intn(4)
	if r.intn(16) == 0 {
		rank = 0
	}
	n, c := r.intn(4), 1+r.intn(4)
	if r.intn(10) == 0 {
		c = 0
	}
	var shape []int
	switch rank {
	case 0:
	case 1:
		shape = []int{c}
	default:
		shape = []int{n, c}
		for range rank - 2 {
			shape = append(shape, r.intn(3))
		}
	}
	x := r.lossOperand(dt, shape)

	// The target: x's shape less the class dim, or a shape that is not.
	var tshape []int
	if rank >= 2 {
		tshape = append([]int{n}, shape[2:]...)
	}
	tshapeOK := rank > 0
	if r.intn(10) == 0 {
		switch k := r.intn(3); {
		case k == 0 && len(tshape) > 0:
			tshape = tshape[:len(tshape)-1]
		case k == 2 && len(tshape) > 0:
			tshape = slices.Clone(tshape)
			tshape[len(tshape)-1]++
		default:
			tshape = append(slices.Clone(tshape), 1)
		}
		tshapeOK = false
	}
	tdt := [16]DType{Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int32, Int32, Int32, Int32, Int32, Float32, Bool}[r.intn(16)]

	var opts []LossOption
	ignore := int64(-100)
	switch k := r.intn(8); {
	case k == 4:
		ignore = 0
	case k == 5:
		ignore = int64(r.intn(c + 1))
	case k == 6:
		ignore = -1
	case k == 7:
		ignore = int64(fzIgnores[r.intn(len(fzIgnores))])
	}
	ignoreGiven := ignore != -100 || r.intn(2) == 0
	if ignoreGiven {
		opts = append(opts, IgnoreIndex(int(ignore)))
	}
	target := r.classTarget(tdt, tshape, c, ignore)

	// The class weights: none, [C] of halves in [-2, 2] (so that their
	// sums are exact), or of another length or dtype.
	var weight *Tensor
	wOK := true
	if k := r.intn(8); k >= 4 {
		wshape, wdt := []int{c}, dt
		if k == 7 {
			switch r.intn(3) {
			case 0:
				wshape = []int{c + 1}
			case 1:
				wshape = []int{1, c}
			default:
				wdt = map[bool]DType{true: Float32, false: Float64}[dt == Float64]
			}
			wOK = false
		}
		wv := make([]float64, dispatch.Numel(wshape))
		for i := range wv {
			wv[i] = float64(r.intn(9)-4) / 2
		}
		weight = fzTensor(wv, wdt, wshape)
	}

	red := ReduceMean // the default, where no option says
	if k := r.intn(16); k >= 4 {
		red = []Reduction{ReduceMean, ReduceSum, ReduceNone, ReduceMean, ReduceSum, ReduceNone, ReduceMean, ReduceSum, ReduceNone,
			ReduceSum, ReduceNone, 7}[k-4]
		opts = append(opts, WithReduction(red))
	}

	name := "nll_loss"
	if ce {
		name = "cross_entropy"
	}
	label := name + "/" + dt.String() + dispatch.FormatShape(shape) + "/target " + tdt.String() + dispatch.FormatShape(tshape) +
		"/ignore " + strconv.FormatInt(ignore, 10) + "/" + red.String()
	if weight != nil {
		label += "/weight " + weight.DType().String() + dispatch.FormatShape(weight.Shape())
	}

	// The rule: each fault's kind, any kind where there are several.
	var refuse error
	fault := func(kind error) { refuse = orEither(refuse, kind) }
	if !dt.IsFloat() {
		fault(ErrDType)
	}
	if rank == 0 {
		fault(errAny) // cross_entropy's class dim is out of range; nll_loss's input has none
	}
	// A float target of x's shape (one drawn as a bad shape can be) is
	// cross_entropy's class probabilities, as torch's, which take no
	// ignore index that could name a class.
	probs := ce && rank > 0 && tdt.IsFloat() && slices.Equal(tshape, shape)
	switch {
	case probs:
		if ignoreGiven && ignore >= 0 {
			fault(ErrValue)
		}
	default:
		if !tdt.IsInt() {
			fault(ErrDType)
		}
		if !tshapeOK {
			fault(ErrShape)
		}
	}
	if !red.Valid() {
		fault(ErrValue)
	}
	if weight != nil && !wOK {
		if weight.DType() != dt {
			fault(ErrDType)
		} else {
			fault(ErrShape)
		}
	}
	tv, terr := fzInts(target)
	if tdt.IsInt() && rank > 0 {
		if terr != nil {
			t.Fatal(terr)
		}
		if slices.ContainsFunc(tv, func(v int64) bool { return v != ignore && (v < 0 || v >= int64(c)) }) {
			fault(ErrIndex)
		}
	}
	oshape := []int{}
	if red == ReduceNone {
		oshape = tshape
		if probs { // x's shape less the class dim
			oshape = slices.Delete(slices.Clone(shape), min(1, rank-1), min(1, rank-1)+1)
		}
	}

	var want, tol []float64
	devTol := -1.0
	if refuse == nil && !probs { // probabilities: the rule and the devices' agreement only
		want, tol, devTol = fzClassLossRef(t, x, tv, weight, ce, ignore, red, shape)
	}
	in := []*Tensor{x, target}
	if weight != nil {
		in = append(in, weight)
	}
	out := fzDiff(t, label, devTol, func(in []*Tensor) *Tensor {
		o := slices.Clone(opts)
		if len(in) > 2 {
			o = append(o, ClassWeights(in[2]))
		}
		if ce {
			return in[0].CrossEntropy(in[1], o...)
		}
		return in[0].NLLLoss(in[1], o...)
	}, in...)
	odt := dt
	if probs && dt.Size() < 4 { // 16-bit x and float32 probabilities promote
		odt = Float32
	}
	fzWant(t, label, out, refuse, oshape, odt)
	if refuse != nil || out.Err() != nil || want == nil {
		return
	}
	got, err := fzHost(out)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.IsInf(tol[i], 1) { // a zero denominator: ±Inf or NaN, as the numerator rounds
			if !math.IsInf(got[i], 0) && !math.IsNaN(got[i]) {
				t.Fatalf("%s: %v, but the weights of the targets kept sum to 0 (want Inf or NaN)", label, got)
			}
			continue
		}
		if !fzNear(got[i], want[i], tol[i], dt) {
			t.Fatalf("%s: element %d is %v, a float64 %s gives %v within %v (got %v)", label, i, got[i], name, want[i], tol[i], got)
		}
	}
}

// fzClassLossRef is the class loss done here: each target's -w[t]·logp[t]
// (0 where ignored), logp the log_softmax along the class dim for
// cross_entropy (x itself for nll_loss), rounded to x's dtype where lathe
// rounds, then reduced: the mean divides by the sum of the weights kept
// (their number without weights; 0/0 is NaN, as torch's). It returns the
// values, each one's tolerance (+Inf where a mean's denominator is 0 and
// its numerator may round to either sign or to 0), and the tolerance
// between devices (-1 where the sum may overflow on the way, or where a
// denominator is 0). A nil want means the values are not checked.
func fzClassLossRef(t *testing.T, x *Tensor, tv []int64, weight *Tensor, ce bool, ignore int64, red Reduction, shape []int) (want, tol []float64, devTol float64) {
	dt := x.DType()
	xv, err := fzHost(x)
	if err != nil {
		t.Fatal(err)
	}
	var wv []float64
	if weight != nil {
		if wv, err = fzHost(weight); err != nil {
			t.Fatal(err)
		}
	}
	cdim := min(1, len(shape)-1)
	c, inner := shape[cdim], dispatch.Numel(shape[cdim+1:])
	logp, scale := xv, make([]float64, len(xv))
	if ce {
		logp, scale = fzSoftmaxRef(xv, shape, cdim, true, dt)
	}
	eps, epsC := fzEps(dt), fzEpsComp(dt)
	terms, errs := make([]float64, len(tv)), make([]float64, len(tv))
	sumAbs, denom := 0.0, 0.0
	for j, cls := range tv {
		if cls == ignore {
			continue
		}
		lp := fzRound(logp[(j/inner*c+int(cls))*inner+j%inner], dt)
		e := 0.0 // nll_loss's input is its log-probabilities, exactly
		if ce && !math.IsInf(lp, 0) && !math.IsNaN(lp) {
			e = 4*eps*math.Abs(lp) + 8*epsC*scale[(j/inner*c+int(cls))*inner+j%inner]
		}
		w := 1.0
		if wv != nil {
			w = wv[cls]
		}
		terms[j] = fzRound(-lp*w, dt)
		errs[j] = e*math.Abs(w) + 2*eps*fzFinite(math.Abs(terms[j]))
		denom += w
		sumAbs += fzFinite(math.Abs(terms[j]))
	}
	if red == ReduceNone {
		want, tol = terms, errs
		for i := range want {
			devTol = max(devTol, 2*tol[i]/max(1, fzFinite(math.Abs(want[i]))))
		}
		return want, tol, devTol
	}
	if sumAbs > fzMaxFinite(dt)/16 {
		return nil, nil, -1 // a sum that may overflow on the way on one device and not another
	}
	sum, errSum := 0.0, 0.0
	for j := range terms {
		sum += terms[j]
		errSum += errs[j]
	}
	errSum += float64(len(terms)+4) * eps * sumAbs
	if red == ReduceSum {
		w := fzRound(sum, dt)
		e := errSum + 2*eps*fzFinite(math.Abs(w))
		return []float64{w}, []float64{e}, 2 * e / max(1, fzFinite(math.Abs(w)))
	}
	w := fzRound(fzRound(sum, dt)/denom, dt) // 0/0 is NaN, as torch's mean over no target kept
	if denom == 0 {
		e := 0.0 // NaN, or an infinity of the numerator's sign
		if math.Abs(sum) <= errSum && wv != nil {
			e = math.Inf(1) // the numerator may round to 0 or to either sign
		}
		return []float64{w}, []float64{e}, -1
	}
	e := errSum/math.Abs(denom) + 4*eps*fzFinite(math.Abs(w))
	return []float64{w}, []float64{e}, 2 * e / max(1, fzFinite(math.Abs(w)))
}

func fuzzMSE(t *testing.T, r *fzReader) {
	dt := r.lossDType()
	dt2 := dt
	if r.intn(4) == 0 {
		dt2 = r.lossDType()
	}
	shape := r.shape(4, 48)
	tshape := shape
	if r.intn(6) == 0 {
		tshape = fzBroadcastPartner(r, shape)
	}
	x, target := r.lossOperand(dt, shape), r.lossOperand(dt2, tshape)
	var opts []LossOption
	red := ReduceMean
	if k := r.intn(8); k < 3 {
		red = []Reduction{ReduceMean, ReduceSum, ReduceNone}[k]
		opts = append(opts, WithReduction(red))
	} else if k == 3 {
		red = Reduction(-1)
		opts = append(opts, WithReduction(red))
	}
	label := "mse_loss/" + dt.String() + dispatch.FormatShape(shape) + "/" + dt2.String() + dispatch.FormatShape(tshape) + "/" + red.String()

	var refuse error
	if !red.Valid() {
		refuse = ErrValue
	}
	if !slices.Equal(shape, tshape) {
		refuse = orEither(refuse, ErrShape) // lathe does not broadcast a loss (torch warns and does)
	}
	// torch.result_type; lathe computes two integer or bool tensors in
	// float32, where torch has no kernel for them.
	ct := fzResultType(fzOperandName(dt, shape), fzOperandName(dt2, shape))
	if !ct.IsFloat() {
		ct = Float32
	}
	oshape := []int{}
	if red == ReduceNone {
		oshape = shape
	}
	var want, tol []float64
	devTol := -1.0
	if refuse == nil {
		want, tol, devTol = fzMSERef(t, x, target, ct, red)
	}
	out := fzDiff(t, label, devTol, func(in []*Tensor) *Tensor { return in[0].MSELoss(in[1], opts...) }, x, target)
	fzWant(t, label, out, refuse, oshape, ct)
	if refuse != nil || out.Err() != nil || want == nil {
		return
	}
	got, err := fzHost(out)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !fzNear(got[i], want[i], tol[i], ct) {
			t.Fatalf("%s: element %d is %v, a float64 mse_loss gives %v within %v (got %v)", label, i, got[i], want[i], tol[i], got)
		}
	}
}

// fzMSERef is mse_loss done here in float64: both sides rounded to ct,
// their difference and its square each rounded to ct, then reduced; with
// each value's tolerance, and the devices' (-1 where a sum may overflow on
// the way). A nil want means the values are not checked.
func fzMSERef(t *testing.T, x, target *Tensor, ct DType, red Reduction) (want, tol []float64, devTol float64) {
	xv, err := fzHost(x)
	if err != nil {
		t.Fatal(err)
	}
	tv, err := fzHost(target)
	if err != nil {
		t.Fatal(err)
	}
	eps := fzEps(ct)
	sq := make([]float64, len(xv))
	sumAbs := 0.0
	for i := range xv {
		d := fzRound(fzRound(xv[i], ct)-fzRound(tv[i], ct), ct)
		sq[i] = fzRound(d*d, ct)
		sumAbs += fzFinite(sq[i])
	}
	if red == ReduceNone {
		tol = make([]float64, len(sq))
		for i := range sq {
			tol[i] = 4 * eps * math.Abs(sq[i])
		}
		return sq, tol, 4 * eps
	}
	if sumAbs > fzMaxFinite(ct)/16 {
		return nil, nil, -1
	}
	sum := 0.0
	for _, s := range sq {
		sum += s
	}
	e := float64(len(sq)+4) * eps * sumAbs
	if red == ReduceMean {
		sum /= float64(len(sq)) // 0/0 is NaN, as torch's mean of nothing
		e /= max(1, float64(len(sq)))
	}
	w := fzRound(sum, ct)
	e += 2 * eps * fzFinite(math.Abs(w))
	return []float64{w}, []float64{e}, 2 * e / max(1, fzFinite(math.Abs(w)))
}

func fuzzDropout(t *testing.T, r *fzReader) {
	dt := r.lossDType()
	shape := r.shape(4, 48)
	x := r.lossOperand(dt, shape)
	ps := []float64{0, 1, 0.5, 0.1, 0.9, 0.25, 1 - 0x1p-30, 0x1p-40, math.Copysign(0, -1),
		-0.1, 1.5, math.NaN(), math.Inf(1), math.Inf(-1), -1e-300, 1 + 0x1p-52}
	p := ps[r.intn(len(ps))] // in [0, 1] but one time in two
	if r.intn(4) != 0 {
		p = float64(r.intn(17)) / 16
	}
	train := r.intn(4) != 0
	label := "dropout/" + dt.String() + dispatch.FormatShape(shape) + "/p " + strconv.FormatFloat(p, 'g', -1, 64) + "/train " + strconv.FormatBool(train)
	var refuse error
	if !(p >= 0 && p <= 1) {
		refuse = ErrValue
	}
	if !dt.IsFloat() {
		refuse = orEither(refuse, ErrDType) // torch takes an integer x where it does not draw (see FuzzLoss)
	}
	// Each device draws the same key: the stream is set back before each
	// call, and the mask is then internal/philox's under that key.
	state := rngState()
	key := nextKey()
	out := fzDiff(t, label, 0, func(in []*Tensor) *Tensor {
		setRNGState(state)
		return in[0].Dropout(p, train)
	}, x)
	fzWant(t, label, out, refuse, shape, dt)
	if refuse != nil || out.Err() != nil {
		return
	}
	xv, err := fzHost(x)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fzHost(out)
	if err != nil {
		t.Fatal(err)
	}
	want := xv // identity out of training and for p = 0
	switch {
	case train && p == 1:
		want = make([]float64, len(xv))
		for i, v := range xv {
			want[i] = v * 0 // NaN for an infinity, as torch's x·0
		}
	case train && p > 0:
		want = dropoutWant(xv, dt, p, key)
	}
	for i := range want {
		kept := fzRound(xv[i]/(1-p), dt)
		if !fzNear(got[i], want[i], 0, dt) || train && p > 0 && p < 1 && got[i] != 0 && !math.IsNaN(got[i]) && !fzNear(got[i], kept, 2*fzEps(dt)*math.Abs(kept), dt) {
			t.Fatalf("%s: element %d is %v, want %v (x %v; 0 or x/(1-p) = %v)", label, i, got[i], want[i], xv[i], kept)
		}
	}
}
