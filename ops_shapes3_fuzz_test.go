package lathe

import (
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzShapesWindows draws torch's everyday shape and product functions
// that FuzzViews and FuzzMatMul predate (select to dsplit, clamp_min to
// float_power, dot to bmm, trapezoid) and the window functions, with
// operands of rank 0 to 3 of any dtype that agree, broadcast or do not,
// dims and counts in and out of range, and values NaN, infinite and
// extreme. Its oracle is FuzzMathMore's: nothing panics, an error is a
// *lathe.Error of one of the kinds, and wgpu:0 refuses what the cpu
// refuses and, for moderate operands, gives the cpu's values.
func FuzzShapesWindows(f *testing.F) {
	f.Add([]byte{0, 1, 3, 2, 1, 0, 2, 9, 13, 40, 3, 12, 9, 0, 1, 0})
	f.Add([]byte{2, 3, 2, 3, 0, 3, 9, 33, 2, 61, 17, 5, 8, 44, 0, 2, 1, 1})
	f.Add([]byte{5, 1, 1, 4, 3, 1, 11, 1, 12, 250, 7, 3, 29, 5})
	f.Add([]byte{9, 0, 3, 0, 2, 1, 0, 5, 22, 14, 1, 0, 3, 9, 2, 8, 41, 1, 0})
	f.Add([]byte{13, 1, 2, 1, 1, 0, 3, 17, 4, 36, 2, 1, 7, 0, 4, 1, 3, 2, 2})
	f.Add([]byte{17, 2, 4, 0, 1, 1, 1, 9, 2, 8, 1, 7, 0, 9, 3, 4, 5, 6, 7})
	f.Add([]byte{21, 3, 3, 1, 0, 0, 2, 3, 4, 5, 6, 1, 10, 11, 12, 13, 0, 0})
	f.Add([]byte{25, 0, 7, 1, 9, 0, 1, 3, 0, 1})
	fzGPUFor(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		kind := r.intn(26)
		dt := r.lossDType()
		shape := r.shape(3, 24)
		moderate := r.intn(4) != 0
		x := r.mathOperand(dt, shape, moderate)
		rank := len(shape)
		dim, dim2 := r.dim(rank), r.dim(rank)
		// other is a second operand: x's shape or one that broadcasts
		// with it or not, x's dtype or (one time in eight) another.
		other := func() *Tensor {
			yt := dt
			if r.intn(8) == 0 {
				yt = r.lossDType()
			}
			return r.mathOperand(yt, r.moreLossShape(shape), moderate)
		}
		n := r.intn(6) - 1
		if r.intn(16) == 0 {
			n = r.size()
		}
		label := dt.String() + dispatch.FormatShape(shape) + "/dims " + strconv.Itoa(dim) + " " + strconv.Itoa(dim2) + "/n " + strconv.Itoa(n)
		in := []*Tensor{x}
		tol := mathTol(dt, moderate)
		var call func(in []*Tensor) *Tensor
		switch kind {
		case 0:
			label, call = "select/"+label, func(in []*Tensor) *Tensor { return in[0].Select(dim, n) }
		case 1:
			label, call = "t/"+label, func(in []*Tensor) *Tensor { return in[0].T() }
		case 2:
			label, call = "movedim/"+label, func(in []*Tensor) *Tensor { return in[0].MoveDim([]int{dim, n}, []int{dim2, 0}) }
		case 3:
			label, call = "swapaxes/"+label, func(in []*Tensor) *Tensor { return in[0].SwapAxes(dim, dim2) }
		case 4:
			label, call = "ravel/"+label, func(in []*Tensor) *Tensor { return in[0].Ravel() }
		case 5:
			in = append(in, other())
			label, call = "expand_as/"+label, func(in []*Tensor) *Tensor { return in[0].ExpandAs(in[1]) }
		case 6:
			in = append(in, other())
			label, call = "reshape_as/"+label, func(in []*Tensor) *Tensor { return in[0].ReshapeAs(in[1]) }
		case 7:
			in = append(in, other())
			label, call = "view_as/"+label, func(in []*Tensor) *Tensor { return in[0].ViewAs(in[1]) }
		case 8:
			in = append(in, r.mathOperand(r.lossDType(), r.shape(2, 4), moderate))
			label, call = "type_as/"+label, func(in []*Tensor) *Tensor { return in[0].TypeAs(in[1]) }
		case 9:
			sizes := [][]int{{-1, 2}, {n}, {2, -1, 1}, {n, n}, {-1, -1}, {}}[r.intn(6)]
			label, call = "unflatten "+dispatch.FormatShape(sizes)+"/"+label, func(in []*Tensor) *Tensor { return in[0].Unflatten(dim, sizes...) }
		case 10:
			label, call = "msort/"+label, func(in []*Tensor) *Tensor { return in[0].Msort() }
		case 11:
			label, call = "positive/"+label, func(in []*Tensor) *Tensor { return in[0].Positive() }
		case 12:
			lo, hi := r.value(), r.value()
			label = "clamp_min, clamp_max, clip " + strconv.FormatFloat(lo, 'g', -1, 64) + " " + strconv.FormatFloat(hi, 'g', -1, 64) + "/" + label
			call = func(in []*Tensor) *Tensor {
				return Concat([]*Tensor{in[0].ClampMin(lo).Flatten(), in[0].ClampMax(hi).Flatten(), in[0].Clip(lo, hi).Flatten()}, 0)
			}
		case 13:
			label, call = "aminmax/"+label, func(in []*Tensor) *Tensor { lo, hi := in[0].Aminmax(); return pairOf(lo, hi) }
		case 14:
			label, call = "sgn/"+label, func(in []*Tensor) *Tensor { return in[0].Sgn() }
		case 15:
			alpha := []float64{1, 2, -0.5, 0}[r.intn(4)]
			in = append(in, other())
			label, call = "rsub/"+label, func(in []*Tensor) *Tensor { return in[0].Rsub(in[1], alpha) }
		case 16:
			label, call = "atleast_1d, _2d, _3d/"+label, func(in []*Tensor) *Tensor {
				return Concat([]*Tensor{AtLeast1D(in[0]).Flatten(), AtLeast2D(in[0]).Flatten(), AtLeast3D(in[0]).Flatten()}, 0)
			}
		case 17:
			in = append(in, other())
			label, call = "broadcast_tensors/"+label, func(in []*Tensor) *Tensor {
				out, err := BroadcastTensors(in[0], in[1])
				if err != nil {
					return failed(err)
				}
				return pairOf(out[0].Flatten(), out[1].Flatten())
			}
		case 18:
			split := [](func(*Tensor, int) ([]*Tensor, error)){(*Tensor).HSplit, (*Tensor).VSplit, (*Tensor).DSplit}[r.intn(3)]
			label, call = "hsplit, vsplit or dsplit/"+label, func(in []*Tensor) *Tensor {
				parts, err := split(in[0], n)
				if err != nil {
					return failed(err)
				}
				flat := make([]*Tensor, len(parts))
				for i, p := range parts {
					flat[i] = p.Flatten()
				}
				return Concat(flat, 0)
			}
		case 19:
			label, call = "diag_flat/"+label, func(in []*Tensor) *Tensor { return in[0].DiagFlat(n) }
		case 20:
			with := r.intn(2) == 0
			label, call = "combinations "+strconv.FormatBool(with)+"/"+label, func(in []*Tensor) *Tensor { return in[0].Combinations(n, with) }
		case 21:
			product := []struct {
				name string
				call func(x, y *Tensor) *Tensor
			}{{"dot", (*Tensor).Dot}, {"vdot", (*Tensor).Vdot}, {"inner", (*Tensor).Inner}, {"mv", (*Tensor).Mv}, {"mm", (*Tensor).Mm}, {"bmm", (*Tensor).Bmm}}[r.intn(6)]
			y := r.mathOperand(dt, r.shape(3, 24), moderate)
			if r.intn(2) == 0 && rank > 0 {
				// a partner whose first dim is x's last, as the products want
				ys := r.shape(3, 24)
				if len(ys) > 0 {
					ys[0] = shape[rank-1]
				}
				y = r.mathOperand(dt, ys, moderate)
			}
			in = append(in, y)
			label = product.name + "/" + label + " " + dispatch.FormatShape(y.Shape())
			call = func(in []*Tensor) *Tensor { return product.call(in[0], in[1]) }
		case 22:
			p := []float64{2, 1, 0, 3, 0.5}[r.intn(5)]
			if r.intn(4) == 0 {
				p = r.value()
			}
			in = append(in, other())
			label, call = "dist "+strconv.FormatFloat(p, 'g', -1, 64)+"/"+label, func(in []*Tensor) *Tensor { return in[0].Dist(in[1], p) }
		case 23:
			in = append(in, other())
			label, call = "float_power/"+label, func(in []*Tensor) *Tensor { return in[0].FloatPower(in[1]) }
		case 24:
			dx := []float64{1, 0.5, -2, 0}[r.intn(4)]
			if r.intn(4) == 0 {
				dx = r.value()
			}
			label, call = "trapezoid, cumulative_trapezoid/"+label, func(in []*Tensor) *Tensor {
				return pairOf(Trapezoid(in[0], dx, dim).Flatten(), CumulativeTrapezoid(in[0], dx, dim).Flatten())
			}
		default:
			window := []func(Device, int, ...SignalWindowOption) *Tensor{HannWindow, HammingWindow, BlackmanWindow, BartlettWindow, KaiserWindow}[r.intn(5)]
			wt := r.lossDType()
			tol = mathTol(wt, true)
			opts := []SignalWindowOption{WindowPeriodic(r.intn(2) == 0), WindowDType(wt)}
			if r.intn(2) == 0 {
				opts = append(opts, WindowAlpha(r.value()))
			}
			if r.intn(2) == 0 {
				opts = append(opts, WindowBeta(r.value()))
			}
			label = "window " + wt.String() + ", " + strconv.Itoa(len(opts)) + " options/" + label
			call = func(in []*Tensor) *Tensor { return window(in[0].Device(), n, opts...) }
		}
		fzDevices(t, label, tol, call, in...)
	})
}
