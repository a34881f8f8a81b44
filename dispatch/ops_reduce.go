package dispatch

import "strconv"

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

// ReduceOps lists the reductions that run a kernel: the dtypes each takes,
// whether it refuses an empty reduced dim (PyTorch does for max, min and the
// arg ops, which have no identity), and whether it gives Int64 indices.
var ReduceOps = []struct {
	Name    string
	DTypes  DTypeSet
	NoEmpty bool
	Indices bool
	OneDim  bool // at most one dim (argmax, argmin)
}{
	{Name: "sum", DTypes: Numeric},
	{Name: "prod", DTypes: Numeric},
	{Name: "max", DTypes: Numeric, NoEmpty: true},
	{Name: "min", DTypes: Numeric, NoEmpty: true},
	{Name: "var", DTypes: Floats},
	{Name: "std", DTypes: Floats},
	{Name: "logsumexp", DTypes: Floats},
	{Name: "argmax", DTypes: Numeric, NoEmpty: true, Indices: true, OneDim: true},
	{Name: "argmin", DTypes: Numeric, NoEmpty: true, Indices: true, OneDim: true},
}

func init() {
	for _, r := range ReduceOps {
		Register(&Op{Name: r.Name, Args: []string{"x"}, Infer: reduceInfer(r.DTypes, r.NoEmpty, r.Indices, r.OneDim)})
	}
	Register(&Op{Name: "mean", Args: []string{"x"}, Compose: meanCompose})
	Register(&Op{Name: "cumsum", Args: []string{"x"}, Infer: cumsumInfer})
}

// ReduceShape normalises r's dims against x and returns them sorted and
// deduplicated (a 0-d tensor has none to reduce) with the output shape.
func ReduceShape(x *Tensor, r Reduce) (dims, shape []int, err error) {
	nd, err := NormDims(r.Dims, x.Rank(), "dims")
	if err != nil {
		return nil, nil, err
	}
	reduced := make([]bool, x.Rank())
	for _, d := range nd {
		if d < x.Rank() {
			reduced[d] = true
		}
	}
	shape = []int{}
	for d, s := range x.Shape {
		switch {
		case reduced[d]:
			dims = append(dims, d)
			if r.KeepDim {
				shape = append(shape, 1)
			}
		default:
			shape = append(shape, s)
		}
	}
	return dims, shape, nil
}

func reduceAttrs(attrs any) (Reduce, error) {
	switch r := attrs.(type) {
	case nil:
		return Reduce{}, nil
	case Reduce:
		return r, nil
	}
	return Reduce{}, &Error{Kind: ErrValue, Arg: "attrs", Detail: "is not a dispatch.Reduce", Fix: "pass dispatch.Reduce{Dims: ...}"}
}

// checkReducible refuses dtypes the reduction lacks. Bool gets its own fix:
// to count true values, cast to an integer type first.
func checkReducible(x *Tensor, allowed DTypeSet) error {
	err := checkDType(x, "x", allowed)
	if e, ok := err.(*Error); ok && x.DType == Bool && allowed.Has(Int64) {
		e.Fix = "cast it with .Cast(lathe.Int64) first, e.g. to count true values"
	}
	return err
}

func reduceInfer(allowed DTypeSet, noEmpty, indices, oneDim bool) func([]*Tensor, any) (DType, []int, error) {
	return func(in []*Tensor, attrs any) (DType, []int, error) {
		x := in[0]
		r, err := reduceAttrs(attrs)
		if err != nil {
			return 0, nil, err
		}
		if err := checkReducible(x, allowed); err != nil {
			return 0, nil, err
		}
		if oneDim && len(r.Dims) > 1 {
			return 0, nil, &Error{Kind: ErrValue, Arg: "dims", Detail: "names " + strconv.Itoa(len(r.Dims)) + " dims but the op reduces at most one",
				Fix: "pass one dim, or none to index the flattened tensor"}
		}
		if r.Correction < 0 {
			return 0, nil, &Error{Kind: ErrValue, Arg: "correction", Detail: "is " + strconv.Itoa(r.Correction), Fix: "use 0 (biased) or 1 (unbiased)"}
		}
		dims, shape, err := ReduceShape(x, r)
		if err != nil {
			return 0, nil, err
		}
		if noEmpty {
			for _, d := range dims {
				if x.Shape[d] == 0 {
					return 0, nil, &Error{Kind: ErrShape, Arg: "x", Found: FormatShape(x.Shape),
						Detail: "has shape " + FormatShape(x.Shape) + ": cannot reduce an empty dimension (dim " + strconv.Itoa(d) + ")",
						Fix:    "reduce over non-empty dims only; the op has no identity value"}
				}
			}
		}
		dt := x.DType
		if indices {
			dt = IndexDType(x.Device)
		}
		return dt, shape, nil
	}
}

// meanCompose is sum divided by the count of reduced elements, as
// PyTorch's at::mean is; the sum accumulates in float64 on the cpu, so the
// result is within an ulp of the exact mean. An empty mean is 0/0 = nan.
func meanCompose(in []*Tensor, attrs any) (*Tensor, error) {
	x := in[0]
	r, err := reduceAttrs(attrs)
	if err != nil {
		return nil, err
	}
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
	s, err := Call(Lookup("sum"), r, x)
	if err != nil {
		return nil, err
	}
	var data any = []float64{float64(n)}
	if x.DType == Float32 {
		data = []float32{float32(n)}
	}
	count, err := Upload(x.Device, data, x.DType, []int{})
	if err != nil {
		return nil, err
	}
	out, err := Call(Lookup("div"), nil, s, count)
	if !s.RequiresGrad { // recorded intermediates stay alive for the tape
		s.Release()
		count.Release()
	}
	return out, err
}

func cumsumInfer(in []*Tensor, attrs any) (DType, []int, error) {
	x := in[0]
	sc, ok := attrs.(Scan)
	if !ok {
		return 0, nil, &Error{Kind: ErrValue, Arg: "attrs", Detail: "is not a dispatch.Scan", Fix: "pass dispatch.Scan{Dim: d}"}
	}
	if err := checkReducible(x, Numeric); err != nil {
		return 0, nil, err
	}
	if _, err := NormDim(sc.Dim, x.Rank(), "dim"); err != nil {
		return 0, nil, err
	}
	return x.DType, clone(x.Shape), nil
}
