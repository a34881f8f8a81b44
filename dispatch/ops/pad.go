package ops

import "github.com/lathe-ml/lathe/dispatch"

// The padding modes other than constant (torch.nn.functional.pad's
// reflect, replicate and circular) fill the new elements from x's own.
// Each is a composite: per padded dim, an index_select with host-computed
// indices, so it runs on every device and dtype that index_select does, and
// its gradients (of any order) are index_select's. They take Padding with
// Value 0, as torch refuses a value for these modes.
//
// Unlike torch 1.13, which limits reflect and replicate to 2-D..5-D inputs
// padded in their last 1..3 dims and circular to every dim but the first
// two, they pad any dims of any rank, as constant mode does; where torch
// computes a result, theirs is the same.
var (
	ReflectPad   = dispatch.Register(&dispatch.Op[Padding]{Schema: schema("pad_reflect", "x"), Compose: edgePad(reflectPlan)})
	ReplicatePad = dispatch.Register(&dispatch.Op[Padding]{Schema: schema("pad_replicate", "x"), Compose: edgePad(replicatePlan)})
	CircularPad  = dispatch.Register(&dispatch.Op[Padding]{Schema: schema("pad_circular", "x"), Compose: edgePad(circularPlan)})
)

// A plan checks one padded dim of size n, padded by (l, r) with n+l+r = out
// ≥ 0, and returns which element of the dim each output element reads.
type plan func(d, n, l, r, out int) ([]int64, *dispatch.Error)

// edgePad pads x one dim at a time, the last dim first, as plan says.
func edgePad(p plan) func([]*dispatch.Tensor, Padding) (*dispatch.Tensor, error) {
	return func(in []*dispatch.Tensor, a Padding) (*dispatch.Tensor, error) {
		x := in[0]
		if len(a.Pads)%2 != 0 || len(a.Pads)/2 > x.Rank() {
			return nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "pads", Detail: "has " + itoa(len(a.Pads)) + " values for a tensor of rank " + itoa(x.Rank()),
				Fix: "give (left, right) pairs, at most one per dim, from the last dim backward"}
		}
		if a.Value != 0 {
			return nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "value", Found: ftoa(a.Value),
				Detail: "is " + ftoa(a.Value) + " but only constant mode fills with a value", Fix: "pass value 0, or use constant mode"}
		}
		picks := make([][]int64, len(a.Pads)/2)
		for i := range picks {
			d := x.Rank() - 1 - i
			n, l, r := x.Shape[d], a.Pads[2*i], a.Pads[2*i+1]
			out, ok := PaddedSize(n, l, r)
			if !ok || out < 0 {
				return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "pads", Found: dispatch.FormatShape(a.Pads),
					Detail: "is " + dispatch.FormatShape(a.Pads) + ", which takes dim " + itoa(d) + " of size " + itoa(n) + " to a size below 0 or past what an int counts",
					Fix:    "crop at most the dim's size, and pad less"}
			}
			if l == 0 && r == 0 {
				continue
			}
			var err *dispatch.Error
			if picks[i], err = p(d, n, l, r, out); err != nil {
				err.Arg, err.Found = "pads", dispatch.FormatShape(a.Pads)
				return nil, err
			}
		}
		y := x
		for i, pick := range picks {
			if pick == nil {
				continue
			}
			idx, err := dispatch.Upload(x.Device, pick, dispatch.Int64, []int{len(pick)})
			if err != nil {
				releaseMade(y, x)
				return nil, err
			}
			next, err := dispatch.Call(IndexSelect, IndexDim{Dim: x.Rank() - 1 - i}, y, idx)
			if err != nil {
				releaseMade(y, x)
				idx.Release()
				return nil, err
			}
			// The indices and the last dim's result go with the graph,
			// or at once: left to the collector, every pad took new
			// device memory.
			dispatch.ReleaseWithGraph(next, idx)
			if y != x {
				dispatch.ReleaseWithGraph(next, y)
			}
			y = next
		}
		if y == x { // nothing padded: a new handle on the same elements
			return dispatch.Call(Reshape, ViewShape{Shape: clone(x.Shape)}, x)
		}
		return y, nil
	}
}

// releaseMade releases t unless it is x, the caller's.
func releaseMade(t, x *dispatch.Tensor) {
	if t != x {
		t.Release()
	}
}

// picks is the out indices of a dim of size n padded by (l, r): output
// element j reads element at(j - l), at taking a place before or past the
// dim to one inside it.
func picks(out, l int, at func(p int) int) []int64 {
	s := make([]int64, out)
	for j := range s {
		s[j] = int64(at(j - l))
	}
	return s
}

// PadTooFar reports whether pads (l, r) reach past what mode fills from
// a dim of size n: reflect mode pads less than n, circular mode at most n.
func PadTooFar(mode string, n, l, r int) bool {
	switch mode {
	case "reflect":
		return l >= n || r >= n
	case "circular":
		return l > n || r > n
	}
	return false
}

// reflectPlan mirrors x at its first and last element without repeating
// them (torch's reflection_pad): each pad must be less than the dim's size,
// so one mirroring reaches every place. A negative pad crops first, as in
// torch, so (-1, 2) on [a b c d] is [b c d c b].
func reflectPlan(d, n, l, r, out int) ([]int64, *dispatch.Error) {
	if n == 0 {
		// "At most -1" would be no fix: an empty dim has nothing to mirror.
		return nil, &dispatch.Error{Kind: dispatch.ErrShape,
			Detail: "pads dim " + itoa(d) + " of size 0, which has no element for reflect mode to mirror", Fix: "pad a non-empty dim, or use constant mode"}
	}
	if PadTooFar("reflect", n, l, r) {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape,
			Detail: "pads dim " + itoa(d) + " of size " + itoa(n) + " by (" + itoa(l) + ", " + itoa(r) + ") but reflect mode pads less than the dim's size",
			Fix:    "pad each side of dim " + itoa(d) + " by at most " + itoa(n-1) + ", or use replicate or circular mode"}
	}
	return picks(out, l, func(p int) int {
		if p < 0 {
			return -p
		}
		if p >= n {
			return 2*(n-1) - p
		}
		return p
	}), nil
}

// replicatePlan repeats x's first and last element (torch's
// replication_pad); it needs one to repeat.
func replicatePlan(d, n, l, r, out int) ([]int64, *dispatch.Error) {
	if n == 0 && out > 0 {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape,
			Detail: "pads dim " + itoa(d) + " of size 0, which has no element for replicate mode to repeat", Fix: "pad a non-empty dim, or use constant mode"}
	}
	return picks(out, l, func(p int) int { return min(max(p, 0), n-1) }), nil
}

// circularPlan wraps x around (torch's _pad_circular): each pad is at most
// the dim's size. As in torch, negative pads crop first and the positive
// ones then wrap what is kept, so (-1, 2) on [a b c d] is [b c d b c].
func circularPlan(d, n, l, r, out int) ([]int64, *dispatch.Error) {
	if PadTooFar("circular", n, l, r) {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape,
			Detail: "pads dim " + itoa(d) + " of size " + itoa(n) + " by (" + itoa(l) + ", " + itoa(r) + ") but circular mode wraps around at most once",
			Fix:    "pad each side of dim " + itoa(d) + " by at most " + itoa(n)}
	}
	lo, hi := max(-l, 0), n-max(-r, 0) // the kept elements: [lo, hi)
	if hi <= lo && out > 0 {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape,
			Detail: "crops dim " + itoa(d) + " of size " + itoa(n) + " to nothing by (" + itoa(l) + ", " + itoa(r) + ") and then pads it, which circular mode cannot wrap",
			Fix:    "keep at least one element of dim " + itoa(d)}
	}
	m, pl := hi-lo, max(l, 0)
	s := make([]int64, out)
	for j := range s {
		s[j] = int64(lo + ((j-pl)%m+m)%m)
	}
	return s, nil
}
