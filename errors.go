package lathe

import "github.com/lathe-ml/lathe/dispatch"

// Error is every error lathe returns. Its message names the op, the argument,
// what was wrong and the fix; its fields say the same for programs.
// Use errors.Is(err, lathe.ErrDevice) to test the kind.
type Error = dispatch.Error

// The kinds of error (Error.Kind).
var (
	ErrDevice      = dispatch.ErrDevice      // an argument is on another device than the op
	ErrShape       = dispatch.ErrShape       // shapes do not fit the op
	ErrDType       = dispatch.ErrDType       // a dtype the op does not take, or dtypes that differ
	ErrReleased    = dispatch.ErrReleased    // the tensor was released
	ErrOutOfMemory = dispatch.ErrOutOfMemory // the device could not allocate
	ErrUnavailable = dispatch.ErrUnavailable // the device cannot be opened here
	ErrUnsupported = dispatch.ErrUnsupported // the backend lacks the op or dtype
	ErrIndex       = dispatch.ErrIndex       // a dim or an index out of range
	ErrValue       = dispatch.ErrValue       // an attribute or argument value the op cannot take
	ErrGrad        = dispatch.ErrGrad        // a gradient cannot be computed as asked
)

// IsCheckError reports whether err is the error of a device's value check
// (a bad index found on wgpu or cuda, which reaches the tensors made from
// it once the device reports it). Such a tensor keeps its shape, dtype and
// device, so that nn.Load can give a model's parameters their values
// again, and nn.ResetOptimizer an optimizer its state.
func IsCheckError(err error) bool { return dispatch.IsCheckError(err) }

// located gives an error the op name and the caller's site.
func located(err error, op string) *Error {
	e := dispatch.AsError(err, op, ErrValue)
	if e.Site == "" {
		e.Site = dispatch.CallSite()
	}
	return e
}

// errorf makes a new located error.
func errorf(op string, kind error, arg, detail, fix string) *Error {
	return &Error{Op: op, Kind: kind, Arg: arg, Detail: detail, Fix: fix, Site: dispatch.CallSite()}
}

// NewError makes an *Error for a package built on lathe (nn is one): op
// and argument at fault, one of the Err kinds, what was wrong, the fix,
// and the site of the user's call, found as lathe's own errors find it
// (the first frame outside lathe's module, tests and examples counting as
// users).
func NewError(op string, kind error, arg, detail, fix string) *Error {
	return errorf(op, kind, arg, detail, fix)
}
