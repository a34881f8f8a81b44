package lathe

import "github.com/lathe-ml/lathe/dispatch/ops"

// Linear algebra.

// MatMul is the matrix product with torch.matmul's rules: two 1-D tensors
// give their dot product (0-d); 2-D times 2-D is the matrix product; a 1-D
// x is taken as a row (1×k) and a 1-D y as a column (k×1), the added dim
// removed from the result; with more dims, all but the last two are batch
// dims and broadcast. Both must share a dtype; float32 and float64 run on
// BLAS, integers on a plain loop that wraps on overflow. Shapes that do not
// fit are ErrShape, naming the dims that must match.
func (x *Tensor) MatMul(y *Tensor) *Tensor { return apply(ops.MatMul, none, x, y) }
