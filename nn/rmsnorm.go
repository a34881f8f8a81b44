package nn

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// RMSNorm scales its input by the reciprocal root mean square over the
// last dims and by an elementwise weight, x / √(mean(x²) + Eps) · Weight, as
// torch.nn.RMSNorm (torch 2.4; Zhang and Sennrich, "Root Mean Square Layer
// Normalization", 2019). Unlike LayerNorm it neither centres nor adds a
// bias.
type RMSNorm struct {
	Shape []int
	// Eps is added to the mean square; 0, the default, stands for the
	// machine epsilon of the input's dtype, as torch's eps=None.
	Eps    float64
	Weight *lathe.Tensor
}

// NewRMSNorm makes an RMSNorm over trailing dims of the given shape, with
// weight ones (torch's elementwise_affine=True).
func NewRMSNorm(shape []int, opts ...Option) *RMSNorm {
	o, err := layerOptions("RMSNorm", opts)
	n := &RMSNorm{Shape: slices.Clone(shape)}
	if err == nil && slices.ContainsFunc(shape, func(d int) bool { return d < 0 }) {
		err = nnError("rms_norm", lathe.ErrShape, "shape", "is "+shapeString(shape)+", which has a negative size", "give sizes ≥ 0")
	}
	if err != nil {
		n.Weight = lathe.Failed(err)
		return n
	}
	n.Weight = newParam(lathe.Ones(lathe.CPU, o.dtype, shape...), o)
	return n
}

// Forward normalises x, whose last dims must be Shape.
func (n *RMSNorm) Forward(x *lathe.Tensor) *lathe.Tensor {
	const op = "rms_norm"
	if err := x.CheckArg(op, "x"); err != nil {
		return lathe.Failed(err)
	}
	if err := n.Weight.CheckArg(op, "weight"); err != nil {
		return lathe.Failed(err)
	}
	k := len(n.Shape)
	if x.Rank() < k || !slices.Equal(x.Shape()[x.Rank()-k:], n.Shape) {
		return lathe.Failed(nnError(op, lathe.ErrShape, "x", "has shape "+shapeString(x.Shape())+", which does not end in the normalized shape "+
			shapeString(n.Shape), "give x trailing dims "+shapeString(n.Shape)))
	}
	dims := make([]int, k)
	for i := range dims {
		dims[i] = x.Rank() - k + i
	}
	if !(n.Eps >= 0) || math.IsInf(n.Eps, 1) {
		return lathe.Failed(nnError(op, lathe.ErrValue, "eps", "is "+strconv.FormatFloat(n.Eps, 'g', -1, 64), "give eps ≥ 0 (0: the dtype's machine epsilon)"))
	}
	eps := n.Eps
	if eps == 0 {
		eps = machineEps(x.DType())
	}
	return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		x := a[0]
		return x.Mul(x.Square().MeanKeepDim(dims...).AddScalar(eps).Rsqrt()).Mul(n.Weight)
	}, x)
}

// machineEps is torch.finfo(dt).eps: the gap between 1 and the next value.
func machineEps(dt lathe.DType) float64 {
	switch dt {
	case lathe.Float16:
		return 0x1p-10
	case lathe.BFloat16:
		return 0x1p-7
	case lathe.Float64:
		return 0x1p-52
	}
	return 0x1p-23
}

// Parameters lists "weight".
func (n *RMSNorm) Parameters() []Param { return []Param{{Name: "weight", T: n.Weight}} }

// To moves the weight to dev.
func (n *RMSNorm) To(dev lathe.Device) error { return moveParams(n.Parameters(), dev) }

// Train does nothing: RMSNorm acts the same in both modes.
func (n *RMSNorm) Train(bool) {}
