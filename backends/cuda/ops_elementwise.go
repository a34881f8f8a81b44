package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// The elementwise family (kernels/cuda/unary.cuh, binary.cuh and
// elementwise.cuh, instantiated in unary.cu, trig.cu, binary.cu,
// elementwise.cu and their 16-bit modules, moduleOf's): unary and binary ops, where,
// the logical ops, cast and contiguous. Each launches one of three forms
// of its kernel (the launch contracts are in the .cu files; why, in
// dense.cuh):
//   - dense, "<fn>_<sfx>": out contiguous and every input contiguous of
//     out's shape, or for the binary ops and where also a single element or
//     a run of out's trailing dims (a periodic operand); it moves 16 bytes
//     per access where the pointers are aligned, its grid is sized to the
//     multiprocessors, and its index is 32-bit: past 2^31 elements it is
//     launched once per chunk (denseChunk);
//   - strided32, "<fn>_strided32_<sfx>": any other layout whose index and
//     offsets fit in 31 bits, unravelled by multiplications;
//   - strided, "<fn>_strided_<sfx>": the rest, in 64 bits.
//
// Every form but the logical ops' has float16 and bfloat16 kernels, from
// the same templates (kernels/cuda/half.cuh): they read the 16-bit
// storage, compute each element with the float32 op in registers and round
// it once as they store it, the bits that register's float32 temporaries
// give (dispatch.ViaCompute) without their passes over memory: a float16
// a+b reads 4 bytes and writes 2 per element in one launch where the
// temporaries' path moves 30 in four (three conversions of 6 bytes and
// the float32 add's 12). native registers them; they are in modules of
// their own (moduleOf).

// suffixes are the kernels' dtype suffixes, by dispatch.DType.
var suffixes = [...]string{dispatch.Float32: "f32", dispatch.Float64: "f64", dispatch.Int32: "i32", dispatch.Int64: "i64", dispatch.Bool: "bool",
	dispatch.Float16: "f16", dispatch.BFloat16: "bf16", dispatch.Int8: "i8", dispatch.Uint8: "u8"}

// suffix is dt's kernel suffix, or "" for an invalid dtype.
func suffix(dt dispatch.DType) string {
	if !dt.Valid() {
		return ""
	}
	return suffixes[dt]
}

// named fills in the op of an error a kernel returns.
func named(op string, err error) error {
	if e, ok := err.(*dispatch.Error); ok && e.Op == "" {
		e.Op = op
	}
	return err
}

// mapKernel launches fn over out and the inputs broadcast to it, in the
// dense form where the layouts allow, else strided32 or strided (see the
// top of this file), as (out, in..., n, [periods... | layout], extra...):
// the signature of every kernel of unary.cu, trig.cu, elementwise.cu and
// binary.cu but the logical ops. periodic says whether the dense form takes
// a period per input (the binary ops and where); without it an input must
// be of out's shape. Nothing is launched for an empty out.
func mapKernel(dev dispatch.Device, mod, fn, sfx string, periodic bool, out view, in []view, extra ...any) error {
	n := dispatch.Numel(out.shape)
	if n == 0 {
		return nil
	}
	if periods, ok := densePeriods(out, in, n, periodic); ok {
		if chunk := denseChunk(n, periods); chunk > 0 {
			return forChunks(n, chunk, func(start, m int) error {
				// A chunk starts at a multiple of every period below n:
				// those inputs start at their element 0 again.
				args := []any{out.moved(start).ptr}
				var ps []any
				for k, v := range in {
					if p := periods[k]; p == n {
						args, ps = append(args, v.moved(start).ptr), append(ps, int64(m))
					} else {
						args, ps = append(args, v.ptr), append(ps, int64(p))
					}
				}
				args = append(args, int64(m))
				if periodic {
					args = append(args, ps...)
				}
				g, b := gridDense(dev, m, out, in)
				return enqueue(dev, mod, fn+"_"+sfx, g, b, 0, append(args, extra...)...)
			})
		}
	}
	args := []any{out.ptr}
	for _, v := range in {
		args = append(args, v.ptr)
	}
	l, err := layoutOf(broadcastWalk(out, in))
	if err != nil {
		return err
	}
	g, b := grid1(n)
	if l32, ok := layout32Of(l, n); ok {
		args = append(args, int32(n), cBytes(&l32))
		return enqueue(dev, mod, fn+"_strided32_"+sfx, g, b, 0, append(args, extra...)...)
	}
	args = append(args, int64(n), cBytes(&l))
	return enqueue(dev, mod, fn+"_strided_"+sfx, g, b, 0, append(args, extra...)...)
}

// densePeriods says whether out (of n elements) and the inputs fit the
// dense form, and each input's period: the count of output elements after
// which it repeats in the flat index. Out must be contiguous; an input
// contiguous of out's shape has period n; with periodic, a single element
// has period 1, and a contiguous input whose shape (without its leading
// 1s) is out's trailing dims, such as a bias [C] of a [B, C] out, has its
// own size as its period.
func densePeriods(out view, in []view, n int, periodic bool) ([]int, bool) {
	if !out.contiguous() {
		return nil, false
	}
	periods := make([]int, len(in))
	for k, v := range in {
		m := dispatch.Numel(v.shape)
		switch {
		case v.contiguous() && sameShape(v.shape, out.shape):
			periods[k] = n
		case !periodic:
			return nil, false
		case m == 1:
			periods[k] = 1
		case v.contiguous() && trailing(v.shape, out.shape):
			periods[k] = m
		default:
			return nil, false
		}
	}
	return periods, true
}

// denseChunk is the most elements one dense launch over n takes, whose
// inputs have the periods given: n where n fits the kernels' 32-bit index
// (fits32); past it, the largest multiple of 16 (so that each chunk starts
// on a 16-byte boundary where the tensors do) and of every period below n
// (so that a periodic input starts its period again) that fits; 0 where
// no multiple fits, and the launch takes the strided form.
func denseChunk(n int, periods []int) int {
	if n <= fits32 {
		return n
	}
	l := 16
	for _, p := range periods {
		if p != n {
			l = l / gcd(l, p) * p
			if l > fits32 {
				return 0
			}
		}
	}
	return fits32 / l * l
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// forChunks calls f(start, m) for the chunks [start, start+m) of [0, n),
// each chunk elements long but the last. A chunk below 1 (denseChunk's 0,
// which only a test's lowered fits32 can give a conversion) is taken as 1
// rather than loop forever.
func forChunks(n, chunk int, f func(start, m int) error) error {
	chunk = max(chunk, 1)
	for start := 0; start < n; start += chunk {
		if err := f(start, min(chunk, n-start)); err != nil {
			return err
		}
	}
	return nil
}

// trailing says whether shape, without its leading 1s, is the last dims of
// of: an operand of that shape, broadcast to of, repeats every
// Numel(shape) elements.
func trailing(shape, of []int) bool {
	for len(shape) > 0 && shape[0] == 1 {
		shape = shape[1:]
	}
	return len(shape) <= len(of) && sameShape(shape, of[len(of)-len(shape):])
}

// broadcastWalk is the walk of out and the inputs over out's shape.
func broadcastWalk(out view, in []view) layout.Walk {
	w := layout.Walk{Shape: out.shape, Strides: [][]int{out.strides}}
	for _, v := range in {
		w.Strides = append(w.Strides, v.broadcastTo(out.shape))
	}
	return w
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func views(ts []*dispatch.Tensor) []view {
	vs := make([]view, len(ts))
	for i, t := range ts {
		vs[i] = viewOf(t)
	}
	return vs
}

// copyInto writes src into dst (of src's shape), converting the dtype if
// they differ: cast_<from>_<to>, which for one dtype is the strided copy.
// It takes any rank: where more than maxRank dims remain once collapsed (a
// view whose dims do not merge), it launches once per index of the leading
// dims, as wgpu's place does, so that a copy, which rankError asks for,
// never fails for want of dims.
func copyInto(dev dispatch.Device, dst, src view) error {
	mod, sfx := moduleOf("elementwise", src.dtype, dst.dtype), suffix(src.dtype)+"_"+suffix(dst.dtype)
	w := layout.Walk{Shape: dst.shape, Strides: [][]int{dst.strides, src.strides}}.Collapse()
	lead := w.Rank() - maxRank
	if lead <= 0 {
		return mapKernel(dev, mod, "cast", sfx, false, dst, []view{src})
	}
	outer := w.Shape[:lead]
	for o := range dispatch.Numel(outer) {
		d, s := dst, src
		for k, rem := lead-1, o; k >= 0; k-- {
			i := rem % outer[k]
			rem /= outer[k]
			d, s = d.moved(i*w.Strides[0][k]), s.moved(i*w.Strides[1][k])
		}
		d.shape, s.shape = w.Shape[lead:], w.Shape[lead:]
		d.strides, s.strides = w.Strides[0][lead:], w.Strides[1][lead:]
		if err := mapKernel(dev, mod, "cast", sfx, false, d, []view{s}); err != nil {
			return err
		}
	}
	return nil
}

// trigOps are the unary ops whose kernels trig.cu holds (module "trig");
// unary.cu holds the others (module "unary"). Two modules keep each PTX
// file small; kernels/cuda/unary.cuh's macros list the same split.
var trigOps = map[string]bool{
	"sin": true, "cos": true, "tan": true, "asin": true, "acos": true, "atan": true,
	"sinh": true, "cosh": true, "tanh": true, "asinh": true, "acosh": true, "atanh": true,
}

// gammaOps are the unary and binary ops whose kernels gamma.cu holds
// (module "gamma").
var gammaOps = map[string]bool{"lgamma": true, "digamma": true, "polygamma": true, "special_zeta": true, "igamma": true, "igammac": true}

// polyOps are the unary ops whose kernels orthopoly.cu holds (module
// "orthopoly"): torch.special's orthogonal polynomials.
var polyOps = func() map[string]bool {
	m := map[string]bool{}
	for _, op := range ops.Polys {
		m[op.Name] = true
	}
	return m
}()

// unaryModule is the module that holds unary op name's kernels for dtype dt.
func unaryModule(name string, dt dispatch.DType) string {
	if trigOps[name] {
		return moduleOf("trig", dt)
	}
	if polyOps[name] {
		return moduleOf("orthopoly", dt)
	}
	if gammaOps[name] {
		return moduleOf("gamma", dt)
	}
	return moduleOf("unary", dt)
}

// binaryModule is the module that holds binary op name's kernels for
// dtype dt.
func binaryModule(name string, dt dispatch.DType) string {
	if gammaOps[name] {
		return moduleOf("gamma", dt)
	}
	return moduleOf("binary", dt)
}

// moduleOf is the module that holds a kernel of the family whose kernels
// for the wide dtypes module mod holds, for operands of dtypes dts: the
// elementwise families keep their float16 and bfloat16 kernels apart, in
// <mod>_f16 and <mod>_bf16 (kernels/cuda/unary_f16.cu, trig_bf16.cu, ...),
// and the casts that touch either in elementwise_half, so that each PTX
// file stays small and a program JIT-compiles only the dtypes it uses.
func moduleOf(mod string, dts ...dispatch.DType) string {
	for _, dt := range dts {
		if dispatch.Halves.Has(dt) {
			if mod == "elementwise" {
				return mod + "_half"
			}
			return mod + "_" + suffix(dt)
		}
	}
	return mod
}

// native is the halfKernel of k, one of this file's kernels, whose
// float16 and bfloat16 kernels exist for every dtype it meets beside them
// (kernels/cuda/half.cuh): it runs k on the 16-bit tensors themselves. A
// call with an int8 or uint8 tensor as well (a cast between the two),
// which has no such kernel, is left to register's temporaries.
func native[A any](k dispatch.Kernel[A]) halfKernel[A] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) (bool, error) {
		if dispatch.Bytes.Has(out.DType) {
			return false, nil
		}
		for _, t := range in {
			if dispatch.Bytes.Has(t.DType) {
				return false, nil
			}
		}
		return true, k(out, in, a)
	}
}

// elementwise registers k, one of this file's kernels, as op's with its
// native path for the 16-bit floats.
func elementwise[A any](op *dispatch.Op[A], set dispatch.DTypeSet, k dispatch.Kernel[A]) {
	kernelHalves(op, set, native(k), k)
}

func init() {
	for _, u := range ops.UnaryOps {
		name := u.Name
		elementwise(u.Op, u.DTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, p ops.Params) error {
			// p is leaky_relu's slope, clamp's bounds; zero for the others.
			x := in[0]
			return named(name, mapKernel(out.Device, unaryModule(name, x.DType), name, suffix(x.DType), false, viewOf(out), []view{viewOf(x)}, p.A, p.B))
		})
	}
	for _, b := range ops.BinaryOps {
		op, name := b.Op, b.Name
		if op == ops.LogicalAnd || op == ops.LogicalOr {
			// Operands of any two dtypes (nonzero is true).
			kernel(op, dtypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
				return named(name, truthKernel(out, name, in))
			})
			continue
		}
		elementwise(op, b.DTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
			// Infer gave both the same dtype; dispatch checks an integer
			// pow's exponents (checks.go).
			dt, kname := in[0].DType, name
			if op == ops.Pow && dt.IsFloat() && in[1].Numel() == 1 {
				kname = "pow_scalar" // a scalar exponent, as torch's and the cpu's
			}
			return named(name, mapKernel(out.Device, binaryModule(name, dt), kname, suffix(dt), true, viewOf(out), views(in)))
		})
	}
	elementwise(ops.AddScaled, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, s ops.Scale) error {
		dt := in[0].DType
		return named("add_scaled", mapKernel(out.Device, moduleOf("binary", dt), "add_scaled", suffix(dt), true, viewOf(out), views(in), s.Alpha))
	})
	elementwise(ops.Where, dtypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		return named("where", mapKernel(out.Device, moduleOf("binary", out.DType), "where", suffix(out.DType), true, viewOf(out), views(in)))
	})
	kernel(ops.LogicalNot, dtypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		return named("logical_not", truthKernel(out, "logical_not", in))
	})
	elementwise(ops.Cast, dtypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ ops.CastTo) error {
		return named("cast", copyInto(out.Device, viewOf(out), viewOf(in[0])))
	})
	elementwise(ops.Contiguous, dtypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		return named("contiguous", copyInto(out.Device, viewOf(out), viewOf(in[0])))
	})
}

// truthKernel launches one of the logical kernels, which read each input's
// truth through its dtype given as an argument (the dispatch.DType number)
// and always take a layout: (out, in..., n, layout, kinds...).
func truthKernel(out *dispatch.Tensor, fn string, in []*dispatch.Tensor) error {
	n := out.Numel()
	if n == 0 {
		return nil
	}
	o, vs := viewOf(out), views(in)
	l, err := layoutOf(broadcastWalk(o, vs))
	if err != nil {
		return err
	}
	args := []any{o.ptr}
	for _, v := range vs {
		args = append(args, v.ptr)
	}
	args = append(args, int64(n), cBytes(&l))
	for _, v := range vs {
		args = append(args, int32(v.dtype))
	}
	g, b := grid1(n)
	return enqueue(out.Device, "binary", fn, g, b, 0, args...) // logical_and, _or, _not: binary.cu
}
