package lathe

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The activations' backward ops (gelu_backward, gelu_tanh_backward,
// silu_backward, relu_backward), which only gradient rules call: their values against
// PyTorch's, and against the composite of basic ops that the rules were
// before, on every device that opens (the cuda kernels against the cpu's
// in backends/cuda's emulation).

// torchActivationBackward holds torch.ops.aten's float64 gelu_backward
// (approximate "none" and "tanh") and silu_backward of
// actBackwardGrad and actBackwardX (PyTorch 1.13).
var (
	actBackwardX     = []float64{-6, -5.5, -3, -0.75, -0.5, 0, 0.3, 1, 2.5, 6, 9.5}
	actBackwardGrad  = []float64{1.5, -0.5, 2, 1, -1.25, 3, 0.75, -2, 1, 0.5, -1}
	torchActBackward = map[string][]float64{
		"gelu_backward": {-5.3203064181039585e-08, 2.8667361993092337e-07, -0.02389129440836784, 0.0007742782607648296,
			-0.1656310941797964, 1.5, 0.5492458251203324, -2.166630941175373, 1.037611085908145, 0.5000000177343547, -1.0},
		"gelu_tanh_backward": {-1.1564964019254494e-09, 2.3382764068404014e-08, -0.023168333261939296, 0.001061743862585618,
			-0.16578762058169705, 1.5, 0.5492215887291014, -2.165928167691565, 1.037951576212666, 0.5000000003854989, -1.0},
		"silu_backward": {-0.018489648887288268, 0.009112253302943796, -0.17620821203033923, 0.1574000555032465,
			-0.32504851587168526, 1.5, 0.4858350077391621, -1.8553410237429737, 1.0994011113415267, 0.5061632162957624,
			-1.0006361397152408},
		"relu_backward": {0, 0, 0, 0, 0, 0, 0.75, -2, 1, 0.5, -1}, // threshold_backward(g, x, 0)
	}
)

var actBackwardOps = []*dispatch.Op[dispatch.None]{ops.GELUBackward, ops.GELUTanhBackward, ops.SiLUBackward, ops.ReLUBackward}

// actBackwardClose says whether got is want within the tolerance of dt:
// for float32 a few ulps of the value, and 1e-7·|g| where the terms of f'
// cancel (near gelu's minimum) or an exponential underflows; for float64
// 1e-12 of the value, and 1e-13·|g| where the composite's 1 + tanh(u)
// loses its digits (x below -2), which the kernels do not.
func actBackwardClose(got, want, g float64, dt DType) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	rel, abs := 1e-12, 1e-13*math.Abs(g)
	if dt == Float32 {
		rel, abs = 1e-6, 1e-7*math.Abs(g)
	}
	return math.Abs(got-want) <= rel*math.Abs(want)+abs
}

func TestActivationBackwardTorch(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float64, Float32} {
			if dt == Float64 && !hasFloat64(dev) {
				continue
			}
			for _, op := range actBackwardOps {
				t.Run(dev.String()+"/"+dt.String()+"/"+op.Name, func(t *testing.T) {
					g := FromSlice(CPU, actBackwardGrad, len(actBackwardGrad)).Cast(dt).To(dev)
					x := FromSlice(CPU, actBackwardX, len(actBackwardX)).Cast(dt).To(dev)
					got, err := apply(op, none, g, x).To(CPU).Cast(Float64).Float64s()
					if err != nil {
						t.Fatal(err)
					}
					for i, want := range torchActBackward[op.Name] {
						if !actBackwardClose(got[i], want, actBackwardGrad[i], dt) {
							t.Errorf("x = %g, g = %g: got %.17g, torch gives %.17g", actBackwardX[i], actBackwardGrad[i], got[i], want)
						}
					}
				})
			}
		}
	}
}

// TestGELUTanhBackwardLimits holds gelu_tanh_backward to its derivative's
// limits, 0 below and 1 above, where |x| is large or infinite, on every
// device, in short runs and in runs long enough for the cpu's C loop: the
// kernels drop the second term once sigmoid(2u)·sigmoid(-2u) is 0, where it
// had been 0·inf on the cpu (NaN) for infinite x. torch gives NaN for all
// of these; a NaN x stays NaN.
func TestGELUTanhBackwardLimits(t *testing.T) {
	inf := math.Inf(1)
	x := []float64{-inf, inf, -math.MaxFloat32, math.MaxFloat32, -1e20, 1e20, -100, 100, math.NaN()}
	want := []float64{0, 1, 0, 1, 0, 1, 0, 1, math.NaN()}
	const g = 1.5
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float64, Float32} {
			if dt == Float64 && !hasFloat64(dev) {
				continue
			}
			for _, reps := range []int{1, 40} { // 360 elements reach the cpu's C loop (vectorMin)
				xs := slices.Repeat(x, reps)
				xt := FromSlice(CPU, xs, len(xs)).Cast(dt).To(dev)
				gt := FullLike(xt, g)
				got, err := apply(ops.GELUTanhBackward, none, gt, xt).To(CPU).Cast(Float64).Float64s()
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range got {
					w := g * want[i%len(x)]
					if v != w && !(math.IsNaN(w) && math.IsNaN(v)) {
						t.Errorf("%v %v [%d]: x = %g gives %g, want %g", dev, dt, len(xs), xs[i], v, w)
					}
				}
			}
		}
	}
}

// TestReLUGradientAtNaN: relu's gradient is 0 where x ≤ 0 and g elsewhere,
// so that at a NaN x it passes g on, as torch's threshold_backward (and so
// the NaN that the forward pass made stays in the backward one), on every
// device and float dtype, in short runs and in runs long enough for the
// cpu's C loop.
func TestReLUGradientAtNaN(t *testing.T) {
	inf := math.Inf(1)
	x := []float64{math.NaN(), math.Copysign(0, -1), 0, -1, 1e-6, 2, inf, -inf}
	want := []float64{1.5, 0, 0, 0, 1.5, 1.5, 1.5, 0}
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float64, Float32, Float16, BFloat16} {
			if dt == Float64 && !hasFloat64(dev) {
				continue
			}
			t.Run(dev.String()+"/"+dt.String(), func(t *testing.T) {
				for _, reps := range []int{1, 50} { // 400 elements reach the cpu's C loop
					xs := slices.Repeat(x, reps)
					xt := FromSlice(CPU, xs, len(xs)).Cast(dt).To(dev).RequireGrad()
					y := xt.ReLU()
					g, err := Grad(y, []*Tensor{xt}, WithGradient(FullLike(y, 1.5)))
					if err != nil {
						t.Fatal(err)
					}
					got, err := g[0].To(CPU).Cast(Float64).Float64s()
					if err != nil {
						t.Fatal(err)
					}
					for i, v := range got {
						if w := want[i%len(x)]; v != w {
							t.Errorf("[%d]: the gradient at x = %g is %g, want %g", len(xs), xs[i], v, w)
						}
					}
				}
			})
		}
	}
}

// hasFloat64 reports whether dev has float64 tensors (wgpu has none).
func hasFloat64(dev Device) bool { return Zeros(dev, Float64, 1).Err() == nil }

// actBackwardComposite is g·f'(x) by the basic ops, in float64 on the cpu:
// the gradient rules as they were before the backward ops.
func actBackwardComposite(op *dispatch.Op[dispatch.None], g, x *Tensor) *Tensor {
	one := func(t *Tensor) *Tensor { return OnesLike(t) }
	switch op {
	case ops.GELUBackward:
		cdf := one(x).Add(x.MulScalar(1 / math.Sqrt2).Erf()).MulScalar(0.5)
		pdf := x.Mul(x).MulScalar(-0.5).Exp().MulScalar(1 / math.Sqrt(2*math.Pi))
		return g.Mul(cdf.Add(x.Mul(pdf)))
	case ops.GELUTanhBackward:
		const k, c = 0.7978845608028654, 0.044715
		x2 := x.Mul(x)
		tt := x.Add(x2.Mul(x).MulScalar(c)).MulScalar(k).Tanh()
		left := one(x).Add(tt).MulScalar(0.5)
		du := one(x).Add(x2.MulScalar(3 * c)).MulScalar(k)
		right := x.MulScalar(0.5).Mul(one(x).Sub(tt.Mul(tt)).Mul(du))
		return g.Mul(left.Add(right))
	case ops.ReLUBackward:
		return Where(x.Le(ZerosLike(x)), ZerosLike(g.Add(x.MulScalar(0))), g.Add(x.MulScalar(0)))
	}
	s := x.Sigmoid()
	return g.Mul(s.Mul(one(x).Add(x.Mul(one(x).Sub(s)))))
}

// TestActivationBackwardComposite compares the backward ops with the
// composite on random data (long runs, which the cpu's float32
// gelu_backward takes to C, and short ones), with x of several layouts and
// broadcasts: float64 within 1e-12, float32 within a few ulps.
func TestActivationBackwardComposite(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	data := func(n int, scale float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Round((r.Float64()*2-1)*scale*4096) / 4096 // exact in float32
		}
		return v
	}
	type layout struct {
		name string
		make func(dt DType, dev Device) (g, x *Tensor)
	}
	put := func(v []float64, dt DType, dev Device, shape ...int) *Tensor {
		return FromSlice(CPU, v, shape...).Cast(dt).To(dev)
	}
	layouts := []layout{
		{"flat[1000]", func(dt DType, dev Device) (*Tensor, *Tensor) {
			return put(data(1000, 3), dt, dev, 1000), put(data(1000, 8), dt, dev, 1000)
		}},
		{"flat[37]", func(dt DType, dev Device) (*Tensor, *Tensor) {
			return put(data(37, 3), dt, dev, 37), put(data(37, 8), dt, dev, 37)
		}},
		{"x_transposed[40,30]", func(dt DType, dev Device) (*Tensor, *Tensor) {
			return put(data(1200, 3), dt, dev, 40, 30), put(data(1200, 8), dt, dev, 30, 40).MT()
		}},
		{"x_0d", func(dt DType, dev Device) (*Tensor, *Tensor) {
			return put(data(300, 3), dt, dev, 300), put([]float64{-0.625}, dt, dev)
		}},
		{"g_bcast[1]x[20,30]", func(dt DType, dev Device) (*Tensor, *Tensor) {
			return put([]float64{1.5}, dt, dev, 1), put(data(600, 8), dt, dev, 20, 30)
		}},
	}
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float64, Float32} {
			if dt == Float64 && !hasFloat64(dev) {
				continue
			}
			for _, op := range actBackwardOps {
				for _, l := range layouts {
					t.Run(dev.String()+"/"+dt.String()+"/"+op.Name+"/"+l.name, func(t *testing.T) {
						g, x := l.make(dt, dev)
						got, err := apply(op, none, g, x).To(CPU).Cast(Float64).Float64s()
						if err != nil {
							t.Fatal(err)
						}
						g64, x64 := g.To(CPU).Cast(Float64), x.To(CPU).Cast(Float64)
						want, err := actBackwardComposite(op, g64, x64).Float64s()
						if err != nil {
							t.Fatal(err)
						}
						gs, err := g64.Add(x64.MulScalar(0)).Float64s() // g broadcast to the result
						if err != nil {
							t.Fatal(err)
						}
						bad := 0
						for i := range want {
							if !actBackwardClose(got[i], want[i], gs[i], dt) {
								if bad++; bad <= 5 {
									t.Errorf("element %d: got %.17g, the composite gives %.17g", i, got[i], want[i])
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestActivationBackwardRules checks the backward ops' own gradient rules
// (for grad, f'(x); for x, grad·f”(x)) against central differences of the
// op in float64 on the cpu, at points on both sides of each f”s zeros.
func TestActivationBackwardRules(t *testing.T) {
	xs := []float64{-4.5, -2.25, -1.1, -0.75, -0.3, 0.2, 0.9, 1.7, 3.1}
	gs := []float64{0.7, -1.3, 2.1, 1, -0.4, 1.6, -2.2, 0.5, 1.2}
	ws := []float64{1.1, 0.6, -0.8, 1.5, 2, -1.2, 0.3, -0.9, 0.45}
	const h = 1e-6
	for _, op := range actBackwardOps {
		t.Run(op.Name, func(t *testing.T) {
			g := FromSlice(CPU, gs, len(gs)).RequireGrad()
			x := FromSlice(CPU, xs, len(xs)).RequireGrad()
			w := FromSlice(CPU, ws, len(ws))
			d, err := Grad(apply(op, none, g, x), []*Tensor{g, x}, WithGradient(w))
			if err != nil {
				t.Fatal(err)
			}
			for k, name := range []string{"grad", "x"} {
				got, err := d[k].Float64s()
				if err != nil {
					t.Fatal(err)
				}
				for i := range xs {
					at := func(delta float64) float64 {
						gv, xv := slices.Clone(gs), slices.Clone(xs)
						[][]float64{gv, xv}[k][i] += delta
						v, err := apply(op, none, FromSlice(CPU, gv, len(gv)), FromSlice(CPU, xv, len(xv))).Float64s()
						if err != nil {
							t.Fatal(err)
						}
						return ws[i] * v[i]
					}
					want := (at(h) - at(-h)) / (2 * h)
					if math.Abs(got[i]-want) > 1e-7*(1+math.Abs(want)) {
						t.Errorf("d/d%s at x = %g, g = %g: the rule gives %.12g, the central difference %.12g", name, xs[i], gs[i], got[i], want)
					}
				}
			}
		})
	}
}
