package dispatch

// Elementwise ops: unary, binary with NumPy broadcasting, where, cast and
// contiguous. Their schemas differ only in the dtypes they take and give,
// so each is a line in a table.

// Params holds the scalar attributes of elementwise ops: leaky_relu's slope
// (A), clamp's bounds (A, B; ±Inf where there is none).
type Params struct{ A, B float64 }

// CastTo is the attribute of cast.
type CastTo struct{ DType DType }

// Result dtype rules.
type resultRule uint8

const (
	sameAsInput resultRule = iota
	boolResult
)

// UnaryOps lists the unary ops and the dtypes each takes. Backends range over
// it to register their kernels, so an op added here is missed by none.
var UnaryOps = []struct {
	Name   string
	DTypes DTypeSet
}{
	{"neg", Numeric}, {"abs", Numeric}, {"sign", Numeric}, {"square", Numeric}, {"relu", Numeric},
	{"floor", Numeric}, {"ceil", Numeric}, {"round", Numeric}, {"clamp", Numeric},
	{"exp", Floats}, {"log", Floats}, {"log1p", Floats}, {"expm1", Floats}, {"sqrt", Floats},
	{"rsqrt", Floats}, {"reciprocal", Floats}, {"sin", Floats}, {"cos", Floats}, {"tanh", Floats},
	{"sigmoid", Floats}, {"leaky_relu", Floats}, {"gelu", Floats}, {"gelu_tanh", Floats},
	{"silu", Floats}, {"softplus", Floats}, {"erf", Floats},
}

// BinaryOps lists the binary ops: the dtypes both arguments share, and
// whether the result is Bool.
var BinaryOps = []struct {
	Name   string
	DTypes DTypeSet
	Bool   bool
}{
	{"add", Numeric, false}, {"sub", Numeric, false}, {"mul", Numeric, false}, {"div", Floats, false},
	{"pow", Numeric, false}, {"maximum", Numeric, false}, {"minimum", Numeric, false}, {"atan2", Floats, false},
	{"eq", AllTypes, true}, {"ne", AllTypes, true}, {"lt", Numeric, true}, {"le", Numeric, true},
	{"gt", Numeric, true}, {"ge", Numeric, true},
	{"logical_and", AllTypes, true}, {"logical_or", AllTypes, true},
}

func init() {
	for _, u := range UnaryOps {
		Register(&Op{Name: u.Name, Args: []string{"x"}, Infer: unaryInfer(u.DTypes, sameAsInput)})
	}
	Register(&Op{Name: "logical_not", Args: []string{"x"}, Infer: unaryInfer(AllTypes, boolResult)})
	for _, b := range BinaryOps {
		rule := sameAsInput
		if b.Bool {
			rule = boolResult
		}
		// Logical ops treat any nonzero value as true, as PyTorch does, so
		// their arguments need not share a dtype.
		same := b.Name != "logical_and" && b.Name != "logical_or"
		Register(&Op{Name: b.Name, Args: []string{"lhs", "rhs"}, Infer: binaryInfer(b.DTypes, rule, same)})
	}
	Register(&Op{Name: "where", Args: []string{"cond", "x", "y"}, Infer: whereInfer})
	Register(&Op{Name: "cast", Args: []string{"x"}, Infer: castInfer})
	Register(&Op{Name: "contiguous", Args: []string{"x"}, Infer: func(in []*Tensor, _ any) (DType, []int, error) {
		return in[0].DType, clone(in[0].Shape), nil
	}})
}

func unaryInfer(allowed DTypeSet, rule resultRule) func([]*Tensor, any) (DType, []int, error) {
	return func(in []*Tensor, _ any) (DType, []int, error) {
		if err := checkDType(in[0], "x", allowed); err != nil {
			return 0, nil, err
		}
		dt := in[0].DType
		if rule == boolResult {
			dt = Bool
		}
		return dt, clone(in[0].Shape), nil
	}
}

func binaryInfer(allowed DTypeSet, rule resultRule, same bool) func([]*Tensor, any) (DType, []int, error) {
	names := func(i int) string { return [...]string{"lhs", "rhs"}[i] }
	return func(in []*Tensor, _ any) (DType, []int, error) {
		for i, t := range in {
			if err := checkDType(t, names(i), allowed); err != nil {
				return 0, nil, err
			}
		}
		if same {
			if err := sameDType(in, names, 0); err != nil {
				return 0, nil, err
			}
		}
		shape, err := broadcastAll(in, names)
		if err != nil {
			return 0, nil, err
		}
		dt := in[0].DType
		if rule == boolResult {
			dt = Bool
		}
		return dt, shape, nil
	}
}

func whereInfer(in []*Tensor, _ any) (DType, []int, error) {
	names := func(i int) string { return [...]string{"cond", "x", "y"}[i] }
	if err := checkDType(in[0], "cond", 1<<Bool); err != nil {
		return 0, nil, err
	}
	if err := sameDType(in, names, 1); err != nil {
		return 0, nil, err
	}
	shape, err := broadcastAll(in, names)
	if err != nil {
		return 0, nil, err
	}
	return in[1].DType, shape, nil
}

func castInfer(in []*Tensor, attrs any) (DType, []int, error) {
	to, ok := attrs.(CastTo)
	if !ok || !to.DType.Valid() {
		return 0, nil, &Error{Kind: ErrDType, Arg: "dtype", Detail: "is not a dtype", Fix: "use lathe.Float32, Float64, Int32, Int64 or Bool"}
	}
	return to.DType, clone(in[0].Shape), nil
}

func clone(s []int) []int { return append(make([]int, 0, len(s)), s...) }
