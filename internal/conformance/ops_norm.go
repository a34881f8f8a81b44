package conformance

import "github.com/lathe-ml/lathe"

// The table entries of the channel normalisations, the pixel shuffles and
// the vector norms
// (cases from build/torchref/norm.py).

func init() {
	for k, f := range normOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in two tables")
		}
		ops[k] = f
	}
}

var normOps = map[string]opFunc{
	"batch_norm": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		y, _, _ := batchNorm(a, in)
		return one(y)
	},
	// batch_norm_stats is the same call, giving the running statistics
	// after it instead of its output.
	"batch_norm_stats": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		y, mean, variance := batchNorm(a, in)
		if err := y.Err(); err != nil {
			return nil, err
		}
		return []*lathe.Tensor{mean, variance}, nil
	},
	"group_norm": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].GroupNorm(a.Int("groups"), in[1], in[2], a.Float("eps")))
	},
	"pixel_shuffle": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].PixelShuffle(a.Int("r")))
	},
	"pixel_unshuffle": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].PixelUnshuffle(a.Int("r")))
	},
	"vector_norm": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		if a.Bool("keepdim") {
			return one(in[0].NormKeepDim(a.Float("p"), a.Ints("dims")...))
		}
		return one(in[0].Norm(a.Float("p"), a.Ints("dims")...))
	},
}

// batchNorm runs x.BatchNorm (inputs x, weight, bias) with the running
// statistics of the attributes, made fresh in x's dtype on x's device, and
// returns them as the call left them.
func batchNorm(a *Attrs, in []*lathe.Tensor) (y, mean, variance *lathe.Tensor) {
	x := in[0]
	stat := func(k string) *lathe.Tensor {
		if !a.Has(k) {
			return nil
		}
		v := a.Floats(k)
		dt := x.DType()
		if !dt.IsFloat() {
			dt = lathe.Float64
		}
		// Made on the cpu and moved: a device without float64 (wgpu)
		// cannot hold the float64 values the attributes give.
		return lathe.FromSlice(lathe.CPU, v, len(v)).Cast(dt).To(x.Device())
	}
	mean, variance = stat("running_mean"), stat("running_var")
	y = x.BatchNorm(mean, variance, in[1], in[2], a.Bool("training"), a.Float("momentum"), a.Float("eps"))
	return y, mean, variance
}
