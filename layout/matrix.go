package layout

import "github.com/lathe-ml/lathe/dispatch"

// Matrices is a matmul argument seen as a batch of matrices over the
// broadcast batch shape (torch.matmul's rules): element (b, i, j) sits at
// Offset + Σ b_d·Batch[d] + i·RowStride + j·ColStride. Every backend's
// matmul reads its operands through it, so strided and transposed views
// and broadcast batches need no copy.
type Matrices struct {
	Offset               int
	RowStride, ColStride int
	Batch                []int // strides over the broadcast batch dims, 0 where broadcast
}

// AsMatrices promotes a 1-D lhs to 1×k and a 1-D rhs to k×1, as
// torch.matmul does, and aligns t's batch dims with the broadcast batch.
func AsMatrices(t *dispatch.Tensor, lhs bool, batch []int) Matrices {
	shape, strides := t.Shape, t.Strides
	if len(shape) == 1 {
		if lhs {
			shape, strides = []int{1, shape[0]}, []int{0, strides[0]}
		} else {
			shape, strides = []int{shape[0], 1}, []int{strides[0], 0}
		}
	}
	r := len(shape)
	m := Matrices{Offset: t.Offset, RowStride: strides[r-2], ColStride: strides[r-1], Batch: make([]int, len(batch))}
	off := len(batch) - (r - 2)
	for d := range r - 2 {
		if shape[d] != 1 {
			m.Batch[off+d] = strides[d]
		}
	}
	return m
}
