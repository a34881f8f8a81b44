package layout

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// Window is the geometry of a window that slides over the spatial dims of an
// (N, C, d1, ..., dk) tensor: convolution, pooling, unfold and fold share it.
// Every slice has one entry per spatial dim.
type Window struct {
	Kernel   []int
	Stride   []int
	Padding  []int // zeros (or -inf for max pooling) on both sides
	Dilation []int
	CeilMode bool // pooling: round output sizes up (PyTorch's ceil_mode)
}

// Dims returns the number of spatial dims.
func (w Window) Dims() int { return len(w.Kernel) }

// Span returns the extent of the dilated kernel along dim i.
func (w Window) Span(i int) int { return w.Dilation[i]*(w.Kernel[i]-1) + 1 }

// OutSize returns the output size along spatial dim i for an input of size n,
// as PyTorch computes it (pooling_output_shape in ATen's Pool.h):
// floor((n + 2p - span) / s) + 1, or with CeilMode the ceiling, less one
// when the last window would start in the right padding. Both round toward
// -∞, so that in ceil mode a window longer than the padded input still
// counts when it starts inside (n = 3, kernel 4, stride 4: one window, as
// torch's max_pool1d(x, 4, ceil_mode=True)); the kernels clip it to the
// input (PoolTaps) and the average's count to the right padding. The
// result is 0 when no window fits. Check has made sure that n + 2p and the
// span fit an int, and no step here passes them: ATen's room + s - 1 and
// (out-1)·s overflow for a stride near MaxInt.
func (w Window) OutSize(i, n int) int {
	s, p := w.Stride[i], w.Padding[i]
	room := n + 2*p - w.Span(i)
	if !w.CeilMode {
		return max(floorDiv(room, s)+1, 0)
	}
	q := ceilDiv(room, s) // out - 1
	// Drop the last window if it starts past the input: q·s ≥ n+p, which
	// for q > 0 is q > (n+p-1)/s when n+p ≥ 1 (and always when n+p is 0);
	// for q ≤ 0, |q·s| is at most |room|.
	m := n + p
	if q <= 0 && q*s >= m || q > 0 && (m < 1 || q > (m-1)/s) {
		q--
	}
	return max(q+1, 0)
}

// ceilDiv is a/b rounded toward +∞ (b > 0).
func ceilDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}

// floorDiv is a/b rounded toward -∞ (b > 0), ATen's div_rtn.
func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Check validates the window for an input whose spatial sizes are in: each
// option has one entry per dim, kernel, stride and dilation are positive,
// padding is not negative (and, for pooling, at most half the kernel, and
// the input not empty), and every output size is at least 1. Errors are ErrValue naming the option, or
// ErrShape naming arg when the input is too small.
func (w Window) Check(arg string, in []int, pooling bool) error {
	nd := len(in)
	for _, o := range []struct {
		name string
		vals []int
		min  int
	}{{"kernel_size", w.Kernel, 1}, {"stride", w.Stride, 1}, {"padding", w.Padding, 0}, {"dilation", w.Dilation, 1}} {
		if len(o.vals) != nd {
			return CountError(o.name, len(o.vals), nd)
		}
		for _, v := range o.vals {
			if v < o.min {
				return &dispatch.Error{Kind: dispatch.ErrValue, Arg: o.name, Detail: "is " + dispatch.FormatShape(o.vals) + ", below " + strconv.Itoa(o.min),
					Found: dispatch.FormatShape(o.vals), Fix: "use values of at least " + strconv.Itoa(o.min)}
			}
		}
	}
	for i, n := range in {
		if pooling && n < 1 {
			// PyTorch's pool*_shape_check: "Expected 3D or 4D (batch mode)
			// tensor with optional 0 dim batch size", whatever the padding.
			return &dispatch.Error{Kind: dispatch.ErrShape, Arg: arg, Found: dispatch.FormatShape(in),
				Detail: "has spatial size " + dispatch.FormatShape(in) + " but pooling needs every spatial dim non-empty",
				Fix:    "pass an input with at least one element in each spatial dim"}
		}
		if err := w.checkRange(i, n); err != nil {
			return err
		}
		if pooling && w.Padding[i] > w.Kernel[i]/2 {
			return &dispatch.Error{Kind: dispatch.ErrValue, Arg: "padding", Detail: "is " + dispatch.FormatShape(w.Padding) + ", more than half the kernel " + dispatch.FormatShape(w.Kernel),
				Fix: "use padding of at most kernel_size/2, as PyTorch requires"}
		}
		if w.OutSize(i, n) < 1 {
			return &dispatch.Error{Kind: dispatch.ErrShape, Arg: arg,
				Detail: "has spatial size " + dispatch.FormatShape(in) + ", too small for a window of " + dispatch.FormatShape(w.Kernel) +
					" with padding " + dispatch.FormatShape(w.Padding) + " and dilation " + dispatch.FormatShape(w.Dilation),
				Found: dispatch.FormatShape(in), Fix: "use a larger input, more padding or a smaller kernel"}
		}
	}
	return nil
}

// checkRange refuses a window whose arithmetic along dim i, for an input
// of size n, would pass what an int holds: the dilated kernel's span, or
// the padded input n + 2p. Past them, the output size cannot overflow.
func (w Window) checkRange(i, n int) error {
	if w.Kernel[i]-1 > (math.MaxInt-1)/w.Dilation[i] {
		arg, vals := "dilation", w.Dilation
		if w.Dilation[i] == 1 {
			arg, vals = "kernel_size", w.Kernel
		}
		return &dispatch.Error{Kind: dispatch.ErrValue, Arg: arg, Found: dispatch.FormatShape(vals),
			Detail: "is " + dispatch.FormatShape(vals) + ": kernel " + dispatch.FormatShape(w.Kernel) + " dilated by " + dispatch.FormatShape(w.Dilation) +
				" spans more elements than an int counts", Fix: "use a smaller kernel or dilation"}
	}
	if w.Padding[i] > (math.MaxInt-max(n, 0))/2 {
		return &dispatch.Error{Kind: dispatch.ErrValue, Arg: "padding", Found: dispatch.FormatShape(w.Padding),
			Detail: "is " + dispatch.FormatShape(w.Padding) + ": an input of size " + strconv.Itoa(n) + " padded on both sides has more elements than an int counts",
			Fix:    "use less padding"}
	}
	return nil
}

// CountError is the error of a per-dim option or size list arg that has n
// values for nd spatial dims.
func CountError(arg string, n, nd int) *dispatch.Error {
	return &dispatch.Error{Kind: dispatch.ErrValue, Arg: arg, Detail: "has " + strconv.Itoa(n) + " values for " + strconv.Itoa(nd) + " spatial dims",
		Expected: strconv.Itoa(nd), Found: strconv.Itoa(n), Fix: "give one value, or one per spatial dim"}
}

// OutShape returns the spatial output sizes for spatial input sizes in.
func (w Window) OutShape(in []int) []int {
	out := make([]int, len(in))
	for i, n := range in {
		out[i] = w.OutSize(i, n)
	}
	return out
}
