package nn

import "github.com/lathe-ml/lathe"

// InstanceNorm1d normalises each channel of each sample of x [N, C, L] (or
// one sample [C, L]) over its positions (torch.nn.InstanceNorm1d).
// InstanceNorm2d and InstanceNorm3d are the same over [N, C, H, W] and
// [N, C, D, H, W]. As torch's, they have by default neither an affine map
// nor running statistics (ChannelNorm's fields nil); Affine gives them
// Weight and Bias, TrackRunningStats RunningMean, RunningVar and
// NumBatchesTracked, under torch's state-dict names. With running
// statistics, a training-mode step moves them by Momentum towards the
// batch's per-sample statistics averaged over the samples (the unbiased
// variances'), and evaluation mode normalises by them; torch's instance
// norms never count the steps, so NumBatchesTracked stays as loaded, and
// take no momentum=None (CumulativeAverage; Cumulative set by hand fails
// Forward). An x without elements (no samples, or no positions) leaves the
// running statistics as they were, as a batch norm's empty batch does;
// torch's instance norms make them NaN there. x must have the layer's
// channel count even without Affine, where torch's only warns and
// normalises any count.
type InstanceNorm1d struct{ ChannelNorm }

// InstanceNorm2d is InstanceNorm1d over x [N, C, H, W] or [C, H, W]
// (torch.nn.InstanceNorm2d).
type InstanceNorm2d struct{ ChannelNorm }

// InstanceNorm3d is InstanceNorm1d over x [N, C, D, H, W] or [C, D, H, W]
// (torch.nn.InstanceNorm3d).
type InstanceNorm3d struct{ ChannelNorm }

var (
	instanceNorm1d = normLayer{"InstanceNorm1d", "instance_norm1d", []int{2, 3}, "[N, C, L] or [C, L]", "use a 3-d input, or a 2-d one for a single sample", 2}
	instanceNorm2d = normLayer{"InstanceNorm2d", "instance_norm2d", []int{3, 4}, "[N, C, H, W] or [C, H, W]", "use a 4-d input, or a 3-d one for a single image", 3}
	instanceNorm3d = normLayer{"InstanceNorm3d", "instance_norm3d", []int{4, 5}, "[N, C, D, H, W] or [C, D, H, W]", "use a 5-d input, or a 4-d one for a single volume", 4}
)

// NewInstanceNorm1d makes an InstanceNorm1d over the given number of
// channels with PyTorch's defaults: no weight, bias or running
// statistics (see Affine, TrackRunningStats), momentum 0.1, eps 1e-5; in
// training mode.
func NewInstanceNorm1d(channels int, opts ...Option) *InstanceNorm1d {
	return &InstanceNorm1d{newChannelNorm(instanceNorm1d, channels, opts)}
}

// NewInstanceNorm2d makes an InstanceNorm2d, as NewInstanceNorm1d.
func NewInstanceNorm2d(channels int, opts ...Option) *InstanceNorm2d {
	return &InstanceNorm2d{newChannelNorm(instanceNorm2d, channels, opts)}
}

// NewInstanceNorm3d makes an InstanceNorm3d, as NewInstanceNorm1d.
func NewInstanceNorm3d(channels int, opts ...Option) *InstanceNorm3d {
	return &InstanceNorm3d{newChannelNorm(instanceNorm3d, channels, opts)}
}

// Forward normalises x [N, C, L] or [C, L]. A step that fails updates
// nothing.
func (m *InstanceNorm1d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return m.instanceForward(instanceNorm1d, x)
}

// Forward normalises x [N, C, H, W] or [C, H, W]. A step that fails
// updates nothing.
func (m *InstanceNorm2d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return m.instanceForward(instanceNorm2d, x)
}

// Forward normalises x [N, C, D, H, W] or [C, D, H, W]. A step that fails
// updates nothing.
func (m *InstanceNorm3d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return m.instanceForward(instanceNorm3d, x)
}

// instanceForward is torch's instance_norm (aten's Normalization.cpp): a
// batch norm of x viewed as one sample of N·C channels, with the
// per-channel tensors repeated N times; the running statistics, updated
// there per (sample, channel), are then averaged over the samples.
func (b *ChannelNorm) instanceForward(l normLayer, x *lathe.Tensor) *lathe.Tensor {
	if f := b.refuses(l, x); f != nil {
		return f
	}
	if b.Cumulative {
		// torch: "instance_norm(): argument 'momentum' must be float, not
		// NoneType". Taken, a step moved the statistics by Momentum.
		return lathe.Failed(nnError(l.op, lathe.ErrValue, "momentum", "is the cumulative average (Cumulative), which "+l.layer+
			" does not take, as torch's", "set Cumulative to false and Momentum to the weight of a step"))
	}
	given := x.Shape()
	// What it makes on the way goes with the result's graph, or at once
	// (made.give): left to the collector, every step took new memory.
	var made madeTensors
	unbatched := x.Rank() == l.unbatched
	if unbatched {
		x = made.add(x.Unsqueeze(0))
	}
	shape := x.Shape()
	n, c := shape[0], shape[1]
	stats := b.RunningMean != nil || b.RunningVar != nil
	useInput := !b.Eval || !stats // torch: self.training or not self.track_running_stats
	if spatial := x.Numel() / max(1, n*c); useInput && spatial == 1 && n*c > 0 {
		// torch: "Expected more than 1 spatial element when training"
		// (_verify_spatial_size); batch_norm of the flattened x would name
		// a shape the caller never made.
		made.give(nil)
		return lathe.Failed(nnError(l.op, lathe.ErrShape, "x", "has shape "+shapeString(given)+
			", one position per channel, so its per-sample variance is undefined", "normalise more than one position per sample"))
	}
	repeat := func(t *lathe.Tensor) *lathe.Tensor {
		if t == nil {
			return nil
		}
		return t.Repeat(n)
	}
	affine := func(t *lathe.Tensor) *lathe.Tensor {
		if t == nil {
			return nil
		}
		return made.add(repeat(t))
	}
	var mean, variance *lathe.Tensor
	if stats {
		lathe.NoGrad(func() { mean, variance = repeat(b.RunningMean), repeat(b.RunningVar) })
	}
	if useInput {
		// A training step rebinds them to the updated statistics, which
		// nothing else holds.
		defer func() {
			for _, t := range []*lathe.Tensor{mean, variance} {
				if t != nil {
					t.Release()
				}
			}
		}()
	} else {
		// Evaluation normalises by them: the result's graph holds them
		// (released at once, Backward failed).
		made.add(mean)
		made.add(variance)
	}
	flat := made.add(x.Reshape(append([]int{1, n * c}, shape[2:]...)...))
	y := flat.BatchNorm(mean, variance, affine(b.Weight), affine(b.Bias), useInput, b.Momentum, b.Eps)
	if err := y.Err(); err != nil {
		made.give(y)
		return y
	}
	if useInput && stats && x.Numel() > 0 {
		var m, v *lathe.Tensor
		lathe.NoGrad(func() {
			mv, vv := mean.Reshape(n, c), variance.Reshape(n, c)
			m, v = mv.Mean(0), vv.Mean(0)
			mv.Release()
			vv.Release()
		})
		if err := rebindAll([]*lathe.Tensor{b.RunningMean, b.RunningVar}, []*lathe.Tensor{m, v}, []*lathe.Tensor{nil, nil}); err != nil {
			made.give(y)
			y.Release()
			return lathe.Failed(err)
		}
	}
	out := y.Reshape(shape...)
	if unbatched {
		made.add(out)
		out = out.Squeeze(0)
	}
	made.add(y)
	made.give(out)
	return out
}
