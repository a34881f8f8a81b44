package ops

import "github.com/lathe-ml/lathe/dispatch"

// softmax and log_softmax along one dim are ops of their own, not
// composites of max, sub, exp, sum and div: one kernel reads each row once
// for its max and once for its sum of exponentials, where the composite
// made four full-size temporaries. Their gradient rules (autodiff) are
// dispatch calls, so second derivatives still work.
var (
	Softmax    = dispatch.Register(&dispatch.Op[Scan]{Schema: dispatch.Schema{Name: "softmax", Args: []string{"x"}}, Infer: softmaxInfer})
	LogSoftmax = dispatch.Register(&dispatch.Op[Scan]{Schema: dispatch.Schema{Name: "log_softmax", Args: []string{"x"}}, Infer: softmaxInfer})
)

func softmaxInfer(in []*dispatch.Tensor, sc Scan) (dispatch.DType, []int, error) {
	x := in[0]
	if err := checkDType(x, "x", Floats); err != nil {
		return 0, nil, err
	}
	if _, err := NormDim(sc.Dim, x.Rank(), "dim"); err != nil {
		return 0, nil, err
	}
	return x.DType, clone(x.Shape), nil
}
