package main

import (
	"math"
	"math/rand/v2"
)

// The classes of Shapes, in label order.
var classes = []string{"square", "disk", "cross", "triangle"}

// Shapes draws n grey images of size×size pixels, each one shape of a random
// class at a random place and scale, with a random brightness and N(0, σ²)
// pixel noise on top (σ = noise). A square is an outline, a disk is filled,
// a cross is two diagonal strokes, a triangle is filled, so telling them
// apart needs local edge features and their layout: what a convolution and
// pooling see, and what a linear model on pixels does badly. It returns
// [n, 1, size, size] pixels in row-major order and n labels.
func Shapes(n, size int, noise float64, seed uint64) ([]float32, []int64) {
	rng := rand.New(rand.NewPCG(seed, 0x5348415045))
	pix := make([]float32, n*size*size)
	labels := make([]int64, n)
	s := float64(size)
	for i := range n {
		k := rng.IntN(len(classes))
		labels[i] = int64(k)
		r := s * (0.22 + 0.12*rng.Float64()) // half the shape's extent
		cx := r + 1 + rng.Float64()*(s-2*r-2)
		cy := r + 1 + rng.Float64()*(s-2*r-2)
		bright := 0.6 + 0.4*rng.Float64()
		img := pix[i*size*size : (i+1)*size*size]
		for y := range size {
			for x := range size {
				// Sample at the pixel's centre, relative to the shape's, in units of r.
				u, v := (float64(x)+0.5-cx)/r, (float64(y)+0.5-cy)/r
				if inside(k, u, v, 1/r) {
					img[y*size+x] = float32(bright)
				}
				img[y*size+x] += float32(noise * rng.NormFloat64())
			}
		}
	}
	return pix, labels
}

// inside says whether the point (u, v) (the shape spans [-1, 1]²) is on
// shape k; w is the width of one pixel in those units, for strokes.
func inside(k int, u, v, w float64) bool {
	stroke := max(1.2*w, 0.15)
	switch k {
	case 0: // square outline
		m := max(math.Abs(u), math.Abs(v))
		return m <= 1 && m >= 1-stroke
	case 1: // filled disk
		return u*u+v*v <= 1
	case 2: // diagonal cross
		return math.Abs(u) <= 1 && math.Abs(v) <= 1 &&
			(math.Abs(u-v) <= stroke*math.Sqrt2 || math.Abs(u+v) <= stroke*math.Sqrt2)
	default: // filled triangle, apex up
		return v <= 1 && v >= -1 && math.Abs(u) <= (v+1)/2
	}
}
