package ops

import (
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// Reductions (sum, prod, max, min, var, std, logsumexp, argmax, argmin),
// mean as a composite of sum and div, and the scan cumsum. Their schemas
// differ in the dtypes they take and in what an empty reduction means, so
// each is a line in a table.

// Reduce is the attribute of the reductions: the dims to reduce (none means
// all; negative counts from the end), whether the reduced dims stay as size
// 1, and var/std's correction (1 for the unbiased N-1 divisor, 0 for N).
type Reduce struct {
	Dims       []int
	KeepDim    bool
	Correction int
}

// Scan is the attribute of cumsum, softmax and log_softmax: the dim to run
// along.
type Scan struct{ Dim int }

// ReduceOp is a reduction that runs a kernel: the dtypes it takes,
// whether it refuses an empty reduced dim (PyTorch does for max, min and
// the arg ops, which have no identity), and whether it gives indices.
type ReduceOp struct {
	*dispatch.Op[Reduce]
	DTypes  dispatch.DTypeSet
	NoEmpty bool
	Indices bool
	OneDim  bool // at most one dim (argmax, argmin)
}

// ReduceOps lists the reductions that run a kernel, for backends that
// register a kernel per op from one template.
var ReduceOps []ReduceOp

// The reductions.
var (
	Sum       = reduction(ReduceOp{DTypes: Numeric}, "sum")
	Prod      = reduction(ReduceOp{DTypes: Numeric}, "prod")
	Max       = reduction(ReduceOp{DTypes: Numeric, NoEmpty: true}, "max")
	Min       = reduction(ReduceOp{DTypes: Numeric, NoEmpty: true}, "min")
	Var       = reduction(ReduceOp{DTypes: Floats}, "var")
	Std       = reduction(ReduceOp{DTypes: Floats}, "std")
	LogSumExp = reduction(ReduceOp{DTypes: Floats}, "logsumexp")
	ArgMax    = reduction(ReduceOp{DTypes: Numeric, NoEmpty: true, Indices: true, OneDim: true}, "argmax")
	ArgMin    = reduction(ReduceOp{DTypes: Numeric, NoEmpty: true, Indices: true, OneDim: true}, "argmin")

	// Mean is sum divided by the count of reduced elements.
	Mean = dispatch.Register(&dispatch.Op[Reduce]{Schema: dispatch.Schema{Name: "mean", Args: []string{"x"}}, Compose: meanCompose})
	// CumSum is the running sum along a dim.
	CumSum = dispatch.Register(&dispatch.Op[Scan]{Schema: dispatch.Schema{Name: "cumsum", Args: []string{"x"}}, Infer: cumsumInfer})
)

func reduction(r ReduceOp, name string) *dispatch.Op[Reduce] {
	r.Op = dispatch.Register(&dispatch.Op[Reduce]{Schema: dispatch.Schema{Name: name, Args: []string{"x"}},
		Infer: reduceInfer(r.DTypes, r.NoEmpty, r.Indices, r.OneDim)})
	ReduceOps = append(ReduceOps, r)
	return r.Op
}

// ReduceShape normalises r's dims against x and returns them sorted and
// deduplicated (a 0-d tensor has none to reduce) with the output shape.
func ReduceShape(x *dispatch.Tensor, r Reduce) (dims, shape []int, err error) {
	nd, err := NormDims(r.Dims, x.Rank(), "dims")
	if err != nil {
		return nil, nil, err
	}
	// nd, distinct and in range, sorted, is dims; every reduction's
	// launch asks for this, so it costs one allocation (the shape). A 0-d
	// x takes dim 0 or -1, as torch's, and has none to reduce.
	slices.Sort(nd)
	if x.Rank() == 0 {
		nd = nd[:0]
	}
	shape = make([]int, 0, x.Rank())
	for d, s := range x.Shape {
		switch {
		case !slices.Contains(nd, d):
			shape = append(shape, s)
		case r.KeepDim:
			shape = append(shape, 1)
		}
	}
	return nd, shape, nil
}

// checkReducible refuses dtypes the reduction lacks. Bool gets its own fix.
// (lathe's Sum, Prod and CumSum cast bools to int64 before they get here.)
func checkReducible(x *dispatch.Tensor, allowed dispatch.DTypeSet) error {
	err := checkDType(x, "x", allowed)
	if e, ok := err.(*dispatch.Error); ok && x.DType == dispatch.Bool && allowed.Has(dispatch.Int64) {
		e.Fix = "cast it with .Cast(lathe.Int64) first, or use Any or All"
	}
	return err
}

func reduceInfer(allowed dispatch.DTypeSet, noEmpty, indices, oneDim bool) func([]*dispatch.Tensor, Reduce) (dispatch.DType, []int, error) {
	return func(in []*dispatch.Tensor, r Reduce) (dispatch.DType, []int, error) {
		x := in[0]
		if err := checkReducible(x, allowed); err != nil {
			return 0, nil, err
		}
		if oneDim && len(r.Dims) > 1 {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "dims", Detail: "names " + strconv.Itoa(len(r.Dims)) + " dims but the op reduces at most one",
				Fix: "pass one dim, or none to index the flattened tensor"}
		}
		if r.Correction < 0 {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "correction", Detail: "is " + strconv.Itoa(r.Correction), Fix: "use 0 (biased) or 1 (unbiased)"}
		}
		dims, shape, err := ReduceShape(x, r)
		if err != nil {
			return 0, nil, err
		}
		if noEmpty {
			for _, d := range dims {
				if x.Shape[d] == 0 {
					return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Found: dispatch.FormatShape(x.Shape),
						Detail: "has shape " + dispatch.FormatShape(x.Shape) + ": cannot reduce an empty dimension (dim " + strconv.Itoa(d) + ")",
						Fix:    "reduce over non-empty dims only; the op has no identity value"}
				}
			}
		}
		dt := x.DType
		if indices {
			dt = dispatch.Int64
		}
		return dt, shape, nil
	}
}

// meanCompose is sum divided by the count of reduced elements, as
// PyTorch's at::mean is; the sum accumulates in float64 on the cpu, so the
// result is within an ulp of the exact mean. An empty mean is 0/0 = nan.
func meanCompose(in []*dispatch.Tensor, r Reduce) (*dispatch.Tensor, error) {
	x := in[0]
	if err := checkDType(x, "x", Floats); err != nil {
		return nil, err
	}
	dims, _, err := ReduceShape(x, r)
	if err != nil {
		return nil, err
	}
	n := 1
	for _, d := range dims {
		n *= x.Shape[d]
	}
	s, err := dispatch.Call(Sum, r, x)
	if err != nil {
		return nil, err
	}
	// In a 16-bit float the count rounds past 2048 (float16) or 256
	// (bfloat16), as the sum does.
	count, err := dispatch.Upload(x.Device, ScalarData(x.DType, float64(n)), x.DType, []int{})
	if err != nil {
		return nil, err
	}
	out, err := dispatch.Call(Div, dispatch.None{}, s, count)
	dispatch.ReleaseWithGraph(out, s, count)
	return out, err
}

func cumsumInfer(in []*dispatch.Tensor, sc Scan) (dispatch.DType, []int, error) {
	x := in[0]
	if err := checkReducible(x, Numeric); err != nil {
		return 0, nil, err
	}
	if _, err := NormDim(sc.Dim, x.Rank(), "dim"); err != nil {
		return 0, nil, err
	}
	return x.DType, clone(x.Shape), nil
}
