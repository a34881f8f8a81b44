package nn

import "github.com/lathe-ml/lathe"

// ScaleGradByFreq makes an Embedding or EmbeddingBag scale the gradient
// each row of its weight gets from a Forward by 1 over the number of times
// the row's index appears in that Forward's indices (torch's
// scale_grad_by_freq).
func ScaleGradByFreq() Option {
	return Option{"scale_grad_by_freq", func(o *options) { o.scaleGradByFreq = true }}
}

// freqScale is, for each of the indices ids, 1 over the number of times
// it appears among them: a [len(ids), 1] tensor in dt on dev, for
// scaleGrad.
func freqScale(ids []int64, dt lathe.DType, dev lathe.Device) *lathe.Tensor {
	counts := map[int64]int{}
	for _, i := range ids {
		counts[i]++
	}
	s := make([]float64, len(ids))
	for j, i := range ids {
		s[j] = 1 / float64(counts[i])
	}
	return upload(lathe.FromSlice(lathe.CPU, s, len(ids), 1), dt, dev)
}

// scaleGrad registers on rows (looked-up rows, an intermediate of a
// composite) a hook that multiplies their gradient by s (from freqScale,
// broadcasting), as torch's embedding backward scales each index's
// contribution; rows' value and graph are left alone. In a plain pass the
// product is released with rows' graph, after the pass has used it (a
// pass leaves a hook's result to its maker). In a recorded pass
// (CreateGraph) the product is g + (g·s - g).detach(): a gradient of that
// gradient then sees the scaling once, where the pass reaches rows
// again, as torch's double backward of the embedding leaves the scaling
// out (its derivative is the plain lookup's). A rows that requires no
// gradient is left alone.
func scaleGrad(rows, s *lathe.Tensor) error {
	if rows.Err() != nil || !rows.RequiresGrad() {
		return nil
	}
	return rows.OnGrad(func(g *lathe.Tensor) *lathe.Tensor {
		scaled := g.Mul(s)
		if !g.RequiresGrad() {
			lathe.ReleaseWithGraph(rows, scaled)
			return scaled
		}
		return g.Add(scaled.Sub(g).Detach())
	})
}
