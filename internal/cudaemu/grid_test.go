package cudaemu_test

import (
	"fmt"
	"math"
	"testing"
)

// grid.cu's grid_sample on the coordinates whose handling torch 1.13's cpu
// kernels decide and a transcription would get wrong: NaN (pixel 0 in 2-d
// and the last pixel in 3-d under border and reflection, NaN or 0 under
// zeros), ±1e30 (clipped, folded, or outside), and nearest's ties (to even
// in 2-d, away from zero in 3-d); bicubic, whose NaN gives NaN in every
// padding mode (its weights are NaN). The expected values are torch 1.13's, on
// x = 1, 2, ... laid out (1, 1, 3, 3) or (1, 1, 3, 3, 3) (made with
// F.grid_sample in torch 1.13).

func TestGridSampleSpecials(t *testing.T) {
	h := newHost(t)
	nan := math.NaN()
	points := map[int][][]float64{
		2: {{nan, 0.2}, {0.3, nan}, {nan, nan}, {1e30, 0.1}, {-1e30, 0.1}, {0.5, 0.5}, {0, -0.5}, {-0.5, 0}, {0.5, 0}},
		3: {{nan, 0.2, 0.1}, {0.3, nan, 0.1}, {nan, nan, nan}, {1e30, 0.1, 0.1}, {-1e30, 0.1, 0.1}, {0.5, 0.5, 0.5}, {-0.5, 0, 0}, {0.5, 0, 0}, {0, -0.5, 0.5}},
	}
	// want[rank]["mode padding align"], from torch; a skip is not checked
	// (3-d reflection folds ±1e30 by fmod in torch, as lathe's 2-d rule
	// does not: grid.py). With align_corners, ±0.5 is a nearest tie.
	skip := math.Inf(1)
	want := map[int]map[string][]float64{
		2: {
			"bilinear zeros false":      {nan, nan, nan, 0.0, 0.0, 8.0, 2.75, 4.25, 5.75},
			"bilinear zeros true":       {nan, nan, nan, 0.0, 0.0, 7.0, 3.5, 4.5, 5.5},
			"bilinear border false":     {4.9, 2.45, 1.0, 6.45, 4.45, 8.0, 2.75, 4.25, 5.75},
			"bilinear border true":      {4.6, 2.3, 1.0, 6.3, 4.3, 7.0, 3.5, 4.5, 5.5},
			"bilinear reflection false": {4.9, 2.45, 1.0, 4.45, 4.45, 8.0, 2.75, 4.25, 5.75},
			"bilinear reflection true":  {4.6, 2.3, 1.0, 4.3, 4.3, 7.0, 3.5, 4.5, 5.5},
			"nearest zeros false":       {0.0, 0.0, 0.0, 0.0, 0.0, 9.0, 2.0, 4.0, 6.0},
			"nearest zeros true":        {0.0, 0.0, 0.0, 0.0, 0.0, 9.0, 2.0, 4.0, 6.0},
			"nearest border false":      {4.0, 2.0, 1.0, 6.0, 4.0, 9.0, 2.0, 4.0, 6.0},
			"nearest border true":       {4.0, 2.0, 1.0, 6.0, 4.0, 9.0, 2.0, 4.0, 6.0},
			"nearest reflection false":  {4.0, 2.0, 1.0, 4.0, 4.0, 9.0, 2.0, 4.0, 6.0},
			"nearest reflection true":   {4.0, 2.0, 1.0, 4.0, 4.0, 9.0, 2.0, 4.0, 6.0},
			"bicubic zeros false":       {nan, nan, nan, 0.0, 0.0, 10.1521759033, 2.78515625, 4.61328125, 6.44140625},
			"bicubic zeros true":        {nan, nan, nan, 0.0, 0.0, 8.9892578125, 3.40625, 4.78125, 6.15625},
			"bicubic border false":      {nan, nan, nan, 6.62690625, 4.62690625, 8.234375, 2.57421875, 4.19140625, 5.80859375},
			"bicubic border true":       {nan, nan, nan, 6.42825, 4.42825, 7.375, 3.21875, 4.40625, 5.59375},
			"bicubic reflection false":  {nan, nan, nan, 4.62690625, 4.62690625, 8.234375, 2.57421875, 4.19140625, 5.80859375},
			"bicubic reflection true":   {nan, nan, nan, 4.4485, 4.4485, 7.75, 2.9375, 4.3125, 5.6875},
		},
		3: {
			"bilinear zeros false":      {0.0, 0.0, 0.0, 0.0, 0.0, 23.75, 13.25, 14.75, 18.5},
			"bilinear zeros true":       {0.0, 0.0, 0.0, 0.0, 0.0, 20.5, 13.5, 14.5, 17.0},
			"bilinear border false":     {17.25, 18.8, 27.0, 16.8, 14.8, 23.75, 13.25, 14.75, 18.5},
			"bilinear border true":      {16.5, 18.2, 27.0, 16.2, 14.2, 20.5, 13.5, 14.5, 17.0},
			"bilinear reflection false": {17.25, 18.8, 27.0, skip, skip, 23.75, 13.25, 14.75, 18.5},
			"bilinear reflection true":  {16.5, 18.2, 27.0, skip, skip, 20.5, 13.5, 14.5, 17.0},
			"nearest zeros false":       {0.0, 0.0, 0.0, 0.0, 0.0, 27.0, 13.0, 15.0, 20.0},
			"nearest zeros true":        {0.0, 0.0, 0.0, 0.0, 0.0, 27.0, 14.0, 15.0, 23.0},
			"nearest border false":      {15.0, 17.0, 27.0, 15.0, 13.0, 27.0, 13.0, 15.0, 20.0},
			"nearest border true":       {15.0, 17.0, 27.0, 15.0, 13.0, 27.0, 14.0, 15.0, 23.0},
			"nearest reflection false":  {15.0, 17.0, 27.0, skip, skip, 27.0, 13.0, 15.0, 20.0},
			"nearest reflection true":   {15.0, 17.0, 27.0, skip, skip, 27.0, 14.0, 15.0, 23.0},
		},
	}
	modes := map[string]int32{"bilinear": 0, "nearest": 1, "bicubic": 2}
	paddings := map[string]int32{"zeros": 0, "border": 1, "reflection": 2}
	for _, k := range []int{2, 3} {
		plane := 1
		for range k {
			plane *= 3
		}
		pts := points[k]
		for key, w := range want[k] {
			var mode, padding, align string
			fmt.Sscan(key, &mode, &padding, &align)
			a := int32(0)
			if align == "true" {
				a = 1
			}
			for _, sfx := range []string{"f32", "f64"} {
				var x, grid, out uint64
				n := len(pts)
				if sfx == "f32" {
					xs, gs := make([]float32, plane), make([]float32, 0, n*k)
					for i := range xs {
						xs[i] = float32(i + 1)
					}
					for _, p := range pts {
						for _, v := range p {
							gs = append(gs, float32(v))
						}
					}
					x, grid, out = put(h, xs...), put(h, gs...), zeros[float32](h, n)
				} else {
					xs, gs := make([]float64, plane), make([]float64, 0, n*k)
					for i := range xs {
						xs[i] = float64(i + 1)
					}
					for _, p := range pts {
						gs = append(gs, p...)
					}
					x, grid, out = put(h, xs...), put(h, gs...), zeros[float64](h, n)
				}
				// Two blocks of 3 threads: the grid-stride loop.
				h.launch("grid_sample_"+sfx, 2, 3, out, x, grid, int64(n), int64(1), int64(n), int32(k),
					int64(3), int64(3), int64(3), modes[mode], paddings[padding], a)
				var got []float64
				if sfx == "f32" {
					for _, v := range get[float32](out, n) {
						got = append(got, float64(v))
					}
				} else {
					got = get[float64](out, n)
				}
				for i, wv := range w {
					if wv != skip && !same(got[i], wv, 1e-5*max(1, math.Abs(wv))) {
						t.Errorf("%dd %s %s: point %v gives %v, want %v", k, key, sfx, pts[i], got[i], wv)
					}
				}
			}
		}
	}
}
