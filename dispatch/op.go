package dispatch

import (
	"strconv"
	"sync"
)

// Kernel runs an op on one backend: it writes out (allocated by dispatch
// with the shape and dtype that the op's Infer gave) from in. By the time a
// kernel runs, every argument has been validated.
type Kernel func(out *Tensor, in []*Tensor, attrs any) error

// Op is one entry of the registry: an op's schema and its implementations.
// Exactly one of Infer (with kernels from the backends), View or Compose
// says how the op runs.
type Op struct {
	Name string
	// Args names the tensor arguments, in order, for error messages. With
	// Variadic, the op takes any number (at least one) named Args[0][i].
	Args     []string
	Variadic bool

	// Infer checks dtypes, shapes and attributes and returns the output's
	// dtype and shape. The backend's kernel then fills the output.
	Infer func(in []*Tensor, attrs any) (DType, []int, error)
	// View makes the output as a new layout over the input's storage
	// (reshape, permute, narrow, ...); nothing is launched.
	View func(in []*Tensor, attrs any) (*Tensor, error)
	// Compose builds the output from other ops (layer_norm from mean, sub,
	// var, div, ...). Those ops are validated and recorded one by one, so a
	// composite needs no kernel and no gradient rule of its own.
	Compose func(in []*Tensor, attrs any) (*Tensor, error)

	kernels [maxKinds]Kernel
}

var (
	registryMu sync.RWMutex
	registry   = map[string]*Op{}
)

// Register adds an op to the registry and returns it, so that callers keep
// the pointer and never look it up by name on the fast path. Registering a
// name twice is a programming error and panics at init.
func Register(op *Op) *Op {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[op.Name]; dup {
		panic("dispatch: op " + op.Name + " registered twice")
	}
	n := 0
	for _, f := range []bool{op.Infer != nil, op.View != nil, op.Compose != nil} {
		if f {
			n++
		}
	}
	if n != 1 {
		panic("dispatch: op " + op.Name + " needs exactly one of Infer, View or Compose")
	}
	registry[op.Name] = op
	return op
}

// Lookup returns the op registered under name, or nil.
func Lookup(name string) *Op {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return registry[name]
}

// Ops returns every registered op's name, for tests that check coverage.
func Ops() []*Op {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]*Op, 0, len(registry))
	for _, op := range registry {
		out = append(out, op)
	}
	return out
}

// RegisterKernel gives op name a kernel on a device kind. Backends call it
// from init; an unknown op or a second kernel for the same kind panics, since
// either is a bug in lathe, not in a program that uses it.
func RegisterKernel(kind DeviceKind, name string, k Kernel) {
	op := Lookup(name)
	if op == nil {
		panic("dispatch: kernel for unknown op " + name)
	}
	if op.Infer == nil {
		panic("dispatch: op " + name + " is a view or composite and takes no kernel")
	}
	if op.kernels[kind] != nil {
		panic("dispatch: second " + kind.String() + " kernel for op " + name)
	}
	op.kernels[kind] = k
}

// HasKernel reports whether a device kind can run op.
func (op *Op) HasKernel(kind DeviceKind) bool { return op.Infer == nil || op.kernels[kind] != nil }

// argName is the name of the i-th tensor argument.
func (op *Op) argName(i int) string {
	if op.Variadic {
		return op.Args[0] + "[" + strconv.Itoa(i) + "]"
	}
	if i < len(op.Args) {
		return op.Args[i]
	}
	return "#" + strconv.Itoa(i)
}

// ArgName is the exported form of argName, for schemas that report errors.
func (op *Op) ArgName(i int) string { return op.argName(i) }
