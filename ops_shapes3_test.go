package lathe

import (
	"errors"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// Tests of ops_shapes3.go beyond the conformance suite (internal/conformance,
// shapes3.json, which compares values and gradients with torch's on every
// device): the bad-input rows, the errors that name op and argument, which
// results are views, and that nothing is left behind.

// biShapes3 are the bad-input rows of ops_shapes3.go.
func biShapes3() map[string]biOp {
	t := map[string]biOp{}
	huge := func(f func(*Tensor) *Tensor) func(Device) *Tensor {
		return func(dev Device) *Tensor { return f(biBig(dev, biHuge, biHuge)) }
	}
	for name, f := range map[string]func(*Tensor) *Tensor{
		"select":     func(x *Tensor) *Tensor { return x.Select(1, -1) },
		"t":          (*Tensor).T,
		"movedim":    func(x *Tensor) *Tensor { return x.MoveDim([]int{0}, []int{-1}) },
		"swapaxes":   func(x *Tensor) *Tensor { return x.SwapAxes(0, 1) },
		"unflatten":  func(x *Tensor) *Tensor { return x.Unflatten(-1, 1, -1) },
		"atleast_3d": AtLeast3D,
		"sgn":        (*Tensor).Sgn,
		"clamp_min":  func(x *Tensor) *Tensor { return x.ClampMin(0.5) },
		"clamp_max":  func(x *Tensor) *Tensor { return x.ClampMax(-0.5) },
	} {
		t[name] = biView(f, huge(f))
		if name == "sgn" || name == "clamp_min" || name == "clamp_max" {
			r := t[name]
			r.hugeOK = false // a copy of 2^40 elements
			t[name] = r
		}
	}
	t["ravel"] = biView((*Tensor).Ravel, func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).MT().Ravel() })
	t["msort"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Msort() }, kinds: "a", huge: huge((*Tensor).Msort)}
	t["positive"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Positive() }, kinds: "f", huge: huge((*Tensor).Positive), hugeOK: true}
	first := func(v, _ *Tensor) *Tensor { return v }
	second := func(_, v *Tensor) *Tensor { return v }
	t["aminmax"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return second(a[0].AminmaxDim(1, true)) }, kinds: "a",
		huge: func(dev Device) *Tensor { return first(biBig(dev, biHuge, biHuge, 2).AminmaxDim(2, false)) }}
	t["diagflat"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].DiagFlat(1) }, kinds: "a",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge).DiagFlat(0) }}
	t["combinations"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 4)} },
		call: func(a []*Tensor) *Tensor { return a[0].Combinations(2, true) }, kinds: "a",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge).Combinations(3, false) }}
	// The *_as functions read other's shape (and dtype) alone, so that
	// other may live on another device, as torch's; type_as moves x there.
	for name, f := range map[string]func(x *Tensor) *Tensor{
		"expand_as":  func(x *Tensor) *Tensor { return x.ExpandAs(Ones(CPU, Bool, 4, 2, 3)) },
		"reshape_as": func(x *Tensor) *Tensor { return x.ReshapeAs(Ones(CPU, Bool, 3, 2)) },
		"view_as":    func(x *Tensor) *Tensor { return x.ViewAs(Ones(CPU, Bool, 6)) },
	} {
		t[name] = biView(f, huge(func(x *Tensor) *Tensor { return f(x.Narrow(0, 0, 2).Narrow(1, 0, 3)) }))
	}
	t["type_as"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].TypeAs(Ones(a[0].Device(), Int32, 1)) }, kinds: "a",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).TypeAs(Ones(dev, Int32, 1)) }}
	vec := func(dev Device) []*Tensor { return []*Tensor{biF(dev, 3), biF(dev, 3)} }
	// dot's result is one element: no huge case.
	t["dot"] = biOp{args: vec, call: func(a []*Tensor) *Tensor { return a[0].Dot(a[1]) }, kinds: "fs"}
	t["vdot"] = biOp{args: vec, call: func(a []*Tensor) *Tensor { return a[0].Vdot(a[1]) }, kinds: "fs"}
	t["inner"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Inner(a[1]) }, kinds: "fs",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).Inner(biBig(dev, biHuge, biHuge)) }}
	t["mv"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Mv(a[1]) }, kinds: "fs"} // as addmv's, no huge case
	t["mm"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3, 2)} },
		call: func(a []*Tensor) *Tensor { return a[0].Mm(a[1]) }, kinds: "fs",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, 1).Mm(biBig(dev, 1, biHuge)) }}
	t["bmm"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 2, 3), biF(dev, 2, 3, 2)} },
		call: func(a []*Tensor) *Tensor { return a[0].Bmm(a[1]) }, kinds: "fs",
		huge: func(dev Device) *Tensor { return biBig(dev, 2, biHuge, 1).Bmm(biBig(dev, 2, 1, biHuge)) }}
	t["dist"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Dist(a[1], 3) }, kinds: "ff",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).Dist(biF(dev, 1), 2) }}
	t["rsub"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Rsub(a[1], 0.5) }, kinds: "ff",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).Rsub(biF(dev, 1), 2) }}
	t["float_power"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor {
			// A float64 result: a device without float64 refuses valid
			// arguments too, once they have passed the checks this row
			// is about.
			out := a[0].FloatPower(a[1])
			if err := out.Err(); errors.Is(err, ErrUnsupported) && strings.Contains(err.Error(), "no float64") {
				return Zeros(CPU, Float32, 1)
			}
			return out
		}, kinds: "aa",
		// On the cpu: a device without float64 refuses the cast first.
		huge: func(Device) *Tensor { return biBig(CPU, biHuge, biHuge).FloatPower(biF(CPU, 1)) }}
	t["trapezoid"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return TrapezoidX(a[0], a[1], 1) }, kinds: "ff",
		huge: func(dev Device) *Tensor { return Trapezoid(biBig(dev, biHuge, biHuge, 2), 1, 2) }}
	t["cumulative_trapezoid"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return CumulativeTrapezoidX(a[0], a[1], -1) }, kinds: "ff",
		huge: func(dev Device) *Tensor { return CumulativeTrapezoid(biBig(dev, biHuge, biHuge), 1, 1) }}
	return t
}

func TestShapes3LeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := RandN(CPU, Float32, 4, 6).To(dev).RequireGrad()
		y := RandN(CPU, Float32, 4, 6).To(dev)
		v := RandN(CPU, Float32, 6).To(dev)
		for name, f := range map[string]func(x *Tensor) *Tensor{
			"select":    func(x *Tensor) *Tensor { return x.Select(1, -2) },
			"t":         (*Tensor).T,
			"movedim":   func(x *Tensor) *Tensor { return x.MoveDim([]int{0}, []int{1}) },
			"swapaxes":  func(x *Tensor) *Tensor { return x.SwapAxes(0, 1) },
			"ravel":     func(x *Tensor) *Tensor { return x.T().Ravel() },
			"expand_as": func(x *Tensor) *Tensor { return x.Select(0, 1).ExpandAs(y) },
			"view_as":   func(x *Tensor) *Tensor { return x.ViewAs(v.Unsqueeze(0).Expand(4, 6)) },
			"unflatten": func(x *Tensor) *Tensor { return x.Unflatten(1, 3, -1) },
			"msort":     (*Tensor).Msort,
			"positive":  (*Tensor).Positive,
			"clamp_min": func(x *Tensor) *Tensor { return x.ClampMin(0.1) },
			"aminmax": func(x *Tensor) *Tensor {
				lo, hi := x.AminmaxDim(1, false)
				return lo.Add(hi)
			},
			"rsub":      func(x *Tensor) *Tensor { return x.Rsub(y, 0.5) },
			"atleast3d": AtLeast3D,
			"diagflat":  func(x *Tensor) *Tensor { return x.Select(0, 0).DiagFlat(1) },
			"combos":    func(x *Tensor) *Tensor { return x.Select(0, 0).Combinations(2, false) },
			"dot":       func(x *Tensor) *Tensor { return x.Select(0, 0).Dot(v) },
			"inner":     func(x *Tensor) *Tensor { return x.Inner(y) },
			"mv":        func(x *Tensor) *Tensor { return x.Mv(v) },
			"mm":        func(x *Tensor) *Tensor { return x.Mm(y.T()) },
			"bmm":       func(x *Tensor) *Tensor { return x.Unsqueeze(0).Bmm(y.T().Unsqueeze(0)) },
			"dist":      func(x *Tensor) *Tensor { return x.Dist(y, 3) },
			"trapezoid": func(x *Tensor) *Tensor { return TrapezoidX(x, v, 1) },
			"cumtrap":   func(x *Tensor) *Tensor { return CumulativeTrapezoid(x, 0.5, 0) },
		} {
			warmStepsTakeNothing(t, dev, name, x, f, true)
		}
	}
}

// TestShapes3Views checks that the functions torch answers with a view
// share x's storage.
func TestShapes3Views(t *testing.T) {
	x := Arange(CPU, Float32, 0, 24, 1).Reshape(2, 3, 4)
	for name, v := range map[string]*Tensor{
		"select": x.Select(1, -1), "t": x.Select(0, 0).T(), "movedim": x.MoveDim([]int{0}, []int{2}),
		"swapaxes": x.SwapAxes(0, 2), "ravel": x.Ravel(), "expand_as": x.Select(0, 1).ExpandAs(x),
		"reshape_as": x.ReshapeAs(x.Ravel()), "view_as": x.ViewAs(x.Ravel()), "unflatten": x.MT().Unflatten(1, 2, 2),
		"atleast_3d": AtLeast3D(x.Select(0, 1)), "positive": x.Positive(), "t of a vector": x.Ravel().T(),
	} {
		if v.Err() != nil || v.t.Storage != x.t.Storage {
			t.Errorf("%s: %v, not a view of x", name, v.Err())
		}
	}
	if got, err := x.Select(0, 0).Clip(2, 5).Float32s(); err != nil || !slices.Equal(got, []float32{2, 2, 2, 3, 4, 5, 5, 5, 5, 5, 5, 5}) {
		t.Errorf("clip(2, 5): %v %v", got, err)
	}
	parts, err := x.HSplit(3)
	if err != nil || len(parts) != 3 || parts[1].t.Storage != x.t.Storage {
		t.Errorf("hsplit: %v, not views of x", err)
	}
	b, err := BroadcastTensors(x, x.Select(0, 0))
	if err != nil || b[1].t.Storage != x.t.Storage || !slices.Equal(b[1].Shape(), []int{2, 3, 4}) {
		t.Errorf("broadcast_tensors: %v, not views of x", err)
	}
	s := x.Select(2, 1)
	if got, err := s.Float32s(); err != nil || !slices.Equal(got, []float32{1, 5, 9, 13, 17, 21}) {
		t.Errorf("select(2, 1): %v %v", got, err)
	}
	if sh, err := BroadcastShapes([]int{2, 1}, []int{3}, nil); err != nil || !slices.Equal(sh, []int{2, 3}) {
		t.Errorf("broadcast_shapes: %v %v, want [2 3]", sh, err)
	}
	if sh, err := BroadcastShapes(); err != nil || sh == nil || len(sh) != 0 {
		t.Errorf("broadcast_shapes(): %v %v, want []", sh, err)
	}
}

func TestShapes3Errors(t *testing.T) {
	x := Ones(CPU, Float32, 2, 3)
	first := func(v, _ *Tensor) error { return v.Err() }
	var nilT *Tensor
	moreOpsErr(t, "select index 3", x.Select(1, 3).Err(), ErrIndex, "select", "index")
	moreOpsErr(t, "select index -4", x.Select(1, -4).Err(), ErrIndex, "select", "index")
	moreOpsErr(t, "select dim 2", x.Select(2, 0).Err(), ErrIndex, "select", "dim")
	moreOpsErr(t, "select of 0-d", Scalar(CPU, float32(1)).Select(0, 0).Err(), ErrIndex, "select", "x")
	moreOpsErr(t, "select of nil", nilT.Select(0, 0).Err(), ErrValue, "select", "x")
	moreOpsErr(t, "t of rank 3", Ones(CPU, Float32, 1, 2, 3).T().Err(), ErrShape, "t", "x")
	moreOpsErr(t, "movedim lengths", x.MoveDim([]int{0}, []int{0, 1}).Err(), ErrValue, "movedim", "destination")
	moreOpsErr(t, "movedim repeated", x.MoveDim([]int{0, -2}, []int{0, 1}).Err(), ErrValue, "movedim", "source")
	moreOpsErr(t, "movedim dim 2", x.MoveDim([]int{0}, []int{2}).Err(), ErrIndex, "movedim", "destination")
	moreOpsErr(t, "swapaxes dim 2", x.SwapAxes(0, 2).Err(), ErrIndex, "swapaxes", "b")
	moreOpsErr(t, "expand_as nil", x.ExpandAs(nilT).Err(), ErrValue, "expand_as", "other")
	moreOpsErr(t, "type_as nil", x.TypeAs(nilT).Err(), ErrValue, "type_as", "other")
	released := Ones(CPU, Float32, 6)
	released.Release()
	moreOpsErr(t, "view_as released", x.ViewAs(released).Err(), ErrReleased, "view_as", "other")
	moreOpsErr(t, "view_as transposed", x.T().ViewAs(Ones(CPU, Float32, 6)).Err(), ErrShape, "view_as", "x")
	moreOpsErr(t, "unflatten product", x.Unflatten(1, 2, 2).Err(), ErrShape, "unflatten", "sizes")
	moreOpsErr(t, "unflatten two -1", x.Unflatten(1, -1, -1).Err(), ErrValue, "unflatten", "sizes")
	moreOpsErr(t, "unflatten empty", x.Unflatten(1).Err(), ErrValue, "unflatten", "sizes")
	moreOpsErr(t, "unflatten negative", x.Unflatten(1, -3, -1).Err(), ErrValue, "unflatten", "sizes")
	moreOpsErr(t, "unflatten overflow", x.Unflatten(1, 1<<40, 1<<40, 0).Err(), ErrShape, "unflatten", "sizes")
	moreOpsErr(t, "positive of bool", Ones(CPU, Bool, 2).Positive().Err(), ErrDType, "positive", "x")
	moreOpsErr(t, "clamp_min NaN", x.ClampMin(math.NaN()).Err(), ErrValue, "clamp_min", "min")
	moreOpsErr(t, "aminmax empty", first(Zeros(CPU, Float32, 0).Aminmax()), ErrShape, "aminmax", "x")
	moreOpsErr(t, "aminmax empty dim", first(Zeros(CPU, Float32, 2, 0).AminmaxDim(1, false)), ErrIndex, "aminmax", "dim")
	moreOpsErr(t, "rsub of bools", Ones(CPU, Bool, 2).Rsub(Ones(CPU, Bool, 2), 1).Err(), ErrDType, "rsub", "x")
	moreOpsErr(t, "rsub of a bool other", x.Rsub(Ones(CPU, Bool, 3), 1).Err(), ErrDType, "rsub", "other")
	moreOpsErr(t, "dist of a bool", x.Dist(Ones(CPU, Bool, 3), 1).Err(), ErrDType, "dist", "y")
	moreOpsErr(t, "rsub int alpha", Ones(CPU, Int32, 2).Rsub(Ones(CPU, Int64, 2), 0.5).Err(), ErrValue, "rsub", "alpha")
	moreOpsErr(t, "rsub shapes", x.Rsub(Ones(CPU, Float32, 2), 1).Err(), ErrShape, "rsub", "other")
	_, err := BroadcastShapes([]int{2}, []int{-1})
	moreOpsErr(t, "broadcast_shapes negative", err, ErrValue, "broadcast_shapes", "shapes[1]")
	_, err = BroadcastTensors(x, Ones(CPU, Float32, 3), Ones(CPU, Float32, 4))
	moreOpsErr(t, "broadcast_tensors", err, ErrShape, "broadcast_tensors", "tensors[2]")
	_, err = BroadcastTensors(x, nilT)
	moreOpsErr(t, "broadcast_tensors nil", err, ErrValue, "broadcast_tensors", "tensors[1]")
	_, err = x.HSplit(2)
	moreOpsErr(t, "hsplit 2 of 3", err, ErrValue, "hsplit", "sections")
	_, err = x.HSplit(0)
	moreOpsErr(t, "hsplit 0", err, ErrValue, "hsplit", "sections")
	_, err = x.DSplitAt([]int{1})
	moreOpsErr(t, "dsplit of a matrix", err, ErrShape, "dsplit", "x")
	moreOpsErr(t, "combinations r -1", Ones(CPU, Float32, 3).Combinations(-1, false).Err(), ErrValue, "combinations", "r")
	moreOpsErr(t, "combinations too many", Ones(CPU, Float32, 1000).Combinations(6, true).Err(), ErrOutOfMemory, "combinations", "r")
	moreOpsErr(t, "dot of a matrix", Ones(CPU, Float32, 2).Dot(x).Err(), ErrShape, "dot", "y")
	moreOpsErr(t, "dot lengths", Ones(CPU, Float32, 2).Dot(Ones(CPU, Float32, 3)).Err(), ErrShape, "dot", "y")
	moreOpsErr(t, "dot dtypes", Ones(CPU, Float32, 2).Dot(Ones(CPU, Float64, 2)).Err(), ErrDType, "dot", "y")
	moreOpsErr(t, "dot of bool", Ones(CPU, Bool, 2).Dot(Ones(CPU, Bool, 2)).Err(), ErrDType, "dot", "x")
	moreOpsErr(t, "mv length", x.Mv(Ones(CPU, Float32, 2)).Err(), ErrShape, "mv", "vec")
	moreOpsErr(t, "mm rank", x.Mm(Ones(CPU, Float32, 3)).Err(), ErrShape, "mm", "mat2")
	moreOpsErr(t, "mm sizes", x.Mm(x).Err(), ErrShape, "mm", "mat2")
	moreOpsErr(t, "bmm batch", Ones(CPU, Float32, 2, 2, 3).Bmm(Ones(CPU, Float32, 3, 3, 2)).Err(), ErrShape, "bmm", "mat2")
	moreOpsErr(t, "bmm dtypes", Ones(CPU, Float32, 2, 2, 3).Bmm(Ones(CPU, Int32, 2, 3, 2)).Err(), ErrDType, "bmm", "mat2")
	moreOpsErr(t, "inner sizes", x.Inner(Ones(CPU, Float32, 2)).Err(), ErrShape, "inner", "y")
	moreOpsErr(t, "dist of ints", Ones(CPU, Int32, 2).Dist(Ones(CPU, Int64, 2), 2).Err(), ErrDType, "dist", "x")
	moreOpsErr(t, "dist p NaN", x.Dist(x, math.NaN()).Err(), ErrValue, "dist", "p")
	moreOpsErr(t, "dist shapes", x.Dist(Ones(CPU, Float32, 2), 2).Err(), ErrShape, "dist", "y")
	moreOpsErr(t, "float_power shapes", x.FloatPower(Ones(CPU, Float32, 2)).Err(), ErrShape, "float_power", "exponent")
	moreOpsErr(t, "trapezoid of 0-d", Trapezoid(Scalar(CPU, float32(1)), 1, -1).Err(), ErrIndex, "trapezoid", "dim")
	moreOpsErr(t, "trapezoid of bool", Trapezoid(Ones(CPU, Bool, 3), 1, -1).Err(), ErrDType, "trapezoid", "y")
	moreOpsErr(t, "trapezoid points", TrapezoidX(x, Ones(CPU, Float32, 2), -1).Err(), ErrShape, "trapezoid", "x")
	moreOpsErr(t, "cumulative_trapezoid dim", CumulativeTrapezoid(x, 1, 2).Err(), ErrIndex, "cumulative_trapezoid", "dim")
	// Nothing else changes on a failed call: x is still whole.
	if got, err := x.Sum().Float32s(); err != nil || got[0] != 6 {
		t.Errorf("x after the failed calls: %v %v", got, err)
	}
}

// TestClampDType: Clamp's result has torch's dtype for its finite bounds
// (an infinite one is lathe's "no bound", torch's None), with torch's
// values: an int32 clamped to [1.5, 3] was int32 [2 2 3], torch's is
// float32 [1.5 2 3].
func TestClampDType(t *testing.T) {
	for _, dev := range biDevices(t) {
		x := FromSlice(dev, []int32{1, 2, 5}, 3)
		b := FromSlice(dev, []bool{true, false}, 2)
		for _, c := range []struct {
			name string
			got  *Tensor
			dt   DType
			want []float64
		}{
			{"int32/[1.5,3]", x.Clamp(1.5, 3), Float32, []float64{1.5, 2, 3}},
			{"int32/[2,3]", x.Clamp(2, 3), Int32, []float64{2, 2, 3}},
			{"int32/[0,inf]", x.Clamp(0, math.Inf(1)), Int32, []float64{1, 2, 5}},
			{"int32/[-inf,2.5]", x.Clamp(math.Inf(-1), 2.5), Float32, []float64{1, 2, 2.5}},
			{"bool/[0,1]", b.Clamp(0, 1), Int64, []float64{1, 0}},
			{"bool/[0.5,1]", b.Clamp(0.5, 1), Float32, []float64{1, 0.5}},
			{"clip/int32/[1.5,3]", x.Clip(1.5, 3), Float32, []float64{1.5, 2, 3}},
		} {
			v, err := c.got.To(CPU).Cast(Float64).Float64s()
			if err != nil || c.got.DType() != c.dt || !slices.Equal(v, c.want) {
				t.Errorf("%s %s: %v %v (%v), want %v %v", dev, c.name, c.got.DType(), v, err, c.dt, c.want)
			}
		}
	}
}

// TestCombinationsPastTheElements: r past a vector's elements is torch's
// empty [0, r] however large r is (FuzzShapesWindows's 2^40 allocated a
// walk of r ints, 8 TiB, and the process died), and it keeps the graph.
func TestCombinationsPastTheElements(t *testing.T) {
	x := FromSlice(CPU, []float32{1, 2, 3}).RequireGrad()
	for _, r := range []int{4, 1 << 40, math.MaxInt} {
		got := x.Combinations(r, false)
		if err := got.Err(); err != nil || !slices.Equal(got.Shape(), []int{0, r}) || got.DType() != Float32 {
			t.Fatalf("combinations(r=%d) of 3: shape %v, %v, %v; want [0 %d] float32", r, got.Shape(), got.DType(), err, r)
		}
		g, err := Grad(got.Sum(), []*Tensor{x})
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := g[0].Float32s(); !slices.Equal(v, []float32{0, 0, 0}) {
			t.Errorf("r=%d: the gradient is %v, want zeros", r, v)
		}
	}
	got := Zeros(CPU, Float32, 0).Combinations(1<<40, true) // with replacement, of nothing
	if err := got.Err(); err != nil || !slices.Equal(got.Shape(), []int{0, 1 << 40}) {
		t.Fatalf("combinations(r=2^40, with replacement) of 0: shape %v, %v", got.Shape(), err)
	}
}
