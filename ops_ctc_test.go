package lathe

import (
	"math"
	"runtime/debug"
	"testing"
)

// Tests of CTCLoss beyond the conformance suite (internal/conformance,
// ctc.json and grad_ctc.json, which compare its values and gradients with
// torch's on every device): its bad-input rows, its errors on every
// device, what torch leaves undefined, second derivatives, autocast and
// memory.

// biCTC are CTCLoss's rows of the bad-input table.
func biCTC() map[string]biOp {
	lengths := func(dev Device, v ...int64) *Tensor { return FromSlice(CPU, v, len(v)).To(dev) }
	return map[string]biOp{
		"ctc_loss": {args: func(dev Device) []*Tensor {
			return []*Tensor{biF(dev, 4, 2, 3), FromSlice(CPU, []int64{1, 2, 2, 1}, 2, 2).To(dev), lengths(dev, 4, 3), lengths(dev, 2, 1)}
		},
			call:  func(a []*Tensor) *Tensor { return CTCLoss(a[0], a[1], a[2], a[3], 0, ReduceMean, false) },
			kinds: "fiii",
			huge: func(dev Device) *Tensor {
				return CTCLoss(biBig(dev, biHuge, biHuge, 3), FromSlice(CPU, []int64{1}, 1, 1).To(dev).Expand(biHuge, 1),
					Ones(dev, Int64, 1).Expand(biHuge), Ones(dev, Int64, 1).Expand(biHuge), 0, ReduceSum, false)
			}},
		"ctc_loss_concatenated": {args: func(dev Device) []*Tensor {
			return []*Tensor{biF(dev, 4, 2, 3), FromSlice(CPU, []int64{1, 2, 1}, 3).To(dev), lengths(dev, 4, 3), lengths(dev, 2, 1)}
		},
			call:  func(a []*Tensor) *Tensor { return CTCLoss(a[0], a[1], a[2], a[3], 0, ReduceNone, true) },
			kinds: "fiii"},
	}
}

// TestCTCErrors checks that every bad length, label and blank is an error
// that names the op and the argument, on every device (where the values
// are checked on the device, at the next synchronisation), and that the
// device has nothing left pending afterwards.
func TestCTCErrors(t *testing.T) {
	for _, dev := range biDevices(t) {
		i64 := func(shape []int, v ...int64) *Tensor { return FromSlice(CPU, v, shape...).To(dev) }
		lp := RandN(CPU, Float32, 5, 2, 4).LogSoftmax(2).To(dev)
		tg := i64([]int{2, 3}, 1, 2, 3, 3, 1, 1)
		il, tl := i64([]int{2}, 5, 4), i64([]int{2}, 3, 1)
		for _, c := range []struct {
			name           string
			lp, tg, il, tl *Tensor
			blank          int
			kind           error
			arg            string
		}{
			{"input_length>T", lp, tg, i64([]int{2}, 6, 4), tl, 0, ErrValue, "input_lengths"},
			{"input_length<0", lp, tg, i64([]int{2}, 5, -1), tl, 0, ErrValue, "input_lengths"},
			{"target_length>S", lp, tg, il, i64([]int{2}, 3, 4), 0, ErrValue, "target_lengths"},
			{"target_length<0", lp, tg, il, i64([]int{2}, -2, 1), 0, ErrValue, "target_lengths"},
			{"label=blank", lp, i64([]int{2, 3}, 1, 2, 3, 3, 2, 2), il, tl, 2, ErrValue, "targets"},
			{"label=C", lp, i64([]int{2, 3}, 1, 4, 3, 3, 1, 1), il, tl, 0, ErrIndex, "targets"},
			{"label=-1", lp, i64([]int{2, 3}, 1, 2, 3, -1, 1, 1), il, tl, 0, ErrIndex, "targets"},
			{"blank=C", lp, tg, il, tl, 4, ErrValue, "blank"},
			{"concatenated/sum", lp, i64([]int{5}, 1, 2, 3, 1, 1), il, tl, 0, ErrValue, "target_lengths"},
			{"concatenated/label=blank", lp, i64([]int{4}, 1, 2, 3, 0), il, tl, 0, ErrValue, "targets"},
			{"input_lengths[3]", lp, tg, i64([]int{3}, 5, 4, 4), tl, 0, ErrShape, "input_lengths"},
			{"targets[3,3]", lp, i64([]int{3, 3}, 1, 1, 1, 1, 1, 1, 1, 1, 1), il, tl, 0, ErrShape, "targets"},
			{"float-targets", lp, tg.Cast(Float32), il, tl, 0, ErrDType, "targets"},
			{"other-device", lp, tg.To(CPU), il.To(CPU), tl, 0, ErrDevice, "targets"},
		} {
			if c.name == "other-device" && dev == CPU {
				continue
			}
			out := CTCLoss(c.lp, c.tg, c.il, c.tl, c.blank, ReduceNone, false)
			err := out.Err()
			if err == nil {
				_, err = out.Float32s()
			}
			moreOpsErr(t, dev.String()+" "+c.name, err, c.kind, "ctc_loss", c.arg)
			if err := Synchronize(dev); err != nil {
				t.Errorf("%s %s: a second failure was left pending: %v", dev, c.name, err)
			}
		}
		// Padding past a sample's length is not read: the blank or any
		// value is fine there.
		ok := CTCLoss(lp, i64([]int{2, 3}, 1, 2, 0, 3, -7, 99), il, i64([]int{2}, 2, 1), 0, ReduceSum, false)
		if _, err := ok.Float32s(); err != nil {
			t.Errorf("%s: padding was checked: %v", dev, err)
		}
	}
}

// TestCTCUndefinedInTorch checks lathe's values where torch 1.13 reads
// memory it never wrote: no input steps give a loss of +Inf for a
// non-empty target (0 for an empty one), and log_probs with no time steps
// work.
func TestCTCUndefinedInTorch(t *testing.T) {
	lp := RandN(CPU, Float32, 3, 2, 3).LogSoftmax(2)
	tg := FromSlice(CPU, []int64{1, 2}, 2, 1)
	got, err := CTCLoss(lp, tg, FromSlice(CPU, []int64{0, 0}, 2), FromSlice(CPU, []int64{0, 1}, 2), 0, ReduceNone, false).Float32s()
	if err != nil || got[0] != 0 || !math.IsInf(float64(got[1]), 1) {
		t.Errorf("input length 0: got %v, %v; want [0 +Inf]", got, err)
	}
	empty := Zeros(CPU, Float32, 0, 2, 3)
	got, err = CTCLoss(empty, tg, FromSlice(CPU, []int64{0, 0}, 2), FromSlice(CPU, []int64{0, 1}, 2), 0, ReduceNone, true).Float32s()
	if err != nil || got[0] != 0 || got[1] != 0 {
		t.Errorf("T = 0 with zero_infinity: got %v, %v; want [0 0]", got, err)
	}
}

// TestCTCSecondDerivative checks the Hessian-vector product of the loss
// of log_softmax(z) against a central difference of its gradient (torch's
// ctc_loss has no double backward to compare with).
func TestCTCSecondDerivative(t *testing.T) {
	z0 := RandN(CPU, Float64, 5, 2, 4)
	v := RandN(CPU, Float64, 5, 2, 4)
	tg := FromSlice(CPU, []int64{1, 2, 1, 3, 3, 0}, 2, 3)
	il, tl := FromSlice(CPU, []int64{5, 4}, 2), FromSlice(CPU, []int64{3, 2}, 2)
	grad := func(z *Tensor, create bool) *Tensor {
		z = z.Detach().RequireGrad()
		loss := CTCLoss(z.LogSoftmax(2), tg, il, tl, 0, ReduceMean, false)
		var opts []GradOption
		if create {
			opts = append(opts, CreateGraph())
		}
		g, err := Grad(loss, []*Tensor{z}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if create {
			hv, err := Grad(g[0].Mul(v).Sum(), []*Tensor{z})
			if err != nil {
				t.Fatal(err)
			}
			return hv[0]
		}
		return g[0]
	}
	hv, _ := grad(z0, true).Float64s()
	const h = 1e-5
	plus, _ := grad(z0.Add(v.MulScalar(h)), false).Float64s()
	minus, _ := grad(z0.Sub(v.MulScalar(h)), false).Float64s()
	for i := range hv {
		fd := (plus[i] - minus[i]) / (2 * h)
		if math.Abs(hv[i]-fd) > 1e-6+1e-5*math.Abs(fd) {
			t.Fatalf("element %d: Hessian-vector product %g, central difference %g", i, hv[i], fd)
		}
	}
}

// TestCTCZeroInfinityGradient checks that an impossible sample's loss
// and gradient are 0 with zero_infinity, and the other sample's are not.
func TestCTCZeroInfinityGradient(t *testing.T) {
	z := RandN(CPU, Float32, 3, 2, 3).RequireGrad()
	tg := FromSlice(CPU, []int64{1, 1, 2, 0}, 2, 2)
	loss := CTCLoss(z.LogSoftmax(2), tg, FromSlice(CPU, []int64{2, 3}, 2), FromSlice(CPU, []int64{2, 1}, 2), 0, ReduceSum, true)
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	g, _ := z.Grad().Float32s() // [T, N, C]: sample 0 at (t*2+0)*3 + c
	for i, x := range g {
		n := i / 3 % 2
		if n == 0 && x != 0 || n == 1 && math.IsNaN(float64(x)) {
			t.Fatalf("gradient %v: sample 0 ([1, 1] in 2 steps) must be 0, sample 1 finite", g)
		}
	}
}

// TestCTCHalf checks that float16 and bfloat16 compute in float32 and round
// once, and that Autocast gives a float32 loss, as torch's fp32 list.
func TestCTCHalf(t *testing.T) {
	lp := RandN(CPU, Float32, 5, 2, 4).LogSoftmax(2)
	tg := FromSlice(CPU, []int64{1, 2, 3, 3}, 2, 2)
	il, tl := FromSlice(CPU, []int64{5, 4}, 2), FromSlice(CPU, []int64{2, 2}, 2)
	for _, dt := range []DType{Float16, BFloat16} {
		h := lp.Cast(dt)
		want, _ := CTCLoss(h.Cast(Float32), tg, il, tl, 0, ReduceNone, false).Cast(dt).Cast(Float32).Float32s()
		out := CTCLoss(h, tg, il, tl, 0, ReduceNone, false)
		if out.DType() != dt {
			t.Fatalf("%v: result dtype %v", dt, out.DType())
		}
		got, _ := out.Cast(Float32).Float32s()
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%v: got %v, want %v (float32, rounded once)", dt, got, want)
			}
		}
		var ac *Tensor
		if err := Autocast(dt, func() { ac = CTCLoss(h, tg, il, tl, 0, ReduceMean, false) }); err != nil {
			t.Fatal(err)
		}
		if ac.DType() != Float32 {
			t.Errorf("%v under Autocast: result dtype %v, want float32", dt, ac.DType())
		}
	}
}

// TestCTCLeaveNothing checks, with the collector off, that warm training
// steps of the loss take no memory on cpu and wgpu:0.
func TestCTCLeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := RandN(CPU, Float32, 5, 2, 4).To(dev).RequireGrad()
		tg := FromSlice(CPU, []int64{1, 2, 1, 3, 3, 0}, 2, 3).To(dev)
		cat := FromSlice(CPU, []int64{1, 2, 1, 3, 3}, 5).To(dev)
		il, tl := FromSlice(CPU, []int64{5, 4}, 2).To(dev), FromSlice(CPU, []int64{3, 2}, 2).To(dev)
		warmStepsTakeNothing(t, dev, "ctc_loss", x, func(x *Tensor) *Tensor {
			return CTCLoss(x, tg, il, tl, 0, ReduceMean, true)
		}, false)
		warmStepsTakeNothing(t, dev, "ctc_loss/concatenated", x, func(x *Tensor) *Tensor {
			return CTCLoss(x.LogSoftmax(2), cat, il, tl, 0, ReduceNone, false)
		}, true)
	}
}
