//go:build cgo

package wgpu

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// matmul is one kernel (linalg.wgsl) for float32 and int32, batched over
// torch.matmul's broadcast batch dims (tiles in workgroup memory on a GPU,
// register blocks on a CPU adapter: matmulKernel), and an element per
// invocation for int64 (matmul_i64). Each reads both operands through
// their strides, as the cpu's gemm reads a transposed view through BLAS's
// transpose flag, so no layout is copied first.
func init() {
	product := func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		return matmul(out, in[0], in[1])
	}
	register(ops.MatMul, numericTypes, product)
	// The wide product of two 16-bit floats: widened by register to the
	// float32 kernel, which writes the float32 result itself.
	register(ops.MatMulWide, floatTypes, product)
}

// matmulKernel is the float32 and int32 kernel and the side of the output
// tile a workgroup of it computes: matmul_cpu's register blocks on a CPU
// adapter, where workgroup memory buys nothing (linalg.wgsl says why), and
// matmul's tiles staged in workgroup memory on a GPU.
func matmulKernel() (name string, tile int) {
	if software() && !forceTiledMatmul {
		return "matmul_cpu", 128
	}
	return "matmul", 64
}

// forceTiledMatmul makes a CPU adapter run the GPU's kernel, so that its
// tests reach it here.
var forceTiledMatmul bool

// maxBatchRank is the most batch dims matmul's parameters carry.
const maxBatchRank = 6

func matmul(out, x, y *dispatch.Tensor) error {
	t := wgslType(out.DType)
	batch, n, k, m, _, err := ops.MatMulShapes(x.Shape, y.Shape)
	if err != nil {
		return err
	}
	nb := dispatch.Numel(batch)
	if n == 0 || m == 0 || nb == 0 {
		return nil
	}
	a, b := layout.AsMatrices(x, true, batch), layout.AsMatrices(y, false, batch)
	// The batch walked by both operands, collapsed: the products stay in
	// row-major batch order, which is out's (contiguous) order.
	bw := layout.Walk{Shape: batch, Strides: [][]int{a.Batch, b.Batch}}.Collapse()
	if bw.Rank() > maxBatchRank {
		return rankError(bw.Rank(), maxBatchRank)
	}
	kernel, tile := matmulKernel()
	rowTiles := (n + tile - 1) / tile
	colTiles := (m + tile - 1) / tile
	tiles := nb * rowTiles * colTiles
	p := make([]uint32, 31)
	for i, v := range []int{tiles, n, k, m, rowTiles, colTiles, a.Offset, a.RowStride, a.ColStride, b.Offset, b.RowStride, b.ColStride, bw.Rank()} {
		p[i] = uint32(int32(v))
	}
	for d, s := range bw.Shape {
		p[13+d] = uint32(s)
		p[19+d] = uint32(int32(bw.Strides[0][d]))
		p[25+d] = uint32(int32(bw.Strides[1][d]))
	}
	if out.DType == dispatch.Int64 {
		p[0] = uint32(nb * n * m)
		sh, err := shaderFor("matmul_i64", "matmul_i64", nil)
		if err != nil {
			return err
		}
		return launch("matmul", sh, grid(nb*n*m), p, out, x, y)
	}
	sh, err := shaderFor(kernel+"/"+t, kernel, struct{ T string }{t})
	if err != nil {
		return err
	}
	return launch("matmul", sh, grid(tiles*workgroup), p, out, x, y)
}
