package conformance

import "github.com/lathe-ml/lathe"

// The table entries of the modified Bessel functions and the window
// functions (windows.json and grad_windows.json, made by
// build/torchref/windows.py): i0, i0e, i1 and i1e of their one input, and
// the windows, made on the device and in the dtype of their one input (an
// empty tensor) with the attributes length, periodic, alpha and beta.

func init() {
	for k, f := range windowOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_windowfns.go and another table")
		}
		ops[k] = f
	}
}

// signalWindow makes the window f of the case's length on in[0]'s device
// and in its dtype, with the options the attributes give.
func signalWindow(f func(lathe.Device, int, ...lathe.SignalWindowOption) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		opts := []lathe.SignalWindowOption{lathe.WindowDType(in[0].DType()), lathe.WindowPeriodic(a.Bool("periodic"))}
		if a.Has("alpha") {
			opts = append(opts, lathe.WindowAlpha(a.Float("alpha")))
		}
		if a.Has("beta") {
			opts = append(opts, lathe.WindowBeta(a.Float("beta")))
		}
		return one(f(in[0].Device(), a.Int("length"), opts...))
	}
}

var windowOps = map[string]opFunc{
	"i0": unary((*lathe.Tensor).I0), "i0e": unary((*lathe.Tensor).I0e),
	"i1": unary((*lathe.Tensor).I1), "i1e": unary((*lathe.Tensor).I1e),

	"hann_window":     signalWindow(lathe.HannWindow),
	"hamming_window":  signalWindow(lathe.HammingWindow),
	"blackman_window": signalWindow(lathe.BlackmanWindow),
	"bartlett_window": signalWindow(lathe.BartlettWindow),
	"kaiser_window":   signalWindow(lathe.KaiserWindow),
}
