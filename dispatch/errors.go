package dispatch

import (
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// kind is the type of the sentinel error kinds, so that errors.Is(err,
// ErrDevice) matches any *Error of that kind.
type kind struct{ name string }

func (k *kind) Error() string { return "lathe: " + k.name }

// The kinds of error. Every *Error has one of these as its Kind.
var (
	ErrDevice      error = &kind{"wrong device"}
	ErrShape       error = &kind{"wrong shape"}
	ErrDType       error = &kind{"wrong dtype"}
	ErrReleased    error = &kind{"tensor was released"}
	ErrOutOfMemory error = &kind{"out of memory"}
	ErrUnavailable error = &kind{"device unavailable"}
	ErrUnsupported error = &kind{"unsupported"}
	ErrIndex       error = &kind{"index out of range"}
	ErrValue       error = &kind{"invalid value"}
	ErrGrad        error = &kind{"gradient"}
)

// Error is the one error type of lathe. Its message reads
//
//	lathe: <op>: argument "<arg>" <detail> (<fix>) [called at file:line]
//
// and each part is also a field, for programs that look inside.
type Error struct {
	Op       string // the op the user called: "add"
	Arg      string // the argument at fault, or "" when none is
	Kind     error  // one of the Err* kinds above
	Detail   string // what was wrong, in words: "is on cuda:0 but the op runs on cpu"
	Expected string // what the op wanted, where one thing can be named: "cpu"
	Found    string // what it got: "cuda:0"
	Fix      string // what to do about it: "move it with rhs.To(lathe.CPU)"
	Site     string // where the user called the op: "main.go:12"
	Err      error  // the cause, from a library or the OS, if any

	fromCheck bool // a value check's (IsCheckError)
}

// Error is the message: lathe: <op>: argument "<arg>" <detail>: <cause>
// (<fix>) [called at file:line], each part present when set.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("lathe: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	if e.Arg != "" {
		b.WriteString("argument ")
		b.WriteString(strconv.Quote(e.Arg))
		b.WriteString(" ")
	}
	b.WriteString(e.Detail)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Fix != "" {
		b.WriteString(" (")
		b.WriteString(e.Fix)
		b.WriteString(")")
	}
	if e.Site != "" {
		b.WriteString(" [called at ")
		b.WriteString(e.Site)
		b.WriteString("]")
	}
	return b.String()
}

// Is makes errors.Is(err, ErrShape) true for an *Error of kind ErrShape.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf-style constructors used by schemas and kernels. The op name and the
// call site are filled in by Call, which knows them.

// NewError returns an *Error of the given kind about argument arg.
func NewError(kind error, arg, detail, fix string) *Error {
	return &Error{Kind: kind, Arg: arg, Detail: detail, Fix: fix}
}

// Unsupported is the error a backend returns for an op or dtype it lacks.
func Unsupported(dev Device, op string, dt DType) *Error {
	return &Error{Kind: ErrUnsupported, Op: op,
		Detail: "has no " + dt.String() + " kernel on " + dev.String(),
		Found:  dt.String(), Fix: "run it on another device or cast to a dtype that " + dev.String() + " has"}
}

// AsError turns any error into an *Error for op, keeping an *Error as it is
// (only filling in what it lacks) and wrapping anything else as its cause.
func AsError(err error, op string, kind error) *Error {
	e, ok := err.(*Error)
	if !ok {
		return &Error{Op: op, Kind: kind, Detail: "failed", Err: err}
	}
	if e.Op == "" {
		e.Op = op
	}
	if e.Kind == nil {
		e.Kind = kind
	}
	return e
}

// located fills in the op and the user's call site of an error on its way out.
func located(err error, op string) *Error {
	e := AsError(err, op, ErrValue)
	if e.Site == "" {
		e.Site = CallSite()
	}
	return e
}

// modulePrefix is the import path under which frames belong to lathe itself.
const modulePrefix = "github.com/lathe-ml/lathe"

// CallSite returns "file:line" of the innermost stack frame outside lathe's
// library packages: the user's call of the op. Tests and examples inside the
// module count as users. It walks the stack, so it is called only when an
// error is made, never on the fast path.
func CallSite() string {
	var pcs [32]uintptr
	n := runtime.Callers(2, pcs[:])
	return siteOf(pcs[:n])
}

// Site is a call site captured now and written out only if an error needs
// it: the program counters of the stack, which are cheap to take, where
// CallSite's frame walk is not. A device's value check keeps one, since
// its error may be reported ops later.
type Site struct {
	pcs [32]uintptr
	n   int
}

// CaptureSite takes the current stack for a later Site.String.
func CaptureSite() Site {
	var s Site
	s.n = runtime.Callers(2, s.pcs[:])
	return s
}

// String is the captured call's "file:line", as CallSite gives it.
func (s *Site) String() string { return siteOf(s.pcs[:s.n]) }

// siteOf is the innermost frame of pcs outside lathe's library packages.
func siteOf(pcs []uintptr) string {
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if !isLibraryFrame(f) {
			return filepath.Base(f.File) + ":" + strconv.Itoa(f.Line)
		}
		if !more {
			return ""
		}
	}
}

func isLibraryFrame(f runtime.Frame) bool {
	if strings.HasSuffix(f.File, "_test.go") {
		return false
	}
	fn := f.Function
	if !strings.HasPrefix(fn, modulePrefix) {
		// Go's runtime and standard library frames sit between the user and
		// lathe only in callbacks (NoGrad, sort, a sync.Once that makes an
		// error once per process, fmt printing a tensor with String); skip
		// them too.
		return strings.HasPrefix(fn, "runtime.") || !strings.Contains(fn, ".") || strings.HasPrefix(fn, "testing.") ||
			strings.HasPrefix(fn, "sync.") || strings.HasPrefix(fn, "fmt.")
	}
	// The examples and commands are users, but the examples' shared
	// helpers (examples/internal) report for the example that calls them.
	rest := strings.TrimPrefix(fn, modulePrefix)
	return strings.HasPrefix(rest, "/examples/internal/") || !strings.HasPrefix(rest, "/examples/") && !strings.HasPrefix(rest, "/cmd/")
}
