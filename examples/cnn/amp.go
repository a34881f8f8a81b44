package main

import (
	"github.com/lathe-ml/lathe"
)

// parseAMP reads the -amp flag: "" or "off" is float32 (the zero DType).
func parseAMP(s string) (lathe.DType, error) {
	switch s {
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

// autocast runs f under lathe.Autocast(dt), or as it is when dt is zero.
func autocast(dt lathe.DType, f func()) error {
	if dt == 0 {
		f()
		return nil
	}
	return lathe.Autocast(dt, f)
}

// checkAMP fails at once, before any training, if dev cannot compute in dt:
// it runs one 1×1 matmul under Autocast there, the first thing a training
// step would do in dt, and returns that op's error with the device named.
func checkAMP(dev lathe.Device, dt lathe.DType) error {
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

// ampNote is the result line's mention of mixed precision.
func ampNote(dt lathe.DType) string {
	if dt == 0 {
		return ""
	}
	return " with autocast to " + dt.String()
}
