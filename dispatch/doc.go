// Package dispatch is the layer between lathe's API and its backends.
//
// It holds the op registry (each op's schema: argument names, the rule that
// checks dtypes and shapes and gives the output's, and one kernel per device
// kind), the Backend interface that device packages implement and register
// in init (as database/sql drivers do), the validation that runs before any
// kernel launches, and the hook through which autodiff records tape entries.
//
// dispatch imports no backend and no autodiff package. Every error it returns
// is an *Error naming the op, the argument and the fix.
package dispatch
