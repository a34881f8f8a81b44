package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// LocalResponseNorm divides each element of (N, C, ...) inputs by
// (K + Alpha/Size · Σ x²)^Beta, the sum over Size neighbouring channels
// (torch.nn.LocalResponseNorm, AlexNet's; torch's defaults alpha 1e-4,
// beta 0.75, k 1). It is torch's composite (functional.py's
// local_response_norm): the squares, zero-padded by Size/2 channels
// before and (Size-1)/2 after, averaged over windows of Size channels.
type LocalResponseNorm struct {
	activation
	Size           int
	Alpha, Beta, K float64
}

// NewLocalResponseNorm makes a LocalResponseNorm over size channels, with
// torch's defaults.
func NewLocalResponseNorm(size int) *LocalResponseNorm {
	return &LocalResponseNorm{Size: size, Alpha: 1e-4, Beta: 0.75, K: 1}
}

// Forward normalises x; x of fewer than 3 dims is ErrShape, a Size below
// 1 or a parameter that is not finite ErrValue.
func (m *LocalResponseNorm) Forward(x *lathe.Tensor) *lathe.Tensor {
	const op = "local_response_norm"
	if err := x.CheckArg(op, "x"); err != nil {
		return lathe.Failed(err)
	}
	s := x.Shape()
	if len(s) < 3 {
		// torch: "Expected 3D or higher dimensionality input"
		return lathe.Failed(nnError(op, lathe.ErrShape, "x", "has shape "+shapeString(s)+", but expected 3 dims or more",
			"give an input (N, C, ...)"))
	}
	if m.Size < 1 {
		return lathe.Failed(nnError(op, lathe.ErrValue, "size", "is "+strconv.Itoa(m.Size), "give a window of 1 channel or more"))
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"alpha", m.Alpha}, {"beta", m.Beta}, {"k", m.K}} {
		if math.IsNaN(p.v) || math.IsInf(p.v, 0) {
			return lathe.Failed(nnError(op, lathe.ErrValue, p.name, "is "+formatFloat(p.v), "give a finite value"))
		}
	}
	if x.Numel() == 0 {
		return x.Dropout(0, false) // x's (no) values in a new handle
	}
	size, alpha, beta, k := m.Size, m.Alpha, m.Beta, m.K
	return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		x := a[0]
		// The squares as (N, 1, C, rest), padded along C, averaged over
		// windows of size channels: a sum over the window divided by size,
		// the zeros of the padding included, as torch's avg_pool.
		rest := numel(s[2:])
		sq := x.Square().Reshape(s[0], 1, s[1], rest)
		sq = sq.Pad([]int{0, 0, size / 2, (size - 1) / 2}, 0)
		div := sq.AvgPool2d(0, lathe.KernelSize(size, 1), lathe.Stride(1)).Reshape(s...)
		return x.Div(div.MulScalar(alpha).AddScalar(k).PowScalar(beta))
	}, x)
}
