package dispatch

// softmax and log_softmax along one dim are ops of their own, not
// composites of max, sub, exp, sum and div: one kernel reads each row once
// for its max and once for its sum of exponentials, where the composite
// made four full-size temporaries. Their gradient rules (autodiff) are
// dispatch calls, so second derivatives still work.

func init() {
	for _, name := range []string{"softmax", "log_softmax"} {
		Register(&Op{Name: name, Args: []string{"x"}, Infer: softmaxInfer})
	}
}

func softmaxInfer(in []*Tensor, attrs any) (DType, []int, error) {
	x := in[0]
	sc, ok := attrs.(Scan)
	if !ok {
		return 0, nil, &Error{Kind: ErrValue, Arg: "attrs", Detail: "is not a dispatch.Scan", Fix: "pass dispatch.Scan{Dim: d}"}
	}
	if err := checkDType(x, "x", Floats); err != nil {
		return 0, nil, err
	}
	if _, err := NormDim(sc.Dim, x.Rank(), "dim"); err != nil {
		return 0, nil, err
	}
	return x.DType, clone(x.Shape), nil
}
