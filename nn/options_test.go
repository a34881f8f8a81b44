package nn

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// every option, by the torch keyword layerSpecs names it with.
var everyOption = map[string]Option{
	"dtype":                  WithDType(lathe.Float64),
	"device":                 OnDevice(lathe.CPU),
	"bias":                   NoBias(),
	"kernel_size":            KernelSize(3, 3),
	"stride":                 Stride(1),
	"padding":                Padding(1),
	"dilation":               Dilation(1),
	"groups":                 Groups(1),
	"ceil_mode":              CeilMode(),
	"count_include_pad":      ExcludePadding(),
	"divisor_override":       Divisor(2),
	"size":                   Size(4, 4),
	"scale_factor":           ScaleFactor(2),
	"mode":                   Mode("nearest"),
	"align_corners":          AlignCorners(),
	"recompute_scale_factor": RecomputeScaleFactor(),
	"num_layers":             NumLayers(1),
	"batch_first":            BatchFirst(),
	"bidirectional":          Bidirectional(),
	"dropout":                InterLayerDropout(0),
	"nonlinearity":           Nonlinearity("tanh"),
	"dim_feedforward":        DimFeedforward(8),
	"activation":             Activation("gelu"),
	"layer_norm_eps":         LayerNormEps(1e-6),
	"norm_first":             NormFirst(),
	"kdim":                   KDim(3),
	"vdim":                   VDim(3),
	"add_bias_kv":            AddBiasKV(),
	"add_zero_attn":          AddZeroAttn(),
	"num_encoder_layers":     NumEncoderLayers(1),
	"num_decoder_layers":     NumDecoderLayers(1),
	"output_padding":         OutputPadding(0),
	"padding_mode":           PaddingMode("zeros"),
	"init":                   Init(0.1),
	"affine":                 NoAffine(),
	"track_running_stats":    NoRunningStats(),
	"momentum":               CumulativeAverage(),
	"padding_idx":            PaddingIdx(1),
	"max_norm":               MaxNorm(1),
	"norm_type":              NormType(1),
	"scale_grad_by_freq":     ScaleGradByFreq(),
	"proj_size":              ProjSize(1),
	"include_last_offset":    IncludeLastOffset(),
}

// rankKernel gives a convolution of nd dims, in place of everyOption's
// KernelSize(3, 3), a kernel size of its own rank.
func rankKernel(nd int, opts []Option) []Option {
	out := slices.Clone(opts)
	for i, o := range out {
		if o.name == "kernel_size" {
			out[i] = KernelSize(slices.Repeat([]int{3}, nd)...)
		}
	}
	return out
}

// every layer constructor that takes options, by its layerSpecs name.
var everyLayer = map[string]func(...Option) Module{
	"Linear":                  func(o ...Option) Module { return NewLinear(3, 2, o...) },
	"Bilinear":                func(o ...Option) Module { return NewBilinear(3, 2, 2, o...) },
	"EmbeddingBag":            func(o ...Option) Module { return NewEmbeddingBag(3, 2, o...) },
	"Embedding":               func(o ...Option) Module { return NewEmbedding(3, 2, o...) },
	"LayerNorm":               func(o ...Option) Module { return NewLayerNorm([]int{3}, o...) },
	"BatchNorm1d":             func(o ...Option) Module { return NewBatchNorm1d(3, o...) },
	"BatchNorm2d":             func(o ...Option) Module { return NewBatchNorm2d(3, o...) },
	"BatchNorm3d":             func(o ...Option) Module { return NewBatchNorm3d(3, o...) },
	"InstanceNorm1d":          func(o ...Option) Module { return NewInstanceNorm1d(3, o...) },
	"InstanceNorm2d":          func(o ...Option) Module { return NewInstanceNorm2d(3, o...) },
	"InstanceNorm3d":          func(o ...Option) Module { return NewInstanceNorm3d(3, o...) },
	"GroupNorm":               func(o ...Option) Module { return NewGroupNorm(1, 3, o...) },
	"Conv1d":                  func(o ...Option) Module { return NewConv1d(3, 2, 3, rankKernel(1, o)...) },
	"Conv2d":                  func(o ...Option) Module { return NewConv2d(3, 2, 3, o...) },
	"Conv3d":                  func(o ...Option) Module { return NewConv3d(3, 2, 3, rankKernel(3, o)...) },
	"ConvTranspose1d":         func(o ...Option) Module { return NewConvTranspose1d(3, 2, 3, rankKernel(1, o)...) },
	"ConvTranspose2d":         func(o ...Option) Module { return NewConvTranspose2d(3, 2, 3, o...) },
	"ConvTranspose3d":         func(o ...Option) Module { return NewConvTranspose3d(3, 2, 3, rankKernel(3, o)...) },
	"PReLU":                   func(o ...Option) Module { return NewPReLU(3, o...) },
	"MaxPool2d":               func(o ...Option) Module { return NewMaxPool2d(2, o...) },
	"AvgPool2d":               func(o ...Option) Module { return NewAvgPool2d(2, o...) },
	"Upsample":                func(o ...Option) Module { return NewUpsample(o...) },
	"RNN":                     func(o ...Option) Module { return NewRNN(3, 2, o...) },
	"LSTM":                    func(o ...Option) Module { return NewLSTM(3, 2, o...) },
	"GRU":                     func(o ...Option) Module { return NewGRU(3, 2, o...) },
	"RNNCell":                 func(o ...Option) Module { return NewRNNCell(3, 2, o...) },
	"LSTMCell":                func(o ...Option) Module { return NewLSTMCell(3, 2, o...) },
	"GRUCell":                 func(o ...Option) Module { return NewGRUCell(3, 2, o...) },
	"MaxPool1d":               func(o ...Option) Module { return NewMaxPool1d(2, o...) },
	"MaxPool3d":               func(o ...Option) Module { return NewMaxPool3d(2, o...) },
	"AvgPool1d":               func(o ...Option) Module { return NewAvgPool1d(2, o...) },
	"AvgPool3d":               func(o ...Option) Module { return NewAvgPool3d(2, o...) },
	"MaxUnpool2d":             func(o ...Option) Module { return NewMaxUnpool2d(2, o...) },
	"Unfold":                  func(o ...Option) Module { return NewUnfold(2, o...) },
	"Fold":                    func(o ...Option) Module { return NewFold([]int{4, 4}, 2, o...) },
	"RMSNorm":                 func(o ...Option) Module { return NewRMSNorm([]int{3}, o...) },
	"MultiheadAttention":      func(o ...Option) Module { return NewMultiheadAttention(4, 2, o...) },
	"TransformerEncoderLayer": func(o ...Option) Module { return NewTransformerEncoderLayer(4, 2, o...) },
	"TransformerDecoderLayer": func(o ...Option) Module { return NewTransformerDecoderLayer(4, 2, o...) },
	"Transformer":             func(o ...Option) Module { return NewTransformer(4, 2, o...) },
}

// Every constructor refuses every option it does not take with an ErrValue
// that names the option and the layer, from Err and from Forward; it builds
// with each option it takes, alone.
func TestLayerOptionsRefused(t *testing.T) {
	if len(everyLayer) != len(layerSpecs) {
		t.Fatalf("%d constructors for %d layerSpecs", len(everyLayer), len(layerSpecs))
	}
	for _, spec := range layerSpecs {
		build := everyLayer[spec.layer]
		if build == nil {
			t.Fatalf("no constructor for %s", spec.layer)
		}
		for name, opt := range everyOption {
			if opt.name != name {
				t.Fatalf("option %q carries the name %q", name, opt.name)
			}
			takes := slices.Contains(spec.takes, name)
			t.Run(spec.layer+"/"+name, func(t *testing.T) {
				m := build(opt)
				err := Err(m)
				if takes {
					if err != nil {
						t.Fatalf("%s refused %s: %v", spec.layer, name, err)
					}
					return
				}
				if !errors.Is(err, lathe.ErrValue) {
					t.Fatalf("Err = %v, want ErrValue", err)
				}
				var le *lathe.Error
				if !errors.As(err, &le) || le.Arg != name || le.Op != spec.op ||
					!strings.Contains(err.Error(), "is not an option of "+spec.layer) {
					t.Fatalf("error %v does not name %q and %s", err, name, spec.layer)
				}
				if got := m.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 1, 3, 4, 4)).Err(); !errors.Is(got, lathe.ErrValue) {
					t.Fatalf("Forward's error %v, want ErrValue", got)
				}
			})
		}
		for _, name := range spec.takes {
			if _, ok := everyOption[name]; !ok {
				t.Errorf("%s takes %q, which no option in the test has", spec.layer, name)
			}
		}
	}
}

func TestLayerOptionsMessage(t *testing.T) {
	err := Err(NewConv2d(3, 8, 3, AlignCorners()))
	want := `lathe: conv2d: argument "align_corners" is not an option of Conv2d (it is Upsample's; Conv2d takes`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want %s...", err, want)
	}
	if err := Err(NewLinear(3, 2, Option{})); !errors.Is(err, lathe.ErrValue) {
		t.Fatalf("zero Option: %v, want ErrValue", err)
	}
}
