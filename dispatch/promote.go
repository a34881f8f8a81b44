package dispatch

// Type promotion, as PyTorch's torch.result_type and torch.promote_types
// (c10/core/ScalarType.h's promoteTypes, ATen's native/TypeProperties.cpp
// for the three priorities). Binary elementwise ops compute in the dtype
// that ResultType gives; the root package casts their operands to it
// before the kernel runs, so kernels see one dtype and the casts are on
// the tape.

// category orders the kinds of dtype: a dtype of a higher category wins
// over any of a lower one, whatever its width.
type category uint8

const (
	boolean category = iota + 1
	integer
	floating
)

// promotion gives each dtype its category and its rank within it: of two
// dtypes of one category the higher rank wins. A new dtype is one line
// here and, where it ties with another of its rank, a line in ties.
var promotion = [...]struct {
	cat  category
	rank int
}{
	Bool:     {boolean, 1},
	Uint8:    {integer, 8},
	Int8:     {integer, 8},
	Int32:    {integer, 32},
	Int64:    {integer, 64},
	Float16:  {floating, 16},
	BFloat16: {floating, 16},
	Float32:  {floating, 32},
	Float64:  {floating, 64},
}

// ties holds what two distinct dtypes of one category and rank promote to,
// in either order: torch promotes float16 with bfloat16 to float32, and
// uint8 with int8 to int16, which lathe lacks: int32, the narrowest dtype
// lathe has that holds both (promote_test.go lists it as lathe's own rule).
var ties = map[[2]DType]DType{
	{Float16, BFloat16}: Float32,
	{Uint8, Int8}:       Int32,
}

// DefaultFloat is the dtype of a Go float scalar that meets integer or
// bool tensors, and of true division of integers: PyTorch's default dtype.
const DefaultFloat = Float32

// DefaultInt is the dtype of a Go integer scalar that meets bool tensors,
// as a Python int is int64 to torch.
const DefaultInt = Int64

func (d DType) category() category {
	if int(d) < len(promotion) {
		return promotion[d].cat
	}
	return 0
}

// PromoteTypes is the dtype that a and b both convert to without losing
// their kind: the one of the higher category, else the wider, as
// torch.promote_types. An invalid dtype gives the other.
func PromoteTypes(a, b DType) DType {
	switch {
	case !a.Valid() || a == b:
		return b
	case !b.Valid():
		return a
	}
	pa, pb := promotion[a], promotion[b]
	switch {
	case pa.cat != pb.cat:
		if pa.cat > pb.cat {
			return a
		}
		return b
	case pa.rank != pb.rank:
		if pa.rank > pb.rank {
			return a
		}
		return b
	}
	if t, ok := ties[[2]DType{a, b}]; ok {
		return t
	}
	return ties[[2]DType{b, a}]
}

// Priority says how much an operand counts in ResultType.
type Priority uint8

const (
	// Dimensioned is a tensor with at least one dim: it counts fully.
	Dimensioned Priority = iota
	// ZeroDim is a 0-d tensor: it lifts the result only to a higher
	// category (a float32 tensor and a 0-d float64 give float32, an int32
	// tensor and a 0-d float64 give float64).
	ZeroDim
	// Scalar is a Go number: as a 0-d tensor, but a float one counts as
	// DefaultFloat and an integer one as DefaultInt (an int32 tensor and
	// 2.5 give float32; a bool tensor and 2 give int64).
	Scalar
)

// Operand is one argument of ResultType: a dtype and how much it counts.
// A Go float scalar is {Float64, Scalar}, an integer one {Int64, Scalar},
// a bool one {Bool, Scalar}.
type Operand struct {
	DType    DType
	Priority Priority
}

// OperandOf is t's operand: Dimensioned, or ZeroDim for a 0-d tensor.
func OperandOf(t *Tensor) Operand {
	if len(t.Shape) == 0 {
		return Operand{t.DType, ZeroDim}
	}
	return Operand{t.DType, Dimensioned}
}

// ResultType is the dtype that a binary elementwise op computes in, as
// torch.result_type: each priority's dtypes promote among themselves,
// and a lower priority's result counts only where its category is
// higher (or where the higher is bool, which any number lifts).
func ResultType(operands ...Operand) DType {
	var by [3]DType
	for _, o := range operands {
		dt := o.DType
		if o.Priority == Scalar {
			switch dt.category() {
			case floating:
				dt = DefaultFloat
			case integer:
				dt = DefaultInt
			}
		}
		by[o.Priority] = PromoteTypes(by[o.Priority], dt)
	}
	return combine(by[Dimensioned], combine(by[ZeroDim], by[Scalar]))
}

// combine is torch's combine_categories: the higher priority's dtype,
// unless the lower one's category is higher, or the higher is bool.
func combine(higher, lower DType) DType {
	switch {
	case !higher.Valid():
		return lower
	case higher.category() == floating:
		return higher
	case higher == Bool || lower.category() > higher.category():
		return PromoteTypes(higher, lower)
	}
	return higher
}
