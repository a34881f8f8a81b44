package lathe

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// AiryAi is the Airy function Ai(x), the solution of y” = x·y that
// decays as x → +∞, as torch.special.airy_ai: Cephes's algorithm, as
// torch's (its Maclaurin series on [-2.09, 2.09), rational approximations
// in 1/ζ, ζ = 2/3·|x|^(3/2), beyond). Two departures, both toward the
// exact value: below -2.09 torch 1.13 drops the leading 1 of two monic
// denominators, so that its Ai(-2.1) is 1.7e-5 and its Ai(-3) 1.4e-8 of
// the value off (lathe's are within 1e-15, mpmath's being the reference);
// and Ai(±Inf) is 0, where torch's is NaN. Where the phase ζ + π/4 keeps
// no digit (ζ from 2^52, x below -2.6e10, or in float32 on cuda and wgpu
// ζ from 2^23, x below -5.4e4) Ai is 0, which its magnitude, below
// |x|^-1/4/√π, bounds the error of, where torch's value is noise of that
// size. Integers and bool are promoted to float32; float16 and
// bfloat16 are computed in float32, float32 in float64 on the cpu and in
// float32 on cuda and wgpu.
//
// Its gradient is Ai'(x), by each branch's form differentiated (the series
// term by term, the rational forms by the quotient rule), within 16·ε·(1 +
// ζ) of its scale as Ai is; Ai” is x·Ai(x), Airy's equation, so AiryAi
// differentiates to any order, where torch's has no gradient.
func (x *Tensor) AiryAi() *Tensor {
	if err := x.check(ops.AiryAi.Name); err != nil {
		return failed(err)
	}
	if !x.t.DType.IsFloat() {
		return apply(opAiryAiPromoted, none, x)
	}
	return apply(ops.AiryAi, ops.Params{}, x)
}

// opAiryAiPromoted is AiryAi of integers or bool, cast to float32.
var opAiryAiPromoted = compositeVariant("special_airy_ai", "promoted", []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	return apply(ops.AiryAi, ops.Params{}, in[0].Cast(Float32))
})
