package lathe_test

import (
	"fmt"
	"testing"

	"github.com/lathe-ml/lathe"
)

// BenchmarkMultinomial is a decoder's sampling step on the cpu (a batch of
// 8 rows of a 50000-token vocabulary, one sample each) and larger draws
// with and without replacement. For the ratio to torch.multinomial run
// lathe-bench --filter multinomial --vs-torch (cmd/lathe-bench).
func BenchmarkMultinomial(b *testing.B) {
	for _, c := range []struct {
		rows, categories, samples int
		replacement               bool
	}{
		{8, 50000, 1, false}, {8, 50000, 64, true}, {8, 50000, 16, false}, {8, 1000, 100, false},
	} {
		b.Run(fmt.Sprintf("%dx%d/k%d/replacement=%v", c.rows, c.categories, c.samples, c.replacement), func(b *testing.B) {
			probs := lathe.Rand(lathe.CPU, lathe.Float32, c.rows, c.categories)
			for b.Loop() {
				if err := lathe.Multinomial(probs, c.samples, c.replacement).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRandom is Rand and RandN of 2^20 float32s on the cpu, drawn in
// parallel parts where GOMAXPROCS allows. Compare with torch.rand and
// torch.randn of the same size.
func BenchmarkRandom(b *testing.B) {
	for _, c := range []struct {
		name string
		draw func(lathe.Device, lathe.DType, ...int) *lathe.Tensor
	}{{"rand", lathe.Rand}, {"randn", lathe.RandN}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				x := c.draw(lathe.CPU, lathe.Float32, 1<<20)
				if err := x.Err(); err != nil {
					b.Fatal(err)
				}
				x.Release()
			}
		})
	}
}
