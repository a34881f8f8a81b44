package nn

import (
	"testing"

	"github.com/lathe-ml/lathe"
)

// BenchmarkTransformerEncoderLayer is one forward and backward pass of an
// encoder layer at the shapes that build/torchref/transformer_ref.py
// --bench times torch at ([8, 128, 256], 8 heads, dim_feedforward 1024,
// float32, no mask, dropout 0). Compare on one thread:
//
//	GOMAXPROCS=1 OPENBLAS_NUM_THREADS=1 go test -run - -bench TransformerEncoderLayer ./nn/
func BenchmarkTransformerEncoderLayer(b *testing.B) {
	lathe.Seed(1)
	l := NewTransformerEncoderLayer(256, 8, DimFeedforward(1024), DropoutProb(0))
	x := lathe.RandN(lathe.CPU, lathe.Float32, 8, 128, 256).RequireGrad()
	b.ResetTimer()
	for range b.N {
		if err := l.Forward(x).Sum().Backward(); err != nil {
			b.Fatal(err)
		}
		x.ZeroGrad()
		for _, p := range l.Parameters() {
			p.T.ZeroGrad()
		}
	}
}
