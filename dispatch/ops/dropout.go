package ops

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// Dropout is x·m, where m is 1/(1-p) for an element that the mask keeps
// and 0 for one it drops (so an Inf or NaN that is dropped gives NaN, as
// torch's input * mask * scale does). The mask is a pure function of the
// attribute's key and each element's row-major index (internal/philox's
// numbering): element i is kept where word i mod 4 of Philox4x32-10 at
// counter i/4 under Key is at least Threshold. So every device computes
// the mask itself, in parallel, with the same bits as every other, and a
// backward pass makes it again instead of holding it: the op is linear in
// x, and its gradient is the same op on the output's gradient.
var Dropout = dispatch.Register(&dispatch.Op[Mask]{Schema: dispatch.Schema{Name: "dropout", Args: []string{"x"}},
	Infer: func(in []*dispatch.Tensor, m Mask) (dispatch.DType, []int, error) {
		if err := checkDType(in[0], "x", Floats); err != nil {
			return 0, nil, err
		}
		if !(m.P >= 0 && m.P < 1) {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "p", Found: ftoa(m.P),
				Detail: "is " + ftoa(m.P) + ", outside [0, 1)", Fix: "use a probability in [0, 1)"}
		}
		return in[0].DType, clone(in[0].Shape), nil
	}})

// Mask is dropout's attribute: the probability P of dropping an element,
// in [0, 1), and the key of the random words.
type Mask struct {
	P   float64
	Key uint64
}

// Threshold is the least random word that keeps an element: ⌈P·2³²⌉, so
// that a word, uniform on [0, 2³²), keeps with probability 1 - P to within
// 2⁻³² (a P within 2⁻³² of 1 keeps words of 2³² - 1, the largest).
// Comparing words, not floats, gives every device the same mask.
func (m Mask) Threshold() uint32 {
	return uint32(min(math.Ceil(m.P*(1<<32)), 1<<32-1))
}

// Scale is 1/(1-P), the kept elements' factor, which a kernel rounds to
// its compute dtype (float32 for float32 and the 16-bit floats) once.
func (m Mask) Scale() float64 { return 1 / (1 - m.P) }
