package lathe

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzLossMore draws the losses and distances beyond FuzzLoss's (l1 to
// multi-margin, cosine similarity, pairwise distance, normalize) with
// operands of rank 0 to 3 whose shapes agree, broadcast or do not, of any
// dtype, with option values NaN, infinite, negative or zero, options a
// loss does not take, each reduction and one that does not exist, and
// class targets out of range. Its oracle is lathe's promises rather than a
// second implementation of fourteen losses (the conformance families
// check their values against torch's):
//
//   - nothing panics, and an error is a *lathe.Error of one of the kinds;
//   - a reduced loss is 0-d, and every result is a float;
//   - wgpu:0 refuses what the cpu refuses, with the same kind, and where
//     the operands are moderate (a few units, no NaN or infinity), gives
//     the cpu's values;
//   - where x is a float and the loss is accepted, its gradient with
//     respect to x exists, with x's shape and dtype, or is refused with a
//     kind (never a panic).
func FuzzLossMore(f *testing.F) {
	// binary_cross_entropy/float64[2] float64[2]/ReduceSum
	f.Add([]byte{38, 7, 9, 53, 52, 27, 9, 11, 40, 38, 56, 46, 34, 47, 9, 55, 35, 37, 0, 36, 15, 45, 34, 28, 4, 37, 6, 58, 29, 47, 40, 28, 36, 22, 4, 11, 30, 8, 15, 37})
	// normalize/float64[0]/dim -2,p 1,eps 1e-08,keepdim true
	f.Add([]byte{50, 53, 40, 37, 40, 25, 41, 53, 45, 54, 5, 1, 22, 7, 21, 55, 48, 54, 54, 27, 22, 14, 39, 9, 25, 18, 18, 43, 22, 57, 33, 20, 40, 13, 60, 40, 23, 18, 33, 51})
	// cosine_similarity/float32[2, 0] float32[2, 0]/dim 0,p 0,eps 1,keepdim false
	f.Add([]byte{31, 14, 34, 30, 52, 25, 2, 59, 36, 20, 38, 30, 31, 10, 47, 21, 60, 33, 41, 32, 3, 36, 52, 60, 34, 34, 29, 18, 22, 54, 2, 13, 10, 33, 40, 39, 36, 27, 26, 59})
	// multilabel_soft_margin_loss/float32[3, 2, 3] float32[3, 2, 3]/ReduceBatchMean
	f.Add([]byte{42, 7, 3, 51, 58, 47, 8, 19, 42, 11, 39, 10, 46, 18, 43, 17, 45, 30, 59, 33, 23, 39, 56, 52, 11, 4, 54, 37, 25, 9, 13, 50, 13, 33, 20, 15, 3, 59, 30, 30})
	// hinge_embedding_loss/float16[1] float16[1]/ReduceSum
	f.Add([]byte{57, 40, 27, 61, 1, 17, 21, 54, 29, 17, 3, 34, 50, 47, 60, 36, 41, 48, 55, 40, 21, 0, 12, 33, 18, 45, 7, 34, 59, 62, 55, 22, 61, 3, 11, 5, 37, 36, 22, 54})
	// poisson_nll_loss/float64[3] float64[3]/ReduceMean,LogInput -3.5,FullLoss -Inf
	f.Add([]byte{62, 18, 40, 1, 43, 34, 2, 19, 2, 58, 12, 28, 55, 43, 12, 3, 51, 36, 28, 47, 6, 45, 11, 53, 44, 25, 27, 41, 62, 35, 24, 20, 49, 2, 31, 45, 45, 6, 12, 5})
	// pairwise_distance/float32[0] float32[0]/dim 2,p -2.5,eps -3,keepdim false
	f.Add([]byte{15, 22, 33, 17, 55, 41, 31, 26, 6, 0, 9, 6, 44, 29, 61, 36, 12, 8, 45, 57, 10, 46, 59, 5, 23, 42, 48, 52, 35, 31, 3, 21, 32, 22, 22, 40, 38, 63, 17, 43})
	// smooth_l1_loss/float64[4, 2, 2] float64[4, 2, 2]/ReduceBatchMean
	f.Add([]byte{35, 49, 25, 7, 24, 62, 62, 55, 37, 59, 48, 40, 30, 54, 50, 5, 21, 11, 51, 10, 58, 26, 22, 24, 63, 47, 36, 27, 20, 2, 15, 42, 33, 53, 41, 29, 12, 57, 23, 27})
	// l1_loss/float16[] float16[]/ReduceNone
	f.Add([]byte{0, 10, 26, 52, 33, 10, 42, 58, 42, 8, 36, 17, 52, 9, 46, 1, 49, 55, 47, 18, 9, 17, 39, 10, 36, 14, 53, 34, 62, 33, 45, 33, 62, 25, 46, 1, 62, 49, 63, 29})
	// huber_loss/float32[4] float32[4]/ReduceNone,Delta 2.147483648e+09
	f.Add([]byte{19, 7, 52, 21, 29, 43, 41, 2, 27, 63, 54, 36, 63, 53, 19, 7, 30, 8, 19, 59, 51, 59, 2, 18, 55, 46, 35, 29, 34, 61, 18, 57, 33, 20, 52, 39, 10, 49, 57, 56})
	// triplet_margin_loss/int64[4, 1, 2] int64[4, 1, 2] int64[2]/ReduceMean,NormP 1.5
	f.Add([]byte{10, 40, 47, 63, 19, 26, 47, 37, 9, 49, 29, 19, 49, 34, 5, 32, 43, 3, 19, 23, 44, 60, 53, 63, 49, 41, 5, 21, 2, 1, 59, 32, 17, 39, 7, 5, 38, 19, 46, 15})
	// soft_margin_loss/float64[] float64[0, 3, 1]/ReduceNone
	f.Add([]byte{58, 51, 39, 0, 58, 60, 17, 15, 60, 8, 11, 2, 2, 62, 37, 21, 55, 31, 24, 17, 34, 11, 0, 11, 2, 36, 43, 18, 13, 32, 32, 21, 32, 21, 58, 13, 1, 12, 20, 48})
	// gaussian_nll_loss/float64[1, 2] float64[1, 2] float64[1, 2]/ReduceNone,FullLoss -3
	f.Add([]byte{29, 52, 56, 6, 41, 47, 6, 49, 30, 61, 21, 7, 57, 48, 0, 22, 49, 59, 62, 47, 53, 3, 54, 1, 8, 8, 37, 62, 21, 39, 15, 38, 45, 38, 35, 14, 42, 11, 3, 61})
	// multi_margin_loss/float16[4, 2, 2] int32[4, 2, 1]/ReduceBatchMean
	f.Add([]byte{13, 26, 10, 59, 34, 7, 12, 47, 38, 28, 3, 40, 50, 29, 62, 60, 4, 43, 37, 13, 56, 52, 41, 42, 8, 33, 11, 55, 31, 0, 29, 16, 56, 31, 9, 6, 38, 54, 63, 32})
	// kl_div/float64[3] float64[3]/ReduceMean,LogTarget 1.5
	f.Add([]byte{37, 58, 6, 17, 38, 53, 42, 45, 42, 31, 52, 10, 63, 25, 58, 6, 29, 13, 35, 44, 47, 63, 45, 36, 63, 18, 27, 40, 50, 26, 42, 2, 22, 38, 24, 21, 52, 45, 45, 38})
	// cosine_embedding_loss/float64[3, 0, 0] float64[0, 0] float64[3, 0]/ReduceNone,Margin -Inf
	f.Add([]byte{43, 37, 23, 23, 8, 10, 25, 35, 34, 54, 33, 22, 46, 44, 53, 9, 42, 29, 11, 36, 18, 42, 25, 54, 44, 53, 61, 5, 1, 59, 21, 50, 0, 6, 46, 22, 34, 51, 2, 62})
	// margin_ranking_loss/float64[0, 3] float64[0, 3] float64[]/ReduceMean
	f.Add([]byte{39, 18, 25, 62, 25, 63, 63, 43, 52, 21, 4, 26, 24, 7, 60, 44, 57, 60, 53, 61, 16, 46, 59, 59, 59, 29, 8, 51, 42, 53, 2, 0, 57, 23, 30, 36, 47, 10, 56, 30})
	fzGPUFor(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzMoreLoss(t, &fzReader{b: data})
	})
}

// moreLoss is one loss or distance under FuzzLossMore: its name, how many
// tensor operands it takes (the class target of multi_margin counted),
// the options it takes, and the call.
type moreLoss struct {
	name     string
	operands int
	takes    int // the opt* bits of ops_losses.go, and optClassWeights
	call     func(in []*Tensor, o []LossOption, a moreLossArgs) *Tensor
}

// optClassWeights is ClassWeights, multi_margin_loss's weight, beside the
// opt* bits of the other options.
const optClassWeights = optFull << 1

// moreLossArgs are the arguments of the distances, which are not options.
type moreLossArgs struct {
	dim     int
	p, eps  float64
	keepdim bool
}

var moreLosses = []moreLoss{
	{"l1_loss", 2, 0, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor { return in[0].L1Loss(in[1], o...) }},
	{"smooth_l1_loss", 2, optBeta, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor { return in[0].SmoothL1Loss(in[1], o...) }},
	{"huber_loss", 2, optDelta, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor { return in[0].HuberLoss(in[1], o...) }},
	{"kl_div", 2, optLogTarget, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor { return in[0].KLDivLoss(in[1], o...) }},
	{"binary_cross_entropy", 2, optWeight, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor { return in[0].BCELoss(in[1], o...) }},
	{"margin_ranking_loss", 3, optMargin, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor {
		return MarginRankingLoss(in[0], in[1], in[2], o...)
	}},
	{"hinge_embedding_loss", 2, optMargin, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor {
		return in[0].HingeEmbeddingLoss(in[1], o...)
	}},
	{"soft_margin_loss", 2, 0, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor { return in[0].SoftMarginLoss(in[1], o...) }},
	{"multilabel_soft_margin_loss", 2, optWeight, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor {
		return in[0].MultiLabelSoftMarginLoss(in[1], o...)
	}},
	{"cosine_embedding_loss", 3, optMargin, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor {
		return CosineEmbeddingLoss(in[0], in[1], in[2], o...)
	}},
	{"triplet_margin_loss", 3, optMargin | optP | optEps | optSwap, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor {
		return TripletMarginLoss(in[0], in[1], in[2], o...)
	}},
	{"poisson_nll_loss", 2, optLogInput | optFull | optEps, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor {
		return in[0].PoissonNLLLoss(in[1], o...)
	}},
	{"gaussian_nll_loss", 3, optFull | optEps, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor {
		return in[0].GaussianNLLLoss(in[1], in[2], o...)
	}},
	{"multi_margin_loss", 2, optP | optMargin | optClassWeights, func(in []*Tensor, o []LossOption, _ moreLossArgs) *Tensor {
		return in[0].MultiMarginLoss(in[1], o...)
	}},
	{"cosine_similarity", 2, 0, func(in []*Tensor, _ []LossOption, a moreLossArgs) *Tensor {
		return CosineSimilarity(in[0], in[1], a.dim, a.eps)
	}},
	{"pairwise_distance", 2, 0, func(in []*Tensor, _ []LossOption, a moreLossArgs) *Tensor {
		return PairwiseDistance(in[0], in[1], a.p, a.eps, a.keepdim)
	}},
	{"normalize", 1, 0, func(in []*Tensor, _ []LossOption, a moreLossArgs) *Tensor { return in[0].Normalize(a.p, a.dim, a.eps) }},
}

// isDistance reports whether l is one of the distances, which take
// arguments rather than options and have no reduction.
func (l moreLoss) isDistance() bool {
	return l.operands == 1 || l.name == "cosine_similarity" || l.name == "pairwise_distance"
}

// moreLossOptions draws the options a loss takes, values NaN, infinite,
// negative or zero among them, now and then one it does not take, and the
// reduction (one time in sixteen one that does not exist). It returns the
// options for a device (a weight moved there), the reduction, a label,
// and whether the weight, if any, is moderate (values in [-4, 4]).
func (r *fzReader) moreLossOptions(l moreLoss, weightShape []int) (opts func(Device) []LossOption, red Reduction, label string, moderateWeight bool) {
	var o []LossOption
	var weight *Tensor
	var weightOpt func(*Tensor) LossOption
	var labels []string
	red = Reduction(r.intn(3))
	switch r.intn(16) {
	case 0:
		red = ReduceBatchMean
	case 1:
		red = Reduction(r.intn(8) + 4)
	}
	o = append(o, WithReduction(red))
	labels = append(labels, red.String())
	takes := l.takes
	if r.intn(8) == 0 {
		takes |= 1 << r.intn(11) // one it may not take
	}
	for bit := optBeta; bit <= optClassWeights; bit <<= 1 {
		if takes&bit == 0 || r.intn(2) == 0 {
			continue
		}
		v := r.value()
		if bit == optP && r.intn(2) == 0 {
			v = float64(1 + r.intn(2)) // multi_margin_loss takes only 1 and 2
		}
		name := optionNames[bit]
		if bit == optClassWeights {
			name = "ClassWeights"
		}
		labels = append(labels, name+" "+strconv.FormatFloat(v, 'g', -1, 64))
		switch bit {
		case optBeta:
			o = append(o, Beta(v))
		case optDelta:
			o = append(o, Delta(v))
		case optMargin:
			o = append(o, Margin(v))
		case optLogTarget:
			o = append(o, LogTarget())
		case optWeight, optClassWeights:
			weight, weightOpt = r.lossOperand(r.lossDType(), weightShape), LossWeight
			if bit == optClassWeights {
				weightOpt = ClassWeights
			}
		case optP:
			o = append(o, NormP(v))
		case optEps:
			o = append(o, Eps(v))
		case optSwap:
			o = append(o, Swap())
		case optLogInput:
			o = append(o, LogInput(v > 0))
		case optFull:
			o = append(o, FullLoss())
		}
	}
	onDevice := func(dev Device) []LossOption {
		if weight == nil {
			return o
		}
		return append(slices.Clone(o), weightOpt(weight.To(dev)))
	}
	moderateWeight = true
	if weight != nil {
		w, err := fzHost(weight)
		moderateWeight = err == nil && !slices.ContainsFunc(w, func(v float64) bool { return !(math.Abs(v) <= 4) })
	}
	return onDevice, red, strings.Join(labels, ","), moderateWeight
}

// moreLossShape is an operand's shape beside the first's: the same, one
// time in four broadcast against it (a dim of 1, or a dim less), one time
// in eight another.
func (r *fzReader) moreLossShape(first []int) []int {
	s := slices.Clone(first)
	switch c := r.intn(16); {
	case c < 2 && len(s) > 0:
		s[r.intn(len(s))] = 1
	case c < 4 && len(s) > 0:
		s = s[1:]
	case c < 6:
		s = r.shape(3, 24)
	}
	return s
}

// moreLossValues are n values: moderate (a multiple of ½ in [-4, 4]) when
// moderate is set, else the reader's (NaN, infinities and extremes among
// them).
func (r *fzReader) moreLossValues(n int, moderate bool) []float64 {
	v := make([]float64, n)
	for i := range v {
		if moderate {
			v[i] = float64(r.intn(17)-8) / 2
		} else {
			v[i] = r.value()
		}
	}
	return v
}

func fuzzMoreLoss(t *testing.T, r *fzReader) {
	l := moreLosses[r.intn(len(moreLosses))]
	dt := r.lossDType()
	shape := r.shape(3, 24)
	moderate := r.intn(4) != 0
	in := make([]*Tensor, l.operands)
	label := l.name + "/" + dt.String() + dispatch.FormatShape(shape)
	for i := range in {
		s, d := shape, dt
		perSample := l.name == "multi_margin_loss" && i == 1 || l.name == "cosine_embedding_loss" && i == 2
		switch {
		case perSample && len(shape) > 0 && r.intn(4) != 0:
			s = shape[:len(shape)-1] // one target per sample
		case i > 0:
			s = r.moreLossShape(shape)
		}
		if i > 0 && r.intn(8) == 0 {
			d = r.lossDType()
		}
		vals := r.moreLossValues(dispatch.Numel(s), moderate)
		switch {
		case l.name == "multi_margin_loss" && i == 1:
			// A class target: mostly in range, now and then out of it.
			d = [8]DType{Int64, Int64, Int64, Int64, Int64, Int64, Int32, Float32}[r.intn(8)]
			c := 1
			if len(shape) > 0 {
				c = shape[len(shape)-1]
			}
			for j := range vals {
				vals[j] = float64(r.intn(max(c, 1)))
				if r.intn(16) == 0 {
					vals[j] = float64([3]int{-1, c, 1 << 40}[r.intn(3)])
				}
			}
		case l.name == "cosine_embedding_loss" && i == 2 && r.intn(4) != 0:
			for j := range vals {
				vals[j] = float64(2*r.intn(2) - 1) // ±1
			}
		case l.name == "binary_cross_entropy" && i == 0 && moderate:
			for j := range vals {
				vals[j] = float64(r.intn(9)) / 8 // in [0, 1]: bce refuses others
			}
		}
		in[i] = fzTensor(vals, d, s)
		if i > 0 {
			label += " " + d.String() + dispatch.FormatShape(s)
		}
	}
	var weightShape []int
	if len(shape) > 0 {
		weightShape = shape[len(shape)-1:]
	}
	if r.intn(8) == 0 {
		weightShape = r.shape(2, 8)
	}
	opts, red, optLabel, moderateWeight := r.moreLossOptions(l, weightShape)
	args := moreLossArgs{dim: r.dim(len(shape)), p: []float64{2, 1, 0, 3, 0.5, -1}[r.intn(6)], eps: 1e-8, keepdim: r.intn(2) == 0}
	if r.intn(4) == 0 {
		args.p, args.eps = r.value(), r.value()
		// An eps far from 0 is added to every difference, so that the
		// distances are about eps and a triplet loss their difference:
		// the devices' last bits of each, amplified (7252e041e8c8f6f3:
		// eps 88.7 gave 0.4999924 on wgpu:0 and 0.5 on the cpu).
		moderate = moderate && math.Abs(args.eps) <= 1
	}
	if l.isDistance() {
		optLabel = "dim " + strconv.Itoa(args.dim) + ",p " + strconv.FormatFloat(args.p, 'g', -1, 64) +
			",eps " + strconv.FormatFloat(args.eps, 'g', -1, 64) + ",keepdim " + strconv.FormatBool(args.keepdim)
	}
	label += "/" + optLabel
	if !moderate {
		label += "/extreme values"
	}
	// Values agree between devices only for moderate operands, the weight
	// too: extreme ones reach rounding that legitimately differs (the cpu
	// computes some float32 steps in float64 lanes, and large weights
	// cancel in the sum: FuzzLossMore/2b9a579d4f531dde). The tolerance is
	// FuzzMathMore's, since a norm of any p takes two pows, whose last
	// few bits differ between devices (6e09990e1a33a1ae: p = 3.5 gave 5
	// on wgpu:0 and 5.0000076 on the cpu).
	tol := mathTol(dt, moderate && moderateWeight)
	call := func(in []*Tensor) *Tensor { return l.call(in, opts(in[0].Device()), args) }
	out := fzDiff(t, label, -1, call, in...)
	if gpu := fzGPU(); gpu != nil {
		if din, ok := fzOnDevice(*gpu, in...); ok {
			dev := call(din)
			if fzSameKind(t, label+" on "+gpu.String(), out, dev) && tol >= 0 {
				fzSame(t, label+" on "+gpu.String(), out, dev, tol)
			}
		}
	}
	if out.Err() != nil {
		return
	}
	if !out.DType().IsFloat() {
		t.Fatalf("%s: result dtype %v, not a float", label, out.DType())
	}
	if !l.isDistance() && red != ReduceNone && out.Rank() != 0 {
		t.Fatalf("%s: reduction %v gave shape %v, not 0-d", label, red, out.Shape())
	}
	if !dt.IsFloat() {
		return
	}
	xg := in[0].Clone().RequireGrad()
	gin := slices.Clone(in)
	gin[0] = xg
	y := call(gin)
	if err := y.Err(); err != nil {
		t.Fatalf("%s: accepted without a gradient, refused with one: %v", label, err)
	}
	g, err := Grad(y.Sum(), []*Tensor{xg})
	if err != nil {
		fzKind(t, label+" (gradient)", err)
		return
	}
	if !slices.Equal(g[0].Shape(), xg.Shape()) || g[0].DType() != xg.DType() {
		t.Fatalf("%s: gradient %v %v for x %v %v", label, g[0].DType(), g[0].Shape(), xg.DType(), xg.Shape())
	}
	if _, err := fzHost(g[0]); err != nil {
		fzKind(t, label+" (gradient read)", err)
	}
}

// fzSameKind checks that a device refuses a call where the cpu does, with
// the same kind, and accepts it where the cpu does, and reports whether
// both accepted it. One difference is lathe's rule: a composite's value
// check runs before its body checks the other arguments, at once on the
// cpu and at the next read-back on a device, so a call with a bad value
// and a bad argument fails with the value's error on the cpu and the
// argument's on the device.
func fzSameKind(t *testing.T, label string, cpu, dev *Tensor) bool {
	t.Helper()
	ce, de := cpu.Err(), dev.Err()
	if de == nil {
		_, de = fzHost(dev) // a value check reports at the read
	}
	if ce == nil {
		_, ce = fzHost(cpu)
	}
	switch {
	case de != nil && errors.Is(de, ErrUnsupported):
		fzKind(t, label, de)
	case (ce == nil) != (de == nil):
		t.Fatalf("%s: the cpu gives %v, the device %v", label, ce, de)
	case ce != nil && fzKind(t, label+" (cpu)", ce) != fzKind(t, label+" (device)", de) && !IsCheckError(ce):
		t.Fatalf("%s: cpu fails with %v, the device with %v", label, ce, de)
	}
	return ce == nil && de == nil
}
