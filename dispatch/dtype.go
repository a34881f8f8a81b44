package dispatch

// DType is the element type of a tensor.
type DType uint8

// The dtypes lathe knows. Not every backend has every one: float64 does
// not exist in WGSL, so the wgpu backend refuses it with ErrUnsupported
// (int64 it holds as two 32-bit words). Indices that ops compute (argmax,
// max pooling's, one_hot) are Int64 on every device, as in PyTorch.
const (
	InvalidDType DType = iota
	Float32
	Float64
	Int32
	Int64
	Bool
)

var dtypeNames = [...]string{"invalid", "float32", "float64", "int32", "int64", "bool"}
var dtypeGoNames = [...]string{"lathe.InvalidDType", "lathe.Float32", "lathe.Float64", "lathe.Int32", "lathe.Int64", "lathe.Bool"}
var dtypeSizes = [...]int{0, 4, 8, 4, 8, 1}

// String returns the dtype's name as PyTorch spells it ("float32").
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return "invalid"
}

// GoString returns the Go expression for the dtype, used in error fixes.
func (d DType) GoString() string {
	if int(d) < len(dtypeGoNames) {
		return dtypeGoNames[d]
	}
	return "lathe.InvalidDType"
}

// Size is the number of bytes of one element.
func (d DType) Size() int {
	if int(d) < len(dtypeSizes) {
		return dtypeSizes[d]
	}
	return 0
}

// Valid reports whether d is one of the dtypes above.
func (d DType) Valid() bool { return d >= Float32 && d <= Bool }

// IsFloat reports whether d is a floating-point dtype.
func (d DType) IsFloat() bool { return d == Float32 || d == Float64 }

// IsInt reports whether d is a signed integer dtype.
func (d DType) IsInt() bool { return d == Int32 || d == Int64 }

// DTypeSet is a set of dtypes, used by op schemas to say what they accept.
type DTypeSet uint8

// Common sets.
const (
	Floats   DTypeSet = 1<<Float32 | 1<<Float64
	Ints     DTypeSet = 1<<Int32 | 1<<Int64
	Numeric           = Floats | Ints
	AllTypes          = Numeric | 1<<Bool
	Indices           = Ints
)

// Has reports whether d is in the set.
func (s DTypeSet) Has(d DType) bool { return d.Valid() && s&(1<<d) != 0 }

// String lists the set's dtypes, for error messages.
func (s DTypeSet) String() string {
	out := ""
	for d := Float32; d <= Bool; d++ {
		if s.Has(d) {
			if out != "" {
				out += ", "
			}
			out += d.String()
		}
	}
	return out
}
