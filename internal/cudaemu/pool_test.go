package cudaemu_test

import (
	"math"
	"testing"
)

// pool.cu's kernels against a direct transcription of the cpu backend's
// loops (backends/cpu/pool.go): each output place's window taps, summed or
// maxed in order, and the backward pass adding each window's share in
// output order; on geometries beyond the backend's emulated cases (ceil
// mode, dilation, overlapping windows, adaptive windows that repeat), with
// a NaN in the input.
func TestPool(t *testing.T) {
	h := newHost(t)
	cases := []struct {
		name   string
		g      cPoolGeom
		planes int
	}{
		// A 3x2 kernel, stride 2, padding (1, 0) over 7x6: out 4x3.
		{"window", poolGeom(7, 6, 4, 3, [2]int64{3, 2}, [2]int64{2, 2}, [2]int64{1, 0}, [2]int64{1, 1}, 0, 0), 2},
		{"window-exclude", poolGeom(7, 6, 4, 3, [2]int64{3, 2}, [2]int64{2, 2}, [2]int64{1, 0}, [2]int64{1, 1}, 1, 0), 2},
		{"window-divisor", poolGeom(7, 6, 4, 3, [2]int64{3, 2}, [2]int64{2, 2}, [2]int64{1, 0}, [2]int64{1, 1}, 0, 5), 1},
		// Ceil mode: 7 wide, kernel 2, stride 2 gives 4 outputs, the last
		// window half outside.
		{"ceil-mode", poolGeom(5, 7, 3, 4, [2]int64{2, 2}, [2]int64{2, 2}, [2]int64{0, 0}, [2]int64{1, 1}, 0, 0), 1},
		// Dilation (2, 3), padding 1 (max pooling's only).
		{"dilated", poolGeom(9, 8, 4, 4, [2]int64{3, 2}, [2]int64{2, 2}, [2]int64{1, 1}, [2]int64{2, 3}, 0, 0), 1},
		{"overlapping-stride-1", poolGeom(6, 5, 4, 3, [2]int64{3, 3}, [2]int64{1, 1}, [2]int64{0, 0}, [2]int64{1, 1}, 0, 0), 2},
		{"adaptive", adaptiveGeom(7, 10, 3, 4), 2},
		{"adaptive-up", adaptiveGeom(3, 2, 5, 7), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkPool(t, h, c.g, c.planes) })
	}
}

func poolGeom(h, w, oh, ow int64, kernel, stride, padding, dilation [2]int64, exclude, divisor int64) cPoolGeom {
	G := cPoolGeom{Dims: 2, In: [3]int64{h, w}, Out: [3]int64{oh, ow}, Exclude: exclude, Divisor: divisor, InPlane: h * w, OutPlane: oh * ow}
	copy(G.Kernel[:], kernel[:])
	copy(G.Stride[:], stride[:])
	copy(G.Padding[:], padding[:])
	copy(G.Dilation[:], dilation[:])
	return G
}

func adaptiveGeom(h, w, oh, ow int64) cPoolGeom {
	return cPoolGeom{Dims: 2, In: [3]int64{h, w}, Out: [3]int64{oh, ow}, Adaptive: 1, InPlane: h * w, OutPlane: oh * ow}
}

// poolWindows are the taps (offsets in the input plane) of each output
// place of a 2-D pooling, and the count that average pooling divides by,
// as the cpu's windowGeom and adaptiveGeom give them.
func poolWindows(G cPoolGeom) (taps [][]int64, count []int64) {
	for o0 := range G.Out[0] {
		for o1 := range G.Out[1] {
			var lo, hi, start, step, cnt [2]int64
			o := [2]int64{o0, o1}
			for d := range 2 {
				n := G.In[d]
				if G.Adaptive != 0 {
					lo[d] = o[d] * n / G.Out[d]
					hi[d] = ((o[d]+1)*n + G.Out[d] - 1) / G.Out[d]
					start[d], step[d], cnt[d] = 0, 1, hi[d]-lo[d]
					continue
				}
				start[d] = o[d]*G.Stride[d] - G.Padding[d]
				step[d] = G.Dilation[d]
				lo[d], hi[d] = 0, G.Kernel[d]
				for k := range G.Kernel[d] {
					at := start[d] + k*step[d]
					if at < 0 {
						lo[d] = k + 1
					}
					if at >= n && hi[d] == G.Kernel[d] {
						hi[d] = k
					}
				}
				if G.Exclude != 0 {
					cnt[d] = hi[d] - lo[d]
				} else {
					cnt[d] = min(start[d]+G.Kernel[d], n+G.Padding[d]) - start[d]
				}
			}
			var ts []int64
			for k0 := lo[0]; k0 < hi[0]; k0++ {
				for k1 := lo[1]; k1 < hi[1]; k1++ {
					ts = append(ts, (start[0]+k0*step[0])*G.In[1]+start[1]+k1*step[1])
				}
			}
			taps = append(taps, ts)
			count = append(count, cnt[0]*cnt[1])
		}
	}
	return taps, count
}

// checkPool runs avg_pool, max_pool_indices and avg_pool_backward (float32)
// over planes planes and compares them, exactly, with poolWindows' sums,
// first maxima (a NaN wins) and shares.
func checkPool(t *testing.T, h *host, G cPoolGeom, planes int) {
	taps, count := poolWindows(G)
	inPlane, outPlane := int(G.InPlane), int(G.OutPlane)
	x, g := make([]float32, planes*inPlane), make([]float32, planes*outPlane)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*1.7)) * 4
	}
	x[5] = float32(math.NaN())
	for i := range g {
		g[i] = float32(math.Cos(float64(i) * 0.3))
	}
	avg, arg, back := zeros[float32](h, len(g)), zeros[int64](h, len(g)), zeros[float32](h, len(x))
	xp, gp, geom := put(h, x...), put(h, g...), bytesOf(G)
	h.launch("avg_pool_f32", 3, 32, avg, xp, int64(len(g)), geom)
	h.launch("max_pool_indices_f32", 3, 32, arg, xp, int64(len(g)), geom)
	h.launch("avg_pool_backward_f32", 3, 32, back, gp, int64(len(x)), geom)
	gotAvg, gotArg, gotBack := get[float32](avg, len(g)), get[int64](arg, len(g)), get[float32](back, len(x))
	wantBack := make([]float32, len(x))
	for p := range planes {
		in := x[p*inPlane:]
		for j, ts := range taps {
			var sum float32
			best, at := float32(math.Inf(-1)), ts[0]
			for _, tp := range ts {
				sum += in[tp]
				if in[tp] > best || in[tp] != in[tp] {
					best, at = in[tp], tp
				}
			}
			div := float32(count[j])
			if G.Divisor != 0 {
				div = float32(G.Divisor)
			}
			o := p*outPlane + j
			if want := sum / div; !same(float64(gotAvg[o]), float64(want), 0) {
				t.Errorf("avg[%d][%d] = %.9g, want %.9g", p, j, gotAvg[o], want)
			}
			if gotArg[o] != at {
				t.Errorf("argmax[%d][%d] = %d, want %d", p, j, gotArg[o], at)
			}
			v := g[o] / div
			for _, tp := range ts {
				wantBack[p*inPlane+int(tp)] += v
			}
		}
	}
	for i, w := range wantBack {
		if gotBack[i] != w {
			t.Errorf("backward[%d] = %.9g, want %.9g", i, gotBack[i], w)
		}
	}
}
