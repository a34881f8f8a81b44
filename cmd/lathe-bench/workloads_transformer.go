package main

import (
	"fmt"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// encoderStep is a training step of one nn.TransformerEncoderLayer
// (post-norm, ReLU, dropout 0.1, batch first, as torch's defaults with
// batch_first=True) on batch sequences of length l and width d: forward,
// the output's mean square as the loss, backward and SGD. The dims travel
// as [batch, l, d, heads, feedforward], as build/bench_torch.py's
// build_encoder_step reads them.
func encoderStep(batch, l, d, heads, ff int) workload {
	return workload{Name: fmt.Sprintf("encoder layer step b%d l%d d%d h%d ff%d", batch, l, d, heads, ff), Family: "transformer",
		spec: spec{Kind: "encoder_step", DType: "f32", Dims: []int{batch, l, d, heads, ff}}, Unit: perStep}
}

// buildEncoderStep is encoderStep's step.
func buildEncoderStep(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
	batch, l, d, heads, ff := dims[0], dims[1], dims[2], dims[3], dims[4]
	lathe.Seed(1)
	layer := nn.NewTransformerEncoderLayer(d, heads, nn.DimFeedforward(ff), nn.WithDType(dt))
	if err := nn.Err(layer); err != nil {
		return nil, err
	}
	if err := layer.To(dev); err != nil {
		return nil, err
	}
	opt, err := nn.NewSGD(layer.Parameters(), 0.01)
	if err != nil {
		return nil, err
	}
	x := lathe.RandN(dev, dt, batch, l, d)
	release, err := inputs(x)
	if err != nil {
		return nil, err
	}
	step := func() error {
		out := layer.Forward(x)
		square := out.Square()
		loss := square.Mean()
		opt.ZeroGrad()
		err := loss.Backward()
		for _, t := range []*lathe.Tensor{out, square, loss} {
			t.Release()
		}
		if err != nil {
			return err
		}
		return opt.Step()
	}
	return &prepared{step: step, release: release}, nil
}
