package lathe

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Normalisation over channels (batch norm, group norm) and the pixel
// shuffles. Like layer_norm (ops_nn.go) each is a composite op, registered
// in dispatch and built from mean, var, mul, add, rsqrt, reshape and
// permute, so that every backend runs it with kernels it already has and
// autodiff differentiates it, to any order, with the rules of those ops. The
// methods check the arguments first, so that every error names the op the
// caller called and the argument at fault. Batch norm runs as the fused ops
// of dispatch/ops/batchnorm.go where the device has their kernels (the
// cpu and cuda, float32 and float64); the composite is the reference they are
// tested against, and the path everywhere else.

// batchNormAttrs are the attributes of batch_norm.
type batchNormAttrs struct{ eps float64 }

type groupNormAttrs struct {
	groups int
	eps    float64
}

var (
	// batch_norm normalises x [N, C, ...] per channel by statistics [C]
	// (the batch's, which BatchNorm computes first in training, or the
	// running ones), then applies weight and bias [C].
	opBatchNorm = composite("batch_norm", []string{"x", "running_mean", "running_var", "weight", "bias"},
		func(in []*Tensor, a batchNormAttrs) *Tensor {
			x := in[0]
			bcast := channelShape(x.t.Rank(), x.t.Shape[1])
			return scaleShift(x, in[1].Reshape(bcast...), in[2].Reshape(bcast...), in[3], in[4], a.eps, bcast)
		})
	// group_norm normalises x [N, C, ...] over each of its groups of C/G
	// channels (with all their positions), per sample, then applies weight
	// and bias [C].
	opGroupNorm = composite("group_norm", []string{"x", "weight", "bias"}, func(in []*Tensor, a groupNormAttrs) *Tensor {
		return inFloat32(in, func(in []*Tensor) *Tensor { return groupNorm(in, a) })
	})
	opPixelShuffle = composite("pixel_shuffle", []string{"x"}, func(in []*Tensor, r int) *Tensor {
		return pixelShuffle(in[0], r, false)
	})
	opPixelUnshuffle = composite("pixel_unshuffle", []string{"x"}, func(in []*Tensor, r int) *Tensor {
		return pixelShuffle(in[0], r, true)
	})
)

// groupNorm is group_norm's composite on x, weight and bias (in).
func groupNorm(in []*Tensor, a groupNormAttrs) *Tensor {
	x := in[0]
	n, c := x.t.Shape[0], x.t.Shape[1]
	per := 0 // elements per group; a reshape to -1 is ambiguous when x is empty
	if n > 0 {
		per = x.t.Numel() / (n * a.groups)
	}
	g := x.Reshape(n, a.groups, per)
	// The statistics [N, G, 1] repeated for each channel of its group,
	// shaped [N, C, 1, ...] to broadcast over x.
	bcast := channelShape(x.t.Rank(), c)
	perSample := slices.Concat([]int{n}, bcast[1:])
	stat := func(t *Tensor) *Tensor { return t.Expand(n, a.groups, c/a.groups).Reshape(perSample...) }
	return scaleShift(x, stat(g.MeanKeepDim(2)), stat(g.VarKeepDim(false, 2)), in[1], in[2], a.eps, bcast)
}

// inFloat32 runs f on in with its float16 and bfloat16 tensors widened to
// float32 and rounds f's result back to the first one's dtype once: a
// composite then keeps its statistics and intermediates in float32, as
// PyTorch's kernel of the op does, where each of its ops would round to 16
// bits. Other dtypes go to f as they are. The casts are on the tape, and go
// with the graph (composite).
func inFloat32(in []*Tensor, f func([]*Tensor) *Tensor) *Tensor {
	var narrow DType
	wide := make([]*Tensor, len(in))
	for i, t := range in {
		wide[i] = t
		if t != nil && t.err == nil && (t.t.DType == Float16 || t.t.DType == BFloat16) {
			if narrow == 0 {
				narrow = t.t.DType
			}
			wide[i] = t.Cast(Float32)
		}
	}
	if narrow == 0 {
		return f(in)
	}
	return f(wide).Cast(narrow)
}

// scaleShift is (x - mean)/√(variance + eps)·weight + bias, computed as
// x·s + (bias - mean·s) with s = weight/√(variance + eps), as PyTorch's cpu
// kernel computes it: two passes over x, and the rest on tensors of the
// statistics' size. mean and variance broadcast over x; weight and bias
// are [C], reshaped to bcast.
func scaleShift(x, mean, variance, weight, bias *Tensor, eps float64, bcast []int) *Tensor {
	s := variance.AddScalar(eps).Rsqrt().Mul(weight.Reshape(bcast...))
	return x.Mul(s).Add(bias.Reshape(bcast...).Sub(mean.Mul(s)))
}

// BatchNorm normalises x [N, C, ...] (rank 2 or more) per channel, as
// torch.nn.functional.batch_norm, then scales by weight and shifts by bias
// ([C] each; nil for none).
//
// In training, x is normalised by the batch's statistics over every dim but
// 1: its mean and its biased variance, plus eps. runningMean and runningVar
// ([C], or both nil to keep no statistics) are then updated as PyTorch does,
// with the unbiased variance:
//
//	running = (1 - momentum)·running + momentum·batch
//
// with momentum in [0, 1] (PyTorch's default is 0.1; eps's is 1e-5),
// which is not looked at where there is no update.
// Tensors never change, so the update rebinds the two handles to new
// tensors (as an optimizer step rebinds parameters); other views of the old
// ones keep the old values. The update is not recorded for autodiff, and
// the running statistics must not require a gradient (PyTorch refuses that
// too). Out of training, x is normalised by runningMean and runningVar,
// which must be given. On any error, and after an empty batch (as in
// PyTorch), the statistics are left as they were.
//
// A float16 or bfloat16 x with float32 statistics, weight and bias (a
// convolution's output under Autocast into a float32 BatchNorm2d) is
// normalised in float32 and the result has x's dtype, as PyTorch's
// mixed-type batch_norm (batch_norm_use_mixed_type in Normalization.cpp).
// One whose statistics and parameters are of its own dtype (or absent) is
// normalised in float32 too, its running statistics updated in float32
// and rounded to their dtype once, as PyTorch's CUDA kernels keep a
// 16-bit batch norm's statistics in float.
func (x *Tensor) BatchNorm(runningMean, runningVar, weight, bias *Tensor, training bool, momentum, eps float64) *Tensor {
	return x.batchNorm(runningMean, runningVar, weight, bias, training, momentum, eps, true)
}

// batchNorm is BatchNorm, run as the fused ops where mayFuse is set and
// the device has their kernels for x's dtype (fusedBatchNorm), and as the
// composite otherwise: the devices and dtypes without the kernels, and the
// tests that hold the fused ops to it. The fused ops take a 16-bit x only
// with float32 statistics and parameters (the mixed type); without them,
// the mixed type casts x to float32 and y back, both recorded.
func (x *Tensor) batchNorm(runningMean, runningVar, weight, bias *Tensor, training bool, momentum, eps float64, mayFuse bool) *Tensor {
	const op = "batch_norm"
	live := x.check(op) == nil
	mixed := live && mixedHalfNorm(x, runningMean, runningVar, weight, bias)
	fused := mayFuse && live && fusedBatchNorm(x.t.Device, x.t.DType) && (mixed || !dispatch.Halves.Has(x.t.DType))
	if live && !mixed && dispatch.Halves.Has(x.t.DType) && ownDType(op, x, runningMean, runningVar, weight, bias) {
		return x.batchNormHalf(runningMean, runningVar, weight, bias, training, momentum, eps, mayFuse)
	}
	if mixed && !fused {
		wide := x.Cast(Float32)
		y := wide.batchNorm(runningMean, runningVar, weight, bias, training, momentum, eps, mayFuse)
		out := y.Cast(x.DType())
		ReleaseWithGraph(out, wide, y) // its own: nothing else holds them
		return relabel(out, op)
	}
	c, err := x.checkNorm(op, runningMean, runningVar, weight, bias)
	if err != nil {
		return failed(err)
	}
	if err := checkEps(op, eps); err != nil {
		return failed(err)
	}
	switch {
	case (runningMean == nil) != (runningVar == nil):
		missing := "running_mean"
		if runningVar == nil {
			missing = "running_var"
		}
		return failed(errorf(op, ErrValue, missing, "is nil but the other running statistic is given", "pass both, or neither in training"))
	case !training && runningMean == nil:
		return failed(errorf(op, ErrValue, "running_mean", "is nil, but out of training x is normalised by the running statistics",
			"pass running_mean and running_var, or set training"))
	case training && runningMean != nil && !(momentum >= 0 && momentum <= 1):
		// Checked only where it is used, as torch, which never checks it,
		// ignores it out of training.
		return failed(errorf(op, ErrValue, "momentum", "is "+strconv.FormatFloat(momentum, 'g', -1, 64), "use a momentum in [0, 1], e.g. 0.1"))
	}
	stats := x.t.DType // the dtype of the statistics and the affine
	if mixed {
		stats = Float32
	}
	for _, p := range []struct {
		name    string
		t       *Tensor
		running bool
	}{{"running_mean", runningMean, true}, {"running_var", runningVar, true}, {"weight", weight, false}, {"bias", bias, false}} {
		if err := x.checkChannels(op, p.name, p.t, c, stats); err != nil {
			return failed(err)
		}
		if p.running && p.t != nil && p.t.t.RequiresGrad.Load() {
			return failed(errorf(op, ErrValue, p.name, "requires a gradient, but running statistics are not differentiable",
				"pass "+p.name+".Detach()"))
		}
	}
	givenW, givenB := weight, bias
	weight, bias = x.identityAffine(op, weight, bias, c, stats)
	// The ones and zeros made for a missing weight or bias go with the
	// result's graph, or at once: left to the collector, every step of a
	// layer without affine parameters took new device memory for them.
	made := func(y *Tensor) *Tensor {
		if givenW == nil {
			ReleaseWithGraph(y, weight)
		}
		if givenB == nil {
			ReleaseWithGraph(y, bias)
		}
		return y
	}
	if !training {
		if fused {
			return made(relabel(apply(ops.BatchNormApply, ops.BatchNormParams{Eps: eps}, x, runningMean, runningVar, weight, bias), op))
		}
		return made(apply(opBatchNorm, batchNormAttrs{eps: eps}, x, runningMean, runningVar, weight, bias))
	}
	// The values per channel: N times the spatial sizes, counted from the
	// shape as torch's _verify_batch_size counts them, so that a batch of
	// one value for each of no channels (x [1, 0]) is refused as well.
	n, ok := dispatch.CheckedNumel(slices.Concat(x.t.Shape[:1], x.t.Shape[2:]))
	if !ok {
		n = math.MaxInt // no channels, and more values than an int counts: not 1
	}
	if n == 1 {
		return made(failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+
			", one value per channel, so its batch variance is undefined", "train on more than one value per channel")))
	}
	var y, mean, variance *Tensor
	if fused {
		y, mean, variance = batchNormTrainFused(x, weight, bias, eps)
	} else {
		y, mean, variance = batchNormTrainComposite(x, weight, bias, eps)
	}
	y = made(relabel(y, op))
	// The batch's statistics go with y's graph (the fused path's are its
	// inputs), not to the collector.
	defer ReleaseWithGraph(y, mean, variance)
	if y.err != nil || runningMean == nil || n == 0 {
		return y
	}
	next, nextVar, err := updateRunning(runningMean, runningVar, mean, variance, momentum, n)
	if err != nil {
		return failed(err)
	}
	// The statistics' handles are replaced in place; the old ones, which
	// nothing else holds (views of them hold claims of their own), go back.
	old, oldVar := runningMean.t, runningVar.t
	*runningMean, *runningVar = *next, *nextVar
	old.Release()
	oldVar.Release()
	return y
}

// ownDType reports whether every given one of ps (running_mean,
// running_var, weight, bias) is live and of x's dtype.
func ownDType(op string, x *Tensor, ps ...*Tensor) bool {
	names := []string{"running_mean", "running_var", "weight", "bias"}
	for i, p := range ps {
		if p != nil && (p.CheckArg(op, names[i]) != nil || p.t.DType != x.t.DType) {
			return false
		}
	}
	return true
}

// batchNormHalf is batchNorm of a 16-bit x whose given statistics and
// parameters are of its dtype: it runs as the mixed type on float32 copies
// of them (or, with none, on x cast to float32), so that the batch's
// statistics are computed and kept in float32 and y is rounded to x's
// dtype once; the composite in 16 bits rounded the mean, the variance and
// each step, and a float16 batch whose variance passed 65504 came out as
// its bias. A training step's running statistics, updated in float32, are
// rounded to their dtype and rebind the caller's handles.
func (x *Tensor) batchNormHalf(runningMean, runningVar, weight, bias *Tensor, training bool, momentum, eps float64, mayFuse bool) *Tensor {
	const op = "batch_norm"
	if runningMean == nil && runningVar == nil && weight == nil && bias == nil {
		wide := x.Cast(Float32)
		y := wide.batchNorm(nil, nil, nil, nil, training, momentum, eps, mayFuse)
		out := y.Cast(x.DType())
		ReleaseWithGraph(out, wide, y) // its own: nothing else holds them
		return relabel(out, op)
	}
	widen := func(t *Tensor) *Tensor {
		if t == nil {
			return nil
		}
		return t.Cast(Float32)
	}
	// The statistics' casts are recorded as any cast is, so that one that
	// requires a gradient is refused as such.
	mean, variance, w, b := widen(runningMean), widen(runningVar), widen(weight), widen(bias)
	var before *dispatch.Tensor
	if mean != nil {
		before = mean.t
	}
	y := x.batchNorm(mean, variance, w, b, training, momentum, eps, mayFuse)
	ReleaseWithGraph(y, w, b) // y's graph holds the parameters' casts
	if mean == nil || variance == nil {
		return y
	}
	if y.err != nil || mean.t == before {
		// Refused, out of training, or an empty batch: no update. Out of
		// training y's graph holds the casts (released at once, Backward
		// failed).
		ReleaseWithGraph(y, mean, variance)
		return y
	}
	defer mean.Release()
	defer variance.Release()
	var next, nextVar *Tensor
	NoGrad(func() { next, nextVar = mean.Cast(runningMean.DType()), variance.Cast(runningVar.DType()) })
	for _, t := range []*Tensor{next, nextVar} {
		if err := t.Err(); err != nil {
			return failed(err)
		}
	}
	old, oldVar := runningMean.t, runningVar.t
	*runningMean, *runningVar = *next, *nextVar
	old.Release()
	oldVar.Release()
	return y
}

// fusedBatchNorm reports whether dev has the fused batch norm kernels
// (ops.BatchNormMoments, ops.BatchNormApply, ops.BatchNormBackward) for dt.
func fusedBatchNorm(dev Device, dt DType) bool {
	for _, s := range []*dispatch.Schema{&ops.BatchNormMoments.Schema, &ops.BatchNormApply.Schema, &ops.BatchNormBackward.Schema} {
		if !s.KernelDTypes(dev.Kind).Has(dt) {
			return false
		}
	}
	return true
}

// batchNormTrainFused normalises x by its batch's statistics with the
// fused ops: the moments, outside the tape, then the normalisation, whose
// gradient (autodiff's rule of batch_norm_apply in training) goes through
// them. It returns y and the batch's mean and biased variance, detached.
func batchNormTrainFused(x, weight, bias *Tensor, eps float64) (y, mean, variance *Tensor) {
	// The detached handle shares x's storage: released here, it does not
	// keep x's memory from the pool after x itself is released.
	detached := x.Detach()
	moments := apply(ops.BatchNormMoments, none, detached)
	detached.Release()
	if moments.err != nil {
		return moments, nil, nil
	}
	c := x.t.Shape[1]
	mr, vr := moments.Narrow(0, 0, 1), moments.Narrow(0, 1, 1)
	mean, variance = mr.Reshape(c), vr.Reshape(c)
	y = apply(ops.BatchNormApply, ops.BatchNormParams{Eps: eps, Training: true}, x, mean, variance, weight, bias)
	ReleaseWithGraph(y, moments, mr, vr) // the views above share their storage
	return y, mean, variance
}

// batchNormTrainComposite is batchNormTrainFused as the composite: the
// batch's statistics over every dim but 1, its mean and its biased
// variance, recorded so that the gradient flows through them too, then
// batch_norm. The statistics it returns are detached.
func batchNormTrainComposite(x, weight, bias *Tensor, eps float64) (y, mean, variance *Tensor) {
	dims := append([]int{0}, spatialDims(x.t.Rank())...)
	if x.t.Numel() == 0 {
		// An empty batch's mean and variance are NaN, and scaleShift's
		// gradient of weight, Σg·x·s' - Σg·mean·s', would be 0·NaN: NaN
		// where PyTorch's native_batch_norm_backward sums over no values
		// and gives 0 (the fused kernels do too). Normalising the empty y
		// by 0 and 1 instead gives the same y and zero gradients; the
		// running statistics are not updated from an empty batch.
		c := x.t.Shape[1]
		NoGrad(func() { mean, variance = Zeros(x.Device(), x.DType(), c), Ones(x.Device(), x.DType(), c) })
		y = apply(opBatchNorm, batchNormAttrs{eps: eps}, x, mean, variance, weight, bias)
		return y, mean, variance
	}
	mean, variance = x.Mean(dims...), x.Var(false, dims...)
	y = apply(opBatchNorm, batchNormAttrs{eps: eps}, x, mean, variance, weight, bias)
	defer ReleaseWithGraph(y, mean, variance)
	return y, mean.Detach(), variance.Detach()
}

// mixedHalfNorm reports whether x is float16 or bfloat16 and every given
// one of ps is float32.
func mixedHalfNorm(x *Tensor, ps ...*Tensor) bool {
	if dt := x.DType(); dt != Float16 && dt != BFloat16 {
		return false
	}
	given := false
	for _, p := range ps {
		if p == nil {
			continue
		}
		if p.err != nil || p.DType() != Float32 {
			return false
		}
		given = true
	}
	return given
}

// updateRunning computes the running statistics after a batch of n values
// per channel, outside the tape. The batch's variance is biased; the running
// one takes it unbiased, n/(n-1) times larger, as PyTorch's does.
func updateRunning(runningMean, runningVar, batchMean, batchVar *Tensor, momentum float64, n int) (mean, variance *Tensor, err error) {
	// lerp is (1 - momentum)·running + w·batch, its two products given back.
	lerp := func(running, batch *Tensor, w float64) *Tensor {
		a, b := running.MulScalar(1-momentum), batch.MulScalar(w)
		defer a.Release()
		defer b.Release()
		return a.Add(b)
	}
	NoGrad(func() {
		mean = lerp(runningMean, batchMean, momentum)
		variance = lerp(runningVar, batchVar, momentum*float64(n)/float64(n-1))
	})
	if err := mean.Err(); err != nil {
		return nil, nil, err
	}
	if err := variance.Err(); err != nil {
		return nil, nil, err
	}
	return mean, variance, nil
}

// GroupNorm normalises x [N, C, ...] (rank 2 or more) over groups of C/groups
// consecutive channels, per sample, to mean 0 and variance 1 (biased, plus
// eps), then scales by weight and shifts by bias ([C] each; nil for none),
// as torch.nn.functional.group_norm.
func (x *Tensor) GroupNorm(groups int, weight, bias *Tensor, eps float64) *Tensor {
	const op = "group_norm"
	c, err := x.checkNorm(op, weight, bias)
	if err != nil {
		return failed(err)
	}
	if groups < 1 {
		return failed(errorf(op, ErrValue, "groups", "is "+strconv.Itoa(groups), "use at least one group"))
	}
	if c%groups != 0 {
		return failed(errorf(op, ErrShape, "x", "has "+strconv.Itoa(c)+" channels (shape "+dispatch.FormatShape(x.t.Shape)+
			"), which "+strconv.Itoa(groups)+" groups do not divide", "use a number of groups that divides the channels"))
	}
	if x.t.Numel() == groups {
		// PyTorch refuses a batch of one sample with one value per group
		// (it checks N·C/G·H·W > 1, as for batch norm's batch statistics);
		// with more samples it gives zeros.
		return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+", one value per group in a batch of one",
			"normalise more than one value per group"))
	}
	if err := checkEps(op, eps); err != nil {
		return failed(err)
	}
	if err := x.checkChannels(op, "weight", weight, c, x.t.DType); err != nil {
		return failed(err)
	}
	if err := x.checkChannels(op, "bias", bias, c, x.t.DType); err != nil {
		return failed(err)
	}
	weight, bias = x.identityAffine(op, weight, bias, c, x.t.DType)
	return apply(opGroupNorm, groupNormAttrs{groups: groups, eps: eps}, x, weight, bias)
}

// checkNorm checks the input of a channel normalisation: a live float
// tensor [N, C, ...]. It returns C. A failed x or per-channel argument (nil
// for none) gives its own error first, as for any op.
func (x *Tensor) checkNorm(op string, perChannel ...*Tensor) (int, error) {
	if err := x.check(op); err != nil {
		return 0, err
	}
	for _, p := range perChannel {
		if p != nil && p.err != nil {
			return 0, p.err
		}
	}
	if !x.t.DType.IsFloat() {
		return 0, errorf(op, ErrDType, "x", "is "+x.t.DType.String()+" but the op takes float32, float64", "cast it with .Cast(lathe.Float32)")
	}
	if x.t.Rank() < 2 {
		return 0, errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" but the op takes [N, C, ...]",
			"give a batch dim first and channels second, e.g. with x.Unsqueeze(0)")
	}
	return x.t.Shape[1], nil
}

// checkChannels checks p, an optional per-channel argument of op: nil, or a
// live tensor [c] of x's device and of dtype dt (x's, or float32 for a
// 16-bit x's mixed-type batch norm).
func (x *Tensor) checkChannels(op, arg string, p *Tensor, c int, dt DType) error {
	if p == nil {
		return nil
	}
	if err := p.CheckArg(op, arg); err != nil {
		return err
	}
	want := []int{c}
	switch {
	case p.t.Device != x.t.Device:
		e := errorf(op, ErrDevice, arg, "is on "+p.t.Device.String()+" but the op runs on "+x.t.Device.String(),
			"move it with "+arg+".To("+x.t.Device.GoString()+")")
		e.Expected, e.Found = x.t.Device.String(), p.t.Device.String()
		return e
	case p.t.DType != dt:
		e := errorf(op, ErrDType, arg, "is "+p.t.DType.String()+" but x is "+x.t.DType.String(), "cast it with .Cast("+dt.GoString()+")")
		e.Expected, e.Found = dt.String(), p.t.DType.String()
		return e
	case !slices.Equal(p.t.Shape, want):
		e := errorf(op, ErrShape, arg, "has shape "+dispatch.FormatShape(p.t.Shape)+" but x "+dispatch.FormatShape(x.t.Shape)+
			" has "+strconv.Itoa(c)+" channels", "give one value per channel, shape "+dispatch.FormatShape(want))
		e.Expected, e.Found = dispatch.FormatShape(want), dispatch.FormatShape(p.t.Shape)
		return e
	}
	return nil
}

func checkEps(op string, eps float64) error {
	if err := ops.CheckEps(eps); err != nil {
		return located(err, op)
	}
	return nil
}

// identityAffine fills in a missing weight with ones and a missing bias
// with zeros, [c] each, of dtype dt. They touch only tensors of the
// statistics' size (scaleShift), so leaving them out would save nothing
// worth a second composite.
func (x *Tensor) identityAffine(op string, weight, bias *Tensor, c int, dt DType) (*Tensor, *Tensor) {
	if weight == nil {
		weight = full(op, x.t.Device, dt, 1, []int{c})
	}
	if bias == nil {
		bias = full(op, x.t.Device, dt, 0, []int{c})
	}
	return weight, bias
}

// channelShape is [1, c, 1, ...] of rank r: a [c] tensor reshaped to it
// broadcasts along dim 1 of [N, c, ...].
func channelShape(r, c int) []int {
	shape := make([]int, r)
	for i := range shape {
		shape[i] = 1
	}
	shape[1] = c
	return shape
}

// spatialDims are the dims after N and C of a rank-r tensor.
func spatialDims(r int) []int {
	dims := make([]int, 0, r)
	for d := 2; d < r; d++ {
		dims = append(dims, d)
	}
	return dims
}

// PixelShuffle rearranges x [..., C·r², H, W] into [..., C, H·r, W·r]:
// output (c, h·r + i, w·r + j) is input (c·r² + i·r + j, h, w), as
// torch.nn.functional.pixel_shuffle (sub-pixel convolution's upsampling).
func (x *Tensor) PixelShuffle(r int) *Tensor {
	if err := checkShuffle("pixel_shuffle", x, r, false); err != nil {
		return failed(err)
	}
	return apply(opPixelShuffle, r, x)
}

// PixelUnshuffle is the inverse of PixelShuffle: x [..., C, H·r, W·r] becomes
// [..., C·r², H, W], as torch.nn.functional.pixel_unshuffle.
func (x *Tensor) PixelUnshuffle(r int) *Tensor {
	if err := checkShuffle("pixel_unshuffle", x, r, true); err != nil {
		return failed(err)
	}
	return apply(opPixelUnshuffle, r, x)
}

func checkShuffle(op string, x *Tensor, r int, inverse bool) error {
	if err := x.check(op); err != nil {
		return err
	}
	name := "upscale_factor"
	if inverse {
		name = "downscale_factor"
	}
	if r < 1 {
		return errorf(op, ErrValue, name, "is "+strconv.Itoa(r), "use a factor ≥ 1")
	}
	s := x.t.Shape
	n := len(s)
	if n < 3 {
		return errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(s)+" but the op takes [..., C, H, W]", "give at least 3 dims")
	}
	// r², the channels times r² and the height and width times r are
	// sizes of the op's views: none may pass what an int counts.
	rr, ok := dispatch.CheckedMul(r, r)
	if ok && inverse {
		_, ok = dispatch.CheckedMul(s[n-3], rr)
	} else if ok {
		_, ok1 := dispatch.CheckedMul(s[n-2], r)
		_, ok2 := dispatch.CheckedMul(s[n-1], r)
		ok = ok1 && ok2
	}
	if !ok {
		return errorf(op, ErrValue, name, "is "+strconv.Itoa(r)+", which takes the sizes of x "+dispatch.FormatShape(s)+" past what an int counts",
			"use a smaller factor")
	}
	if !inverse && s[n-3]%rr != 0 {
		return errorf(op, ErrShape, "x", "has "+strconv.Itoa(s[n-3])+" channels (shape "+dispatch.FormatShape(s)+"), not a multiple of "+
			name+"² = "+strconv.Itoa(r*r), "give channels divisible by the square of the factor")
	}
	if inverse && (s[n-2]%r != 0 || s[n-1]%r != 0) {
		return errorf(op, ErrShape, "x", "has height and width "+strconv.Itoa(s[n-2])+"×"+strconv.Itoa(s[n-1])+", not multiples of "+
			name+" "+strconv.Itoa(r), "give a height and width divisible by the factor")
	}
	return nil
}

// pixelShuffle is PixelShuffle (or, inverse, PixelUnshuffle) as a reshape to
// split the factor out of the channels (or of height and width), a permute
// that moves it across, and a reshape that merges it in: the last is a copy.
func pixelShuffle(x *Tensor, r int, inverse bool) *Tensor {
	s := x.t.Shape
	b := len(s) - 3
	batch := s[:b]
	c, h, w := s[b], s[b+1], s[b+2]
	// In the split view [..., C, r, r, H, W] (shuffle) or [..., C, H, r, W, r]
	// (unshuffle), dims b.. are moved to b, b+3, b+1, b+4, b+2 or b, b+2,
	// b+4, b+1, b+3, the inverse permutation.
	order := []int{0, 3, 1, 4, 2}
	split := []int{c / (r * r), r, r, h, w}
	merged := []int{c / (r * r), h * r, w * r}
	if inverse {
		order = []int{0, 2, 4, 1, 3}
		split = []int{c, h / r, r, w / r, r}
		merged = []int{c * r * r, h / r, w / r}
	}
	perm := make([]int, 0, b+5)
	for d := range b {
		perm = append(perm, d)
	}
	for _, d := range order {
		perm = append(perm, b+d)
	}
	return x.Reshape(slices.Concat(batch, split)...).Permute(perm...).Reshape(slices.Concat(batch, merged)...)
}
