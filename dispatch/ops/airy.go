package ops

// AiryAi is the Airy function Ai(x), torch.special.airy_ai (Cephes's airy):
// its Maclaurin series on [-2.09, 2.09), a rational approximation in 1/ζ
// from 2.09 (ζ = 2/3·x^(3/2)), and the modulus and phase forms below
// -2.09, where torch 1.13 drops the leading 1 of two monic denominators
// (its Ai(-2.1) is 1.7e-5 of the value off). Ai(±Inf) is 0, where torch's
// is NaN. Its gradient is AiryAiPrime, Ai'(x), each branch's form
// differentiated, whose own is x·Ai(x) (Airy's equation), so that the two
// differentiate to any order. The kernels are backends/cpu/airy.go,
// kernels/cuda/airy.cuh and kernels/wgsl/airy.wgsl, with the tables
// build/airy/tables.py writes.
var (
	AiryAi      = unary("special_airy_ai", Floats)
	AiryAiPrime = unary("airy_ai_prime", Floats)
)
