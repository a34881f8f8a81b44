package dispatch

// DType is the element type of a tensor.
type DType uint8

// The dtypes lathe knows, named as PyTorch names them. Not every backend
// has every one: float64 does not exist in WGSL, so the wgpu backend refuses
// it with ErrUnsupported (int64 it holds as two 32-bit words), and a backend
// without kernels for the 16-bit floats or the 8-bit integers refuses those
// the same way (Holder). Indices that ops compute (argmax, max pooling's,
// one_hot) are Int64 on every device, as in PyTorch. New dtypes go at the
// end, so that a DType's value never changes.
const (
	InvalidDType DType = iota
	Float32
	Float64
	Int32
	Int64
	Bool
	Float16  // IEEE 754 binary16, torch.float16
	BFloat16 // bfloat16 (float32's top 16 bits), torch.bfloat16
	Int8
	Uint8

	lastDType = Uint8
)

var dtypeNames = [...]string{"invalid", "float32", "float64", "int32", "int64", "bool", "float16", "bfloat16", "int8", "uint8"}
var dtypeGoNames = [...]string{"lathe.InvalidDType", "lathe.Float32", "lathe.Float64", "lathe.Int32", "lathe.Int64", "lathe.Bool",
	"lathe.Float16", "lathe.BFloat16", "lathe.Int8", "lathe.Uint8"}
var dtypeSizes = [...]int{0, 4, 8, 4, 8, 1, 2, 2, 1, 1}

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
func (d DType) Valid() bool { return d >= Float32 && d <= lastDType }

// IsFloat reports whether d is a floating-point dtype: float16, bfloat16,
// float32 or float64. These are the dtypes that carry gradients.
func (d DType) IsFloat() bool { return Floats.Has(d) }

// IsInt reports whether d is an integer dtype: int8, uint8, int32 or int64.
// uint8 is one, as it is in PyTorch (torch.uint8.is_floating_point is
// false and integer ops take it); IsSigned tells it from the others.
func (d DType) IsInt() bool { return Ints.Has(d) }

// IsSigned reports whether d holds negative values: every float dtype and
// every integer dtype but uint8 (bool is not a signed type either).
func (d DType) IsSigned() bool { return d.Valid() && d != Uint8 && d != Bool }

// DTypeSet is a set of dtypes, used by op schemas to say what they accept
// and by backends to say what their kernels take.
type DTypeSet uint16

// Common sets. The schema sets (Floats, Ints, Numeric, AllTypes) hold every
// dtype of their kind; a backend registers the part that its kernel really
// computes, never a schema set that may grow under it (Wide is the dtypes
// lathe had before the 16-bit floats and 8-bit integers).
const (
	Floats   DTypeSet = 1<<Float32 | 1<<Float64 | Halves
	Ints     DTypeSet = 1<<Int32 | 1<<Int64 | Bytes
	Numeric           = Floats | Ints
	AllTypes          = Numeric | 1<<Bool
	// Indices are the dtypes an index argument may have (gather's index,
	// embedding's ids): int32 and int64, as 8-bit indices would be
	// PyTorch's masks, not indices.
	Indices DTypeSet = 1<<Int32 | 1<<Int64

	// Halves are the 16-bit float storage types, computed in float32.
	Halves DTypeSet = 1<<Float16 | 1<<BFloat16
	// Bytes are the 8-bit integer types, computed in int32 and wrapped.
	Bytes DTypeSet = 1<<Int8 | 1<<Uint8
	// Wide is every dtype but Halves and Bytes: float32, float64, int32,
	// int64 and bool.
	Wide = AllTypes &^ (Halves | Bytes)
)

// Has reports whether d is in the set.
func (s DTypeSet) Has(d DType) bool { return d.Valid() && s&(1<<d) != 0 }

// String lists the set's dtypes, for error messages.
func (s DTypeSet) String() string {
	out := ""
	for d := Float32; d <= lastDType; d++ {
		if s.Has(d) {
			if out != "" {
				out += ", "
			}
			out += d.String()
		}
	}
	return out
}
