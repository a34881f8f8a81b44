package nn

import (
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// ChannelNorm is the state and the bookkeeping of the layers that
// normalise per channel with running statistics (torch's _NormBase):
// BatchNorm1d, BatchNorm2d and BatchNorm3d, which differ only in the ranks
// of input they take, and the instance norms (InstanceNorm1d, ...), which
// hold the same state. A batch norm normalises every channel of x [N, C, ...]: in
// training mode by the batch's mean and biased variance, moving RunningMean
// and RunningVar towards the batch's mean and unbiased variance by Momentum
// (or by 1/NumBatchesTracked, with Cumulative); in evaluation mode by
// RunningMean and RunningVar. A layer without running statistics
// (NoRunningStats: both nil) normalises by the batch's statistics in both
// modes. Then it scales by Weight and shifts by Bias (nil with NoAffine:
// none).
//
// RunningMean and RunningVar are state, not parameters: Parameters leaves
// them out (so optimizers do not see them) and Buffers lists them (so Save,
// Load and To include them). Each training step rebinds the two handles to
// the new statistics, and NumBatchesTracked to one more step, so that a
// state_dict of PyTorch's layer loads strictly. A training-mode Forward is
// therefore a step of the module's state: calls from several goroutines at
// once race, as stepping one module from two goroutines does (README,
// Goroutines); in evaluation mode any number may run.
//
// A zero ChannelNorm (var b nn.BatchNorm1d) has neither parameters nor
// statistics, and Eps and Momentum 0: it normalises by the batch's
// statistics without eps, so a constant channel comes out NaN (0/0), as
// torch's with eps=0. Set Eps, or build it with a constructor.
type ChannelNorm struct {
	Weight, Bias            *lathe.Tensor // [C]: ones and zeros at first; nil with NoAffine
	RunningMean, RunningVar *lathe.Tensor // [C]: zeros and ones at first; nil with NoRunningStats
	NumBatchesTracked       *lathe.Tensor // int64, 0-d: the training steps taken (nil with NoRunningStats, or in a layer built without a constructor)
	Momentum                float64       // the weight of a batch in the running statistics (0.1)
	Cumulative              bool          // weigh step n's batch by 1/n instead (CumulativeAverage: torch's momentum=None)
	Eps                     float64       // added to the variance (1e-5)
	Eval                    bool          // true after Train(false)
	// Channels is the C that x must have (0 in a layer built without a
	// constructor: then only the per-channel tensors check it).
	Channels int
}

// BatchNorm1d is ChannelNorm over x [N, C] or [N, C, L]
// (torch.nn.BatchNorm1d).
type BatchNorm1d struct{ ChannelNorm }

// BatchNorm2d is ChannelNorm over x [N, C, H, W] (torch.nn.BatchNorm2d).
type BatchNorm2d struct{ ChannelNorm }

// BatchNorm3d is ChannelNorm over x [N, C, D, H, W] (torch.nn.BatchNorm3d).
type BatchNorm3d struct{ ChannelNorm }

// normLayer is what tells the channel norm layers apart: the name, the op
// of their errors and the ranks of x they take.
type normLayer struct {
	layer, op string
	ranks     []int  // the ranks of x it takes
	shapes    string // how the errors spell them
	fix       string // how to give x such a rank
	// unbatched is the rank of a single sample [C, ...] that an instance
	// norm takes too; 0 for a batch norm, which takes only batches.
	unbatched int
}

var (
	batchNorm1d = normLayer{"BatchNorm1d", "batch_norm1d", []int{2, 3}, "[N, C] or [N, C, L]", "use a 2-d or 3-d input (x.Unsqueeze(0) for a single sequence)", 0}
	batchNorm2d = normLayer{"BatchNorm2d", "batch_norm2d", []int{4}, "[N, C, H, W]", "use a 4-d input (x.Unsqueeze(0) for a single image)", 0}
	batchNorm3d = normLayer{"BatchNorm3d", "batch_norm3d", []int{5}, "[N, C, D, H, W]", "use a 5-d input (x.Unsqueeze(0) for a single volume)", 0}
)

// NewBatchNorm1d makes a BatchNorm1d over the given number of channels
// with PyTorch's defaults, as NewBatchNorm2d.
func NewBatchNorm1d(channels int, opts ...Option) *BatchNorm1d {
	return &BatchNorm1d{newChannelNorm(batchNorm1d, channels, opts)}
}

// NewBatchNorm2d makes a BatchNorm2d over the given number of channels with
// PyTorch's defaults: weight ones, bias zeros, running mean zeros, running
// variance ones, momentum 0.1, eps 1e-5; in training mode. Set Momentum and
// Eps on the result for others.
func NewBatchNorm2d(channels int, opts ...Option) *BatchNorm2d {
	return &BatchNorm2d{newChannelNorm(batchNorm2d, channels, opts)}
}

// NewBatchNorm3d makes a BatchNorm3d over the given number of channels
// with PyTorch's defaults, as NewBatchNorm2d.
func NewBatchNorm3d(channels int, opts ...Option) *BatchNorm3d {
	return &BatchNorm3d{newChannelNorm(batchNorm3d, channels, opts)}
}

// newChannelNorm makes the state of the layer l: with an affine map and
// running statistics for a batch norm, without them for an instance norm
// (torch's defaults), unless opts say otherwise.
func newChannelNorm(l normLayer, channels int, opts []Option) ChannelNorm {
	o, optErr := layerOptions(l.layer, opts)
	if optErr == nil && channels < 1 {
		optErr = nnError(l.op, lathe.ErrShape, "channels", "is "+strconv.Itoa(channels), "use at least one channel")
	}
	if optErr != nil {
		err := lathe.Failed(optErr)
		return ChannelNorm{Weight: err, Bias: err, RunningMean: err, RunningVar: err, NumBatchesTracked: err, Momentum: 0.1, Eps: 1e-5}
	}
	b := ChannelNorm{Momentum: 0.1, Cumulative: o.cumulative, Eps: 1e-5, Channels: channels}
	if o.affine || (!o.affineSet && l.unbatched == 0) {
		b.Weight = newParam(lathe.Ones(lathe.CPU, o.dtype, channels), o)
		b.Bias = newParam(lathe.Zeros(lathe.CPU, o.dtype, channels), o)
	}
	if o.runningStats || (!o.runningStatsSet && l.unbatched == 0) {
		b.RunningMean = lathe.Zeros(lathe.CPU, o.dtype, channels).To(o.device)
		b.RunningVar = lathe.Ones(lathe.CPU, o.dtype, channels).To(o.device)
		// int64 whatever the layer's dtype, as PyTorch's.
		b.NumBatchesTracked = lathe.Scalar(lathe.CPU, int64(0)).To(o.device)
	}
	return b
}

// Forward normalises x [N, C] or [N, C, L], updating the running
// statistics and the step count in training mode. A step that fails
// updates neither.
func (b *BatchNorm1d) Forward(x *lathe.Tensor) *lathe.Tensor { return b.forward(batchNorm1d, x) }

// Forward normalises x [N, C, H, W], updating the running statistics and
// the step count in training mode. A step that fails updates neither.
func (b *BatchNorm2d) Forward(x *lathe.Tensor) *lathe.Tensor { return b.forward(batchNorm2d, x) }

// Forward normalises x [N, C, D, H, W], updating the running statistics
// and the step count in training mode. A step that fails updates neither.
func (b *BatchNorm3d) Forward(x *lathe.Tensor) *lathe.Tensor { return b.forward(batchNorm3d, x) }

// check checks that x is a live tensor of one of l's ranks with channels
// channels (when not 0).
func (l normLayer) check(x *lathe.Tensor, channels int) *lathe.Tensor {
	if err := x.CheckArg(l.op, "x"); err != nil {
		return lathe.Failed(err)
	}
	if !slices.Contains(l.ranks, x.Rank()) {
		return lathe.Failed(nnError(l.op, lathe.ErrShape, "x", "has shape "+shapeString(x.Shape())+" but "+l.layer+" takes "+l.shapes, l.fix))
	}
	dim := 1
	if x.Rank() == l.unbatched {
		dim = 0
	}
	if c := x.Dim(dim); channels > 0 && c != channels {
		return lathe.Failed(nnError(l.op, lathe.ErrShape, "x", "has shape "+shapeString(x.Shape())+", "+strconv.Itoa(c)+
			" channels, but the "+l.layer+" has "+strconv.Itoa(channels), "give x "+strconv.Itoa(channels)+" channels in dim "+
			strconv.Itoa(dim)+", or build the layer for "+strconv.Itoa(c)))
	}
	return nil
}

// failed is the error of a layer its constructor failed, or nil.
func (b *ChannelNorm) failed() *lathe.Tensor {
	for _, p := range append(b.Parameters(), b.Buffers()...) {
		if err := p.T.Err(); err != nil {
			return lathe.Failed(err)
		}
	}
	return nil
}

// checkState checks the state that Forward uses, set by hand or loaded,
// against x of c channels: the per-channel tensors must be live and [c]
// (an instance norm repeats them, so batch_norm's errors would name a
// shape the caller never made), and a step count live and of one integer
// (an edited one was add's error naming "lhs", or a momentum that the
// caller never gave).
func (b *ChannelNorm) checkState(l normLayer, c int) *lathe.Tensor {
	for _, p := range append(b.Parameters(), b.Buffers()...) {
		if err := p.T.CheckArg(l.op, p.Name); err != nil {
			return lathe.Failed(err)
		}
		if p.Name == "num_batches_tracked" {
			if dt := p.T.DType(); (dt != lathe.Int64 && dt != lathe.Int32) || p.T.Numel() != 1 {
				return lathe.Failed(nnError(l.op, lathe.ErrValue, p.Name, "is "+dt.String()+" of shape "+shapeString(p.T.Shape())+
					", but it counts the training steps", "give it one int64 value (lathe.Scalar(dev, int64(0)))"))
			}
			continue
		}
		if p.T.Rank() != 1 || p.T.Dim(0) != c {
			return lathe.Failed(nnError(l.op, lathe.ErrShape, p.Name, "has shape "+shapeString(p.T.Shape())+" but x has "+strconv.Itoa(c)+
				" channels", "give it one value per channel, shape ["+strconv.Itoa(c)+"]"))
		}
	}
	return nil
}

// channelsOf is the channel count of x, of one of l's ranks.
func (l normLayer) channelsOf(x *lathe.Tensor) int {
	if x.Rank() == l.unbatched {
		return x.Dim(0)
	}
	return x.Dim(1)
}

// refuses is the failed result of a forward pass that cannot run: a layer
// its constructor failed (whatever x is), an x the layer does not take, or
// state that does not fit x; nil where it can run.
func (b *ChannelNorm) refuses(l normLayer, x *lathe.Tensor) *lathe.Tensor {
	if f := b.failed(); f != nil {
		return f
	}
	if f := l.check(x, b.Channels); f != nil {
		return f
	}
	return b.checkState(l, l.channelsOf(x))
}

func (b *ChannelNorm) forward(l normLayer, x *lathe.Tensor) *lathe.Tensor {
	if f := b.refuses(l, x); f != nil {
		return f
	}
	if b.RunningMean == nil && b.RunningVar == nil {
		// No running statistics: the batch's, in both modes, as torch's
		// batch_norm with bn_training.
		return x.BatchNorm(nil, nil, b.Weight, b.Bias, true, 0, b.Eps)
	}
	if b.Eval {
		return x.BatchNorm(b.RunningMean, b.RunningVar, b.Weight, b.Bias, false, b.Momentum, b.Eps)
	}
	if b.NumBatchesTracked == nil {
		if b.Cumulative {
			return lathe.Failed(nnError(l.op, lathe.ErrValue, "num_batches_tracked", "is nil, but the cumulative average counts the batches in it",
				"build the layer with New"+l.layer))
		}
		return x.BatchNorm(b.RunningMean, b.RunningVar, b.Weight, b.Bias, true, b.Momentum, b.Eps)
	}
	// The next count is made first, so that a count that cannot be made
	// fails the step before the running statistics move.
	var count *lathe.Tensor
	lathe.NoGrad(func() { count = b.NumBatchesTracked.AddScalar(1) })
	if err := count.Err(); err != nil {
		return lathe.Failed(err)
	}
	momentum := b.Momentum
	if b.Cumulative {
		// torch: exponential_average_factor = 1 / num_batches_tracked,
		// after the count's increment (_BatchNorm.forward).
		n, err := count.Item()
		if err != nil {
			count.Release()
			return lathe.Failed(err)
		}
		if n < 1 {
			count.Release()
			return lathe.Failed(nnError(l.op, lathe.ErrValue, "num_batches_tracked", "is "+strconv.FormatFloat(n-1, 'g', -1, 64)+
				", but the cumulative average weighs step n by 1/n", "count the steps from 0"))
		}
		momentum = 1 / n
	}
	y := x.BatchNorm(b.RunningMean, b.RunningVar, b.Weight, b.Bias, true, momentum, b.Eps)
	if y.Err() != nil {
		count.Release()
		return y
	}
	if err := rebind(b.NumBatchesTracked, count, nil); err != nil {
		return lathe.Failed(err)
	}
	return y
}

// Parameters lists "weight" and "bias", those the layer has.
func (b *ChannelNorm) Parameters() []Param {
	return present(Param{Name: "weight", T: b.Weight}, Param{Name: "bias", T: b.Bias})
}

// Buffers lists the running statistics and the step count under their
// state-dict names, "running_mean", "running_var" and
// "num_batches_tracked", those the layer has.
func (b *ChannelNorm) Buffers() []Param {
	return present(Param{Name: "running_mean", T: b.RunningMean}, Param{Name: "running_var", T: b.RunningVar},
		Param{Name: "num_batches_tracked", T: b.NumBatchesTracked})
}

// present is ps without those whose tensor is nil: the state a layer
// built without it (NoAffine, NoRunningStats, NoBias) does not have, as
// torch's state dict does not list a None parameter or buffer.
func present(ps ...Param) []Param {
	return slices.DeleteFunc(ps, func(p Param) bool { return p.T == nil })
}

// To moves the parameters and the running statistics to dev.
func (b *ChannelNorm) To(dev lathe.Device) error {
	return moveParams(append(b.Parameters(), b.Buffers()...), dev)
}

// Train switches between batch statistics (true) and running ones (false).
func (b *ChannelNorm) Train(on bool) { b.Eval = !on }

// GroupNorm normalises x [N, C, ...] over groups of C/Groups channels, per
// sample, then scales by Weight and shifts by Bias (torch.nn.GroupNorm;
// nil with NoAffine, torch's affine=False). It acts the same in training
// and evaluation.
type GroupNorm struct {
	Groups       int
	Eps          float64
	Weight, Bias *lathe.Tensor // [C]: ones and zeros at first; nil with NoAffine
	// Channels is the C that x must have (0 in a layer built without
	// NewGroupNorm: then only Weight and Bias check it).
	Channels int
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
	g := &GroupNorm{Groups: groups, Eps: eps, Channels: channels}
	if o.affine || !o.affineSet {
		g.Weight = newParam(lathe.Ones(lathe.CPU, o.dtype, channels), o)
		g.Bias = newParam(lathe.Zeros(lathe.CPU, o.dtype, channels), o)
	}
	return g
}

// Forward normalises x [N, C, ...].
func (g *GroupNorm) Forward(x *lathe.Tensor) *lathe.Tensor {
	if err := x.CheckArg("group_norm", "x"); err != nil {
		return lathe.Failed(err)
	}
	if g.Channels > 0 && x.Rank() >= 2 && x.Dim(1) != g.Channels {
		c := strconv.Itoa(g.Channels)
		return lathe.Failed(nnError("group_norm", lathe.ErrShape, "x", "has shape "+shapeString(x.Shape())+", "+strconv.Itoa(x.Dim(1))+
			" channels, but the GroupNorm has "+c, "give x "+c+" channels in dim 1, or build the layer for "+strconv.Itoa(x.Dim(1))))
	}
	return x.GroupNorm(g.Groups, g.Weight, g.Bias, g.Eps)
}

// Parameters lists "weight" and "bias", those the layer has.
func (g *GroupNorm) Parameters() []Param {
	return present(Param{Name: "weight", T: g.Weight}, Param{Name: "bias", T: g.Bias})
}

// To moves the parameters to dev.
func (g *GroupNorm) To(dev lathe.Device) error { return moveParams(g.Parameters(), dev) }

// Train does nothing: GroupNorm acts the same in both modes.
func (g *GroupNorm) Train(bool) {}
