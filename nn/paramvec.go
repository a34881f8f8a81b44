package nn

import (
	"strconv"

	"github.com/lathe-ml/lathe"
)

// ParametersToVector concatenates the values of params, each flattened,
// into one 1-D tensor, in order (torch.nn.utils.parameters_to_vector). It
// is differentiable: a loss of the vector has gradients for the
// parameters. The parameters must be on one device, as in torch, and of
// one dtype (torch 1.13's cat would promote them).
func ParametersToVector(params []Param) (*lathe.Tensor, error) {
	const op = "parameters_to_vector"
	if err := checkVecParams(op, params); err != nil {
		return nil, err
	}
	flats := make([]*lathe.Tensor, len(params))
	for i, p := range params {
		flats[i] = p.T.Reshape(-1)
	}
	vec := lathe.Concat(flats, 0)
	if !vec.RequiresGrad() { // a recorded graph needs them until Backward
		for _, f := range flats {
			f.Release() // views: the parameters' data stays
		}
	}
	if err := vec.Err(); err != nil {
		return nil, err
	}
	return vec, nil
}

// checkVecParams refuses an empty list and nil, failed or released
// parameters, and parameters of several devices or dtypes.
func checkVecParams(op string, params []Param) error {
	if len(params) == 0 {
		return nnError(op, lathe.ErrValue, "parameters", "is empty", "pass the model's Parameters()")
	}
	for _, p := range params {
		if p.T == nil {
			return nnError(op, lathe.ErrValue, p.Name, "is nil", "pass the model's parameters")
		}
		if err := p.T.CheckArg(op, p.Name); err != nil {
			return err
		}
		first := params[0].T
		if p.T.Device() != first.Device() {
			return nnError(op, lathe.ErrDevice, p.Name, "is on "+p.T.Device().String()+" and "+params[0].Name+" on "+first.Device().String(),
				"move the parameters to one device (as torch, which refuses parameters on two devices)")
		}
		if p.T.DType() != first.DType() {
			return nnError(op, lathe.ErrDType, p.Name, "is "+p.T.DType().String()+" and "+params[0].Name+" "+first.DType().String(),
				"cast the parameters to one dtype")
		}
	}
	return nil
}

// VectorToParameters sets the values of params from vec, a 1-D tensor of
// as many elements as the parameters hold together, taken in order, each
// parameter's share reshaped to its shape (torch.nn.utils.
// vector_to_parameters). Each parameter stays a leaf with its gradient,
// and gets a copy of its share on its own device: a later change to vec
// does not reach it (torch's param.data shares vec's storage). vec must
// have the parameters' dtype (torch would change the parameters' dtype to
// vec's) and exactly their number of elements (torch ignores elements
// past them). A parameter listed twice (a tied weight) takes its last
// share. On error no parameter changes.
func VectorToParameters(vec *lathe.Tensor, params []Param) error {
	const op = "vector_to_parameters"
	if vec == nil {
		return nnError(op, lathe.ErrValue, "vec", "is nil", "pass the vector ParametersToVector made")
	}
	if err := vec.CheckArg(op, "vec"); err != nil {
		return err
	}
	if err := checkVecParams(op, params); err != nil {
		return err
	}
	total := 0
	for _, p := range params {
		total += p.T.Numel()
	}
	if vec.Rank() != 1 || vec.Numel() != total {
		return nnError(op, lathe.ErrShape, "vec", "has shape "+shapeString(vec.Shape())+" for parameters of "+strconv.Itoa(total)+" elements",
			"pass a 1-D tensor of ["+strconv.Itoa(total)+"]")
	}
	if dt := params[0].T.DType(); vec.DType() != dt {
		return nnError(op, lathe.ErrDType, "vec", "is "+vec.DType().String()+" and the parameters "+dt.String(), "cast vec to the parameters' dtype")
	}
	last := map[*lathe.Tensor]int{}
	for i, p := range params {
		last[p.T] = i
	}
	var handles, nexts, grads []*lathe.Tensor
	var err error
	lathe.NoGrad(func() {
		off := 0
		for i, p := range params {
			n := p.T.Numel()
			at := off
			off += n
			if last[p.T] != i {
				continue
			}
			part := vec.Narrow(0, at, n)
			shaped := part.Reshape(p.T.Shape()...)
			var next *lathe.Tensor
			if vec.Device() == p.T.Device() {
				next = shaped.Clone()
			} else {
				next = shaped.To(p.T.Device())
			}
			part.Release()
			shaped.Release()
			handles, nexts, grads = append(handles, p.T), append(nexts, next), append(grads, p.T.Grad())
			if err = next.Err(); err != nil {
				return
			}
		}
	})
	if err != nil {
		for _, t := range nexts {
			t.Release()
		}
		return err
	}
	return rebindAll(handles, nexts, grads)
}
