package dispatch

import "strconv"

// Linear algebra: matmul with torch.matmul's rules.

func init() {
	Register(&Op{Name: "matmul", Args: []string{"lhs", "rhs"}, Infer: matmulInfer})
}

// MatMulShapes applies torch.matmul's rules to two shapes: both 1-D is a
// dot product (0-d); a 1-D lhs gets a 1 prepended and a 1-D rhs a 1
// appended, removed again from the result; dims before the last two are
// batch dims and broadcast. It returns the broadcast batch shape, the matrix
// sizes n×k times k×m, and the output shape.
func MatMulShapes(a, b []int) (batch []int, n, k, m int, out []int, err error) {
	if len(a) == 0 || len(b) == 0 {
		arg := "rhs"
		if len(a) == 0 {
			arg = "lhs"
		}
		return nil, 0, 0, 0, nil, &Error{Kind: ErrShape, Arg: arg,
			Detail: "is 0-d, but both arguments need at least 1 dim (shapes " + FormatShape(a) + " and " + FormatShape(b) + ")",
			Fix:    "use Mul for a product with a scalar"}
	}
	aa, bb := a, b
	if len(a) == 1 {
		aa = []int{1, a[0]}
	}
	if len(b) == 1 {
		bb = []int{b[0], 1}
	}
	n, k = aa[len(aa)-2], aa[len(aa)-1]
	kb, m := bb[len(bb)-2], bb[len(bb)-1]
	if k != kb {
		da, db := strconv.Itoa(len(a)-1), strconv.Itoa(max(len(b)-2, 0))
		return nil, 0, 0, 0, nil, &Error{Kind: ErrShape, Arg: "rhs", Expected: strconv.Itoa(k), Found: strconv.Itoa(kb),
			Detail: "has shape " + FormatShape(b) + " and lhs has shape " + FormatShape(a) +
				": dim " + db + " of rhs (" + strconv.Itoa(kb) + ") must match dim " + da + " of lhs (" + strconv.Itoa(k) + ")",
			Fix: "transpose or reshape one of them so the inner sizes agree"}
	}
	batch, ok := BroadcastShapes(aa[:len(aa)-2], bb[:len(bb)-2])
	if !ok {
		return nil, 0, 0, 0, nil, &Error{Kind: ErrShape, Arg: "rhs",
			Detail: "has batch dims " + FormatShape(bb[:len(bb)-2]) + " (shape " + FormatShape(b) + ") which do not broadcast with lhs's " +
				FormatShape(aa[:len(aa)-2]) + " (shape " + FormatShape(a) + "): the dims before the last two must be equal or 1",
			Fix: "make each batch dim equal or 1, e.g. with Reshape or Unsqueeze"}
	}
	out = append([]int{}, batch...)
	if len(a) > 1 {
		out = append(out, n)
	}
	if len(b) > 1 {
		out = append(out, m)
	}
	return batch, n, k, m, out, nil
}

func matmulInfer(in []*Tensor, _ any) (DType, []int, error) {
	names := func(i int) string { return [...]string{"lhs", "rhs"}[i] }
	for i, t := range in {
		if err := checkDType(t, names(i), Numeric); err != nil {
			return 0, nil, err
		}
	}
	if err := sameDType(in, names, 0); err != nil {
		return 0, nil, err
	}
	_, _, _, _, out, err := MatMulShapes(in[0].Shape, in[1].Shape)
	if err != nil {
		return 0, nil, err
	}
	return in[0].DType, out, nil
}

// Matrices is a matmul argument seen as a batch of matrices over the
// broadcast batch shape (MatMulShapes): element (b, i, j) sits at
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
func AsMatrices(t *Tensor, lhs bool, batch []int) Matrices {
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
