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
	a, b := matrixOf(x, true, batch), matrixOf(y, false, batch)
	rowTiles := (n + matmulTile - 1) / matmulTile
	colTiles := (m + matmulTile - 1) / matmulTile
	tiles := nb * rowTiles * colTiles
	p := make([]uint32, 31)
	for i, v := range []int{tiles, n, k, m, rowTiles, colTiles, a.offset, a.rs, a.cs, b.offset, b.rs, b.cs, len(batch)} {
		p[i] = uint32(int32(v))
	}
	for d, s := range batch {
		p[13+d] = uint32(s)
		p[19+d] = uint32(int32(a.batch[d]))
		p[25+d] = uint32(int32(b.batch[d]))
	}
	sh, err := shaderFor("matmul/"+t, "matmul", struct{ T string }{t})
	if err != nil {
		return err
	}
	return launch("matmul", sh, grid(tiles*workgroup), p, out, x, y)
}

// matrix is a matmul operand as a batch of matrices: element (b, i, j) is at
// offset + Σ b_d·batch[d] + i·rs + j·cs.
type matrix struct {
	offset, rs, cs int
	batch          []int // strides over the broadcast batch dims, 0 where broadcast
}

// matrixOf promotes a 1-D lhs to 1×k and a 1-D rhs to k×1, as torch.matmul
// does, and aligns t's batch dims with the broadcast batch.
func matrixOf(t *dispatch.Tensor, lhs bool, batch []int) matrix {
	shape, strides := t.Shape, t.Strides
	if len(shape) == 1 {
		if lhs {
			shape, strides = []int{1, shape[0]}, []int{0, strides[0]}
		} else {
			shape, strides = []int{shape[0], 1}, []int{strides[0], 0}
		}
	}
	r := len(shape)
	mat := matrix{offset: t.Offset, rs: strides[r-2], cs: strides[r-1], batch: make([]int, len(batch))}
	off := len(batch) - (r - 2)
	for d := range r - 2 {
		if shape[d] != 1 {
			mat.batch[off+d] = strides[d]
		}
	}
	return mat
}
