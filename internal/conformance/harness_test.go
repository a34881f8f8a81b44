package conformance

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

const dataDir = "../../testdata/conformance"

func loadCases(t *testing.T) []*Case {
	t.Helper()
	cases, err := Load(dataDir)
	if err != nil {
		t.Fatalf("loading the cases: %v", err)
	}
	return cases
}

// TestCases checks that the suite found its data: a build that loads no
// cases would otherwise pass every device vacuously.
func TestCases(t *testing.T) {
	cases := loadCases(t)
	if len(cases) < 1000 {
		t.Fatalf("loaded %d cases from %s, want at least 1000 (run build/torchref/gen.py)", len(cases), dataDir)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		switch {
		case c.Name == "" || c.Op == "":
			t.Errorf("%s: a case without a name or op: %+v", c.File, c)
		case seen[c.Name]:
			t.Errorf("%s: case %q appears twice", c.File, c.Name)
		case (c.Error != "") == (c.Output != nil || c.Outputs != nil):
			t.Errorf("%s: case %q must have exactly one of error and output", c.File, c.Name)
		}
		seen[c.Name] = true
	}
	t.Logf("%d cases", len(cases))
}

// TestCoverage fails for an op key that the cases use and the table lacks,
// and reports the table's keys that no case uses.
func TestCoverage(t *testing.T) {
	used := map[string]int{}
	for _, c := range loadCases(t) {
		used[c.Op]++
	}
	var missing []string
	for k := range used {
		if _, ok := ops[k]; !ok {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("op keys with cases but no entry in the table (ops.go, ops_tensor.go): %s", strings.Join(missing, ", "))
	}
	var unused []string
	for k := range ops {
		if used[k] == 0 {
			unused = append(unused, k)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Logf("op keys in the table that no case uses: %s", strings.Join(unused, ", "))
	}
}

// TestConformance runs every case on every device lathe knows of. A device
// this machine cannot open is skipped with its reason, never passed, and
// fails the test where the run requires it (internal/testenv); the cases run
// and skipped on each device go to the run's summary.
func TestConformance(t *testing.T) {
	cases := loadCases(t)
	for _, info := range lathe.DeviceStatus() {
		t.Run(info.Device.String(), func(t *testing.T) {
			if !info.Available {
				testenv.SkipDevice(t, info.Device.String(), "%s is unavailable: %s", info.Device, info.Detail)
			}
			t.Logf("%s: %s", info.Device, info.Detail)
			narrow := !hasWideTypes(info.Device)
			var n testenv.Count
			defer func() { testenv.Record("conformance", info.Device.String(), n.Run, n.Skipped, n.Failed) }()
			for _, c := range cases {
				// A device without float64 runs the float64 cases in
				// float32 (Case.Narrow).
				if nc := c.Narrow(); narrow && nc != nil {
					c = nc
				}
				n.Case(t, c.Name, func(t *testing.T) { runCase(t, info.Device, c) })
			}
		})
	}
}

func runCase(t *testing.T, dev lathe.Device, c *Case) {
	f, ok := ops[c.Op]
	if !ok {
		t.Fatalf("op %s has no entry in the table", c.Op)
	}
	in := make([]*lathe.Tensor, len(c.Inputs))
	for i, spec := range c.Inputs {
		x, err := makeInput(dev, spec)
		switch {
		case errors.Is(err, lathe.ErrUnsupported) && lacksDType(dev, spec.DType):
			t.Skipf("input %d: %s has no %s: %v", i, dev, spec.DType, err)
		case err != nil:
			t.Fatalf("input %d: %v", i, err)
		}
		in[i] = x
	}
	attrs := c.Attrs
	got, err := f(&attrs, in)
	if aerr := attrs.Err(); aerr != nil {
		t.Fatalf("bad case data: %v", aerr)
	}
	if c.Error != "" {
		if err == nil {
			// A device checks values (indices, exponents) where they
			// live and reports a bad one at the next sync, not from the
			// op (dispatch's ValueChecker).
			err = lathe.Synchronize(dev)
		}
		checkError(t, c, err)
		return
	}
	if err != nil {
		if dt := missingDType(dev, c, err); dt != "" {
			t.Skipf("%s has no %s, which this case uses: %v", dev, dt, err)
		}
		t.Fatalf("unexpected error: %v", err)
	}
	want := c.Outputs
	if c.Output != nil {
		want = []*Tensor{c.Output}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d", len(got), len(want))
	}
	for i := range want {
		label := ""
		if len(want) > 1 {
			label = fmt.Sprintf("result %d: ", i)
		}
		tol := Tolerance(c.Op, want[i].DType)
		if c.Narrowed {
			tol = NarrowedTolerance(c.Op, false)
		}
		if err := compareTol(got[i], want[i], tol); err != nil {
			t.Errorf("%s%v", label, err)
		}
	}
}

var errorKinds = map[string]error{
	"shape": lathe.ErrShape, "dtype": lathe.ErrDType, "index": lathe.ErrIndex, "value": lathe.ErrValue,
}

func checkError(t *testing.T, c *Case, err error) {
	t.Helper()
	kind, ok := errorKinds[c.Error]
	if !ok {
		t.Fatalf("bad case data: unknown error kind %q", c.Error)
	}
	switch {
	case err == nil:
		t.Errorf("no error, want one of kind %s (torch raises: %v)", c.Error, c.TorchRaises)
	case !errors.Is(err, kind):
		t.Errorf("error %v, want kind %s", err, c.Error)
	}
	var le *lathe.Error
	if err != nil && !errors.As(err, &le) {
		t.Errorf("error %v (%T) is not a *lathe.Error", err, err)
	}
}

// missingDType names a dtype of case c that dev does not have, where the op
// failed with ErrUnsupported for want of it; "" where the device has every
// dtype of the case, so that an op which wrongly says unsupported (a cpu
// float64 matmul) fails the case instead of skipping it.
func missingDType(dev lathe.Device, c *Case, err error) string {
	if !errors.Is(err, lathe.ErrUnsupported) {
		return ""
	}
	for _, dt := range caseDTypes(c) {
		if lacksDType(dev, dt) {
			return dt
		}
	}
	return ""
}

// caseDTypes lists the dtypes of a case's tensors and of its "dtype"
// attribute (a cast's target).
func caseDTypes(c *Case) []string {
	var dts []string
	for _, s := range append(append(append([]*Tensor{}, c.Inputs...), c.Outputs...), c.Output) {
		if s != nil && !slices.Contains(dts, s.DType) {
			dts = append(dts, s.DType)
		}
	}
	if dt, ok := c.Attrs.m["dtype"].(string); ok && !slices.Contains(dts, dt) {
		dts = append(dts, dt)
	}
	return dts
}

// lacksDType asks the device whether it has tensors of dtype dt at all, by
// making one: an op's own ErrUnsupported is not taken as the answer.
func lacksDType(dev lathe.Device, dt string) bool {
	d, err := parseDType(dt)
	if err != nil {
		return false
	}
	x := lathe.Zeros(dev, d, 1)
	defer x.Release()
	return errors.Is(x.Err(), lathe.ErrUnsupported)
}

// makeInput builds a case's input on dev: the stored data, then the view its
// layout asks for.
func makeInput(dev lathe.Device, spec *Tensor) (*lathe.Tensor, error) {
	if spec == nil {
		return nil, nil
	}
	shape, err := spec.StorageShape()
	if err != nil {
		return nil, err
	}
	data, err := spec.Values()
	if err != nil {
		return nil, err
	}
	var x *lathe.Tensor
	switch d := data.(type) {
	case []float32:
		x = fromSlice(dev, d, shape)
	case []float64:
		x = fromSlice(dev, d, shape)
	case []int32:
		x = fromSlice(dev, d, shape)
	case []int64:
		x = fromSlice(dev, d, shape)
	case []bool:
		x = fromSlice(dev, d, shape)
	case []int8:
		x = fromSlice(dev, d, shape)
	case []uint8:
		x = fromSlice(dev, d, shape)
	}
	if dt, _ := parseDType(spec.DType); dt == lathe.Float16 || dt == lathe.BFloat16 {
		x = x.Cast(dt) // exact: the values are the dtype's own
	}
	if err := x.Err(); err != nil {
		return nil, err
	}
	if spec.Layout != "" && spec.Layout != "contiguous" {
		x, err = applyLayout(x, spec.Layout)
		if err != nil {
			return nil, err
		}
		if err := x.Err(); err != nil {
			return nil, fmt.Errorf("layout %s: %w", spec.Layout, err)
		}
		if !slices.Equal(x.Shape(), spec.Shape) || (x.IsContiguous() && mustBeStrided(spec)) {
			return nil, fmt.Errorf("layout %s gave shape %v (contiguous %v), want a non-contiguous %v",
				spec.Layout, x.Shape(), x.IsContiguous(), spec.Shape)
		}
	}
	return x, nil
}

// mustBeStrided says whether a layout can give a non-contiguous view of the
// case's shape at all: transposing a dim of size 1, or stepping over one
// element, leaves the data in row-major order.
func mustBeStrided(spec *Tensor) bool {
	s := spec.Shape
	switch {
	case spec.Layout == "transposed" && len(s) >= 2:
		return s[len(s)-1] > 1 && s[len(s)-2] > 1
	case spec.Layout == "strided" && len(s) >= 1:
		return s[len(s)-1] > 1
	}
	return false
}

// fromSlice is lathe.FromSlice, except that an empty shape makes a 0-d
// tensor (FromSlice reads no shape as 1-D).
func fromSlice[T lathe.Element](dev lathe.Device, data []T, shape []int) *lathe.Tensor {
	if len(shape) == 0 && len(data) == 1 {
		return lathe.Scalar(dev, data[0])
	}
	return lathe.FromSlice(dev, data, shape...)
}

// compare checks got's dtype, shape and values against want, within op's
// tolerance.
func compare(op string, got *lathe.Tensor, want *Tensor) error {
	return compareTol(got, want, Tolerance(op, want.DType))
}

// compareTol is compare with a given tolerance for floats.
func compareTol(got *lathe.Tensor, want *Tensor, tol Tol) error {
	if err := got.Err(); err != nil {
		return err
	}
	wdt, err := parseDType(want.DType)
	if err != nil {
		return err
	}
	if got.DType() != wdt {
		return fmt.Errorf("dtype %s, want %s", got.DType(), wdt)
	}
	if !slices.Equal(got.Shape(), want.Shape) {
		return fmt.Errorf("shape %v, want %v", got.Shape(), want.Shape)
	}
	wv, err := want.Values()
	if err != nil {
		return err
	}
	var gv any
	switch wdt {
	case lathe.Float32, lathe.Float16, lathe.BFloat16: // a 16-bit float widens exactly
		gv, err = got.Float32s()
	case lathe.Int8:
		gv, err = got.Int8s()
	case lathe.Uint8:
		gv, err = got.Uint8s()
	case lathe.Float64:
		gv, err = got.Float64s()
	case lathe.Int32:
		gv, err = got.Int32s()
	case lathe.Int64:
		gv, err = got.Int64s()
	case lathe.Bool:
		gv, err = got.Bools()
	}
	if err != nil {
		return err
	}
	var bad []string
	n := 0
	note := func(i int, g, w any) {
		n++
		if len(bad) < 6 {
			bad = append(bad, fmt.Sprintf("[%d] got %v want %v", i, g, w))
		}
	}
	switch w := wv.(type) {
	case []float32:
		g := gv.([]float32)
		for i := range w {
			if !tol.Close(float64(g[i]), float64(w[i])) {
				note(i, g[i], w[i])
			}
		}
	case []float64:
		g := gv.([]float64)
		for i := range w {
			if !tol.Close(g[i], w[i]) {
				note(i, g[i], w[i])
			}
		}
	case []int32:
		exact(gv.([]int32), w, note)
	case []int64:
		exact(gv.([]int64), w, note)
	case []bool:
		exact(gv.([]bool), w, note)
	case []int8:
		exact(gv.([]int8), w, note)
	case []uint8:
		exact(gv.([]uint8), w, note)
	}
	if n > 0 {
		return fmt.Errorf("%d of %d values differ (rtol %g atol %g): %s", n, want.Numel(), tol.RTol, tol.ATol, strings.Join(bad, "; "))
	}
	return nil
}

func exact[T comparable](got, want []T, note func(int, any, any)) {
	for i := range want {
		if got[i] != want[i] {
			note(i, got[i], want[i])
		}
	}
}

// TestSkipsOnlyMissingDTypes: an op that says ErrUnsupported skips a case
// only on a device that has no tensors of one of the case's dtypes. A cpu
// float64 matmul that wrongly said unsupported must fail, not skip as "cpu
// lacks a dtype of this case".
func TestSkipsOnlyMissingDTypes(t *testing.T) {
	c := &Case{Name: "matmul/f64/[2,3]x[3,2]", Op: "matmul",
		Inputs: []*Tensor{{DType: "float64", Shape: []int{2, 3}}, {DType: "int64", Shape: []int{3, 2}}},
		Output: &Tensor{DType: "float64", Shape: []int{2, 2}}}
	unsupported := fmt.Errorf("lathe: matmul: %w", lathe.ErrUnsupported)
	if dt := missingDType(lathe.CPU, c, unsupported); dt != "" {
		t.Errorf("cpu: an unsupported float64 matmul is skipped as cpu lacking %s; it must fail", dt)
	}
	if dt := missingDType(lathe.CPU, c, errors.New("other")); dt != "" {
		t.Errorf("cpu: another error skips as lacking %s", dt)
	}
	cast := &Case{Name: "cast/f32tof64", Op: "cast", Inputs: []*Tensor{{DType: "float32"}}}
	if err := cast.Attrs.UnmarshalJSON([]byte(`{"dtype":"float64"}`)); err != nil {
		t.Fatal(err)
	}
	for _, info := range lathe.DeviceStatus() {
		if !info.Available || hasWideTypes(info.Device) {
			continue
		}
		// A device without float64 (wgpu) skips both: the inputs'
		// float64, and the cast's target.
		if dt := missingDType(info.Device, c, unsupported); dt != "float64" {
			t.Errorf("%s: missing dtype %q, want float64", info.Device, dt)
		}
		if dt := missingDType(info.Device, cast, unsupported); dt != "float64" {
			t.Errorf("%s: cast to float64: missing dtype %q, want float64", info.Device, dt)
		}
	}
}
