package conformance

import "github.com/lathe-ml/lathe"

// The table entries of pooling (pool.json and grad_pool.json, made by
// build/torchref/pool.py). Attributes are torch's argument names: kernel,
// stride, padding, dilation (lists, one value or one per dim; stride and
// the others optional), ceil_mode, count_include_pad (default true),
// divisor, output_size. With "square": true the case's output is the
// pooling squared, so that L = Σ out·upstream is not linear in the pooling
// and its Hessian-vector product goes through the backward ops' own rules
// (avg_pool_backward's, max_pool_backward's, ...).

func init() {
	for k, f := range poolOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_pool.go and another table")
		}
		ops[k] = f
		// A pooling's values are sums of up to 27 terms.
		accumulatingOps[k] = true
	}
}

// poolOptions reads a pooling case's attributes as lathe options, with
// the kernel size: one value as the op's size, more through KernelSize.
func poolOptions(a *Attrs) (int, []lathe.WindowOption) {
	opts := windowOptions(a)
	k := a.Ints("kernel")
	kernel := 0
	if len(k) == 1 {
		kernel = k[0]
	} else {
		opts = append(opts, lathe.KernelSize(k...))
	}
	if a.Bool("ceil_mode") {
		opts = append(opts, lathe.CeilMode())
	}
	if a.Has("count_include_pad") && !a.Bool("count_include_pad") {
		opts = append(opts, lathe.ExcludePadding())
	}
	if a.Has("divisor") {
		opts = append(opts, lathe.Divisor(a.Int("divisor")))
	}
	if a.Has("output_size") {
		opts = append(opts, lathe.OutputSize(a.Ints("output_size")...))
	}
	return kernel, opts
}

// squared is out, squared when the case asks ("square": true).
func squared(a *Attrs, out *lathe.Tensor) *lathe.Tensor {
	if a.Bool("square") {
		return out.Square()
	}
	return out
}

func windowed(f func(*lathe.Tensor, int, ...lathe.WindowOption) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		k, opts := poolOptions(a)
		return one(squared(a, f(in[0], k, opts...)))
	}
}

func withIndices(f func(*lathe.Tensor, int, ...lathe.WindowOption) (*lathe.Tensor, *lathe.Tensor)) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		k, opts := poolOptions(a)
		v, i := f(in[0], k, opts...)
		if err := v.Err(); err != nil {
			return nil, err
		}
		return []*lathe.Tensor{v, i}, i.Err()
	}
}

func adaptive(f func(*lathe.Tensor, ...int) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(squared(a, f(in[0], a.Ints("output_size")...)))
	}
}

var poolOps = map[string]opFunc{
	"avg_pool1d": windowed((*lathe.Tensor).AvgPool1d),
	"avg_pool2d": windowed((*lathe.Tensor).AvgPool2d),
	"avg_pool3d": windowed((*lathe.Tensor).AvgPool3d),
	"max_pool1d": windowed((*lathe.Tensor).MaxPool1d),
	"max_pool2d": windowed((*lathe.Tensor).MaxPool2d),
	"max_pool3d": windowed((*lathe.Tensor).MaxPool3d),

	"max_pool1d_with_indices": withIndices((*lathe.Tensor).MaxPool1dWithIndices),
	"max_pool2d_with_indices": withIndices((*lathe.Tensor).MaxPool2dWithIndices),
	"max_pool3d_with_indices": withIndices((*lathe.Tensor).MaxPool3dWithIndices),

	"adaptive_avg_pool1d": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(squared(a, in[0].AdaptiveAvgPool1d(a.Int("output_size"))))
	},
	"adaptive_avg_pool2d": adaptive((*lathe.Tensor).AdaptiveAvgPool2d),
	"adaptive_avg_pool3d": adaptive((*lathe.Tensor).AdaptiveAvgPool3d),
	"adaptive_max_pool2d": adaptive((*lathe.Tensor).AdaptiveMaxPool2d),
	"adaptive_max_pool2d_with_indices": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		v, i := in[0].AdaptiveMaxPool2dWithIndices(a.Ints("output_size")...)
		if err := v.Err(); err != nil {
			return nil, err
		}
		return []*lathe.Tensor{v, i}, i.Err()
	},

	"max_unpool2d": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		k, opts := poolOptions(a)
		return one(squared(a, in[0].MaxUnpool2d(in[1], k, opts...)))
	},
}
