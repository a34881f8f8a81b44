package nn

import (
	"strconv"

	"github.com/lathe-ml/lathe"
)

// BatchNorm2d normalises each channel of x [N, C, H, W] (torch.nn.BatchNorm2d
// with affine=True and track_running_stats=True). In training mode it uses
// the batch's mean and biased variance and moves RunningMean and RunningVar
// towards the batch's mean and unbiased variance by Momentum; in evaluation
// mode it uses RunningMean and RunningVar. Then it scales by Weight and
// shifts by Bias.
//
// RunningMean and RunningVar are state, not parameters: Parameters leaves
// them out (so optimizers do not see them) and Buffers lists them (so Save,
// Load and To include them). Each training step rebinds the two handles to
// the new statistics, and NumBatchesTracked to one more step, so that a
// state_dict of PyTorch's BatchNorm2d loads strictly. (PyTorch reads the
// count only for momentum=None, the cumulative average, which lathe does not
// offer.) A training-mode Forward is therefore a step of the module's state:
// calls from several goroutines at once race, as stepping one module from
// two goroutines does (README, Goroutines); in evaluation mode any number
// may run.
type BatchNorm2d struct {
	Weight, Bias            *lathe.Tensor // [C]: ones and zeros at first
	RunningMean, RunningVar *lathe.Tensor // [C]: zeros and ones at first
	NumBatchesTracked       *lathe.Tensor // int64, 0-d: the training steps taken (none in a layer built without NewBatchNorm2d)
	Momentum                float64       // the weight of a batch in the running statistics (0.1)
	Eps                     float64       // added to the variance (1e-5)
	Eval                    bool          // true after Train(false)
}

// NewBatchNorm2d makes a BatchNorm2d over the given number of channels with
// PyTorch's defaults: weight ones, bias zeros, running mean zeros, running
// variance ones, momentum 0.1, eps 1e-5; in training mode. Set Momentum and
// Eps on the result for others.
func NewBatchNorm2d(channels int, opts ...Option) *BatchNorm2d {
	o, optErr := layerOptions("BatchNorm2d", opts)
	if optErr == nil && channels < 1 {
		optErr = nnError("batch_norm2d", lathe.ErrShape, "channels", "is "+strconv.Itoa(channels), "use at least one channel")
	}
	if optErr != nil {
		err := lathe.Failed(optErr)
		return &BatchNorm2d{Weight: err, Bias: err, RunningMean: err, RunningVar: err, NumBatchesTracked: err, Momentum: 0.1, Eps: 1e-5}
	}
	return &BatchNorm2d{
		Weight:      newParam(lathe.Ones(lathe.CPU, o.dtype, channels), o),
		Bias:        newParam(lathe.Zeros(lathe.CPU, o.dtype, channels), o),
		RunningMean: lathe.Zeros(lathe.CPU, o.dtype, channels).To(o.device),
		RunningVar:  lathe.Ones(lathe.CPU, o.dtype, channels).To(o.device),
		// int64 whatever the layer's dtype, as PyTorch's.
		NumBatchesTracked: lathe.Scalar(lathe.CPU, int64(0)).To(o.device),
		Momentum:          0.1,
		Eps:               1e-5,
	}
}

// Forward normalises x [N, C, H, W], updating the running statistics and
// the step count in training mode. A step that fails updates neither.
func (b *BatchNorm2d) Forward(x *lathe.Tensor) *lathe.Tensor {
	if err := x.CheckArg("batch_norm2d", "x"); err != nil {
		return lathe.Failed(err)
	}
	if x.Rank() != 4 {
		return lathe.Failed(nnError("batch_norm2d", lathe.ErrShape, "x", "has shape "+shapeString(x.Shape())+" but BatchNorm2d takes [N, C, H, W]",
			"use a 4-d input (x.Unsqueeze(0) for a single image)"))
	}
	if b.Eval || b.NumBatchesTracked == nil {
		return x.BatchNorm(b.RunningMean, b.RunningVar, b.Weight, b.Bias, !b.Eval, b.Momentum, b.Eps)
	}
	// The next count is made first, so that a count that cannot be made
	// fails the step before the running statistics move.
	var count *lathe.Tensor
	lathe.NoGrad(func() { count = b.NumBatchesTracked.AddScalar(1) })
	if err := count.Err(); err != nil {
		return lathe.Failed(err)
	}
	y := x.BatchNorm(b.RunningMean, b.RunningVar, b.Weight, b.Bias, true, b.Momentum, b.Eps)
	if y.Err() != nil {
		count.Release()
		return y
	}
	if err := rebind(b.NumBatchesTracked, count, nil); err != nil {
		return lathe.Failed(err)
	}
	return y
}

// Parameters lists "weight" and "bias".
func (b *BatchNorm2d) Parameters() []Param {
	return []Param{{Name: "weight", T: b.Weight}, {Name: "bias", T: b.Bias}}
}

// Buffers lists the running statistics and the step count under their
// state-dict names, "running_mean", "running_var" and
// "num_batches_tracked" (the count only where the layer has one).
func (b *BatchNorm2d) Buffers() []Param {
	ps := []Param{{Name: "running_mean", T: b.RunningMean}, {Name: "running_var", T: b.RunningVar}}
	if b.NumBatchesTracked != nil {
		ps = append(ps, Param{Name: "num_batches_tracked", T: b.NumBatchesTracked})
	}
	return ps
}

// To moves the parameters and the running statistics to dev.
func (b *BatchNorm2d) To(dev lathe.Device) error {
	return moveParams(state(b), dev)
}

// Train switches between batch statistics (true) and running ones (false).
func (b *BatchNorm2d) Train(on bool) { b.Eval = !on }

// GroupNorm normalises x [N, C, ...] over groups of C/Groups channels, per
// sample, then scales by Weight and shifts by Bias (torch.nn.GroupNorm with
// affine=True). It acts the same in training and evaluation.
type GroupNorm struct {
	Groups       int
	Eps          float64
	Weight, Bias *lathe.Tensor // [C]: ones and zeros at first
}

// NewGroupNorm makes a GroupNorm of channels channels in groups groups, with
// weight ones, bias zeros and PyTorch's eps 1e-5 (set Eps on the result for
// another).
func NewGroupNorm(groups, channels int, opts ...Option) *GroupNorm {
	const eps = 1e-5
	o, optErr := layerOptions("GroupNorm", opts)
	if optErr == nil && (groups < 1 || channels < 1 || channels%groups != 0) {
		optErr = nnError("group_norm", lathe.ErrValue, "groups", "is "+strconv.Itoa(groups)+" for "+strconv.Itoa(channels)+" channels",
			"use at least one channel and a number of groups that divides the channels")
	}
	if optErr != nil {
		err := lathe.Failed(optErr)
		return &GroupNorm{Groups: groups, Eps: eps, Weight: err, Bias: err}
	}
	return &GroupNorm{
		Groups: groups,
		Eps:    eps,
		Weight: newParam(lathe.Ones(lathe.CPU, o.dtype, channels), o),
		Bias:   newParam(lathe.Zeros(lathe.CPU, o.dtype, channels), o),
	}
}

// Forward normalises x [N, C, ...].
func (g *GroupNorm) Forward(x *lathe.Tensor) *lathe.Tensor {
	return x.GroupNorm(g.Groups, g.Weight, g.Bias, g.Eps)
}

// Parameters lists "weight" and "bias".
func (g *GroupNorm) Parameters() []Param {
	return []Param{{Name: "weight", T: g.Weight}, {Name: "bias", T: g.Bias}}
}

// To moves the parameters to dev.
func (g *GroupNorm) To(dev lathe.Device) error { return moveParams(g.Parameters(), dev) }

// Train does nothing: GroupNorm acts the same in both modes.
func (g *GroupNorm) Train(bool) {}
