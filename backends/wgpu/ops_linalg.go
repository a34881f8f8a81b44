//go:build cgo

package wgpu

import (
	"fmt"

	"github.com/lathe-ml/lathe/dispatch"
)

// matmul is one tiled kernel (linalg.wgsl) for float32 and int32, batched
// over torch.matmul's broadcast batch dims. It reads both operands through
// their strides, as the cpu's gemm reads a transposed view through BLAS's
// transpose flag, so no layout is copied first.
func init() {
	register("matmul", func(out *dispatch.Tensor, in []*dispatch.Tensor, _ any) error {
		return matmul(out, in[0], in[1])
	})
}

// matmulTile is the side of the output tile one workgroup computes.
const matmulTile = 64

// maxBatchRank is the most batch dims matmul's parameters carry.
const maxBatchRank = 6

func matmul(out, x, y *dispatch.Tensor) error {
	t, ok := wgslType(out.DType)
	if !ok || out.DType == dispatch.Bool {
		return dispatch.Unsupported(out.Device, "matmul", out.DType)
	}
	batch, n, k, m, _, err := dispatch.MatMulShapes(x.Shape, y.Shape)
	if err != nil {
		return err
	}
	nb := dispatch.Numel(batch)
	if n == 0 || m == 0 || nb == 0 {
		return nil
	}
	if len(batch) > maxBatchRank {
		return &dispatch.Error{Op: "matmul", Kind: dispatch.ErrUnsupported,
			Detail: fmt.Sprintf("has %d batch dims on wgpu:0, which takes up to %d", len(batch), maxBatchRank),
			Fix:    "reshape the batch dims into fewer"}
	}
	a, b := dispatch.AsMatrices(x, true, batch), dispatch.AsMatrices(y, false, batch)
	rowTiles := (n + matmulTile - 1) / matmulTile
	colTiles := (m + matmulTile - 1) / matmulTile
	tiles := nb * rowTiles * colTiles
	p := make([]uint32, 31)
	for i, v := range []int{tiles, n, k, m, rowTiles, colTiles, a.Offset, a.RowStride, a.ColStride, b.Offset, b.RowStride, b.ColStride, len(batch)} {
		p[i] = uint32(int32(v))
	}
	for d, s := range batch {
		p[13+d] = uint32(s)
		p[19+d] = uint32(int32(a.Batch[d]))
		p[25+d] = uint32(int32(b.Batch[d]))
	}
	sh, err := shaderFor("matmul/"+t, "matmul", struct{ T string }{t})
	if err != nil {
		return err
	}
	return launch("matmul", sh, grid(tiles*workgroup), p, out, x, y)
}
