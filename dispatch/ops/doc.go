// Package ops is lathe's op set: every op as a typed descriptor
// (ops.Add, ops.Sum, ops.Conv, ...) with its attribute type and its schema,
// the rule that checks arguments and gives the output's dtype and shape,
// or the view or composite that computes it from other ops.
//
// The root package calls the ops, autodiff gives each a gradient rule, and
// each backend registers a kernel per op (dispatch.RegisterKernel). Adding
// an op is a schema here, a rule in autodiff and a kernel line per
// backend. The family tables (UnaryOps, BinaryOps, ReduceOps, Upsamples)
// let a backend register one template for every op of a family, so that
// an op added to a table is missed by none.
package ops
