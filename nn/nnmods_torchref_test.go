package nn

import (
	"math"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
)

// The activation, pooling, padding and rearranging modules against torch
// 1.13 (nnmods_ref_test.go, written by build/torchref/nnmods_ref.py): each
// case's output and the gradient of Σ y·w with respect to its input (and
// a pair module's second input), in float64 on the cpu and in float32 on
// cuda:0 and wgpu:0 (skipped where they do not open).

type nnmodsRefCase struct {
	in               []int
	scale            float64
	shape            []int
	out, grad, grad2 []float64
}

// pairModule is a module of two inputs (ForwardPair).
type pairModule interface {
	ForwardPair(x1, x2 *lathe.Tensor) *lathe.Tensor
}

// nnmodsModules builds each case's module, by the reference's name.
var nnmodsModules = map[string]func() any{
	"elu":                          func() any { return NewELU() },
	"elu/alpha=0.5":                func() any { return &ELU{Alpha: 0.5} },
	"selu":                         func() any { return SELU{} },
	"celu":                         func() any { return NewCELU() },
	"celu/alpha=2":                 func() any { return &CELU{Alpha: 2} },
	"softplus":                     func() any { return NewSoftplus() },
	"softplus/beta=2,threshold=1":  func() any { return &Softplus{Beta: 2, Threshold: 1} },
	"softsign":                     func() any { return Softsign{} },
	"hardtanh":                     func() any { return NewHardtanh() },
	"hardtanh/-0.5,2":              func() any { return &Hardtanh{Min: -0.5, Max: 2} },
	"relu6":                        func() any { return ReLU6{} },
	"hardsigmoid":                  func() any { return Hardsigmoid{} },
	"hardswish":                    func() any { return Hardswish{} },
	"mish":                         func() any { return Mish{} },
	"logsigmoid":                   func() any { return LogSigmoid{} },
	"softmax/dim=1":                func() any { return NewSoftmax(1) },
	"logsoftmax/dim=-1":            func() any { return NewLogSoftmax(-1) },
	"softmin/dim=0":                func() any { return NewSoftmin(0) },
	"softshrink":                   func() any { return NewSoftshrink() },
	"softshrink/lambda=1":          func() any { return &Softshrink{Lambda: 1} },
	"hardshrink":                   func() any { return NewHardshrink() },
	"tanhshrink":                   func() any { return Tanhshrink{} },
	"threshold/0.1,20":             func() any { return NewThreshold(0.1, 20) },
	"glu":                          func() any { return NewGLU() },
	"glu/dim=1":                    func() any { return &GLU{Dim: 1} },
	"maxpool1d/3,s2,p1":            func() any { return NewMaxPool1d(3, Stride(2), Padding(1)) },
	"maxpool1d/2,d2,ceil":          func() any { return NewMaxPool1d(2, Dilation(2), CeilMode()) },
	"maxpool3d/2":                  func() any { return NewMaxPool3d(2) },
	"maxpool3d/3,s2,p1":            func() any { return NewMaxPool3d(3, Stride(2), Padding(1)) },
	"avgpool1d/3,s2,p1,exclude":    func() any { return NewAvgPool1d(3, Stride(2), Padding(1), ExcludePadding()) },
	"avgpool1d/2,ceil":             func() any { return NewAvgPool1d(2, CeilMode()) },
	"avgpool3d/2,s1":               func() any { return NewAvgPool3d(2, Stride(1)) },
	"avgpool3d/3,s2,p1,div5":       func() any { return NewAvgPool3d(3, Stride(2), Padding(1), Divisor(5)) },
	"adaptiveavgpool1d/4":          func() any { return NewAdaptiveAvgPool1d(4) },
	"adaptiveavgpool3d/2,3,1":      func() any { return NewAdaptiveAvgPool3d(2, 3, 1) },
	"adaptivemaxpool2d/3,2":        func() any { return NewAdaptiveMaxPool2d(3, 2) },
	"maxunpool2d/2":                func() any { return unpoolModule(nil) },
	"maxunpool2d/2,size5":          func() any { return unpoolModule([]int{5, 5}) },
	"zeropad2d/1,2,0,1":            func() any { return NewZeroPad2d(1, 2, 0, 1) },
	"constantpad1d/2,3.5":          func() any { return NewConstantPad1d(3.5, 2) },
	"constantpad2d/1,0,2,1,-1":     func() any { return NewConstantPad2d(-1, 1, 0, 2, 1) },
	"constantpad2d/crop":           func() any { return NewConstantPad2d(2, -1, 1, 0, -1) },
	"constantpad3d/1,0.5":          func() any { return NewConstantPad3d(0.5, 1) },
	"reflectionpad1d/2,1":          func() any { return NewReflectionPad1d(2, 1) },
	"reflectionpad2d/1":            func() any { return NewReflectionPad2d(1) },
	"reflectionpad3d/1,0,1,1,0,1":  func() any { return NewReflectionPad3d(1, 0, 1, 1, 0, 1) },
	"replicationpad1d/2,1":         func() any { return NewReplicationPad1d(2, 1) },
	"replicationpad2d/1":           func() any { return NewReplicationPad2d(1) },
	"replicationpad3d/1,0,1,1,0,2": func() any { return NewReplicationPad3d(1, 0, 1, 1, 0, 2) },
	"pixelshuffle/2":               func() any { return NewPixelShuffle(2) },
	"pixelunshuffle/2":             func() any { return NewPixelUnshuffle(2) },
	"channelshuffle/3":             func() any { return NewChannelShuffle(3) },
	"unfold/2x3,p1,s1x2":           func() any { return NewUnfold(0, KernelSize(2, 3), Padding(1), Stride(1, 2)) },
	"fold/4x5,k2":                  func() any { return NewFold([]int{4, 5}, 2) },
	"fold/5x5,k3,s2,p1,d1":         func() any { return NewFold([]int{5, 5}, 3, Stride(2), Padding(1), Dilation(1)) },
	"localresponsenorm/3":          func() any { return NewLocalResponseNorm(3) },
	"localresponsenorm/2,0.1,0.5,2": func() any {
		return &LocalResponseNorm{Size: 2, Alpha: 0.1, Beta: 0.5, K: 2}
	},
	"localresponsenorm/4,5d": func() any {
		m := NewLocalResponseNorm(4)
		m.Alpha = 0.5
		return m
	},
	"cosinesimilarity":             func() any { return NewCosineSimilarity() },
	"cosinesimilarity/dim=-1":      func() any { return &CosineSimilarity{Dim: -1, Eps: 1e-6} },
	"pairwisedistance":             func() any { return NewPairwiseDistance() },
	"pairwisedistance/p=1,keepdim": func() any { return &PairwiseDistance{P: 1, Eps: 1e-6, KeepDim: true} },
}

// unpoolModule is MaxPool2d(2) with indices, then MaxUnpool2d(2) to size.
func unpoolModule(size []int) Module {
	pool, unpool := NewMaxPool2d(2), NewMaxUnpool2d(2)
	return &fnModule{ms: []Module{pool, unpool}, f: func(x *lathe.Tensor) *lathe.Tensor {
		v, idx := pool.ForwardWithIndices(x)
		out := unpool.ForwardIndices(v, idx, size...)
		lathe.ReleaseWithGraph(out, v, idx)
		return out
	}}
}

// refInput is x[i] = scale·((7i mod 23) - 11)/8 (second: ((5i mod 17) - 8)/8).
func refInput(shape []int, scale float64, second bool) *lathe.Tensor {
	n := numel(shape)
	v := make([]float64, n)
	for i := range v {
		if second {
			v[i] = float64((5*i)%17-8) / 8
		} else {
			v[i] = scale * float64((7*i)%23-11) / 8
		}
	}
	return lathe.FromSlice(lathe.CPU, v, shape...)
}

func TestNNModsTorch(t *testing.T) {
	for name := range nnmodsRef {
		if nnmodsModules[name] == nil {
			t.Errorf("reference case %q has no module here", name)
		}
	}
	for _, dev := range []struct {
		name string
		dev  lathe.Device
		dt   lathe.DType
		tol  float64
	}{{"cpu", lathe.CPU, lathe.Float64, 1e-12}, {"cuda:0", lathe.CUDA(0), lathe.Float32, 2e-5}, {"wgpu", lathe.WGPU(0), lathe.Float32, 2e-5}} {
		t.Run(dev.name, func(t *testing.T) {
			deviceOrSkip(t, dev.dev)
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range nnmodsModules {
					if !yield(n) {
						return
					}
				}
			})
			for _, name := range names {
				t.Run(name, func(t *testing.T) {
					ref, ok := nnmodsRef[name]
					if !ok {
						t.Fatalf("no reference (run build/torchref/nnmods_ref.py)")
					}
					m := nnmodsModules[name]()
					if mod, ok := m.(Module); ok {
						if err := Err(mod); err != nil {
							t.Fatal(err)
						}
						if ps := mod.Parameters(); len(ps) != 0 {
							t.Errorf("parameters %v, want none", ps)
						}
					}
					x := refInput(ref.in, ref.scale, false).Cast(dev.dt).To(dev.dev).RequireGrad()
					var x2, y *lathe.Tensor
					switch m := m.(type) {
					case pairModule:
						x2 = refInput(ref.in, 1, true).Cast(dev.dt).To(dev.dev).RequireGrad()
						y = m.ForwardPair(x, x2)
					case Module:
						y = m.Forward(x)
					}
					if err := y.Err(); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(y.Shape(), ref.shape) {
						t.Fatalf("shape %v, torch's %v", y.Shape(), ref.shape)
					}
					nearTorch(t, "out", values(t, y.To(lathe.CPU)), ref.out, dev.tol)
					w := make([]float64, len(ref.out))
					for i := range w {
						w[i] = float64((5*i)%13-6) / 4
					}
					wt := lathe.FromSlice(lathe.CPU, w, ref.shape...).Cast(dev.dt).To(dev.dev)
					if err := y.Mul(wt).Sum().Backward(); err != nil {
						t.Fatal(err)
					}
					gtol := dev.tol
					if name == "hardsigmoid" {
						// torch 1.13's hardsigmoid_backward multiplies by
						// 1.0f/6.0f, float32's sixth, in float64 too;
						// lathe's is float64's.
						gtol = max(gtol, 1e-7)
					}
					nearTorch(t, "grad", values(t, x.Grad().To(lathe.CPU)), ref.grad, gtol)
					if x2 != nil {
						nearTorch(t, "grad2", values(t, x2.Grad().To(lathe.CPU)), ref.grad2, dev.tol)
					}
				})
			}
		})
	}
}

func nearTorch(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, torch's %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			t.Errorf("%s[%d] = %v, torch's %v", what, i, got[i], want[i])
			return
		}
	}
}
