package nn

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// The initialisations of torch.nn.init, as functions of a parameter. A
// lathe tensor never changes, so each one rebinds the handle t to new
// values of t's shape, dtype and device, as an optimizer step does (the
// old storage goes back to its pool): t keeps its RequireGrad and its
// gradient, and nothing is recorded, as torch's in-place init under
// no_grad. An error (a nil, released or failed t, a bad argument) leaves
// t as it was. The random ones draw from lathe's seeded stream on the
// host in float64 (call lathe.Seed first for reproducible values) and
// round once to t's dtype; torch's values differ (another generator),
// their distribution does not.

// CalculateGain is torch.nn.init.calculate_gain: the gain that keeps a
// signal's scale through the nonlinearity: 1 for "linear", "conv1d",
// "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
// "conv_transpose3d" and "sigmoid", 5/3 for "tanh", √2 for "relu",
// √(2/(1+slope²)) for "leaky_relu" (param is the slope, torch's default
// 0.01 where none is given) and 3/4 for "selu". Another name, or more than
// one param, is ErrValue.
func CalculateGain(nonlinearity string, param ...float64) (float64, error) {
	const op = "calculate_gain"
	if len(param) > 1 {
		return 0, nnError(op, lathe.ErrValue, "param", "has "+strconv.Itoa(len(param))+" values", "give at most one, the leaky_relu slope")
	}
	switch nonlinearity {
	case "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid":
		return 1, nil
	case "tanh":
		return 5.0 / 3, nil
	case "relu":
		return math.Sqrt2, nil
	case "leaky_relu":
		slope := 0.01
		if len(param) == 1 {
			slope = param[0]
		}
		if math.IsNaN(slope) || math.IsInf(slope, 0) {
			return 0, nnError(op, lathe.ErrValue, "param", "is "+formatFloat(slope), "give a finite negative slope")
		}
		return math.Sqrt(2 / (1 + slope*slope)), nil
	case "selu":
		return 3.0 / 4, nil
	}
	return 0, nnError(op, lathe.ErrValue, "nonlinearity", "is "+strconv.Quote(nonlinearity),
		`use "linear", "conv1d"..."conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu" or "selu"`)
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Uniform fills t with values from U(a, b) (torch.nn.init.uniform_, whose
// defaults are a=0, b=1). a > b, or either not finite, is ErrValue.
func Uniform(t *lathe.Tensor, a, b float64) error {
	const op = "uniform_"
	if err := checkBound(op, "a", a, "b", b); err != nil {
		return err
	}
	return fillRandom(op, t, func(n int) ([]float64, error) {
		u, err := draw(lathe.Rand, n)
		for i := range u {
			u[i] = a + u[i]*(b-a)
		}
		return u, err
	})
}

// Normal fills t with values from N(mean, std²) (torch.nn.init.normal_,
// whose defaults are mean=0, std=1). A negative std, or a value that is
// not finite, is ErrValue.
func Normal(t *lathe.Tensor, mean, std float64) error {
	const op = "normal_"
	if err := checkNormal(op, mean, std); err != nil {
		return err
	}
	return normalFill(op, t, mean, std)
}

func checkNormal(op string, mean, std float64) error {
	if math.IsNaN(mean) || math.IsInf(mean, 0) {
		return nnError(op, lathe.ErrValue, "mean", "is "+formatFloat(mean), "give a finite mean")
	}
	if !(std >= 0) || math.IsInf(std, 0) {
		// torch: "normal_ expects std >= 0.0"
		return nnError(op, lathe.ErrValue, "std", "is "+formatFloat(std), "give a finite std ≥ 0")
	}
	return nil
}

func normalFill(op string, t *lathe.Tensor, mean, std float64) error {
	return fillRandom(op, t, func(n int) ([]float64, error) {
		v, err := draw(lathe.RandN, n)
		for i := range v {
			v[i] = mean + v[i]*std
		}
		return v, err
	})
}

// checkBound refuses bounds lo > hi, or either not finite.
func checkBound(op, loArg string, lo float64, hiArg string, hi float64) error {
	for _, c := range []struct {
		arg string
		v   float64
	}{{loArg, lo}, {hiArg, hi}} {
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) {
			return nnError(op, lathe.ErrValue, c.arg, "is "+formatFloat(c.v), "give finite bounds")
		}
	}
	if lo > hi {
		return nnError(op, lathe.ErrValue, loArg, "is "+formatFloat(lo)+", above "+hiArg+"="+formatFloat(hi), "give "+loArg+" ≤ "+hiArg)
	}
	return nil
}

// Constant fills t with val (torch.nn.init.constant_). An integer t takes
// val as Full would.
func Constant(t *lathe.Tensor, val float64) error {
	return fill("constant_", t, false, func(shape []int) []float64 {
		v := make([]float64, numel(shape))
		for i := range v {
			v[i] = val
		}
		return v
	})
}

// Ones fills t with ones (torch.nn.init.ones_).
func Ones(t *lathe.Tensor) error { return Constant(t, 1) }

// Zeros fills t with zeros (torch.nn.init.zeros_).
func Zeros(t *lathe.Tensor) error { return Constant(t, 0) }

// Eye fills a 2-d t with the identity matrix, ones on the main diagonal
// of a non-square t too (torch.nn.init.eye_). Another rank is ErrShape.
func Eye(t *lathe.Tensor) error {
	const op = "eye_"
	if err := t.CheckArg(op, "tensor"); err != nil {
		return err
	}
	if s := t.Shape(); len(s) != 2 {
		return nnError(op, lathe.ErrShape, "tensor", "has shape "+shapeString(s)+", and only 2-d tensors are supported", "give a matrix")
	}
	return fill(op, t, false, func(shape []int) []float64 {
		v := make([]float64, numel(shape))
		for i := range min(shape[0], shape[1]) {
			v[i*shape[1]+i] = 1
		}
		return v
	})
}

// Dirac fills the 3-, 4- or 5-d t ([out, in, k...], a convolution's
// weight) with the Dirac delta, so that the convolution keeps its input's
// channels: out is split into groups, and channel d of each group (d below
// min(out/groups, in)) takes 1 at its kernel's centre, the rest 0
// (torch.nn.init.dirac_; its default groups is 1). Another rank is
// ErrShape; groups < 1, or one that does not divide out, ErrValue.
func Dirac(t *lathe.Tensor, groups int) error {
	const op = "dirac_"
	if err := t.CheckArg(op, "tensor"); err != nil {
		return err
	}
	s := t.Shape()
	if len(s) < 3 || len(s) > 5 {
		return nnError(op, lathe.ErrShape, "tensor", "has shape "+shapeString(s)+", and only 3-, 4- and 5-d tensors are supported",
			"give a convolution's weight [out, in, k...]")
	}
	if groups < 1 || s[0]%groups != 0 {
		return nnError(op, lathe.ErrValue, "groups", "is "+strconv.Itoa(groups)+" for "+strconv.Itoa(s[0])+" output channels",
			"give a groups ≥ 1 that divides dim 0")
	}
	return fill(op, t, false, func(shape []int) []float64 {
		v := make([]float64, numel(shape))
		perGroup := shape[0] / groups
		// strides of the row-major layout
		strides := make([]int, len(shape))
		st := 1
		for i := len(shape) - 1; i >= 0; i-- {
			strides[i], st = st, st*shape[i]
		}
		centre := 0
		for i := 2; i < len(shape); i++ {
			centre += shape[i] / 2 * strides[i]
		}
		for g := range groups {
			for d := range min(perGroup, shape[1]) {
				v[(g*perGroup+d)*strides[0]+d*strides[1]+centre] = 1
			}
		}
		return v
	})
}

// fans is torch.nn.init._calculate_fan_in_and_fan_out: dim 1 times the
// receptive field (the product of dims 2 on) and dim 0 times it. A t of
// fewer than 2 dims has none: ErrShape.
func fans(op string, t *lathe.Tensor) (fanIn, fanOut int, err error) {
	if err := t.CheckArg(op, "tensor"); err != nil {
		return 0, 0, err
	}
	s := t.Shape()
	if len(s) < 2 {
		// torch: "Fan in and fan out can not be computed for tensor with
		// fewer than 2 dimensions"
		return 0, 0, nnError(op, lathe.ErrShape, "tensor", "has shape "+shapeString(s)+
			", and fan in and fan out can not be computed for fewer than 2 dims", "give a weight of 2 dims or more")
	}
	rf := numel(s[2:])
	return s[1] * rf, s[0] * rf, nil
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// XavierUniform fills t from U(-a, a), a = gain·√(6/(fan_in+fan_out))
// (torch.nn.init.xavier_uniform_; its default gain is 1). A t of fewer
// than 2 dims is ErrShape, as in torch; so is one whose fans are both 0
// (a ZeroDivisionError in torch).
func XavierUniform(t *lathe.Tensor, gain float64) error {
	const op = "xavier_uniform_"
	std, err := xavierStd(op, t, gain)
	if err != nil {
		return err
	}
	bound := math.Sqrt(3) * std
	return initErr(op, Uniform(t, -bound, bound))
}

// XavierNormal fills t from N(0, std²), std = gain·√(2/(fan_in+fan_out))
// (torch.nn.init.xavier_normal_; its default gain is 1), with XavierUniform's
// errors.
func XavierNormal(t *lathe.Tensor, gain float64) error {
	const op = "xavier_normal_"
	std, err := xavierStd(op, t, gain)
	if err != nil {
		return err
	}
	return normalFill(op, t, 0, std)
}

func xavierStd(op string, t *lathe.Tensor, gain float64) (float64, error) {
	fanIn, fanOut, err := fans(op, t)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(gain) || math.IsInf(gain, 0) {
		return 0, nnError(op, lathe.ErrValue, "gain", "is "+formatFloat(gain), "give a finite gain (CalculateGain gives torch's)")
	}
	if fanIn+fanOut == 0 {
		return 0, nnError(op, lathe.ErrShape, "tensor", "has shape "+shapeString(t.Shape())+", whose fan in and fan out are both 0",
			"give a weight with elements")
	}
	return math.Abs(gain) * math.Sqrt(2/float64(fanIn+fanOut)), nil
}

// KaimingUniform fills t from U(-b, b), b = gain·√(3/fan), gain
// CalculateGain(nonlinearity, a) and fan the fan in or out as mode says
// (torch.nn.init.kaiming_uniform_; its defaults are a=0, mode "fan_in",
// nonlinearity "leaky_relu"). A t of no elements is left as it is, as
// torch warns and does; one of fewer than 2 dims is ErrShape, a mode
// other than "fan_in" and "fan_out" ErrValue.
func KaimingUniform(t *lathe.Tensor, a float64, mode, nonlinearity string) error {
	const op = "kaiming_uniform_"
	std, err := kaimingStd(op, t, a, mode, nonlinearity)
	if err != nil || std == 0 {
		return err
	}
	bound := math.Sqrt(3) * std
	return initErr(op, Uniform(t, -bound, bound))
}

// KaimingNormal fills t from N(0, std²), std = gain/√fan, with
// KaimingUniform's gain, fan and errors (torch.nn.init.kaiming_normal_).
func KaimingNormal(t *lathe.Tensor, a float64, mode, nonlinearity string) error {
	const op = "kaiming_normal_"
	std, err := kaimingStd(op, t, a, mode, nonlinearity)
	if err != nil || std == 0 {
		return err
	}
	return normalFill(op, t, 0, std)
}

// kaimingStd is gain/√fan, or 0 where t has no elements (nothing to do).
func kaimingStd(op string, t *lathe.Tensor, a float64, mode, nonlinearity string) (float64, error) {
	if err := t.CheckArg(op, "tensor"); err != nil {
		return 0, err
	}
	if slices.Contains(t.Shape(), 0) {
		return 0, nil // torch: "Initializing zero-element tensors is a no-op"
	}
	fanIn, fanOut, err := fans(op, t)
	if err != nil {
		return 0, err
	}
	fan := fanIn
	switch mode {
	case "fan_in":
	case "fan_out":
		fan = fanOut
	default:
		return 0, nnError(op, lathe.ErrValue, "mode", "is "+strconv.Quote(mode), `use "fan_in" or "fan_out"`)
	}
	gain, err := CalculateGain(nonlinearity, a)
	if err != nil {
		return 0, initErr(op, err)
	}
	if !t.DType().IsFloat() {
		return 0, floatsOnly(op, t)
	}
	return gain / math.Sqrt(float64(fan)), nil
}

// TruncNormal fills t from N(mean, std²) truncated to [a, b]
// (torch.nn.init.trunc_normal_; its defaults are mean=0, std=1, a=-2,
// b=2), by torch's method: a uniform draw between the bounds' CDF values,
// mapped back by the inverse CDF, then clamped to [a, b]. a > b, a
// negative std, or values that are not finite, are ErrValue.
func TruncNormal(t *lathe.Tensor, mean, std, a, b float64) error {
	const op = "trunc_normal_"
	if err := checkNormal(op, mean, std); err != nil {
		return err
	}
	if err := checkBound(op, "a", a, "b", b); err != nil {
		return err
	}
	cdf := func(x float64) float64 { return (1 + math.Erf(x/math.Sqrt2)) / 2 }
	l, u := 0.0, 0.0
	if std > 0 {
		l, u = cdf((a-mean)/std), cdf((b-mean)/std)
	}
	return fillRandom(op, t, func(n int) ([]float64, error) {
		v, err := draw(lathe.Rand, n)
		for i := range v {
			x := math.Erfinv(2*(l+v[i]*(u-l)) - 1)
			v[i] = min(max(x*std*math.Sqrt2+mean, a), b)
		}
		return v, err
	})
}

// Orthogonal fills t, of 2 dims or more, with a (semi-)orthogonal matrix
// of shape [dim 0, the product of the rest] times gain: the Q of the QR
// decomposition of a standard normal matrix, its columns' signs those of
// R's diagonal, so that it is uniform over the orthogonal matrices
// (torch.nn.init.orthogonal_, after Saxe et al. 2013; its default gain is
// 1). A t of no elements is left as it is; one of fewer than 2 dims is
// ErrShape.
func Orthogonal(t *lathe.Tensor, gain float64) error {
	const op = "orthogonal_"
	if err := t.CheckArg(op, "tensor"); err != nil {
		return err
	}
	s := t.Shape()
	if len(s) < 2 {
		return nnError(op, lathe.ErrShape, "tensor", "has shape "+shapeString(s)+", and only tensors of 2 or more dims are supported",
			"give a weight of 2 dims or more")
	}
	if math.IsNaN(gain) || math.IsInf(gain, 0) {
		return nnError(op, lathe.ErrValue, "gain", "is "+formatFloat(gain), "give a finite gain")
	}
	if numel(s) == 0 {
		return nil
	}
	rows := s[0]
	cols := numel(s) / rows
	return fillRandom(op, t, func(int) ([]float64, error) {
		m, k := rows, cols // the matrix to factor, m ≥ k
		if rows < cols {
			m, k = cols, rows
		}
		var q, r []float64
		var err error
		lathe.NoGrad(func() {
			a := lathe.RandN(lathe.CPU, lathe.Float64, m, k)
			Q, R := a.QR()
			if q, err = Q.Float64s(); err == nil {
				r, err = R.Float64s()
			}
			for _, x := range []*lathe.Tensor{a, Q, R} {
				x.Release()
			}
		})
		if err != nil {
			return nil, err
		}
		// Q is [m, k], R [k, k]: column j of Q times the sign of R[j, j].
		out := make([]float64, rows*cols)
		for i := range m {
			for j := range k {
				v := q[i*k+j] * gain
				if r[j*k+j] < 0 {
					v = -v
				}
				if rows < cols {
					out[j*cols+i] = v // Qᵀ
				} else {
					out[i*cols+j] = v
				}
			}
		}
		return out, nil
	})
}

// Sparse fills the 2-d t ([rows, cols]) from N(0, std²) and then zeroes
// ceil(sparsity·rows) elements of each column, at random rows
// (torch.nn.init.sparse_, after Martens 2010; its default std is 0.01).
// Another rank is ErrShape; a sparsity outside [0, 1] or a negative std
// ErrValue.
func Sparse(t *lathe.Tensor, sparsity, std float64) error {
	const op = "sparse_"
	if err := t.CheckArg(op, "tensor"); err != nil {
		return err
	}
	s := t.Shape()
	if len(s) != 2 {
		return nnError(op, lathe.ErrShape, "tensor", "has shape "+shapeString(s)+", and only 2-d tensors are supported", "give a matrix")
	}
	if !(sparsity >= 0 && sparsity <= 1) {
		return nnError(op, lathe.ErrValue, "sparsity", "is "+formatFloat(sparsity), "give a fraction in [0, 1]")
	}
	if err := checkNormal(op, 0, std); err != nil {
		return err
	}
	rows, cols := s[0], s[1]
	zeros := int(math.Ceil(sparsity * float64(rows)))
	return fillRandom(op, t, func(n int) ([]float64, error) {
		v, err := draw(lathe.RandN, n)
		if err != nil {
			return nil, err
		}
		for i := range v {
			v[i] *= std
		}
		for c := range cols {
			var perm []int64
			lathe.NoGrad(func() {
				p := lathe.RandPerm(lathe.CPU, lathe.Int64, rows)
				perm, err = p.Int64s()
				p.Release()
			})
			if err != nil {
				return nil, err
			}
			for _, r := range perm[:zeros] {
				v[int(r)*cols+c] = 0
			}
		}
		return v, nil
	})
}

// draw is n values of a float64 constructor (lathe.Rand, lathe.RandN) on
// the cpu, from the seeded stream.
func draw(f func(lathe.Device, lathe.DType, ...int) *lathe.Tensor, n int) ([]float64, error) {
	var v []float64
	var err error
	lathe.NoGrad(func() {
		x := f(lathe.CPU, lathe.Float64, n)
		v, err = x.Float64s()
		x.Release()
	})
	return v, err
}

// fillRandom is fill for a random init, which takes float tensors only.
func fillRandom(op string, t *lathe.Tensor, values func(n int) ([]float64, error)) error {
	var drawErr error
	err := fill(op, t, true, func(shape []int) []float64 {
		v, err := values(numel(shape))
		drawErr = err
		return v
	})
	if drawErr != nil {
		return initErr(op, drawErr)
	}
	return err
}

// fill rebinds t to values of its shape (row-major) in its dtype, on its
// device, outside the tape; float says the init takes only float tensors.
// A failure leaves t as it was.
func fill(op string, t *lathe.Tensor, float bool, values func(shape []int) []float64) error {
	if err := t.CheckArg(op, "tensor"); err != nil {
		return err
	}
	if float && !t.DType().IsFloat() {
		return floatsOnly(op, t)
	}
	shape := t.Shape()
	v := values(shape)
	if v == nil && numel(shape) > 0 {
		return nil // fillRandom reports the draw's error
	}
	var next *lathe.Tensor
	lathe.NoGrad(func() {
		host := lathe.FromSlice(lathe.CPU, v, shape...)
		cast := host.Cast(t.DType())
		next = cast.To(t.Device())
		host.Release()
		cast.Release()
	})
	if err := next.Err(); err != nil {
		return initErr(op, err)
	}
	return initErr(op, rebind(t, next, t.Grad()))
}

func floatsOnly(op string, t *lathe.Tensor) error {
	return nnError(op, lathe.ErrDType, "tensor", "is "+t.DType().String()+", and this init draws float values",
		"give a float tensor (Float32, Float64, Float16 or BFloat16)")
}

// initErr is wrapErr that keeps a nil error nil.
func initErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return wrapErr(op, err)
}
