// Package dispatch is the small core between lathe's API and its backends.
//
// It holds the op registry (each op a typed value, dispatch.Op[A], whose
// schema checks dtypes, shapes and attributes of type A and gives the
// output's, and whose kernels come from the backends per device kind and
// dtype), Call (the one path every op takes: validation of each tensor
// argument, the schema, the kernel or view or composite, the tape hook),
// the Tensor handle, the Error type, and the Backend interface that device
// packages implement and register by name in init, as database/sql drivers
// do. What only some backends can do is an optional interface
// (capability.go).
//
// dispatch imports no backend and no autodiff package, and names no
// device but the host's. The ops themselves live in dispatch/ops, the
// geometry that kernels share in layout, and the caching allocator in
// alloc. Every error it returns is an *Error naming the op, the argument
// and the fix.
package dispatch
