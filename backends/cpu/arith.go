package cpu

// The four arithmetic ops as whole-row loops (see rows2): one switch per
// row, then a loop with no call in it, which the compiler unrolls and keeps
// free of bounds checks; float32 rows go to an AVX2 loop in C where the
// machine has one (Go does not vectorise). Their results are those of the
// per-element functions in binary.go, bit for bit.

type arithOp uint8

const (
	opAdd arithOp = iota
	opSub
	opMul
	opDiv
)

var arithOps = map[string]arithOp{"add": opAdd, "sub": opSub, "mul": opMul, "div": opDiv}

func arithRows[T number](op arithOp, at func(a, b T) T) rows2[T, T] {
	return rows2[T, T]{
		vv: func(dst, p, q []T) {
			p, q = p[:len(dst)], q[:len(dst)]
			if d, ok := any(dst).([]float32); ok && arithFloat32(op, d, any(p).([]float32), any(q).([]float32), 0) {
				return
			}
			switch op {
			case opAdd:
				for i := range dst {
					dst[i] = p[i] + q[i]
				}
			case opSub:
				for i := range dst {
					dst[i] = p[i] - q[i]
				}
			case opMul:
				for i := range dst {
					dst[i] = p[i] * q[i]
				}
			case opDiv:
				for i := range dst {
					dst[i] = p[i] / q[i]
				}
			}
		},
		vs: func(dst, p []T, s T) {
			p = p[:len(dst)]
			if d, ok := any(dst).([]float32); ok && arithFloat32(op, d, any(p).([]float32), nil, any(s).(float32)) {
				return
			}
			switch op {
			case opAdd:
				for i := range dst {
					dst[i] = p[i] + s
				}
			case opSub:
				for i := range dst {
					dst[i] = p[i] - s
				}
			case opMul:
				for i := range dst {
					dst[i] = p[i] * s
				}
			case opDiv:
				for i := range dst {
					dst[i] = p[i] / s
				}
			}
		},
		at: at,
	}
}
