package dispatch

import (
	"strconv"
	"sync"
)

// None is the attribute type of the ops that take no attributes.
type None struct{}

// Schema is what an op is apart from the type of its attributes: the names
// that errors use, how it runs, and which devices and dtypes have kernels
// for it. The tape and the error messages see an op through it.
type Schema struct {
	// Name is the op as errors give it: the call the user made.
	Name string
	// Variant tells apart ops that share a Name, the forms of one call
	// (layer_norm with a weight and bias, "affine", beside layer_norm
	// without): Key joins the two.
	Variant string
	// Args names the tensor arguments, in order, for error messages. With
	// Variadic, the op takes any number (at least one) named Args[0][i].
	Args     []string
	Variadic bool

	runs    runs
	kernels [maxKinds]DTypeSet // per device kind, the input dtypes that have a kernel
}

// runs is how an op computes its output.
type runs uint8

const (
	byKernel    runs = iota // a backend's kernel fills an output that Infer describes
	byView                  // a new layout over the input's storage
	byComposing             // other ops, each validated and recorded
)

// Op is one op of the registry, with attributes of type A: the schema and
// exactly one of Infer (with kernels from the backends), View or Compose.
// An op is a value that the packages above dispatch hold and call
// (ops.Add, ops.Sum); nothing looks one up by name on the way to a kernel,
// and the attributes a kernel gets are the A that the caller passed.
type Op[A any] struct {
	Schema

	// Infer checks dtypes, shapes and attributes and returns the output's
	// dtype and shape. The backend's kernel then fills the output.
	Infer func(in []*Tensor, a A) (DType, []int, error)
	// View makes the output as a new layout over the input's storage
	// (reshape, permute, narrow, ...); nothing is launched.
	View func(in []*Tensor, a A) (*Tensor, error)
	// Compose builds the output from other ops (layer_norm from mean, sub,
	// var, div, ...). Those ops are validated and recorded one by one, so a
	// composite needs no kernel and no gradient rule of its own.
	Compose func(in []*Tensor, a A) (*Tensor, error)
	// Checks, when set, gives the value checks of a call whose shapes and
	// attributes Infer (or the view or composite) has accepted: the index
	// ranges and the like that only the data can answer (check.go).
	Checks func(in []*Tensor, a A) []ValueCheck

	kernels [maxKinds]Kernel[A]
}

// Kernel runs an op on one backend: it writes out (allocated by dispatch
// with the shape and dtype that the op's Infer gave) from in. By the time a
// kernel runs, every argument has been validated and in[0]'s dtype is one
// that the kernel was registered for.
type Kernel[A any] func(out *Tensor, in []*Tensor, a A) error

var (
	registryMu sync.RWMutex
	registry   []*Schema
	names      = map[string]bool{}
)

// Register adds an op to the registry and returns it. Packages register
// their ops in package variables (ops.Add = dispatch.Register(...)), so a
// program's ops are all known before main runs. A name registered twice,
// or an op without exactly one of Infer, View and Compose, is a bug in
// lathe and panics at init.
func Register[A any](op *Op[A]) *Op[A] {
	n := 0
	for _, set := range []bool{op.Infer != nil, op.View != nil, op.Compose != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		panic("dispatch: op " + op.Key() + " needs exactly one of Infer, View or Compose")
	}
	switch {
	case op.View != nil:
		op.runs = byView
	case op.Compose != nil:
		op.runs = byComposing
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if names[op.Key()] {
		panic("dispatch: op " + op.Key() + " registered twice")
	}
	names[op.Key()] = true
	registry = append(registry, &op.Schema)
	return op
}

// Key is the op's name in the registry, unique among ops: Name, with
// Variant after an underscore where there is one (layer_norm_affine).
func (s *Schema) Key() string {
	if s.Variant == "" {
		return s.Name
	}
	return s.Name + "_" + s.Variant
}

// Ops returns every registered op's schema, for tests that check coverage.
func Ops() []*Schema {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return append([]*Schema(nil), registry...)
}

// RegisterKernel gives op a kernel on a device kind for inputs whose first
// argument has a dtype in dtypes; a call with another dtype is
// ErrUnsupported naming the op, the dtype and the device, on every
// backend alike. Backends call it from init. A second kernel for the same
// kind, or one for an op that is a view or a composite, is a bug in lathe
// and panics.
func RegisterKernel[A any](kind DeviceKind, op *Op[A], dtypes DTypeSet, k Kernel[A]) {
	if op.runs != byKernel {
		panic("dispatch: op " + op.Key() + " is a view or composite and takes no kernel")
	}
	if op.kernels[kind] != nil {
		panic("dispatch: second " + kind.String() + " kernel for op " + op.Key())
	}
	op.kernels[kind] = k
	op.Schema.kernels[kind] = dtypes
}

// RunsKernel reports whether the op is computed by backends' kernels
// (rather than being a view or a composite of other ops).
func (s *Schema) RunsKernel() bool { return s.runs == byKernel }

// Composite reports whether the op is computed from other ops, which are
// recorded one by one (so it needs no gradient rule of its own).
func (s *Schema) Composite() bool { return s.runs == byComposing }

// HasKernel reports whether a device kind can run the op: a view or a
// composite runs wherever its parts do; a kernel op needs a kernel.
func (s *Schema) HasKernel(kind DeviceKind) bool {
	return s.runs != byKernel || s.kernels[kind] != 0
}

// KernelDTypes is the set of input dtypes that kind has a kernel for.
func (s *Schema) KernelDTypes(kind DeviceKind) DTypeSet { return s.kernels[kind] }

// ArgName is the name of the i-th tensor argument, for errors.
func (s *Schema) ArgName(i int) string {
	if s.Variadic {
		return s.Args[0] + "[" + strconv.Itoa(i) + "]"
	}
	if i < len(s.Args) {
		return s.Args[i]
	}
	return "#" + strconv.Itoa(i)
}
