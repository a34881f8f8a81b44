//go:build cgo

package wgpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestSoftmaxAccuracy bounds the float32 error of softmax, log_softmax
// and logsumexp on wgpu:0 against the cpu's float64 results, on rows
// around ±80 and rows whose x - max spans up to -87 (where exp nears
// float32's least normal): with WGSL's builtin exp, softmax there was 60
// ulp off on lavapipe, and the split lines, which rounded max + log(sum)
// to float32, 110. The inputs are multiples of 2⁻¹⁰ below 256 in
// magnitude, so that x - max is exact in float32 and the error is the
// kernels' own. The shapes reach the workgroup-per-line kernels, the split
// ones ([6,20000]: logsumexp in parts, then softmax's elementwise pass)
// and logsumexp's row per invocation ([1200,40]).
//
// Softmax is bounded in ulps of the exact result, where it is a normal
// float32. log_softmax and logsumexp are bounded in ulps of the larger of
// the exact result and 1: their log(sum) carries the float32 sum's
// rounding, a few ulp of 1, whatever the size of the result.
func TestSoftmaxAccuracy(t *testing.T) {
	dev := wgpuOrSkip(t)
	spans := [][2]float64{{72, 88}, {-88, -72}, {-7, 80}, {-167, -80}, {-80, 80}, {-20, 0}}
	ops := []struct {
		name    string
		f       func(*lathe.Tensor) *lathe.Tensor
		err     func(got float32, want float64) float64
		maxUlps float64
	}{
		{"softmax", func(x *lathe.Tensor) *lathe.Tensor { return x.Softmax(1) }, ulps, 6},
		{"log_softmax", func(x *lathe.Tensor) *lathe.Tensor { return x.LogSoftmax(1) }, ulpsOfOne, 4},
		{"logsumexp", func(x *lathe.Tensor) *lathe.Tensor { return x.LogSumExp(1) }, ulpsOfOne, 5},
	}
	for _, shape := range [][2]int{{60, 1000}, {6, 20000}, {1200, 40}} {
		rows, n := shape[0], shape[1]
		rng := rand.New(rand.NewPCG(uint64(rows), 11))
		xs := make([]float32, rows*n)
		x64 := make([]float64, rows*n)
		for r := range rows {
			s := spans[r%len(spans)]
			for j := range n {
				v := math.Round((s[0]+(s[1]-s[0])*rng.Float64())*1024) / 1024
				xs[r*n+j], x64[r*n+j] = float32(v), v
			}
		}
		xw := lathe.FromSlice(dev, xs, rows, n)
		xc := lathe.FromSlice(lathe.CPU, x64, rows, n)
		for _, op := range ops {
			t.Run(fmt.Sprintf("%s/[%d,%d]", op.name, rows, n), func(t *testing.T) {
				got, err := op.f(xw).Float32s()
				if err != nil {
					t.Fatal(err)
				}
				want, err := op.f(xc).Float64s()
				if err != nil {
					t.Fatal(err)
				}
				worst, maxAbs, at := 0.0, 0.0, 0
				for i, w := range want {
					if math.Abs(w) < 0x1p-126 {
						continue // GPUs flush subnormals
					}
					if u := op.err(got[i], w); u > worst {
						worst, at = u, i
					}
					maxAbs = max(maxAbs, math.Abs(float64(got[i])-w))
				}
				if worst > op.maxUlps {
					t.Errorf("%s is %.2f ulp off at element %d (got %g, want %g), want within %g", op.name, worst, at, got[at], want[at], op.maxUlps)
				}
				t.Logf("%s: within %.2f ulp (worst at element %d), largest error %.3g", op.name, worst, at, maxAbs)
			})
		}
	}
}

// ulpsOfOne is how far got is from want in float32 ulps at the larger of
// |want| and 1.
func ulpsOfOne(got float32, want float64) float64 {
	w := float32(max(math.Abs(want), 1))
	ulp := float64(math.Nextafter32(w, float32(math.Inf(1)))) - float64(w)
	return math.Abs(float64(got)-want) / ulp
}
