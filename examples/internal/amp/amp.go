// Package amp is the examples' mixed-precision plumbing: the -amp flag, a
// step under lathe.Autocast, the up-front check that a device computes in
// the chosen dtype, and a training step with an optional nn.GradScaler.
// The zero DType means float32 throughout, so a program that does not ask
// for mixed precision runs exactly as it would without this package.
package amp

import (
	"strings"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// Parse reads the -amp flag: "" or "off" is float32 (the zero DType).
func Parse(s string) (lathe.DType, error) {
	switch strings.ToLower(s) { // as lathe.ParseDevice takes CPU for cpu
	case "", "off":
		return 0, nil
	case "bf16", "bfloat16":
		return lathe.BFloat16, nil
	case "f16", "fp16", "float16":
		return lathe.Float16, nil
	}
	e := lathe.NewError("amp", lathe.ErrValue, "-amp", "is "+s+" but mixed precision is bf16 or f16",
		"pass -amp bf16 or -amp f16, or leave it out for float32")
	e.Found = s
	return 0, e
}

// Run runs f under lathe.Autocast(dt), or as it is when dt is zero.
func Run(dt lathe.DType, f func()) error {
	if dt == 0 {
		f()
		return nil
	}
	return lathe.Autocast(dt, f)
}

// Check fails at once, before any training, if dev cannot compute in dt:
// it runs one 1×1 matmul under Autocast there, the first thing a training
// step would do in dt, and returns that op's error with the device named.
func Check(dev lathe.Device, dt lathe.DType) error {
	if dt == 0 {
		return nil
	}
	x := lathe.Ones(dev, lathe.Float32, 1, 1)
	if err := x.Err(); err != nil {
		return err
	}
	var y *lathe.Tensor
	if err := lathe.Autocast(dt, func() { y = x.MatMul(x) }); err != nil {
		return err
	}
	if err := y.Err(); err != nil {
		e := lathe.NewError("amp", lathe.ErrUnsupported, "-device",
			"is "+dev.String()+", which cannot compute in "+dt.String()+" for -amp",
			"train on the cpu (-device cpu), or leave out -amp to train "+dev.String()+" in float32")
		e.Expected, e.Found, e.Err = "a device with "+dt.String(), dev.String(), err
		return e
	}
	return nil
}

// Note is the result line's mention of mixed precision.
func Note(dt lathe.DType) string {
	if dt == 0 {
		return ""
	}
	return " with autocast to " + dt.String()
}

// Step computes the gradients of loss and steps opt; with a scaler, on a
// scaled loss through the scaler (which skips the step if a gradient
// overflowed float16), as torch's GradScaler recipe.
func Step(loss *lathe.Tensor, opt nn.Optimizer, scaler *nn.GradScaler) error {
	if scaler == nil {
		if err := loss.Backward(); err != nil {
			return err
		}
		return opt.Step()
	}
	if err := scaler.Scale(loss).Backward(); err != nil {
		return err
	}
	if _, err := scaler.Step(opt); err != nil {
		return err
	}
	return scaler.Update()
}
