package lathe

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestDistancesInBlocks: cdist's direct form and pdist take their
// differences a block at a time (distanceBlock). With rows of 2^18
// features, a block holds 16 rows of y (cdist) or 16 pairs (pdist), so
// the results and gradients cross block boundaries in both of cdist's
// dims and in pdist's pairs: each is checked against float64 sums on the
// host. The blocks are the composite's, the same on every device, so the
// cpu runs them (the conformance cases run every device). The graph holds
// every block's differences until the backward pass, so the sizes are
// kept to a few hundred MB, which the test gives back to the device.
func TestDistancesInBlocks(t *testing.T) {
	testenv.HostOnly(t)
	t.Cleanup(func() { EmptyCache(CPU) })
	const m = 1 << 18
	x := RandN(CPU, Float32, 2, m).RequireGrad()
	y := RandN(CPU, Float32, 19, m).RequireGrad()
	xs, _ := x.Float32s()
	ys, _ := y.Float32s()
	row := func(v []float32, i int) []float32 { return v[i*m : (i+1)*m] }

	// cdist p = 1: |x_i - y_j| summed; the gradient of the sum of all
	// distances is Σ_j sign(x_i - y_j) for x, its negation summed over i
	// for y.
	d := x.Cdist(y, 1)
	got, err := d.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	gs, err := Grad(d.Sum(), []*Tensor{x, y})
	if err != nil {
		t.Fatal(err)
	}
	gxs, _ := gs[0].Float32s()
	gys, _ := gs[1].Float32s()
	wantGX, wantGY := make([]float64, len(xs)), make([]float64, len(ys))
	for i := range 2 {
		for j := range 19 {
			a, b := row(xs, i), row(ys, j)
			s := 0.0
			for k := range m {
				diff := float64(a[k]) - float64(b[k])
				s += math.Abs(diff)
				sg := 0.0
				if diff > 0 {
					sg = 1
				} else if diff < 0 {
					sg = -1
				}
				wantGX[i*m+k] += sg
				wantGY[j*m+k] -= sg
			}
			if g := float64(got[i*19+j]); math.Abs(g-s) > 1e-4*s {
				t.Fatalf("cdist p=1 [%d, %d] = %v, want %v", i, j, g, s)
			}
		}
	}
	closeToSums(t, "cdist p=1 gradient of x", gxs, wantGX)
	closeToSums(t, "cdist p=1 gradient of y", gys, wantGY)

	// pdist p = 2 of 7 rows of y (21 pairs): the gradient of the sum of
	// the distances is Σ_j (y_i - y_j)/d_ij.
	const rows = 7
	y = y.Detach().Narrow(0, 0, rows).Contiguous().RequireGrad()
	ys = ys[:rows*m]
	p := y.Pdist(2)
	got, err = p.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Grad(p.Sum(), []*Tensor{y})
	if err != nil {
		t.Fatal(err)
	}
	gps, _ := g[0].Float32s()
	want := make([]float64, len(ys))
	at := 0
	for i := range rows {
		for j := i + 1; j < rows; j++ {
			a, b := row(ys, i), row(ys, j)
			s := 0.0
			for k := range m {
				diff := float64(a[k]) - float64(b[k])
				s += diff * diff
			}
			dist := math.Sqrt(s)
			if g := float64(got[at]); math.Abs(g-dist) > 1e-5*dist {
				t.Fatalf("pdist pair %d (%d, %d) = %v, want %v", at, i, j, g, dist)
			}
			at++
			for k := range m {
				diff := (float64(a[k]) - float64(b[k])) / dist
				want[i*m+k] += diff
				want[j*m+k] -= diff
			}
		}
	}
	if at != len(got) {
		t.Fatalf("pdist gave %d distances, want %d", len(got), at)
	}
	closeToSums(t, "pdist gradient", gps, want)
}

// closeToSums checks got against want, elementwise, to float32's digits of
// a sum of a few dozen terms.
func closeToSums(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i, w := range want {
		if math.Abs(float64(got[i])-w) > 1e-4*(1+math.Abs(w)) {
			t.Fatalf("%s [%d] = %v, want %v", what, i, got[i], w)
		}
	}
}

// TestDistancesMemory: pdist and cdist's direct form hold a block of
// differences at a time, not all of them: pdist of [1500, 128] (575 MB
// of differences at once) and cdist p=1 of [1200, 128] × [1000, 128]
// (614 MB) each raise the cpu pool's peak by far less, measured in a
// child process of its own, whose peak is the call's alone.
func TestDistancesMemory(t *testing.T) {
	calls := map[string]func(x, y *Tensor) *Tensor{
		"pdist": func(x, _ *Tensor) *Tensor { return x.Pdist(2) },
		"cdist": func(x, y *Tensor) *Tensor { return x.Narrow(0, 0, 1200).Cdist(y, 1) },
	}
	if c := os.Getenv("LATHE_DIST_PEAK"); c != "" {
		x, y := RandN(CPU, Float32, 1500, 128), RandN(CPU, Float32, 1000, 128)
		before, _ := MemoryStats(CPU)
		out := calls[c](x, y)
		after, _ := MemoryStats(CPU)
		if err := out.Err(); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("distance peak: %d\n", after.PeakAllocated-before.Allocated)
		return
	}
	testenv.HostOnly(t)
	for name := range calls {
		out, err := testenv.RunChild("TestDistancesMemory", "LATHE_DIST_PEAK="+name)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		var grew int64
		if _, after, ok := strings.Cut(out, "distance peak: "); !ok {
			t.Fatalf("%s: no peak in the child's output:\n%s", name, out)
		} else if _, err := fmt.Sscanf(after, "%d", &grew); err != nil {
			t.Fatalf("%s: %v in the child's output:\n%s", name, err, out)
		}
		if grew > 200<<20 {
			t.Errorf("%s: the pool's peak grew by %d MB; want at most 200", name, grew>>20)
		} else {
			t.Logf("%s: the pool's peak grew by %d MB", name, grew>>20)
		}
	}
}
