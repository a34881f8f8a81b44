package lathe

import (
	"sync"
	"sync/atomic"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/goid"
)

// Mixed precision, as torch.autocast: inside Autocast the ops of a small
// table run in a dtype chosen by the table instead of their inputs'.
// lathe follows the table of PyTorch 1.13's CUDA autocast
// (aten/src/ATen/autocast_mode.cpp, the lists of the AutocastCUDA key),
// the list GPU users train with, on every device; torch's CPU autocast has
// a shorter list (softmax, sum and layer_norm, for one, are not on it).

// castPolicy is what autocast does to an op's floating inputs.
type castPolicy uint8

const (
	// castLower runs the op in the autocast dtype: float32, float16 and
	// bfloat16 inputs are cast to it (torch's lower_precision_fp list).
	castLower castPolicy = iota + 1
	// castFloat32 runs the op in float32: float16 and bfloat16 inputs are
	// cast up (torch's fp32 and fp32_set_opt_dtype lists).
	castFloat32
	// castWidest casts the floating inputs to the widest of their dtypes,
	// for ops that refuse mixed dtypes (torch's promote list).
	castWidest
)

// autocastPolicies is the one table: an op not in it runs on its inputs as
// they are (its own type promotion, as outside autocast). float64 inputs
// and integer ones are never cast, as in torch (is_eligible). The entries
// are the lathe ops of torch 1.13's CUDA lists; composites count as one op.
// It is filled in init because apply, which the composites call, reads it.
var autocastPolicies map[*dispatch.Schema]castPolicy

func init() {
	autocastPolicies = map[*dispatch.Schema]castPolicy{
		// lower_precision_fp: matmul, mm, bmm, addmm, linear, conv*, conv_transpose*.
		&ops.MatMul.Schema:            castLower,
		&ops.Conv.Schema:              castLower,
		&ops.ConvInputBackward.Schema: castLower, // conv_transpose's forward
		&opLinear.Schema:              castLower,
		&opLinearBias.Schema:          castLower,
		&opEinsum.Schema:              castLower,
		&opAddmm.Schema:               castLower, // addmm, addmv, addr, baddbmm, addbmm
		&opAddmv.Schema:               castLower,
		&opAddr.Schema:                castLower,
		&opBaddbmm.Schema:             castLower,
		&opAddbmm.Schema:              castLower,

		// fp32: pointwise ops that lose range or precision in 16 bits, the
		// norms, the losses, and (fp32_set_opt_dtype) the accumulating ops.
		&ops.Asin.Schema:               castFloat32,
		&ops.Acos.Schema:               castFloat32,
		&ops.Tan.Schema:                castFloat32,
		&ops.Sinh.Schema:               castFloat32,
		&ops.Cosh.Schema:               castFloat32,
		&ops.Exp.Schema:                castFloat32,
		&ops.Expm1.Schema:              castFloat32,
		&ops.Log.Schema:                castFloat32,
		&ops.Log1p.Schema:              castFloat32,
		&ops.Reciprocal.Schema:         castFloat32,
		&ops.Rsqrt.Schema:              castFloat32,
		&ops.Pow.Schema:                castFloat32,
		&ops.Softplus.Schema:           castFloat32,
		&ops.LogSumExp.Schema:          castFloat32,
		&ops.Sum.Schema:                castFloat32,
		&ops.Prod.Schema:               castFloat32,
		&ops.CumSum.Schema:             castFloat32,
		&ops.Softmax.Schema:            castFloat32,
		&ops.LogSoftmax.Schema:         castFloat32,
		&opLayerNorm.Schema:            castFloat32,
		&opLayerNormAffine.Schema:      castFloat32,
		&opGroupNorm.Schema:            castFloat32,
		&opVectorNorm.Schema:           castFloat32, // linalg_vector_norm
		&opNLLLoss.Schema:              castFloat32,
		&opNLLLossWeighted.Schema:      castFloat32,
		&opCrossEntropy.Schema:         castFloat32, // log_softmax then nll_loss, both fp32
		&opCrossEntropyWeighted.Schema: castFloat32,
		&opMSELoss.Schema:              castFloat32,
		// The other losses and distances of torch's fp32 list
		// (binary_cross_entropy, which torch's CUDA autocast refuses,
		// computes in float32 itself).
		&opL1Loss.Schema:                  castFloat32,
		&opSmoothL1Loss.Schema:            castFloat32,
		&opHuberLoss.Schema:               castFloat32,
		&opKLDivLoss.Schema:               castFloat32,
		&opMarginRankingLoss.Schema:       castFloat32,
		&opHingeEmbeddingLoss.Schema:      castFloat32,
		&opSoftMarginLoss.Schema:          castFloat32,
		&opCosineEmbeddingLoss.Schema:     castFloat32,
		&opTripletMarginLoss.Schema:       castFloat32,
		&opMultiMarginLoss.Schema:         castFloat32,
		&opMultiMarginLossWeighted.Schema: castFloat32,
		&opPoissonNLLLoss.Schema:          castFloat32,
		&opCTCLoss.Schema:                 castFloat32,
		&opCTCLossConcatenated.Schema:     castFloat32,
		&opCosineSimilarity.Schema:        castFloat32,
		&opPairwiseDistance.Schema:        castFloat32, // norm, on the fp32 list
		// log2, log10, erfinv, cdist (mathops) and pdist, on torch's fp32 list.
		&opLog2.Schema:   castFloat32,
		&opLog10.Schema:  castFloat32,
		&opErfinv.Schema: castFloat32,
		&opCdist.Schema:  castFloat32,
		&opPdist.Schema:  castFloat32,

		// promote: ops that take one dtype (torch promotes cat and stack).
		&ops.Concat.Schema:      castWidest,
		&ops.Stack.Schema:       castWidest,
		&ops.Where.Schema:       castWidest,
		&ops.Atan2.Schema:       castWidest,
		&ops.ScatterAdd.Schema:  castWidest,
		&ops.IndexPut.Schema:    castWidest,
		&ops.GridSampler.Schema: castWidest,
		&opAddcmul.Schema:       castWidest,
		&opAddcdiv.Schema:       castWidest,
	}
}

// Autocast state per goroutine: a stack of dtypes, dispatch.InvalidDType for
// "off" (while a table op runs, its parts are not cast again, as torch
// excludes the autocast key inside an autocast kernel). The common path
// outside Autocast pays one atomic load.
var (
	autocastActive atomic.Int64
	autocastMu     sync.Mutex
	autocastStack  = map[uint64][]DType{}
)

// Autocast runs f with mixed precision for the calling goroutine
// (goroutines that f starts run as usual), as torch.autocast with dtype:
//
//   - matmul, einsum, Linear, addmm, addmv, addr, baddbmm, addbmm, the
//     convolutions and the transposed convolutions cast their float32 inputs (bias included) to dtype and
//     give a dtype result; the kernels accumulate in float32, so the result
//     is rounded once;
//   - asin, acos, tan, sinh, cosh, exp, log, log1p, expm1, reciprocal,
//     rsqrt, pow, softplus, sum, prod, cumsum, logsumexp, softmax,
//     log_softmax, vector_norm, layer_norm, group_norm, the losses,
//     cosine_similarity and pairwise_distance cast float16 and bfloat16
//     inputs to float32;
//   - concat, stack, where, atan2, scatter_add, index_put, grid_sample,
//     addcmul and addcdiv cast their floating inputs to the widest;
//   - every other op runs on its inputs as they are, with the usual
//     promotion (bfloat16 + float32 is float32).
//
// float64 and integer inputs are never cast. The casts are ops on the tape,
// so a float32 parameter gets a float32 gradient. Backward is not autocast:
// each gradient op runs in the dtypes of its forward.
//
// dtype must be Float16 or BFloat16, else Autocast returns an ErrDType and
// does not call f. Nested calls apply the innermost dtype and restore the
// outer one on return, also when f panics. Every device computes in
// float16 and bfloat16: the cpu, cuda and wgpu store them in 16 bits and
// compute them in float32 between conversions.
func Autocast(dtype DType, f func()) error {
	if dtype != Float16 && dtype != BFloat16 {
		return errorf("autocast", ErrDType, "dtype", "is "+dtype.String()+" but autocast computes in float16 or bfloat16",
			"pass lathe.BFloat16 or lathe.Float16")
	}
	if f == nil {
		return errorf("autocast", ErrValue, "f", "is nil", "pass the function to run under autocast")
	}
	pushAutocast(goid.Current(), dtype)
	defer popAutocast(goid.Current())
	f()
	return nil
}

// AutocastDType returns the dtype that Autocast applies on the calling
// goroutine, or dispatch.InvalidDType outside Autocast.
func AutocastDType() DType {
	if autocastActive.Load() == 0 {
		return dispatch.InvalidDType
	}
	id := goid.Current()
	autocastMu.Lock()
	defer autocastMu.Unlock()
	if s := autocastStack[id]; len(s) > 0 {
		return s[len(s)-1]
	}
	return dispatch.InvalidDType
}

func pushAutocast(id uint64, dt DType) {
	autocastMu.Lock()
	autocastStack[id] = append(autocastStack[id], dt)
	autocastMu.Unlock()
	autocastActive.Add(1)
}

func popAutocast(id uint64) {
	autocastActive.Add(-1)
	autocastMu.Lock()
	s := autocastStack[id]
	if len(s) <= 1 {
		delete(autocastStack, id)
	} else {
		autocastStack[id] = s[:len(s)-1]
	}
	autocastMu.Unlock()
}

// autocastCall is apply's path for an op in the table while Autocast may be
// on: it casts args as the policy says and runs call with autocast off for
// this goroutine. ok is false when autocast is off here (apply goes on as
// usual).
func autocastCall(s *dispatch.Schema, args []*Tensor, call func([]*Tensor) *Tensor) (out *Tensor, ok bool) {
	p, listed := autocastPolicies[s]
	if !listed {
		return nil, false
	}
	id := goid.Current()
	autocastMu.Lock()
	st := autocastStack[id]
	autocastMu.Unlock()
	if len(st) == 0 || st[len(st)-1] == dispatch.InvalidDType {
		return nil, false
	}
	cast, err := autocastArgs(p, st[len(st)-1], args)
	if err != nil {
		return failed(located(err, s.Name)), true
	}
	pushAutocast(id, dispatch.InvalidDType)
	defer popAutocast(id)
	out = call(cast)
	// The casts are autocast's own: nothing else holds them once the
	// graph that saved them is freed.
	ReleaseWithGraph(out, newOf(args, cast)...)
	return out, true
}

// newOf is the tensors of cast that are not the argument at their index
// in args: the ones autocast made.
func newOf(args, cast []*Tensor) []*Tensor {
	var made []*Tensor
	for i, c := range cast {
		if c != args[i] {
			made = append(made, c)
		}
	}
	return made
}

// autocastInputs casts the inputs of an API function that is more than
// one op (a convolution with its bias) by the policy of the op s, so
// that the bias is cast with x and w as torch casts conv2d's.
func autocastInputs(s *dispatch.Schema, args ...*Tensor) ([]*Tensor, error) {
	if autocastActive.Load() == 0 {
		return args, nil
	}
	dt := AutocastDType()
	if dt == dispatch.InvalidDType {
		return args, nil
	}
	return autocastArgs(autocastPolicies[s], dt, args)
}

// autocastArgs casts the float16, bfloat16 and float32 arguments (torch's
// eligible ones) by policy p under autocast dtype dt.
func autocastArgs(p castPolicy, dt DType, args []*Tensor) ([]*Tensor, error) {
	eligible := func(t *Tensor) bool {
		return t != nil && t.err == nil && t.t != nil && (t.t.DType == Float32 || t.t.DType == Float16 || t.t.DType == BFloat16)
	}
	to := dt
	switch p {
	case castFloat32:
		to = Float32
	case castWidest:
		to = dispatch.InvalidDType
		for _, a := range args {
			if eligible(a) {
				if to == dispatch.InvalidDType {
					to = a.t.DType
				} else {
					to = dispatch.PromoteTypes(to, a.t.DType)
				}
			}
		}
	}
	out := make([]*Tensor, len(args))
	for i, a := range args {
		out[i] = a
		if eligible(a) && a.t.DType != to {
			if out[i] = a.Cast(to); out[i].err != nil {
				return nil, out[i].err
			}
		}
	}
	return out, nil
}
