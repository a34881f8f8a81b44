package lathe

import (
	"math"
	"strconv"
)

// Window functions for spectral analysis, as torch.hann_window,
// hamming_window, blackman_window, bartlett_window and kaiser_window:
//
//	w := lathe.HannWindow(dev, 400)                              // periodic, float32
//	k := lathe.KaiserWindow(dev, 64, lathe.WindowPeriodic(false), lathe.WindowBeta(8))
//
// Each makes a 1-D tensor of length values: empty for length 0, [1] for
// length 1, and otherwise the window of length+1 points without its last
// where periodic (the default, as torch's), or the symmetric window of
// length points. The values are computed in float64 on the host and
// rounded once to the dtype (float32 by default; floats only). torch
// computes them in the dtype itself: its 16-bit windows are up to a few
// ulp off the rounded values lathe gives, and its cpu refuses float16 for
// all but the Bartlett window, which lathe makes as the others. Float64 on a device without it
// (wgpu) is that device's ErrUnsupported.

// SignalWindowOption sets an option of a window function (HannWindow,
// KaiserWindow, ...).
type SignalWindowOption func(*signalWindowOptions)

type signalWindowOptions struct {
	symmetric        bool
	dt               DType
	dtSet            bool
	alpha, beta      float64
	alphSet, betaSet bool
}

// WindowPeriodic sets torch's periodic flag: true (the default) makes the
// window for spectral analysis, length+1 points without the last; false
// the symmetric window of length points, for filter design.
func WindowPeriodic(periodic bool) SignalWindowOption {
	return func(o *signalWindowOptions) { o.symmetric = !periodic }
}

// WindowDType sets the window's dtype, a float one (default Float32).
func WindowDType(dt DType) SignalWindowOption {
	return func(o *signalWindowOptions) { o.dt, o.dtSet = dt, true }
}

// WindowAlpha sets HammingWindow's α (torch's alpha, default 0.54).
func WindowAlpha(alpha float64) SignalWindowOption {
	return func(o *signalWindowOptions) { o.alpha, o.alphSet = alpha, true }
}

// WindowBeta sets HammingWindow's β (default 0.46) or KaiserWindow's β
// (default 12), as torch's beta.
func WindowBeta(beta float64) SignalWindowOption {
	return func(o *signalWindowOptions) { o.beta, o.betaSet = beta, true }
}

// HannWindow is the Hann window, 0.5 - 0.5·cos(2πn/(N-1)) for n < length,
// N = length+1 where periodic (the default) else length, as
// torch.hann_window. See SignalWindowOption for the options; WindowAlpha
// and WindowBeta are ErrValue here (torch's hann_window has neither).
func HannWindow(dev Device, length int, opts ...SignalWindowOption) *Tensor {
	return window("hann_window", dev, length, opts, false, false, func(n, m float64, _ signalWindowOptions) float64 {
		return 0.5 - 0.5*math.Cos(2*math.Pi*n/(m-1))
	})
}

// HammingWindow is the Hamming window, α - β·cos(2πn/(N-1)) for n <
// length, N = length+1 where periodic (the default) else length, as
// torch.hamming_window; α (WindowAlpha) is 0.54 and β (WindowBeta) 0.46
// unless given, and must be finite (ErrValue; torch computes with NaN or
// Inf).
func HammingWindow(dev Device, length int, opts ...SignalWindowOption) *Tensor {
	return window("hamming_window", dev, length, opts, true, true, func(n, m float64, o signalWindowOptions) float64 {
		return o.alpha - o.beta*math.Cos(2*math.Pi*n/(m-1))
	})
}

// BlackmanWindow is the Blackman window, 0.42 - 0.5·cos(2πn/(N-1)) +
// 0.08·cos(4πn/(N-1)) for n < length, N = length+1 where periodic (the
// default) else length, as torch.blackman_window. Its ends are 0 to
// within rounding (float64's -1.4e-17, which torch's float32 gives as
// -3e-8).
func BlackmanWindow(dev Device, length int, opts ...SignalWindowOption) *Tensor {
	return window("blackman_window", dev, length, opts, false, false, func(n, m float64, _ signalWindowOptions) float64 {
		t := math.Pi * n / (m - 1)
		return 0.42 - 0.5*math.Cos(2*t) + 0.08*math.Cos(4*t)
	})
}

// BartlettWindow is the Bartlett (triangular) window, 1 - |2n/(N-1) - 1|
// for n < length, N = length+1 where periodic (the default) else length,
// as torch.bartlett_window.
func BartlettWindow(dev Device, length int, opts ...SignalWindowOption) *Tensor {
	return window("bartlett_window", dev, length, opts, false, false, func(n, m float64, _ signalWindowOptions) float64 {
		v := 2 * n / (m - 1)
		if int(n) >= (int(m)-1)>>1+1 { // torch's first half: (N-1)/2 + 1 points
			v = 2 - v
		}
		return v
	})
}

// KaiserWindow is the Kaiser window, I0(β·√(1 - ((n - a)/a)²))/I0(β) with
// a = (N-1)/2, for n < length, N = length+1 where periodic (the default)
// else length, as torch.kaiser_window; β (WindowBeta) is 12 unless given
// and must be finite (ErrValue; torch gives NaN). The ratio is computed
// from the exponentially scaled I0 (I0e), so that it stays finite for any
// β, where torch's overflows to NaN past β ≈ 88 in float32 and 713 in
// float64.
func KaiserWindow(dev Device, length int, opts ...SignalWindowOption) *Tensor {
	return window("kaiser_window", dev, length, opts, false, true, func(n, m float64, o signalWindowOptions) float64 {
		a := (m - 1) / 2
		r := (n - a) / a
		b := math.Abs(o.beta)
		v := b * math.Sqrt(math.Max(0, 1-r*r))
		return math.Exp(v-b) * i0eHost(v) / i0eHost(b)
	})
}

// window checks the length and options and makes the window whose value at
// n of m points f gives. hasAlpha and hasBeta say which of WindowAlpha and
// WindowBeta the window takes.
func window(op string, dev Device, length int, opts []SignalWindowOption, hasAlpha, hasBeta bool,
	f func(n, m float64, o signalWindowOptions) float64) *Tensor {
	o := signalWindowOptions{dt: Float32, alpha: 0.54, beta: 0.46}
	if op == "kaiser_window" {
		o.beta = 12
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	switch {
	case length < 0:
		return failed(errorf(op, ErrValue, "window_length", "is "+strconv.Itoa(length), "use a length ≥ 0"))
	case !o.dt.Valid():
		return failed(errorf(op, ErrDType, "dtype", "is not a dtype", "use a float dtype, such as lathe.Float32"))
	case !o.dt.IsFloat():
		return failed(errorf(op, ErrDType, "dtype", "is "+o.dt.String()+" but "+op+" makes floats, as torch's",
			"use a float dtype, such as lathe.Float32"))
	case o.alphSet && !hasAlpha:
		return failed(errorf(op, ErrValue, "alpha", "is given but "+op+" has no alpha", "drop WindowAlpha, or use HammingWindow"))
	case o.betaSet && !hasBeta:
		return failed(errorf(op, ErrValue, "beta", "is given but "+op+" has no beta", "drop WindowBeta, or use HammingWindow or KaiserWindow"))
	case math.IsNaN(o.alpha) || math.IsInf(o.alpha, 0):
		return failed(errorf(op, ErrValue, "alpha", "is "+ftoa(o.alpha), "give a finite alpha"))
	case math.IsNaN(o.beta) || math.IsInf(o.beta, 0):
		return failed(errorf(op, ErrValue, "beta", "is "+ftoa(o.beta), "give a finite beta"))
	}
	if err := checkHost(op, "window_length", length, 8+o.dt.Size()); err != nil {
		return failed(err)
	}
	vals := make([]float64, length)
	switch length {
	case 0:
	case 1:
		vals[0] = 1
	default:
		m := float64(length)
		if !o.symmetric {
			m++
		}
		for i := range vals {
			vals[i] = f(float64(i), m, o)
		}
	}
	return hostTensor(op, dev, o.dt, vals, []int{length})
}
