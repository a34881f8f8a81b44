package nn

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// Bilinear is torch.nn.Bilinear: y = x1ᵀ A x2 + b for each pair of rows,
// y_o = Σ_ij x1_i·Weight[o, i, j]·x2_j + Bias[o], with Weight
// [out, in1, in2] and Bias [out] (nil with NoBias), under torch's names
// "weight" and "bias".
type Bilinear struct {
	In1, In2, Out int
	Weight, Bias  *lathe.Tensor
}

const bilinearOp = "bilinear"

// NewBilinear makes a Bilinear layer from in1 and in2 features to out,
// initialised as PyTorch does: the weight and the bias U(-1/√in1, 1/√in1).
// Options: NoBias, WithDType, OnDevice.
func NewBilinear(in1, in2, out int, opts ...Option) *Bilinear {
	o, optErr := layerOptions("Bilinear", opts)
	if optErr == nil && (in1 < 1 || in2 < 0 || out < 0 || (out > 0 && in1 > math.MaxInt32/out) || (out*in1 > 0 && in2 > math.MaxInt32/(out*in1))) {
		// torch divides by √in1: in1 = 0 is its ZeroDivisionError.
		optErr = nnError(bilinearOp, lathe.ErrShape, "", "has in1_features="+strconv.Itoa(in1)+", in2_features="+strconv.Itoa(in2)+
			", out_features="+strconv.Itoa(out)+"; in1 must be at least 1, the others at least 0, and the weight at most MaxInt32 elements", "use other sizes")
	}
	b := &Bilinear{In1: in1, In2: in2, Out: out}
	if optErr != nil {
		err := lathe.Failed(optErr)
		b.Weight = err
		if !o.noBias {
			b.Bias = err
		}
		return b
	}
	bound := 1 / math.Sqrt(float64(in1))
	b.Weight = newParam(uniform(o.dtype, bound, out, in1, in2), o)
	if !o.noBias {
		b.Bias = newParam(uniform(o.dtype, bound, out), o)
	}
	return b
}

// Forward fails: a Bilinear layer takes two inputs (ForwardPair). It is
// there so that the layer is a Module, which Save, Load and the optimizers
// take.
func (b *Bilinear) Forward(*lathe.Tensor) *lathe.Tensor {
	if b == nil {
		return lathe.Failed(nilModule(bilinearOp, "b"))
	}
	if err := Err(b); err != nil {
		return lathe.Failed(err)
	}
	return lathe.Failed(nnError(bilinearOp, lathe.ErrValue, "x2", "is missing: Forward takes one tensor", "call ForwardPair(x1, x2)"))
}

// ForwardPair returns y [..., out] for x1 [..., in1] and x2 [..., in2],
// whose leading dims must be equal (torch does not broadcast them either);
// x1 [in1] and x2 [in2] give [out]. Both have the weight's dtype.
func (b *Bilinear) ForwardPair(x1, x2 *lathe.Tensor) *lathe.Tensor {
	if b == nil {
		return lathe.Failed(nilModule(bilinearOp, "b"))
	}
	for i, x := range []*lathe.Tensor{x1, x2} {
		if err := x.CheckArg(bilinearOp, [2]string{"x1", "x2"}[i]); err != nil {
			return lathe.Failed(err)
		}
	}
	for _, p := range b.Parameters() {
		if err := p.T.CheckArg(bilinearOp, p.Name); err != nil {
			return lathe.Failed(err)
		}
	}
	ws := b.Weight.Shape()
	if len(ws) != 3 || (b.Bias != nil && !slices.Equal(b.Bias.Shape(), ws[:1])) {
		detail := "has shape " + shapeString(ws)
		if b.Bias != nil {
			detail += " and the bias " + shapeString(b.Bias.Shape())
		}
		return lathe.Failed(nnError(bilinearOp, lathe.ErrShape, "weight", detail+", want [out, in1, in2] and [out]", "build the layer with NewBilinear"))
	}
	out, in1, in2 := ws[0], ws[1], ws[2]
	for i, x := range []*lathe.Tensor{x1, x2} {
		name, want := [2]string{"x1", "x2"}[i], [2]int{in1, in2}[i]
		if x.Rank() == 0 || x.Dim(-1) != want {
			return lathe.Failed(nnError(bilinearOp, lathe.ErrShape, name, "has shape "+shapeString(x.Shape())+" but the weight "+shapeString(ws)+
				" takes "+strconv.Itoa(want)+" features", "give "+name+" a last dim of "+strconv.Itoa(want)))
		}
		if x.DType() != b.Weight.DType() {
			return lathe.Failed(nnError(bilinearOp, lathe.ErrDType, name, "is "+x.DType().String()+" but the weight is "+b.Weight.DType().String(),
				"cast it with .Cast(lathe."+b.Weight.DType().String()+")"))
		}
	}
	lead := x1.Shape()[:x1.Rank()-1]
	if !slices.Equal(lead, x2.Shape()[:x2.Rank()-1]) {
		return lathe.Failed(nnError(bilinearOp, lathe.ErrShape, "x2", "has shape "+shapeString(x2.Shape())+" where x1 has "+shapeString(x1.Shape())+
			"; their dims but the last must be equal", "give both inputs the same batch dims"))
	}
	n := 1
	for _, d := range lead {
		n *= d
	}
	args := []*lathe.Tensor{x1, x2, b.Weight}
	if b.Bias != nil {
		args = append(args, b.Bias)
	}
	return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		// x2·Wᵀ over in2 gives [n, out·in1], then each row's [out, in1]
		// times x1's row: [n, out, 1].
		t := a[1].Reshape(n, in2).Linear(a[2].Reshape(out*in1, in2), nil).Reshape(n, out, in1)
		y := t.MatMul(a[0].Reshape(n, in1, 1)).Reshape(n, out)
		if len(a) > 3 {
			y = y.Add(a[3])
		}
		return y.Reshape(append(slices.Clone(lead), out)...)
	}, args...)
}

// Parameters lists "weight" and, with a bias, "bias".
func (b *Bilinear) Parameters() []Param {
	ps := []Param{{"weight", b.Weight}}
	if b.Bias != nil {
		ps = append(ps, Param{"bias", b.Bias})
	}
	return ps
}

// To moves the weights to dev.
func (b *Bilinear) To(dev lathe.Device) error { return moveParams(b.Parameters(), dev) }

// Train does nothing: Bilinear acts the same in both modes.
func (b *Bilinear) Train(bool) {}
