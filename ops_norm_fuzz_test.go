package lathe

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzNorm draws the normalisations: LayerNorm over x's last one to three
// dims (or a normalized shape that does not fit), with or without weight
// and bias; BatchNorm in training and evaluation, with or without running
// statistics and affine parameters, a 16-bit x with float32 parameters
// (the mixed type), momentum and eps at and past their edges; GroupNorm
// with groups that do and do not divide the channels, 0 and negative; and
// the vector norms Norm and NormKeepDim for p = 2, 1, 0, ±Inf, fractions,
// negatives, ±100 (powers past float32's range) and NaN, over every dim or
// given ones (out of range, repeated), keeping them or not. x is float32, float64, float16 or bfloat16, or (refused) an
// integer or bool, sometimes transposed, and holds NaN and infinities
// sometimes. The oracle: a call that PyTorch refuses, or that lathe's
// stricter rules refuse (eps negative or NaN; a momentum outside [0, 1]
// where it updates running statistics), fails with the kind lathe gives it and
// leaves the running statistics as they were; an accepted one has
// PyTorch's shape and x's dtype, and values within a rounding bound of a
// float64 reference computed here element by element (the bound set by the
// dtype, the group's size and its conditioning, max|x|/√(var + eps)); a
// group that holds NaN or an infinity normalises to NaN; a training batch
// norm rebinds its running statistics to the reference's update, which
// takes the unbiased variance, as torch's. wgpu:0 is held to the same
// oracle.
func FuzzNorm(f *testing.F) {
	f.Add([]byte{0, 0, 2, 2, 3, 1, 5, 9, 13, 17, 21, 25, 0, 1, 1, 1, 1, 1, 40, 44, 48, 32, 36, 40, 0})
	f.Add([]byte{0, 7, 3, 2, 2, 3, 0, 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 1, 1, 1, 0, 1, 1, 6})
	f.Add([]byte{1, 0, 1, 3, 2, 1, 2, 1, 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 0, 3, 0, 0, 1, 1, 40, 44, 1, 1, 44, 1, 48, 1, 1, 1, 40, 44, 1, 1, 32, 36, 1, 0, 0})
	f.Add([]byte{1, 11, 1, 2, 3, 0, 1, 5, 9, 13, 17, 21, 25, 1, 0, 3, 1, 1, 1, 1, 40, 44, 48, 1, 1, 44, 1, 48, 1, 52, 1, 1, 1, 1, 1, 1, 0, 0})
	f.Add([]byte{2, 0, 1, 2, 4, 1, 3, 1, 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61, 65, 69, 73, 77, 81, 85, 89, 93, 1, 1, 0, 0, 1, 1, 40, 44, 48, 52, 1, 1, 32, 36, 40, 44, 0})
	f.Add([]byte{2, 9, 1, 2, 3, 1, 2, 1, 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 2, 1, 1, 1, 1, 1, 1, 1, 0})
	f.Add([]byte{3, 0, 2, 3, 4, 0, 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 0, 0, 1, 4})
	f.Add([]byte{3, 9, 2, 2, 3, 1, 5, 9, 13, 17, 21, 25, 12, 1, 0})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		switch r.intn(4) {
		case 0:
			fuzzLayerNorm(t, r)
		case 1:
			fuzzBatchNorm(t, r)
		case 2:
			fuzzGroupNorm(t, r)
		default:
			fuzzVectorNorm(t, r)
		}
	})
}

// normDType is x's dtype: float32 most often, the other floats, and
// sometimes one of fzDTypes, whose integers and bool the norms refuse.
func (r *fzReader) normDType() DType {
	switch c := r.intn(16); {
	case c < 7:
		return Float32
	case c < 9:
		return Float64
	case c < 11:
		return Float16
	case c < 13:
		return BFloat16
	}
	return fzDTypes[r.intn(len(fzDTypes))]
}

// fzNormEps are the eps values drawn: PyTorch's default most often, 0,
// large and subnormal ones, and those lathe refuses.
var fzNormEps = []float64{1e-5, 1e-5, 1e-5, 1e-5, 1e-5, 1e-5, 0, 0, 1e-3, 1, 100, 5e-324,
	-1e-5, -1, math.NaN(), math.Inf(1), math.Inf(-1)}

func (r *fzReader) eps() float64 { return fzNormEps[r.intn(len(fzNormEps))] }

// fzEpsIn is eps as a normalisation of x of dtype dt adds it: rounded to
// float32 but for float64, so that 5e-324 is 0 (as in PyTorch, whose
// float32 layer norm of a constant row under eps 5e-324 is NaN).
func fzEpsIn(dt DType, eps float64) float64 {
	if dt == Float64 {
		return eps
	}
	return float64(float32(eps))
}

// fzEpsFault reports whether lathe refuses eps (ErrValue): every norm
// takes any eps ≥ 0, +Inf included (ops.CheckEps). PyTorch takes any, and
// gives NaN for a negative one.
func fzEpsFault(eps float64) bool {
	return !(eps >= 0)
}

// fzFaults are the kinds of refusal that an input's faults call for.
type fzFaults []error

func (f *fzFaults) add(fault bool, kind error) {
	if fault {
		*f = append(*f, kind)
	}
}

// refusal is the kind to expect: none, the faults' one kind, or any where
// they differ (either may be found first).
func (f fzFaults) refusal() error {
	for _, k := range f {
		if k != f[0] {
			return errAny
		}
	}
	if len(f) == 0 {
		return nil
	}
	return f[0]
}

// normParam is an optional parameter of dtype dt and shape: nil where
// not given; its values are mostly positive where positive is set (a
// running variance).
func (r *fzReader) normParam(given bool, dt DType, shape []int, positive bool) *Tensor {
	if !given {
		return nil
	}
	v := make([]float64, dispatch.Numel(shape))
	for i := range v {
		v[i] = r.value()
		if positive && r.intn(4) != 0 {
			v[i] = math.Abs(v[i])
		}
	}
	return fzTensor(v, dt, shape)
}

// fzMaxFinite is dt's largest finite value.
func fzMaxFinite(dt DType) float64 {
	switch dt {
	case Float64:
		return math.MaxFloat64
	case Float16:
		return 65504
	case BFloat16:
		return 0x1.fep127
	}
	return math.MaxFloat32
}

// fzNormBound bounds the rounding error of an element w·(x - mean)/s + b
// of a normalisation, with s = √(var + eps), over a group of n values of
// dtype dt whose largest |x| is m (w, b and y are the magnitudes of the
// weight, the bias and the reference's result): the mean's error n·u·m and
// the variance's n·u·m² (the one-pass formula's, which bounds the
// two-pass one's) carried through the division, in float32 for every
// dtype but float64 (16-bit tensors are normalised in float32, as
// PyTorch's acc_type), then a rounding of each term in dt. It is +Inf, no
// comparison, where a float32 computation may overflow on the way (m² or
// the scaled terms past its range) or the group is too ill-conditioned for
// its rounding to be bounded (s = 0, or a variance among float32's
// subnormals). tiny is the least subnormal of the dtype computed in.
func fzNormBound(dt DType, n int, m, s, w, b, y float64) float64 {
	uc, ud, tiny := fzEps(Float32), fzEps(dt), fzTiny(Float32)
	if dt == Float64 {
		uc, tiny = ud, fzTiny(Float64)
	}
	r := m / s
	if dt != Float64 && (m > 1e18 || w*r+b > 1e37) {
		return math.Inf(1)
	}
	// Where x or its deviations are subnormal, the mean and each square
	// are off by up to a subnormal step, not a relative one. So is the
	// scale w/s, where it falls among the subnormals (a subnormal weight,
	// or a large s), as torch's kernel and lathe's take it (y = x·scale +
	// (b - mean·scale)): a step on it, times |x| + |mean| ≤ 2m (w = 1e-40
	// over s = 1.3e9 is 0, the exact result 5.8e-41).
	under := float64(n) * tiny / s * (1 + r/s)
	bound := 8 * (float64(n)*uc*w*(r+r*r*r) + w*under + 2*m*tiny + ud*(w*r+b+y))
	if math.IsNaN(bound) || dt != Float64 && bound > 1e30 {
		return math.Inf(1) // in float32, an error that large may reach infinity
	}
	return bound
}

// fzNormExpect is what a normalisation must give: a refusal, or a result
// of shape and dtype dt whose element i lies within bound[i] of want[i],
// or where alt is given within altBound[i] of alt[i] (NaN where nan[i],
// whatever the bounds).
type fzNormExpect struct {
	refuse        error
	shape         []int
	dt            DType
	want, bound   []float64
	alt, altBound []float64
	nan           []bool
}

// check holds out to e.
func (e *fzNormExpect) check(t *testing.T, label string, out *Tensor) {
	t.Helper()
	fzWant(t, label, out, e.refuse, e.shape, e.dt)
	if e.refuse != nil || out.Err() != nil {
		return
	}
	got, err := fzHost(out)
	if err != nil {
		if fzKind(t, label, err); errors.Is(err, ErrUnsupported) {
			return
		}
		t.Fatalf("%s: reading the result: %v", label, err)
	}
	for i, g := range got {
		ok := fzNormClose(g, e.want[i], e.bound[i], e.dt) || e.alt != nil && fzNormClose(g, e.alt[i], e.altBound[i], e.dt)
		if e.nan[i] {
			ok = math.IsNaN(g)
		}
		if !ok {
			t.Fatalf("%s: element %d is %v, the float64 reference %v (within %g; NaN required: %v)\ngot  %v\nwant %v",
				label, i, g, e.want[i], e.bound[i], e.nan[i], got, e.want)
		}
	}
}

// fzNormClose reports whether got, of dtype dt, is want within bound:
// anything where the bound is +Inf; an infinity of want's sign where want,
// within the bound, reaches past dt's range.
func fzNormClose(got, want, bound float64, dt DType) bool {
	switch {
	case math.IsInf(bound, 1):
		return true
	case math.IsNaN(want):
		return math.IsNaN(got)
	case got == want:
		return true
	case math.IsInf(got, 0):
		return math.Abs(want)+bound >= fzMaxFinite(dt) && math.Signbit(got) == math.Signbit(want)
	}
	return math.Abs(got-want) <= bound
}

// fzNormRun runs call on the cpu inputs and, where wgpu:0 opens and holds
// their dtypes, on copies there, and holds each result to e; after, where
// given, checks what else the call did.
func fzNormRun(t *testing.T, label string, e *fzNormExpect, call func(in []*Tensor) *Tensor, after func(label string, out *Tensor), in ...*Tensor) {
	t.Helper()
	out := call(in)
	if err := out.Err(); err != nil {
		fzKind(t, label, err)
	}
	e.check(t, label, out)
	if after != nil {
		after(label, out)
	}
	gpu := fzGPU()
	if gpu == nil {
		return
	}
	din, ok := fzOnDevice(*gpu, in...)
	if !ok {
		return
	}
	label += " on " + gpu.String()
	dout := call(din)
	if err := dout.Err(); err != nil && errors.Is(err, ErrUnsupported) {
		fzKind(t, label, err)
		return // a kernel the device lacks
	}
	e.check(t, label, dout)
	if after != nil {
		after(label, dout)
	}
}

// fzNormLabel names a call: the op, x's dtype and shape, and attributes.
func fzNormLabel(op string, dt DType, shape []int, attrs ...any) string {
	s := op + "/" + dt.String() + dispatch.FormatShape(shape)
	for _, a := range attrs {
		switch a := a.(type) {
		case float64:
			s += "/" + strconv.FormatFloat(a, 'g', -1, 64)
		case int:
			s += "/" + strconv.Itoa(a)
		case bool:
			s += "/" + strconv.FormatBool(a)
		case []int:
			s += "/" + dispatch.FormatShape(a)
		case string:
			s += "/" + a
		}
	}
	return s
}

// fzGroupStats are the mean, biased variance and largest |x| of vals, and
// whether one of them is NaN or an infinity.
func fzGroupStats(vals []float64) (mean, variance, m float64, nonFinite bool) {
	for _, v := range vals {
		mean += v
		m = max(m, math.Abs(v))
		nonFinite = nonFinite || math.IsNaN(v) || math.IsInf(v, 0)
	}
	mean /= float64(len(vals))
	for _, v := range vals {
		variance += (v - mean) * (v - mean)
	}
	return mean, variance / float64(len(vals)), m, nonFinite
}

// fzHostOr is p's host values, or n copies of v where p is nil.
func fzHostOr(t *testing.T, p *Tensor, n int, v float64) []float64 {
	if p == nil {
		return slices.Repeat([]float64{v}, n)
	}
	h, err := fzHost(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// normalize fills e's element at i: x normalised by a group of n values
// with mean and s = √(var + eps), largest |x| m, then scaled by w and
// shifted by b; NaN is required where bad (a group with a non-finite
// value) or where w or b is NaN.
func (e *fzNormExpect) normalize(i int, x, mean, s, m float64, n int, w, b float64, bad bool) {
	y := (x-mean)/s*w + b
	e.want[i] = y
	e.bound[i] = fzNormBound(e.dt, n, m, s, math.Abs(w), math.Abs(b), math.Abs(y))
	e.nan[i] = bad || math.IsNaN(w) || math.IsNaN(b)
}

// newFzNormExpect is an expectation of refuse, or of a result of shape and
// dtype dt whose elements the caller fills in.
func newFzNormExpect(refuse error, shape []int, dt DType) *fzNormExpect {
	n := 0
	if refuse == nil {
		n = dispatch.Numel(shape)
	}
	return &fzNormExpect{refuse: refuse, shape: shape, dt: dt, want: make([]float64, n), bound: make([]float64, n), nan: make([]bool, n)}
}

// fzSane reports whether every size of shape is in [0, 4], so that a
// tensor of that shape is small.
func fzSane(shape []int) bool {
	return !slices.ContainsFunc(shape, func(s int) bool { return s < 0 || s > 4 })
}

func fuzzLayerNorm(t *testing.T, r *fzReader) {
	dt := r.normDType()
	shape := r.shape(4, 32)
	x := fzOperand(r, dt, shape)
	k := 1 + r.intn(3)
	if r.intn(8) == 0 {
		k = r.intn(6) // none, or past x's rank
	}
	ns := slices.Clone(shape[max(len(shape)-k, 0):])
	for len(ns) < k {
		ns = append([]int{1 + r.intn(3)}, ns...)
	}
	if len(ns) > 0 && r.intn(10) == 0 {
		ns[r.intn(len(ns))] = r.size()
	}
	mode := r.intn(4) // 0: no weight or bias, 1: both, 2: weight only, 3: bias only
	pshape := ns
	if r.intn(10) == 0 || !fzSane(ns) {
		pshape = r.shape(2, 8)
	}
	pdt := dt
	if r.intn(12) == 0 {
		pdt = r.normDType()
	}
	weight := r.normParam(mode == 1 || mode == 2, pdt, pshape, false)
	bias := r.normParam(mode == 1 || mode == 3, pdt, pshape, false)
	eps := r.eps()
	label := fzNormLabel("layer_norm", dt, shape, ns, mode, pdt.String()+dispatch.FormatShape(pshape), eps)

	var faults fzFaults
	faults.add(!dt.IsFloat(), ErrDType)
	fits := len(ns) >= 1 && len(ns) <= len(shape) && slices.Equal(shape[len(shape)-len(ns):], ns)
	faults.add(!fits, ErrShape)
	faults.add(mode != 0 && !slices.Equal(pshape, ns), ErrShape)
	faults.add(mode != 0 && pdt != dt, ErrDType)
	faults.add(fzEpsFault(eps), ErrValue)
	e := newFzNormExpect(faults.refusal(), shape, dt)
	if e.refuse == nil {
		xv := fzHostOr(t, x, 0, 0)
		n := dispatch.Numel(ns)
		wv, bv := fzHostOr(t, weight, n, 1), fzHostOr(t, bias, n, 0)
		for row := 0; n > 0 && row*n < len(xv); row++ {
			vals := xv[row*n : (row+1)*n]
			mean, variance, m, bad := fzGroupStats(vals)
			s := math.Sqrt(variance + fzEpsIn(dt, eps))
			for j, v := range vals {
				e.normalize(row*n+j, v, mean, s, m, n, wv[j], bv[j], bad)
			}
		}
	}
	fzNormRun(t, label, e, func(in []*Tensor) *Tensor { return in[0].LayerNorm(ns, in[1], in[2], eps) }, nil, x, weight, bias)
}

// fzNormMomenta are the momenta drawn: PyTorch's default most often, the
// edges, and those outside [0, 1], which lathe refuses.
var fzNormMomenta = []float64{0.1, 0.1, 0.1, 0.1, 0, 1, 0.5, -0.1, 1.5, math.NaN(), math.Inf(1)}

func fuzzBatchNorm(t *testing.T, r *fzReader) {
	dt := r.normDType()
	var shape []int
	if r.intn(12) == 0 {
		shape = r.shape(1, 4) // 0-d or 1-d: refused
	} else {
		shape = []int{r.intn(4), r.intn(4)}
		for range r.intn(3) {
			shape = append(shape, r.intn(4))
		}
	}
	x := fzOperand(r, dt, shape)
	training := r.intn(2) == 0
	c := 0
	if len(shape) >= 2 {
		c = shape[1]
	}
	half := dt == Float16 || dt == BFloat16
	pdt := dt
	if half && r.intn(2) == 0 {
		pdt = Float32 // the mixed type
	}
	stats := r.intn(8) // 0: none, 1: the mean alone, 2: the variance alone, else both
	// Each parameter's dtype and shape: pdt and [c] most of the time.
	params := make([]*Tensor, 4)
	names := []string{"running_mean", "running_var", "weight", "bias"}
	given := []bool{stats != 0 && stats != 2, stats != 0 && stats != 1, r.intn(2) == 0, r.intn(2) == 0}
	for i := range params {
		d, s := pdt, []int{c}
		if r.intn(16) == 0 {
			d = r.normDType()
		}
		if r.intn(16) == 0 {
			s = [][]int{{}, {c + 1}, {1, c}}[r.intn(3)]
		}
		params[i] = r.normParam(given[i], d, s, i == 1)
	}
	gradStat := r.intn(16) == 0
	momentum := fzNormMomenta[r.intn(len(fzNormMomenta))]
	eps := r.eps()
	attrs := []any{training, momentum, eps}
	for i, p := range params {
		if p != nil {
			attrs = append(attrs, names[i]+":"+p.DType().String()+dispatch.FormatShape(p.Shape()))
		}
	}
	label := fzNormLabel("batch_norm", dt, shape, attrs...)

	// The statistics' dtype: x's, or float32 where x is 16-bit and every
	// given parameter is float32.
	sdt, mixed, anyGiven := dt, half, false
	for _, p := range params {
		if p != nil {
			anyGiven = true
			mixed = mixed && p.DType() == Float32
		}
	}
	if mixed && anyGiven {
		sdt = Float32
	}
	perChannel := 1 // N times the spatial sizes, as torch's _verify_batch_size counts
	for d, s := range shape {
		if d != 1 {
			perChannel *= s
		}
	}
	var faults fzFaults
	faults.add(!dt.IsFloat(), ErrDType)
	faults.add(len(shape) < 2, ErrShape)
	faults.add(fzEpsFault(eps), ErrValue)
	faults.add(training && given[0] && given[1] && !(momentum >= 0 && momentum <= 1), ErrValue)
	faults.add(given[0] != given[1] || !training && !given[0], ErrValue)
	for _, p := range params {
		if p != nil && len(shape) >= 2 {
			faults.add(p.DType() != sdt, ErrDType)
			faults.add(!slices.Equal(p.Shape(), []int{c}), ErrShape)
		}
	}
	faults.add(gradStat && given[0] && params[0].DType().IsFloat(), ErrValue)
	faults.add(training && len(shape) >= 2 && perChannel == 1, ErrShape)
	e := newFzNormExpect(faults.refusal(), shape, dt)

	// The running statistics' values before the call, and after it where
	// the call updates them (a training call that is not refused, on a
	// batch that is not empty).
	before := [2][]float64{}
	for i := range 2 {
		if given[i] {
			before[i] = fzHostOr(t, params[i], 0, 0)
		}
	}
	update := e.refuse == nil && training && given[0] && perChannel > 0
	after := [2]*fzNormExpect{}
	if e.refuse == nil {
		xv := fzHostOr(t, x, 0, 0)
		spatial := perChannel / max(shape[0], 1)
		rm, rv := fzHostOr(t, params[0], c, 0), fzHostOr(t, params[1], c, 1)
		wv, bv := fzHostOr(t, params[2], c, 1), fzHostOr(t, params[3], c, 0)
		at := func(n, ch, s int) int { return (n*c+ch)*spatial + s }
		for i := range after {
			after[i] = newFzNormExpect(nil, []int{c}, sdt)
		}
		for ch := range c {
			var vals []float64
			for n := range shape[0] {
				for s := range spatial {
					vals = append(vals, xv[at(n, ch, s)])
				}
			}
			mean, variance, m, bad := fzGroupStats(vals)
			if training {
				s := math.Sqrt(variance + fzEpsIn(dt, eps))
				for n := range shape[0] {
					for sp := range spatial {
						i := at(n, ch, sp)
						e.normalize(i, xv[i], mean, s, m, len(vals), wv[ch], bv[ch], bad)
					}
				}
			} else {
				s := math.Sqrt(rv[ch] + fzEpsIn(sdt, eps))
				// A negative variance or a NaN makes NaN, whatever the
				// rounding; no batch statistic is computed.
				bad := math.IsNaN(rm[ch]) || math.IsNaN(rv[ch]) || rv[ch] < 0 && eps < -rv[ch]/2
				for n := range shape[0] {
					for sp := range spatial {
						i := at(n, ch, sp)
						e.normalize(i, xv[i], rm[ch], s, max(math.Abs(xv[i]), math.Abs(rm[ch])), 0, wv[ch], bv[ch], bad || math.IsNaN(xv[i]))
					}
				}
			}
			if update {
				k := float64(len(vals)) / float64(len(vals)-1)
				uc, ud, us := fzEps(Float32), fzEps(dt), fzEps(sdt)
				if dt == Float64 {
					uc = ud
				}
				nu := float64(len(vals))*uc + ud
				next := [2]float64{(1-momentum)*rm[ch] + momentum*mean, (1-momentum)*rv[ch] + momentum*k*variance}
				bounds := [2]float64{
					8 * (momentum*nu*m + us*(math.Abs(rm[ch])+momentum*math.Abs(mean)+math.Abs(next[0]))),
					8 * (momentum*k*nu*m*m + us*(math.Abs(rv[ch])+momentum*k*variance+math.Abs(next[1]))),
				}
				for i := range 2 {
					after[i].want[ch], after[i].bound[ch] = next[i], bounds[i]
					if sdt != Float64 && m > 1e18 || math.IsNaN(bounds[i]) {
						after[i].bound[ch] = math.Inf(1)
					}
					// A non-finite batch value makes its statistics NaN,
					// or (the mean of one sign of infinity) an infinity.
					if bad && (i == 1 || slices.ContainsFunc(vals, math.IsNaN)) {
						after[i].nan[ch] = true
					}
				}
			}
		}
	}
	var got [2]*Tensor // the statistics' handles in the last call
	call := func(in []*Tensor) *Tensor {
		// Each call updates its own handles, so that the cpu's update
		// does not reach wgpu's inputs.
		for i := range got {
			got[i] = nil
			if in[i] != nil {
				got[i] = in[i].Clone()
				if gradStat && i == 0 && got[i].DType().IsFloat() {
					got[i] = got[i].RequireGrad()
				}
			}
		}
		return in[4].BatchNorm(got[0], got[1], in[2], in[3], training, momentum, eps)
	}
	check := func(label string, out *Tensor) {
		for i, s := range got {
			if s == nil {
				continue
			}
			l := label + "/" + names[i]
			if update && out.Err() == nil {
				after[i].check(t, l, s)
				continue
			}
			// Left as they were.
			v, err := fzHost(s)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			if !slices.Equal(s.Shape(), params[i].Shape()) || s.DType() != params[i].DType() ||
				!slices.EqualFunc(v, before[i], func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
				t.Fatalf("%s: changed to %v %v %v, from %v %v %v", l, s.DType(), s.Shape(), v, params[i].DType(), params[i].Shape(), before[i])
			}
		}
	}
	fzNormRun(t, label, e, call, check, params[0], params[1], params[2], params[3], x)
}

func fuzzGroupNorm(t *testing.T, r *fzReader) {
	dt := r.normDType()
	var shape []int
	if r.intn(12) == 0 {
		shape = r.shape(1, 4)
	} else {
		shape = []int{r.intn(4), r.intn(5)}
		for range r.intn(3) {
			shape = append(shape, r.intn(4))
		}
	}
	x := fzOperand(r, dt, shape)
	groups := 1 + r.intn(4)
	if r.intn(10) == 0 {
		groups = r.attr(-1) // 0, negative, or an extreme
	}
	c := 0
	if len(shape) >= 2 {
		c = shape[1]
	}
	given := []bool{r.intn(2) == 0, r.intn(2) == 0}
	params := make([]*Tensor, 2)
	for i := range params {
		d, s := dt, []int{c}
		if r.intn(16) == 0 {
			d = r.normDType()
		}
		if r.intn(16) == 0 {
			s = [][]int{{}, {c + 1}, {1, c}}[r.intn(3)]
		}
		params[i] = r.normParam(given[i], d, s, false)
	}
	eps := r.eps()
	label := fzNormLabel("group_norm", dt, shape, groups, given[0], given[1], eps)

	var faults fzFaults
	faults.add(!dt.IsFloat(), ErrDType)
	faults.add(len(shape) < 2, ErrShape)
	faults.add(groups < 1, ErrValue)
	divides := groups >= 1 && c%groups == 0
	faults.add(len(shape) >= 2 && groups >= 1 && !divides, ErrShape)
	// torch's _verify_batch_size: N·C/G times the spatial sizes must not
	// be 1.
	per := 0
	if len(shape) >= 2 && divides {
		per = dispatch.Numel(shape) / max(c, 1) * (c / groups)
		if c == 0 {
			per = 0
		}
	}
	faults.add(len(shape) >= 2 && divides && per == 1, ErrShape)
	if len(shape) >= 2 && c == 0 && groups >= 1 {
		// No channels, which any number of groups divides: the
		// statistics are still [N, groups], as torch's, refused where
		// that passes an int's count (torch's "Storage size calculation
		// overflowed") and too large to compute here past 2^22.
		faults.add(fzProdOverflows(shape[0], groups), ErrShape)
		fzSizeBound(t, label, true, []int{shape[0], groups})
	}
	faults.add(fzEpsFault(eps), ErrValue)
	for _, p := range params {
		if p != nil && len(shape) >= 2 {
			faults.add(p.DType() != dt, ErrDType)
			faults.add(!slices.Equal(p.Shape(), []int{c}), ErrShape)
		}
	}
	e := newFzNormExpect(faults.refusal(), shape, dt)
	if e.refuse == nil && c > 0 {
		xv := fzHostOr(t, x, 0, 0)
		wv, bv := fzHostOr(t, params[0], c, 1), fzHostOr(t, params[1], c, 0)
		spatial := dispatch.Numel(shape[2:])
		cg := c / groups
		n := cg * spatial // a group's values, consecutive in x
		for g := 0; n > 0 && g*n < len(xv); g++ {
			vals := xv[g*n : (g+1)*n]
			mean, variance, m, bad := fzGroupStats(vals)
			s := math.Sqrt(variance + fzEpsIn(dt, eps))
			for j, v := range vals {
				ch := (g%groups)*cg + j/spatial
				e.normalize(g*n+j, v, mean, s, m, n, wv[ch], bv[ch], bad)
			}
		}
	}
	fzNormRun(t, label, e, func(in []*Tensor) *Tensor { return in[0].GroupNorm(groups, in[1], in[2], eps) }, nil, x, params[0], params[1])
}

// fzNormPs are the orders drawn: 2 most often, the special ones, fractions,
// negatives, orders whose powers pass float32's range at small |x|, and
// NaN. (No |p| past float32's range or below its least subnormal: torch
// takes such a p as ±Inf or 0 then, even for float64, where lathe and the
// formula take it as it is.)
var fzNormPs = []float64{2, 2, 2, 2, 1, 1, 0, math.Inf(1), math.Inf(-1), 0.5, 3, 1.5, -1, -2.5, -0.5,
	100, -100, 0.01, math.NaN()}

func fuzzVectorNorm(t *testing.T, r *fzReader) {
	dt := r.normDType()
	shape := r.shape(4, 24)
	x := fzOperand(r, dt, shape)
	p := fzNormPs[r.intn(len(fzNormPs))]
	keep := r.intn(2) == 0
	var dims []int
	for range r.intn(3) {
		dims = append(dims, r.dim(len(shape)))
	}
	label := fzNormLabel("vector_norm", dt, shape, p, keep, "dims"+dispatch.FormatShape(dims))
	reduced, out, refuse := fzReduceShape(shape, dims, keep)
	var faults fzFaults
	faults.add(!dt.IsFloat(), ErrDType)
	faults.add(math.IsNaN(p), ErrValue)
	faults.add(refuse != nil, refuse)
	if refuse == nil && (p < 0 || math.IsInf(p, 1)) {
		// No identity: an empty reduced dim is refused (torch's "cannot
		// compute the inf norm on an empty tensor").
		faults.add(slices.ContainsFunc(reduced, func(d int) bool { return shape[d] == 0 }), ErrShape)
	}
	e := newFzNormExpect(faults.refusal(), out, dt)
	if e.refuse == nil {
		fzVectorNormRef(t, e, x, shape, reduced, p)
	}
	fzNormRun(t, label, e, func(in []*Tensor) *Tensor {
		if keep {
			return in[0].NormKeepDim(p, dims...)
		}
		return in[0].Norm(p, dims...)
	}, nil, x)
}

// fzVectorNormRef fills e with the p-norm of x over the reduced dims,
// computed in float64; where x is not float64, its alternative is the
// same formula in float32, p, 1/p, each term |x|^p and the sum rounded to
// float32, so that a term or a sum past its range, or one that underflows
// to 0 or to a subnormal, may give what the float32 computation gives
// (PyTorch does not rescale either), and so may the root's exponent
// rounded to float32 (PyTorch's [3e9] under p = 3 is 3000002048).
func fzVectorNormRef(t *testing.T, e *fzNormExpect, x *Tensor, shape, reduced []int, p float64) {
	dt := x.DType()
	xv := fzHostOr(t, x, 0, 0)
	is := make([]bool, len(shape))
	for _, d := range reduced {
		is[d] = true
	}
	groups := make([][]float64, len(e.want))
	idx := make([]int, len(shape))
	for _, v := range xv {
		o := 0
		for d, i := range idx {
			if !is[d] {
				o = o*shape[d] + i
			}
		}
		groups[o] = append(groups[o], math.Abs(v))
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	round, uc := func(v float64) float64 { return float64(float32(v)) }, fzEps(Float32)
	if dt == Float64 {
		round, uc = func(v float64) float64 { return v }, fzEps(Float64)
	}
	e.alt, e.altBound = make([]float64, len(e.want)), make([]float64, len(e.want))
	for o, g := range groups {
		var want, narrow float64
		switch {
		case p == 0:
			for _, a := range g {
				if a != 0 { // NaN counts
					want++
				}
			}
			narrow = want
		case math.IsInf(p, 0):
			want = 0
			if p < 0 {
				want = math.Inf(1)
			}
			for _, a := range g {
				switch {
				case math.IsNaN(a) || math.IsNaN(want):
					want = math.NaN()
				case p > 0:
					want = max(want, a)
				default:
					want = min(want, a)
				}
			}
			narrow = want
		default:
			var sum, sum32 float64
			for _, a := range g {
				sum += math.Pow(a, p)
				sum32 += round(math.Pow(a, round(p)))
			}
			want, narrow = math.Pow(sum, 1/p), round(math.Pow(round(sum32), round(1/p)))
		}
		// The sums round at each term, and the root carries their error
		// by 1/p; the max, min and count are exact. Past the relative
		// bound, an absolute one of a few subnormal steps, and in float32
		// its least normal value: its root by -2 or -1 is 1/s² or 1/s,
		// which is 0 where s² or s passes its range (as torch's pow of a
		// tensor; its norm kernel's pow gives the subnormal).
		tol := 0.0
		if p != 0 && !math.IsInf(p, 0) {
			tol = 4 * (float64(len(g))*uc + fzEps(dt)) * max(1, math.Abs(1/p))
		}
		floor := 4 * float64(len(g)+1) * fzTiny(dt)
		if dt != Float64 {
			floor += 0x1p-126
		}
		e.want[o], _ = fzCastRef(want, Float64, dt)
		e.alt[o], _ = fzCastRef(narrow, Float64, dt)
		e.bound[o] = tol*math.Abs(e.want[o]) + floor
		e.altBound[o] = tol*math.Abs(e.alt[o]) + floor
	}
}

// fzTiny is the spacing of dt's subnormals.
func fzTiny(dt DType) float64 {
	switch dt {
	case Float64:
		return 0x1p-1074
	case Float16:
		return 0x1p-24
	case BFloat16:
		return 0x1p-133
	}
	return 0x1p-149
}
