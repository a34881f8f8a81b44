package lathe

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzGrid draws GridSample (bilinear, nearest or bicubic; zeros, border or
// reflection padding; align_corners or not) of 4-d and 5-d inputs, now and
// then of another rank, dtype, mode or padding, with grids that fit or do
// not, whose coordinates are mostly in [-1.5, 1.5] (many of them exact
// nearest ties) and sometimes NaN, ±Inf or far outside (1e8, 1e30, 3e38),
// and AffineGrid of 2-d and 3-d maps for sizes that are mostly small and
// sometimes 0, negative, of another rank or near int's edge. The oracle
// is torch's formulas (GridSampler.h, affine_grid) computed here in
// float64: a refusal of the kind the rule gives, else the shape, the dtype
// and values within the rounding of the dtype, and wgpu:0 agreeing with
// the cpu.
func FuzzGrid(f *testing.F) {
	f.Add([]byte{1, 0, 0, 1, 2, 2, 0, 3, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 6, 11, 16, 21, 26, 31, 36, 41, 46, 51, 56, 61, 66, 71, 76, 81, 86, 91, 96, 101, 106, 111, 116, 1, 5, 16, 27, 38, 0, 11, 22, 33, 44, 6, 17, 28})
	f.Add([]byte{1, 0, 0, 2, 1, 1, 0, 2, 0, 0, 0, 2, 2, 0, 3, 0, 1, 0, 1, 0, 1, 0, 1, 0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 1, 32, 16, 24, 40, 8, 28, 20, 36, 32, 16, 24, 40, 8, 28, 20, 36})
	f.Add([]byte{1, 0, 0, 1, 1, 2, 0, 2, 0, 0, 0, 3, 2, 0, 0, 0, 2, 0, 2, 0, 0, 1, 1, 2, 11, 20, 29, 38, 47, 56, 65, 74, 1, 205, 206, 30, 208, 12, 224, 211, 212, 30, 214, 12, 224})
	f.Add([]byte{1, 1, 0, 1, 2, 1, 0, 2, 0, 2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 0, 0, 2, 0, 1, 0, 1, 0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95, 100, 105, 110, 115, 120, 125, 130, 135, 140, 145, 150, 155, 160, 165, 170, 175, 1, 2, 15, 28, 41, 5, 18, 31, 44, 8, 21, 34, 47})
	f.Add([]byte{1, 1, 0, 1, 1, 1, 0, 1, 0, 2, 0, 0, 0, 2, 1, 2, 0, 4, 0, 1, 0, 0, 0, 0, 0, 1, 0, 7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 1, 205, 210, 24, 32, 16, 220, 40, 205, 210, 24, 32, 16})
	f.Add([]byte{1, 0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 1, 2, 15, 3, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 2, 3, 1, 24, 24, 24, 24, 24, 24})
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 2, 0, 3, 0, 0, 0, 1, 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 1})
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 2, 0, 0, 3, 1, 2, 10, 18, 26, 34, 42, 50, 58, 66, 74, 82, 90, 0})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		if r.intn(4) == 0 {
			fuzzAffineGrid(t, r)
			return
		}
		fuzzGridSample(t, r)
	})
}

// fzGridDTypes are the dtypes GridSample and AffineGrid draw: mostly
// float32, the other floats (torch 1.13's cpu has no 16-bit grid_sample;
// lathe's computes it in float32 between conversions, as README says of
// the 16-bit floats), and int32, which they refuse.
var fzGridDTypes = []DType{Float32, Float32, Float32, Float64, Float16, BFloat16, Float32, Int32}

// fzGridCoords are the grid values past the ordinary ones: the edges, NaN,
// the infinities and points far outside, where the padding modes and the
// cpu kernels' rounding decide.
var fzGridCoords = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e30, -1e30, 3e38, -3e38, 1e8, -1e8,
	7.5, -6.25, 3.1, -2.9, 1.0001, -1.0001, 1e-40, 0.999, 1 + 0x1p-20}

// coord is a grid value: mostly a sixteenth in [-1.5, 1.5] (so that
// nearest sampling meets exact ties), one time in five one of
// fzGridCoords.
func (r *fzReader) coord() float64 {
	c := r.byte()
	if c >= 205 {
		return fzGridCoords[int(c)%len(fzGridCoords)]
	}
	return float64(int(c)%49-24) / 16
}

// rare is a choice that comes true one time in n, and never past the end
// of the bytes.
func (r *fzReader) rare(n int) bool { return r.intn(n) == n-1 }

// gridTensor is a tensor of dt and shape from values drawn by value,
// transposed in its first two dims (and copied back) when the reader says
// so, as fzOperand makes one.
func (r *fzReader) gridTensor(dt DType, shape []int, value func() float64) *Tensor {
	ts := slices.Clone(shape)
	transposed := len(shape) >= 2 && r.intn(4) == 0
	if transposed {
		ts[0], ts[1] = ts[1], ts[0]
	}
	v := make([]float64, dispatch.Numel(ts))
	for i := range v {
		v[i] = value()
	}
	x := fzTensor(v, dt, ts)
	if transposed {
		return x.Transpose(0, 1)
	}
	return x
}

func fuzzGridSample(t *testing.T, r *fzReader) {
	rank := 4 + r.intn(2)
	if r.rare(16) {
		rank = []int{3, 6}[r.intn(2)]
	}
	k := max(rank-2, 1)
	xs := []int{r.intn(3), r.intn(3)}
	for range rank - 2 {
		s := 1 + r.intn(6-k) // 1..4 in 2-d, 1..3 in 3-d
		if r.rare(16) {
			s = 0
		}
		xs = append(xs, s)
	}
	gs := []int{xs[0]}
	if r.rare(16) {
		gs[0] = r.intn(3)
	}
	gr := rank
	if r.rare(16) {
		gr = 3 + r.intn(4)
	}
	for range gr - 2 {
		gs = append(gs, r.intn(6-k))
	}
	gk := k
	if r.rare(16) {
		gk = r.intn(5)
	}
	gs = append(gs, gk)
	dt := fzGridDTypes[r.intn(len(fzGridDTypes))]
	gdt := dt
	if r.rare(16) {
		gdt = fzGridDTypes[r.intn(len(fzGridDTypes))]
	}
	mode := []string{"bilinear", "nearest", "bicubic"}[r.intn(3)]
	if r.rare(32) {
		mode = "area"
	}
	padding := []string{"zeros", "border", "reflection"}[r.intn(3)]
	if r.rare(32) {
		padding = "circular"
	}
	align := r.intn(2) == 1
	clean := r.intn(2) == 0 // x without NaN and infinities, so that most points show a value
	value := r.value
	if clean {
		value = func() float64 { return float64(int(r.byte())%17-8) / 2 }
	}
	x := r.gridTensor(dt, xs, value)
	grid := r.gridTensor(gdt, gs, r.coord)

	opts := []GridOption{GridMode(mode), GridPadding(padding)}
	if align {
		opts = append(opts, GridAlignCorners())
	}
	label := "grid_sample/" + dt.String() + "/" + mode + "/" + padding + "/align=" + strconv.FormatBool(align) +
		dispatch.FormatShape(xs) + dispatch.FormatShape(gs)
	if gdt != dt {
		label += "/grid " + gdt.String()
	}

	// The rule: each fault's kind; an input with two may be refused for either.
	var faults []error
	isFloat := func(d DType) bool { return d == Float32 || d == Float64 || d == Float16 || d == BFloat16 }
	if !isFloat(dt) || !isFloat(gdt) || dt != gdt {
		faults = append(faults, ErrDType)
	}
	if mode == "area" || padding == "circular" {
		faults = append(faults, ErrValue)
	}
	switch {
	case rank != 4 && rank != 5:
		faults = append(faults, ErrShape)
	case mode == "bicubic" && rank == 5:
		faults = append(faults, ErrValue)
	}
	if gr != rank || gk != k || gs[0] != xs[0] || slices.Contains(xs[2:], 0) {
		faults = append(faults, ErrShape)
	}
	refuse := fzFault(faults)
	want := append(slices.Clone(xs[:2]), gs[1:len(gs)-1]...)
	before, _ := fzHost(x)
	out := fzDiff(t, label, fzGridDeviceTol(x), func(in []*Tensor) *Tensor { return GridSample(in[0], in[1], opts...) }, x, grid)
	fzWant(t, label, out, refuse, want, dt)
	if refuse != nil || out.Err() != nil {
		if after, _ := fzHost(x); !slices.EqualFunc(before, after, func(a, b float64) bool { return fzClose(a, b, 0) }) {
			t.Fatalf("%s: a refused call changed x", label)
		}
		return
	}
	got, err := fzHost(out)
	if err != nil {
		t.Fatal(err)
	}
	xv, _ := fzHost(x)
	gv, _ := fzHost(grid)
	ref := fzGridRef{mode: mode, padding: padding, align: align, k: k, eps: 0x1p-24, round: fzRound32}
	if dt == Float64 {
		ref.eps, ref.round = 0x1p-53, func(v float64) float64 { return v }
	}
	for j := range k {
		ref.size[j] = xs[rank-1-j] // component j indexes x's dim rank-1-j: x along W
	}
	n, c := xs[0], xs[1]
	plane := dispatch.Numel(xs[2:])
	points := dispatch.Numel(gs[1 : len(gs)-1])
	for b := range n {
		for p := range points {
			taps, fill := ref.taps(gv[(b*points+p)*k : (b*points+p+1)*k])
			for ch := range c {
				img := xv[(b*c+ch)*plane : (b*c+ch+1)*plane]
				w, tol, skip := fill, 0.0, false
				if taps != nil {
					w, tol, skip = ref.sum(taps, img)
				}
				i := (b*c+ch)*points + p
				if !skip && !fzGridClose(got[i], w, tol, dt) {
					t.Fatalf("%s: output (%d, %d, point %d) at grid %v is %v, torch's formula gives %v (tolerance %g)",
						label, b, ch, p, gv[(b*points+p)*k:(b*points+p+1)*k], got[i], w, tol)
				}
			}
		}
	}
}

// fzGridDeviceTol is fzWindowTol for an x of any float dtype: a bfloat16
// one reaches float32's range as a float32 one does, where a sum on its
// way may pass it on one device and not on another (the devices are not
// compared), and a 16-bit result may round to either side of a step.
func fzGridDeviceTol(x *Tensor) float64 {
	tol := fzWindowTol(x)
	switch x.DType() {
	case BFloat16:
		if fzFiniteSpread(x) > math.MaxFloat32/16 {
			return -1
		}
		fallthrough
	case Float16:
		if tol > 0 {
			tol *= 1000
		}
	}
	return tol
}

// fzRound32 rounds v to float32, as the kernels compute float32 and the
// 16-bit floats. One float64 operation rounded so gives the float32
// operation's result (float64 carries more than twice float32's bits).
func fzRound32(v float64) float64 { return float64(float32(v)) }

// fzGridRef is grid_sample for one grid point, as torch 1.13's cpu kernels
// compute it: GridSampler.h's unnormalize, reflect and clip, and the
// vectorised 2-d kernel's forms of them (GridSamplerKernel.cpp), which
// lathe uses in 3-d too (README: far points and NaN read as the cpu
// kernels read them; build/torchref/grid.py says where the 3-d kernel
// differs). The coordinates are rounded to the kernel's precision step by
// step (round), so that a pixel chosen here is the one the kernel chooses
// and exact ties stay ties; the weights and sums are float64, and eps is
// the kernel's rounding unit.
type fzGridRef struct {
	mode, padding string
	align         bool
	k             int
	size          [3]int // the size of the dim that grid component j indexes
	eps           float64
	round         func(float64) float64
}

// fzTap is a pixel (its offset in a plane, or -1 for one outside, which
// reads 0) and its weight.
type fzTap struct {
	at int
	w  float64
}

// unnormalize maps a grid value to pixels along component j:
// (g+1)·(size-1)/2 with align_corners, else (g+1)·size/2 - 0.5, in the
// vectorised kernel's order of operations (GridSampler.h's
// ((g+1)·size-1)/2 rounds the same, the halving being exact).
func (g fzGridRef) unnormalize(v float64, j int) float64 {
	s := float64(g.size[j])
	if g.align {
		return g.round(g.round(v+1) * ((s - 1) / 2))
	}
	return g.round(g.round(g.round(v+1)*(s/2)) - 0.5)
}

// pad applies the padding mode (compute_coordinates): reflection folds c
// into [low, low+period/2] as the vectorised kernel does, |c-low| less its
// whole periods, or the rest of the period if shorter; border and
// reflection then clip to [0, size-1]. A NaN (an infinity reflected is
// one) clips to pixel 0 in 2-d and size-1 in 3-d, as the two cpu kernels
// do.
func (g fzGridRef) pad(c float64, j int) float64 {
	s := float64(g.size[j])
	switch g.padding {
	case "zeros":
		return c
	case "reflection":
		low, period := -0.5, 2*s
		if g.align {
			low, period = 0, 2*(s-1)
		}
		if period == 0 {
			c = 0
			break
		}
		dist := math.Abs(g.round(c - low))
		extra := g.round(dist - g.round(math.Trunc(g.round(dist/period))*period))
		if math.IsNaN(extra) {
			c = extra
		} else {
			c = g.round(min(extra, g.round(period-extra)) + low)
		}
	}
	switch {
	case math.IsNaN(c) && g.k == 2:
		return 0
	case math.IsNaN(c):
		return s - 1
	}
	return min(max(c, 0), s-1)
}

// taps is the pixels a grid point reads and their weights, or nil and the
// value every channel takes there.
func (g fzGridRef) taps(point []float64) ([]fzTap, float64) {
	stride := [3]int{1, g.size[0], g.size[0] * g.size[1]}
	inside := func(i float64, j int) bool { return i >= 0 && i < float64(g.size[j]) }
	if g.mode == "bicubic" {
		// Each of the 4×4 taps around the unpadded point is padded by
		// itself (get_value_bounded); its weights are Keys' with A = -0.75
		// (UpSample.h's get_cubic_upsample_coefficients).
		var w [2][4]float64
		var at [2][4]float64
		for j := range 2 {
			c := g.unnormalize(point[j], j)
			f := math.Floor(c)
			w[j] = fzCubic(c - f)
			for i := range 4 {
				at[j][i] = g.pad(g.round(g.round(f-1)+float64(i)), j)
			}
		}
		var taps []fzTap
		for ry := range 4 {
			for ix := range 4 {
				tap := fzTap{at: -1, w: w[0][ix] * w[1][ry]}
				if inside(at[0][ix], 0) && inside(at[1][ry], 1) {
					tap.at = int(at[0][ix]) + int(at[1][ry])*g.size[0]
				}
				taps = append(taps, tap)
			}
		}
		return taps, 0
	}
	src := make([]float64, g.k)
	for j := range g.k {
		src[j] = g.pad(g.unnormalize(point[j], j), j)
	}
	if g.mode == "nearest" {
		// Ties round to even in 2-d (the vectorised kernel's nearbyint),
		// away from zero in 3-d (the scalar kernel's std::round).
		at := 0
		for j, s := range src {
			p := math.RoundToEven(s)
			if g.k == 3 {
				p = math.Round(s)
			}
			if !inside(p, j) { // NaN included
				return nil, 0
			}
			at += int(p) * stride[j]
		}
		return []fzTap{{at: at, w: 1}}, 0
	}
	// Bilinear (trilinear): the 2^k pixels around the point, those outside
	// left out. A point with no fraction (NaN or infinite, zeros padding)
	// is NaN in 2-d, where the vectorised kernel multiplies the masked
	// pixels by their NaN weights, and 0 in 3-d, where the scalar one
	// skips them.
	var taps []fzTap
	for corner := range 1 << g.k {
		tap := fzTap{w: 1}
		for j, s := range src {
			f := math.Floor(s)
			frac := s - f
			if math.IsNaN(frac) {
				if g.k == 2 {
					return nil, math.NaN()
				}
				return nil, 0
			}
			if corner>>j&1 == 1 {
				f, tap.w = f+1, tap.w*frac
			} else {
				tap.w *= 1 - frac
			}
			if !inside(f, j) {
				tap.at = -1
			} else if tap.at >= 0 {
				tap.at += int(f) * stride[j]
			}
		}
		if tap.at >= 0 {
			taps = append(taps, tap)
		}
	}
	if taps == nil {
		return nil, 0
	}
	return taps, 0
}

// fzCubic is the weights of the taps at -1, 0, 1 and 2 pixels from the
// floor for a fraction t.
func fzCubic(t float64) [4]float64 {
	const a = -0.75
	near := func(x float64) float64 { return ((a+2)*x-(a+3))*x*x + 1 }
	far := func(x float64) float64 { return ((a*x-5*a)*x+8*a)*x - 4*a }
	return [4]float64{far(t + 1), near(t), near(1 - t), far(2 - t)}
}

// sum is a point's value in one channel's plane: its taps weighted, and
// the tolerance for a kernel rounding at eps (the weights and each sum);
// skip says that a float32 sum of these terms may pass float32's range
// before it ends, so that no value can be promised.
func (g fzGridRef) sum(taps []fzTap, img []float64) (v, tol float64, skip bool) {
	mag, largest := 0.0, 0.0
	for _, tap := range taps {
		x := 0.0
		if tap.at >= 0 {
			x = img[tap.at]
		}
		v += tap.w * x
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			mag += math.Abs(x) * max(1, math.Abs(tap.w))
			largest = max(largest, math.Abs(x))
		}
	}
	// A bicubic row's sum, before its weight, may reach 1.3 times its
	// largest pixel.
	return v, 32 * g.eps * mag, g.eps > 0x1p-30 && (2*mag > math.MaxFloat32 || 4*largest > math.MaxFloat32)
}

// fzGridClose reports whether a result of dtype dt is want within tol,
// and the rounding of the result to dt; NaN matches NaN, an infinity
// itself, and a value within tol of dt's largest one may have become an
// infinity of its sign.
func fzGridClose(got, want, tol float64, dt DType) bool {
	if math.IsNaN(got) || math.IsNaN(want) || math.IsInf(want, 0) {
		return math.IsNaN(got) && math.IsNaN(want) || got == want
	}
	// unit is the result's rounding, tiny a few of its (or float32's)
	// subnormal steps, where a sum of products loses its relative precision.
	largest, unit, tiny := math.MaxFloat32, 0.0, 0.0
	switch dt {
	case Float16:
		largest, unit, tiny = 65504, 0x1p-11, 0x1p-23
	case BFloat16:
		largest, unit, tiny = 0x1.fep127, 0x1p-8, 0x1p-128
	case Float32:
		unit, tiny = 0x1p-24, 0x1p-144
	case Float64:
		largest, tiny = math.MaxFloat64, 0x1p-1068
	}
	tol += unit*math.Abs(want) + tiny
	if math.Abs(want)+tol >= largest*(1-unit) && math.Signbit(got) == math.Signbit(want) &&
		(math.IsInf(got, 0) || math.Abs(got) >= largest*(1-2*unit)) {
		return true
	}
	return math.Abs(got-want) <= tol
}

func fuzzAffineGrid(t *testing.T, r *fzReader) {
	rank := 4 + r.intn(2)
	if r.rare(16) {
		rank = r.intn(7)
	}
	size := make([]int, rank)
	for i := range size {
		size[i] = 1 + r.intn(4)
		if r.rare(16) {
			size[i] = r.size() // 0 to 4 or an extreme
		}
	}
	k := 2
	if rank == 5 {
		k = 3
	}
	ts := []int{1, k, k + 1}
	if rank > 0 && size[0] >= 0 && size[0] <= 4 {
		ts[0] = size[0]
	}
	if r.rare(16) {
		ts[r.intn(3)] = r.intn(5)
	}
	dt := fzGridDTypes[r.intn(len(fzGridDTypes))]
	theta := r.gridTensor(dt, ts, r.value)
	align := r.intn(2) == 1
	label := "affine_grid/" + dt.String() + dispatch.FormatShape(ts) + "/size" + dispatch.FormatShape(size) + "/align=" + strconv.FormatBool(align)

	var faults []error
	if rank != 4 && rank != 5 || slices.ContainsFunc(size, func(s int) bool { return s < 1 }) {
		faults = append(faults, ErrValue)
	}
	if dt == Int32 {
		faults = append(faults, ErrDType)
	}
	if rank == 4 || rank == 5 {
		if ts[0] != size[0] || ts[1] != k || ts[2] != k+1 {
			faults = append(faults, ErrShape)
		}
	}
	var want []int
	if len(faults) == 0 {
		want = append(slices.Clone(size[:1]), size[2:]...)
		want = append(want, k)
		if fzProdOverflows(size[2:]...) {
			faults = append(faults, ErrOutOfMemory) // more grid points than an int counts
		}
		fzSizeBound(t, label, len(faults) == 0, want)
	}
	refuse := fzFault(faults)
	out := fzDiff(t, label, fzGridDeviceTol(theta), func(in []*Tensor) *Tensor { return AffineGrid(in[0], size, align) }, theta)
	fzWant(t, label, out, refuse, want, dt)
	if refuse != nil || out.Err() != nil {
		return
	}
	got, err := fzHost(out)
	if err != nil {
		t.Fatal(err)
	}
	th, _ := fzHost(theta)
	// The base grid: torch's linspace_from_neg_one per spatial dim, -1 to 1
	// through the pixels' centres with align_corners, scaled by (s-1)/s
	// without, 0 for a single pixel; a point's (x, y[, z], 1) with x along
	// the last dim.
	spatial := size[2:]
	axes := make([][]float64, k)
	for j := range k {
		s := spatial[k-1-j]
		axes[j] = make([]float64, s)
		for i := range s {
			if s > 1 {
				axes[j][i] = -1 + 2*float64(i)/float64(s-1)
				if !align {
					axes[j][i] *= float64(s-1) / float64(s)
				}
			}
		}
	}
	eps, unit := 0x1p-22, 0.0
	switch dt {
	case Float64:
		eps = 0x1p-50
	case Float16:
		unit = 0x1p-11
	case BFloat16:
		unit = 0x1p-8
	}
	points := dispatch.Numel(spatial)
	at := make([]int, k)
	base := make([]float64, k+1)
	for p := range points {
		rest := p
		for d := k - 1; d >= 0; d-- {
			at[d] = rest % spatial[d]
			rest /= spatial[d]
		}
		for j := range k {
			base[j] = axes[j][at[k-1-j]]
		}
		base[k] = 1
		for b := range size[0] {
			for i := range k {
				w, mag := 0.0, 0.0
				for j, e := range base {
					// A 16-bit theta multiplies a base rounded to its dtype.
					if unit != 0 {
						e, _ = fzCastRef(e, Float64, dt)
					}
					v := th[(b*k+i)*(k+1)+j]
					w += v * e
					if !math.IsInf(v, 0) && !math.IsNaN(v) {
						mag += math.Abs(v * e)
					}
				}
				o := ((b*points+p)*k + i)
				if (dt == Float32 || unit != 0) && 2*mag > math.MaxFloat32 {
					continue // a float32 sum may pass its range on the way
				}
				if !fzGridClose(got[o], w, eps*mag, dt) {
					t.Fatalf("%s: grid (%d, point %d)[%d] is %v, theta·(x, y[, z], 1) gives %v", label, b, p, i, got[o], w)
				}
			}
		}
	}
}

// fzFault is the refusal of an input with the given faults: none, the
// kind they share, or any kind where they differ (the op may find either
// first).
func fzFault(faults []error) error {
	if len(faults) == 0 {
		return nil
	}
	for _, f := range faults[1:] {
		if f != faults[0] {
			return errAny
		}
	}
	return faults[0]
}
