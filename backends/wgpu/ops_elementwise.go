//go:build cgo

package wgpu

import (
	"math"
	"slices"
	"strings"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The elementwise ops (dispatch/ops/elementwise.go) are one kernel family,
// elementwise.wgsl: each op is a WGSL expression of its arguments, by the
// WGSL type of the arguments, in the tables below; the template reads each
// argument by its layout (flat, a scalar, or strided and broadcast) and
// writes the expression's value. The scalar forms (AddScalar, ...) are
// these binary ops with a 0-d argument that broadcasts.
//
// The narrow dtypes need no kernels of their own either: the shader reads
// a narrow argument from its packed words and widens it, and rounds a
// narrow result into its words, with convert.wgsl's conversions, so that
// the expression is the one of the compute dtype (float32 for float16 and
// bfloat16, int32 for int8 and uint8). That is dispatch.ViaCompute's
// arithmetic, bit for bit, in one launch where ViaCompute takes one more
// per narrow tensor and a temporary of the compute dtype for each: these
// ops move a few bytes an element, so the conversions would be most of
// their cost. (Where two NaNs meet in one float operation, which one's
// payload the result carries is the compiler's choice, in either path;
// it may choose differently for a value widened in the shader and one
// read from memory.)
//
// The semantics are the cpu kernels' (backends/cpu/elementwise.go,
// binary.go): NaN propagates through maximum and minimum and stays NaN
// through clamp and relu, round is half to even, sign(NaN) is 0, int ops
// wrap, and an int pow with a negative exponent is an error.

// unaryExprs are the unary ops' expressions of x, by x's WGSL type; an op
// lacks an int form where the cpu has none. Attributes are the template's
// attr_f32(j) / attr_i32(j), filled in by unaryAttrs.
var unaryExprs = map[string]map[string]string{
	"neg":    numeric("-x", "i64_neg(x)"),
	"abs":    numeric("abs(x)", "i64_abs(x)"),
	"sign":   {"f32": "f32(x > 0.0) - f32(x < 0.0)", "i32": "select(select(0, -1, x < 0), 1, x > 0)", i64: "i64_sign(x)"},
	"square": numeric("x * x", "i64_mul(x, x)"),
	"relu":   {"f32": "select(0.0, x, x > 0.0 || is_nan(x))", "i32": "max(x, 0)", i64: "select(x, vec2<u32>(0u, 0u), i64_negative(x))"},
	"floor":  {"f32": "floor(x)", "i32": "x", i64: "x"},
	"ceil":   {"f32": "ceil(x)", "i32": "x", i64: "x"},
	"round":  {"f32": "round(x)", "i32": "x", i64: "x"}, // WGSL's round is half to even, as torch.round
	"clamp":  {"f32": "select(min(max(x, attr_f32(0)), attr_f32(1)), x, is_nan(x))", "i32": "clampi(x)", i64: "clampl(x)"},

	"exp":        floats("expf(x)"),
	"log":        floats("logf(x)"),
	"log1p":      floats("log1pf(x)"),
	"expm1":      floats("expm1f(x)"),
	"sqrt":       floats("sqrt(x)"),
	"rsqrt":      floats("1.0 / sqrt(x)"),
	"reciprocal": floats("1.0 / x"),
	"sin":        floats("sinf(x)"),
	"cos":        floats("cosf(x)"),
	"tanh":       floats("tanhf(x)"),
	"sigmoid":    floats("sigmoidf(x)"),
	"silu":       floats("siluf(x)"),
	"erf":        floats("erff(x)"),
	"erfc":       floats("erfcf(x)"),
	// The gamma family, gamma.wgsl's; polygamma's attributes are n and
	// its factor (ops.PolygammaOf).
	"lgamma":          floats("lgammaf(x)"),
	"digamma":         floats("digammaf(x)"),
	"polygamma":       floats("polygammaf(attr_f32(0), attr_f32(1), x)"),
	"special_airy_ai": floats("airyf(x, false)"), // airy.wgsl
	"airy_ai_prime":   floats("airyf(x, true)"),
	// orthopoly.wgsl's: family, shifted, the degree n and the order m of
	// the derivative (ops.PolyOf).
	"special_chebyshev_polynomial_t":         floats("orthopolyf(0u, false, attr_f32(0), attr_f32(1), x)"),
	"special_chebyshev_polynomial_u":         floats("orthopolyf(1u, false, attr_f32(0), attr_f32(1), x)"),
	"special_chebyshev_polynomial_v":         floats("orthopolyf(2u, false, attr_f32(0), attr_f32(1), x)"),
	"special_chebyshev_polynomial_w":         floats("orthopolyf(3u, false, attr_f32(0), attr_f32(1), x)"),
	"special_shifted_chebyshev_polynomial_t": floats("orthopolyf(0u, true, attr_f32(0), attr_f32(1), x)"),
	"special_shifted_chebyshev_polynomial_u": floats("orthopolyf(1u, true, attr_f32(0), attr_f32(1), x)"),
	"special_shifted_chebyshev_polynomial_v": floats("orthopolyf(2u, true, attr_f32(0), attr_f32(1), x)"),
	"special_shifted_chebyshev_polynomial_w": floats("orthopolyf(3u, true, attr_f32(0), attr_f32(1), x)"),
	"special_hermite_polynomial_h":           floats("orthopolyf(4u, false, attr_f32(0), attr_f32(1), x)"),
	"special_hermite_polynomial_he":          floats("orthopolyf(5u, false, attr_f32(0), attr_f32(1), x)"),
	"special_laguerre_polynomial_l":          floats("orthopolyf(6u, false, attr_f32(0), attr_f32(1), x)"),
	"special_legendre_polynomial_p":          floats("orthopolyf(7u, false, attr_f32(0), attr_f32(1), x)"),
	"tan":                                    floats("tanf(x)"),
	"asin":                                   floats("asinf(x)"),
	"acos":                                   floats("acosf(x)"),
	"atan":                                   floats("atanf(x)"),
	"sinh":                                   floats("sinhf(x)"),
	"cosh":                                   floats("coshf(x)"),
	"asinh":                                  floats("asinhf(x)"),
	"acosh":                                  floats("acoshf(x)"),
	"atanh":                                  floats("atanhf(x)"),
	"leaky_relu":                             floats("select(x * attr_f32(0), x, x > 0.0)"),
	// gelu is x·Φ(x) = x/2·(1 + erf(x/√2)); gelu_tanh's x/2·(1 + tanh(z))
	// is x·sigmoid(2z), which keeps its digits where tanh(z) is near -1.
	"gelu":      floats("0.5 * x * one_plus_erf(x * 0.70710678118654752)"),
	"gelu_tanh": floats("x * sigmoidf(1.5957691216057308 * (x + 0.044715 * x * x * x))"),
	// softplus(x; beta, threshold): log1p(exp(beta·x))/beta, and x where
	// beta·x > threshold; beta = 1 gives exactly log1p(exp(x)).
	"softplus": floats("select(log1pf(expf(attr_f32(0) * x)) / attr_f32(0), x, attr_f32(0) * x > attr_f32(1))"),
}

// binaryExprs are the binary ops' expressions of a and b, by their WGSL
// type; the Bool-result ops' expressions are bool, stored as 0 or 1.
var binaryExprs = map[string]map[string]string{
	"add": numeric("a + b", "i64_add(a, b)"),
	"sub": numeric("a - b", "i64_sub(a, b)"),
	"mul": numeric("a * b", "i64_mul(a, b)"),
	"div": floats("a / b"),
	"pow": {"f32": "powf(a, b)", "i32": "powi(a, b)", i64: "powl(a, b)"},
	// A NaN in either argument is the result, as in torch.maximum.
	"maximum":      {"f32": "select(b, a, is_nan(a) || a > b)", "i32": "max(a, b)", i64: "i64_max(a, b)"},
	"minimum":      {"f32": "select(b, a, is_nan(a) || a < b)", "i32": "min(a, b)", i64: "i64_min(a, b)"},
	"atan2":        floats("atan2f(a, b)"),
	"special_zeta": floats("zetaf(a, b)"),          // gamma.wgsl
	"igamma":       floats("igammaf(a, b, false)"), // igamma.wgsl
	"igammac":      floats("igammaf(a, b, true)"),
	"fmod":         {"f32": "fmodf(a, b)", "i32": "fmodi(a, b)", i64: "fmodl(a, b)"},
	"remainder":    {"f32": "remainderf(a, b)", "i32": "remainderi(a, b)", i64: "remainderl(a, b)"},
	// The integer ops; a shift count is taken mod the width, as x86's.
	"bitwise_and":         ints("a & b", "a & b"),
	"bitwise_or":          ints("a | b", "a | b"),
	"bitwise_xor":         ints("a ^ b", "a ^ b"),
	"bitwise_left_shift":  ints("a << u32(b & 31)", "u64_shl(a, b.x & 63u)"),
	"bitwise_right_shift": ints("a >> u32(b & 31)", "i64_sar(a, b.x & 63u)"),
	"floor_divide":        ints("floordivi(a, b)", "floordivl(a, b)"),
	"gcd":                 ints("gcdi(a, b)", "gcdl(a, b)"),
	// The activations' backward ops: grad·f'(x), f' from math.wgsl.
	"gelu_backward":      floats("a * gelu_grad(b)"),
	"gelu_tanh_backward": floats("a * gelu_tanh_grad(b)"),
	"silu_backward":      floats("a * silu_grad(b)"),
	"relu_backward":      floats("select(a, 0.0, b <= 0.0)"),

	// ne is !(a == b), which is true for NaN however a compiler orders it.
	"eq": anyType("a == b", "i64_eq(a, b)"), "ne": anyType("!(a == b)", "!i64_eq(a, b)"),
	"lt": numeric("a < b", "i64_lt(a, b)"), "le": numeric("a <= b", "i64_le(a, b)"),
	"gt": numeric("a > b", "i64_lt(b, a)"), "ge": numeric("a >= b", "i64_le(b, a)"),
}

// floats is an expression of float32 alone; numeric one of float32 and
// int32 (e) and of int64 (e64, int64.wgsl's functions); ints drops
// float32; anyType adds bool.
func floats(e string) map[string]string       { return map[string]string{"f32": e} }
func numeric(e, e64 string) map[string]string { return map[string]string{"f32": e, "i32": e, i64: e64} }
func ints(e, e64 string) map[string]string    { return map[string]string{"i32": e, i64: e64} }
func anyType(e, e64 string) map[string]string {
	return map[string]string{"f32": e, "i32": e, i64: e64, "u32": e}
}

// truth is the WGSL condition that a value v of WGSL type t is nonzero,
// which the logical ops take as true (NaN included, as PyTorch).
func truth(t, v string) string {
	switch t {
	case "f32":
		return "(bitcast<u32>(" + v + ") & 0x7fffffffu) != 0u" // not v != 0.0, which a compiler may make false for NaN
	case "i32":
		return v + " != 0"
	case i64:
		return "i64_nonzero(" + v + ")"
	}
	return v + " != 0u"
}

// logicalOps are the binary ops that combine their arguments' truths
// (any dtypes, each by its own WGSL type), by their WGSL operator.
var logicalOps = map[*dispatch.Op[dispatch.None]]string{ops.LogicalAnd: "&&", ops.LogicalOr: "||"}

func init() {
	for _, u := range ops.UnaryOps {
		exprs := unaryExprs[u.Name]
		registerPacked(u.Op, u.DTypes&wgslTypes(exprs), unaryKernel(u.Op, exprs))
	}
	registerPacked(ops.LogicalNot, allTypes, logicalNot)
	for _, b := range ops.BinaryOps {
		set := wgslTypes(binaryExprs[b.Name])
		if _, ok := logicalOps[b.Op]; ok {
			set = allTypes
		}
		registerPacked(b.Op, b.DTypes&set, binaryKernel(b))
	}
	registerPacked(ops.Where, 1<<dispatch.Bool, where)
	// WGSL's fma, which the spec lets an adapter round twice, as a
	// product and a sum: lavapipe does (an ulp from the fused value at
	// most); a GPU's fuses.
	registerPacked(ops.AddScaled, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, s ops.Scale) error {
		return runElementwise(ops.AddScaled.Name, out, "fma(attr_f32(0), b, a)", []uint32{math.Float32bits(float32(s.Alpha))},
			operand{"a", in[0]}, operand{"b", in[1]})
	})
}

// logicalNot is logical_not's kernel: true where x, of any dtype, is zero.
func logicalNot(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
	return runElementwise(ops.LogicalNot.Name, out, boolWord("!("+truth(computeType(in[0].DType), "x")+")"), nil, operand{"x", in[0]})
}

// where is where's kernel: cond is Bool (where's Infer checks it), x and
// y of any one dtype. It selects without computing, so a 16-bit x or y is
// read and written as its bits (bitPackings' raw16), a signalling NaN's
// too, where a float32 widening would quiet it.
func where(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
	return runElementwiseAs(bitPackings, ops.Where.Name, out, "select(y, x, c != 0u)", nil,
		operand{"c", in[0]}, operand{"x", in[1]}, operand{"y", in[2]})
}

// unaryKernel is op's kernel, whose expressions by WGSL type are exprs; it
// is registered for those types only.
func unaryKernel(op *dispatch.Op[ops.Params], exprs map[string]string) dispatch.Kernel[ops.Params] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, p ops.Params) error {
		x := in[0]
		return runElementwise(op.Name, out, exprs[computeType(x.DType)], unaryAttrs(op, dispatch.ComputeOf(x.DType), p), operand{"x", x})
	}
}

// unaryAttrs are the attribute words of leaky_relu (its slope), softplus,
// polygamma and the polynomials (their two), and clamp (its bounds; for
// ints those of clampi in elementwise.wgsl), for an x
// computed in dt.
func unaryAttrs(op *dispatch.Op[ops.Params], dt dispatch.DType, p ops.Params) []uint32 {
	switch {
	case op == ops.LeakyReLU:
		return []uint32{math.Float32bits(float32(p.A))}
	case op == ops.Softplus, op == ops.Polygamma, ops.IsPoly(op):
		return []uint32{math.Float32bits(float32(p.A)), math.Float32bits(float32(p.B))}
	case op == ops.Clamp && dt == dispatch.Float32:
		// Rounding is monotonic, so clamping to the rounded bounds is the
		// cpu's float64 clamp rounded once.
		return []uint32{math.Float32bits(float32(p.A)), math.Float32bits(float32(p.B))}
	case op == ops.Clamp && dt == dispatch.Int64:
		return int64ClampAttrs(p.A, p.B)
	case op == ops.Clamp:
		return intClampAttrs(p.A, p.B)
	}
	return nil
}

// int64ClampAttrs gives clampl its words, as intClampAttrs gives clampi
// its: the bounds ceil(lo) and floor(hi) as int64s (two words each, low
// first) and the word of bounds past int64's range, where the cpu's
// result is the bound converted to int64, which for a float past the
// range is the most negative int64 (cvttsd2si, as Go on amd64 gives).
// The comparisons are exact in int64, where the cpu's compare x as a
// float64: the two differ only for |x| past 2⁵³ within an ulp of a bound.
func int64ClampAttrs(lo, hi float64) []uint32 {
	var always uint32
	l, h := math.Ceil(lo), math.Floor(hi)
	lw, hw := int64(math.MinInt64), int64(math.MaxInt64)
	switch {
	case l >= 1<<63:
		always |= 1
	case l > math.MinInt64:
		lw = int64(l)
	}
	switch {
	case h < math.MinInt64:
		always |= 2
		hw = math.MinInt64
	case h < 1<<63:
		hw = int64(h)
	}
	return []uint32{uint32(lw), uint32(uint64(lw) >> 32), uint32(hw), uint32(uint64(hw) >> 32), always}
}

// intClampAttrs gives clampi its words: an int x is below lo when it is
// below ceil(lo) and above hi when above floor(hi), and the cpu's result
// then is that bound as an int64, wrapped to int32.
func intClampAttrs(lo, hi float64) []uint32 {
	var always uint32
	l, h := math.Ceil(lo), math.Floor(hi)
	lw, hw := int32(math.MinInt32), int32(math.MaxInt32)
	switch {
	case l > math.MaxInt32:
		always |= 1
		lw = int32(int64(l))
	case l > math.MinInt32:
		lw = int32(l)
	}
	switch {
	case h < math.MinInt32:
		always |= 2
		hw = int32(int64(h))
	case h < math.MaxInt32:
		hw = int32(h)
	}
	return []uint32{uint32(lw), uint32(hw), always}
}

// binaryKernel is b's kernel: an expression of binaryExprs by lhs's WGSL
// type (registered for those types only), or for a logical op its
// operator over each argument's truth.
func binaryKernel(b ops.BinaryOp) dispatch.Kernel[dispatch.None] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		x, y := in[0], in[1]
		tx := computeType(x.DType)
		expr := binaryExprs[b.Name][tx]
		if b.Op == ops.Pow && tx == "f32" && y.Numel() == 1 {
			expr = "pows(a, b)" // a scalar exponent, as torch's and the cpu's
		}
		if op, ok := logicalOps[b.Op]; ok {
			expr = "(" + truth(tx, "a") + ") " + op + " (" + truth(computeType(y.DType), "b") + ")"
		}
		if b.Bool {
			expr = boolWord(expr)
		}
		return runElementwise(b.Name, out, expr, nil, operand{"a", x}, operand{"b", y})
	}
}

// boolWord is the u32 word, 0 or 1, of a WGSL bool expression.
func boolWord(cond string) string { return "select(0u, 1u, " + cond + ")" }

// computeType is the WGSL type that an expression sees a tensor of dt as:
// wgslType's, or for a narrow dtype its compute dtype's.
func computeType(dt dispatch.DType) string { return wgslType(dispatch.ComputeOf(dt)) }

// operand is an argument of an elementwise shader and the name its
// expression reads it by.
type operand struct {
	name string
	t    *dispatch.Tensor
}

// elementwiseArg is an argument as the template sees it; Narrow and Bits
// are those of a packed narrow dtype, else "" and 0.
type elementwiseArg struct {
	Name, Type, Narrow, Layout string
	Bits, Binding, Base        int
}

// argLayout is how the shader finds an argument's elements
// (elementwise.wgsl): flat and scalar save the strided walk of the index.
func argLayout(t, out *dispatch.Tensor) string {
	switch {
	case t.Numel() == 1:
		return "scalar"
	case t.IsContiguous() && slices.Equal(t.Shape, out.Shape):
		return "flat"
	}
	return "strided"
}

// runElementwise launches expr over the contiguous out, one item per
// perItem elements (per word, for a narrow out), with the operands'
// strided layouts and then the attribute words as parameters.
func runElementwise(op string, out *dispatch.Tensor, expr string, attrs []uint32, args ...operand) error {
	return runElementwiseAs(packings, op, out, expr, attrs, args...)
}

// runElementwiseAs is runElementwise with the narrow dtypes read and
// written through the conversions of pks.
func runElementwiseAs(pks map[dispatch.DType]packed, op string, out *dispatch.Tensor, expr string, attrs []uint32, args ...operand) error {
	n := out.Numel()
	if n == 0 {
		return nil
	}
	outPk := pks[out.DType]
	data := struct {
		Out, OutNarrow string
		OutBits        int
		Args           []elementwiseArg
		Expr           string
		AttrBase       int
		Conversions    bool
		Gamma, Igamma  bool
		OrthoPoly      bool
		Airy           bool
	}{Out: computeType(out.DType), OutNarrow: outPk.name, OutBits: outPk.bits, Expr: expr, AttrBase: 10 + 9*len(args),
		Conversions: outPk.bits != 0, Gamma: strings.Contains(expr, "gamma") || strings.Contains(expr, "zeta"), Igamma: strings.Contains(expr, "igamma"),
		OrthoPoly: strings.Contains(expr, "orthopoly"), Airy: strings.Contains(expr, "airyf")}
	tensors := make([]*dispatch.Tensor, 0, 1+len(args))
	tensors = append(tensors, out)
	key := []string{"elementwise", op, storageName(pks, out.DType)}
	for k, a := range args {
		pk := pks[a.t.DType]
		l := argLayout(a.t, out)
		data.Args = append(data.Args, elementwiseArg{Name: a.name, Type: computeType(a.t.DType), Narrow: pk.name, Bits: pk.bits,
			Layout: l, Binding: 2 + k, Base: 10 + 9*k})
		data.Conversions = data.Conversions || pk.bits != 0
		tensors = append(tensors, a.t)
		key = append(key, storageName(pks, a.t.DType)+":"+l)
	}
	sh, err := shaderFor(strings.Join(key, "/"), "elementwise", data)
	if err != nil {
		return err
	}
	params, err := stridedParams(out, tensors[1:]...)
	if err != nil {
		return err
	}
	g := gridPer(n)
	if outPk.bits != 0 {
		per := 32 / outPk.bits
		g = grid((n + per - 1) / per)
	}
	return launch(op, sh, g, append(params, attrs...), tensors...)
}

// storageName names how a tensor of dt is stored, for a shader's key: its
// WGSL type, or a narrow dtype's packing.
func storageName(pks map[dispatch.DType]packed, dt dispatch.DType) string {
	if pk, ok := pks[dt]; ok {
		return pk.name
	}
	return wgslType(dt)
}
