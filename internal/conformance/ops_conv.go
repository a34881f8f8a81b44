package conformance

import "github.com/lathe-ml/lathe"

// The table entries of the convolutions and unfold/fold (conv.json,
// grad_conv.json, from build/torchref/conv.py). Their attributes are lists
// with one value per spatial dim.

func init() {
	for k, f := range convOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in two tables")
		}
		ops[k] = f
	}
	// A convolution's output is a sum of C/groups·K products, computed in
	// another order than torch's.
	for _, k := range []string{"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "fold"} {
		accumulatingOps[k] = true
	}
}

var convOps = map[string]opFunc{
	"conv1d":           convOp((*lathe.Tensor).Conv1d),
	"conv2d":           convOp((*lathe.Tensor).Conv2d),
	"conv3d":           convOp((*lathe.Tensor).Conv3d),
	"conv_transpose1d": convOp((*lathe.Tensor).ConvTranspose1d),
	"conv_transpose2d": convOp((*lathe.Tensor).ConvTranspose2d),
	"conv_transpose3d": convOp((*lathe.Tensor).ConvTranspose3d),
	"unfold": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Unfold(a.Ints("kernel_size"), windowOptions(a)...))
	},
	"fold": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Fold(a.Ints("output_size"), a.Ints("kernel_size"), windowOptions(a)...))
	},
}

// convOp calls a convolution on x, w and b (nil for no bias).
func convOp(f func(x, w, b *lathe.Tensor, opts ...lathe.WindowOption) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		opts := windowOptions(a)
		if a.Has("groups") {
			opts = append(opts, lathe.Groups(a.Int("groups")))
		}
		if a.Bool("same") {
			opts = append(opts, lathe.PaddingSame())
		}
		if a.Has("output_padding") {
			opts = append(opts, lathe.OutputPadding(a.Ints("output_padding")...))
		}
		return one(f(in[0], in[1], in[2], opts...))
	}
}

// windowOptions are the stride, padding and dilation that a convolution,
// pooling or unfold case gives.
func windowOptions(a *Attrs) []lathe.WindowOption {
	var opts []lathe.WindowOption
	for _, o := range []struct {
		key string
		opt func(...int) lathe.WindowOption
	}{{"stride", lathe.Stride}, {"padding", lathe.Padding}, {"dilation", lathe.Dilation}} {
		if a.Has(o.key) {
			opts = append(opts, o.opt(a.Ints(o.key)...))
		}
	}
	return opts
}
