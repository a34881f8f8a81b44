// Package check refuses an example's settings that cannot make a run (a
// count below one, a noise that is negative or not a number) before any
// training starts, each as a lathe ErrValue that names the flag, the way
// lathe names an op's argument. Without it a negative count panicked in a
// slice bound, and zero epochs or a batch of zero "trained" to a loss of 0
// or NaN.
package check

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// AtLeast is op's error for a flag whose value v is below least, or nil.
func AtLeast(op, flag string, v, least int) error {
	if v >= least {
		return nil
	}
	return lathe.NewError(op, lathe.ErrValue, flag, "is "+strconv.Itoa(v), "use "+flag+" "+strconv.Itoa(least)+" or more")
}

// NonNegative is op's error for a flag whose value v is negative or not a
// number, or nil.
func NonNegative(op, flag string, v float64) error {
	if v >= 0 && !math.IsInf(v, 1) {
		return nil
	}
	return lathe.NewError(op, lathe.ErrValue, flag, "is "+strconv.FormatFloat(v, 'g', -1, 64), "use a finite "+flag+" of 0 or more")
}

// NoArgs is op's error for words left on the command line after the flags
// (args, flag.Args()), or nil: "mlp wgpu:0" would otherwise train on the
// default device as if the word were not there.
func NoArgs(op string, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return lathe.NewError(op, lathe.ErrValue, "", "takes no arguments but was given "+strconv.Quote(args[0]),
		"pass settings as flags, such as -device wgpu:0; -h lists them")
}
