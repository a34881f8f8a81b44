package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// rollAttrs are the attributes of roll: a shift per dim, the dims counted
// from the front; no dims rolls x flattened by shifts[0].
type rollAttrs struct{ shifts, dims []int }

// opRoll rolls each dim in turn by a concat of its two narrowed parts, so
// the gradient is concat's and narrow's (a roll back), to any order.
var opRoll = composite("roll", []string{"x"}, func(in []*Tensor, a rollAttrs) *Tensor {
	x := in[0]
	if len(a.dims) == 0 {
		return rollDim(x.Reshape(-1), a.shifts[0], 0).Reshape(x.t.Shape...)
	}
	for i, d := range a.dims {
		x = rollDim(x, a.shifts[i], d)
	}
	return x
})

func rollDim(x *Tensor, shift, d int) *Tensor {
	if x.err != nil {
		return x
	}
	n := x.t.Shape[d]
	if n == 0 {
		return x
	}
	s := ((shift % n) + n) % n
	if s == 0 {
		return x
	}
	return Concat([]*Tensor{x.Narrow(d, n-s, s), x.Narrow(d, 0, n-s)}, d)
}

// Roll shifts x's elements along dims by shifts, those that pass the end
// coming back at the start, as torch.roll(x, shifts, dims): shifts[i]
// along dims[i] (negative shifts go the other way; a dim may repeat). With
// no dims, x is rolled flattened by the one shift and takes its shape
// again. Shifts and dims that do not pair up, or no shifts, are ErrValue;
// a dim out of range is ErrIndex (a 0-d x has none). Every dtype, bool
// too.
func (x *Tensor) Roll(shifts []int, dims ...int) *Tensor {
	const op = "roll"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if len(shifts) == 0 || (len(dims) == 0 && len(shifts) != 1) || (len(dims) > 0 && len(dims) != len(shifts)) {
		return failed(errorf(op, ErrValue, "shifts", "has "+strconv.Itoa(len(shifts))+" shifts for "+strconv.Itoa(len(dims))+" dims",
			"give one shift per dim, or one shift and no dims to roll x flattened"))
	}
	nd := make([]int, len(dims))
	for i, d := range dims {
		if x.t.Rank() == 0 {
			return failed(errorf(op, ErrIndex, "dims", "names dim "+strconv.Itoa(d)+" but x is 0-d and has no dims",
				"roll a 0-d tensor with no dims"))
		}
		n, err := ops.NormDim(d, x.t.Rank(), "dims")
		if err != nil {
			return failed(located(err, op))
		}
		nd[i] = n
	}
	return apply(opRoll, rollAttrs{shifts: append([]int(nil), shifts...), dims: nd}, x)
}
