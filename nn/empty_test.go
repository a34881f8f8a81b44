package nn

import (
	"math"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestEmptyBatches: every layer and loss on an empty batch (or a sequence
// of no steps, or no keys) gives torch 1.13's shape, and the Sum of its
// result back-propagates to zero parameter gradients of the parameters'
// shapes (the root package's TestEmptyTensors does the ops), on the cpu
// and on wgpu:0 where it opens. Where torch refuses (a recurrent layer
// over no time steps), so does lathe.
func TestEmptyBatches(t *testing.T) {
	devs := []lathe.Device{lathe.CPU}
	for _, info := range lathe.DeviceStatus() {
		if info.Device == lathe.WGPU(0) && info.Available {
			devs = append(devs, info.Device)
		}
	}
	nan := math.NaN()
	for _, dev := range devs {
		on := OnDevice(dev)
		x := func(shape ...int) *lathe.Tensor { return lathe.Zeros(dev, lathe.Float32, shape...).RequireGrad() }
		noTargets := func() *lathe.Tensor { return lathe.FromSlice(dev, []int64{}, 0) }
		cases := []struct {
			name  string
			m     Module
			in    *lathe.Tensor
			shape []int     // nil: Forward must fail
			vals  []float64 // the result's values, where set
			// run, where set, computes the result from m and in in place
			// of Forward.
			run func(m Module, in *lathe.Tensor) *lathe.Tensor
		}{
			{name: "linear", m: NewLinear(4, 3, on), in: x(0, 4), shape: []int{0, 3}},
			{name: "embedding", m: NewEmbedding(5, 3, on), in: lathe.FromSlice(dev, []int64{}, 2, 0), shape: []int{2, 0, 3}},
			{name: "layer_norm", m: NewLayerNorm([]int{4}, on), in: x(0, 4), shape: []int{0, 4}},
			{name: "rms_norm", m: NewRMSNorm([]int{4}, on), in: x(0, 4), shape: []int{0, 4}},
			{name: "conv2d", m: NewConv2d(3, 2, 3, on), in: x(0, 3, 5, 5), shape: []int{0, 2, 3, 3}},
			{name: "batch_norm2d", m: NewBatchNorm2d(3, on), in: x(0, 3, 2, 2), shape: []int{0, 3, 2, 2}},
			{name: "group_norm", m: NewGroupNorm(2, 4, on), in: x(0, 4, 3, 3), shape: []int{0, 4, 3, 3}},
			{name: "max_pool2d", m: NewMaxPool2d(2), in: x(0, 3, 4, 4), shape: []int{0, 3, 2, 2}},
			{name: "avg_pool2d", m: NewAvgPool2d(2), in: x(0, 3, 4, 4), shape: []int{0, 3, 2, 2}},
			{name: "adaptive_avg_pool2d", m: NewAdaptiveAvgPool2d(1), in: x(0, 3, 4, 4), shape: []int{0, 3, 1, 1}},
			{name: "upsample", m: NewUpsample(ScaleFactor(2)), in: x(0, 3, 2, 2), shape: []int{0, 3, 4, 4}},
			{name: "dropout", m: NewDropout(0.5), in: x(3, 0), shape: []int{3, 0}},
			{name: "flatten", m: Flatten{}, in: x(0, 3, 2), shape: []int{0, 6}},
			{name: "rnn/batch0", m: NewRNN(4, 3, on), in: x(5, 0, 4), shape: []int{5, 0, 3}},
			{name: "lstm/batch0", m: NewLSTM(4, 3, on), in: x(5, 0, 4), shape: []int{5, 0, 3}},
			{name: "lstm_proj/batch0", m: NewLSTM(4, 3, on, ProjSize(2), Bidirectional()), in: x(5, 0, 4), shape: []int{5, 0, 4}},
			{name: "bilinear", m: NewBilinear(4, 2, 3, on), in: x(0, 4), shape: []int{0, 3}, run: func(m Module, in *lathe.Tensor) *lathe.Tensor {
				return m.(*Bilinear).ForwardPair(in, lathe.Zeros(dev, lathe.Float32, 0, 2))
			}},
			{name: "elu", m: NewELU(), in: x(0, 4), shape: []int{0, 4}},
			{name: "softmax", m: NewSoftmax(1), in: x(0, 4), shape: []int{0, 4}},
			{name: "glu", m: NewGLU(), in: x(0, 4), shape: []int{0, 2}},
			{name: "max_pool1d", m: NewMaxPool1d(2), in: x(0, 3, 8), shape: []int{0, 3, 4}},
			{name: "avg_pool3d", m: NewAvgPool3d(2), in: x(0, 2, 4, 4, 4), shape: []int{0, 2, 2, 2, 2}},
			{name: "adaptive_max_pool2d", m: NewAdaptiveMaxPool2d(2), in: x(0, 3, 4, 4), shape: []int{0, 3, 2, 2}},
			{name: "reflection_pad2d", m: NewReflectionPad2d(1), in: x(0, 3, 4, 4), shape: []int{0, 3, 6, 6}},
			{name: "replication_pad1d", m: NewReplicationPad1d(1), in: x(0, 3, 4), shape: []int{0, 3, 6}},
			{name: "zero_pad2d", m: NewZeroPad2d(1), in: x(0, 3, 4, 4), shape: []int{0, 3, 6, 6}},
			{name: "pixel_shuffle", m: NewPixelShuffle(2), in: x(0, 8, 2, 2), shape: []int{0, 2, 4, 4}},
			{name: "channel_shuffle", m: NewChannelShuffle(2), in: x(0, 4, 2, 2), shape: []int{0, 4, 2, 2}},
			{name: "local_response_norm", m: NewLocalResponseNorm(2), in: x(0, 4, 2, 2), shape: []int{0, 4, 2, 2}},
			{name: "dropout2d", m: NewDropout2d(0.5), in: x(0, 3, 2, 2), shape: []int{0, 3, 2, 2}},
			{name: "alpha_dropout", m: NewAlphaDropout(0.5), in: x(0, 3), shape: []int{0, 3}},
			{name: "unfold", m: NewUnfold(2), in: x(0, 2, 4, 4), shape: []int{0, 8, 9}},
			{name: "identity", m: Identity{}, in: x(0, 3), shape: []int{0, 3}},
			{name: "embedding_bag/2d", m: NewEmbeddingBag(5, 3, on), in: lathe.FromSlice(dev, []int64{}, 0, 2), shape: []int{0, 3}},
			{name: "embedding_bag/empty_bags", m: NewEmbeddingBag(5, 3, on, Mode("max")), in: lathe.FromSlice(dev, []int64{}), shape: []int{2, 3},
				vals: make([]float64, 6), run: func(m Module, in *lathe.Tensor) *lathe.Tensor {
					return m.(*EmbeddingBag).ForwardBags(in, lathe.FromSlice(dev, []int64{0, 0}), nil)
				}},
			{name: "flatten_dims", m: NewFlatten(0, 1), in: x(0, 3, 2), shape: []int{0, 2}},
			{name: "unflatten", m: NewUnflatten(1, 3, -1), in: x(0, 6), shape: []int{0, 3, 2}},
			{name: "gru/seq0", m: NewGRU(4, 3, on), in: x(0, 2, 4)}, // torch: "Expected sequence length to be larger than 0"
			{name: "lstm_cell", m: NewLSTMCell(4, 3, on), in: x(0, 4), shape: []int{0, 3}},
			{name: "mha/seq0", m: NewMultiheadAttention(4, 2, on), in: x(2, 0, 4), shape: []int{2, 0, 4}},
			{name: "mha/keys0", m: NewMultiheadAttention(4, 2, on, NoBias()), in: x(2, 3, 4), shape: []int{2, 3, 4},
				vals: make([]float64, 24), run: func(m Module, in *lathe.Tensor) *lathe.Tensor {
					kv := lathe.Zeros(dev, lathe.Float32, 2, 0, 4)
					return m.(*MultiheadAttention).Attend(in, kv, kv, AttentionMasks{})
				}},
			{name: "transformer_encoder_layer/batch0", m: NewTransformerEncoderLayer(4, 2, on, DimFeedforward(8)), in: x(0, 3, 4), shape: []int{0, 3, 4}},
			{name: "cross_entropy/label_smoothing", m: Flatten{}, in: x(0, 5), shape: []int{}, vals: []float64{nan},
				run: func(_ Module, in *lathe.Tensor) *lathe.Tensor {
					return CrossEntropy(in, noTargets(), LabelSmoothing(0.1))
				}},
			{name: "cross_entropy/sum", m: Flatten{}, in: x(0, 5), shape: []int{}, vals: []float64{0},
				run: func(_ Module, in *lathe.Tensor) *lathe.Tensor {
					return CrossEntropy(in, noTargets(), Reduction(lathe.ReduceSum), LabelSmoothing(0.1))
				}},
			{name: "nll", m: Flatten{}, in: x(0, 5), shape: []int{}, vals: []float64{nan},
				run: func(_ Module, in *lathe.Tensor) *lathe.Tensor { return NLL(in, noTargets()) }},
			{name: "bce_with_logits", m: Flatten{}, in: x(0, 5), shape: []int{0, 5},
				run: func(_ Module, in *lathe.Tensor) *lathe.Tensor {
					return BCEWithLogits(in, lathe.ZerosLike(in), Reduction(lathe.ReduceNone))
				}},
			{name: "mse", m: Flatten{}, in: x(0, 5), shape: []int{}, vals: []float64{nan},
				run: func(_ Module, in *lathe.Tensor) *lathe.Tensor { return MSE(in, lathe.ZerosLike(in)) }},
		}
		for _, c := range cases {
			t.Run(dev.String()+"/"+c.name, func(t *testing.T) {
				var y *lathe.Tensor
				if c.run != nil {
					y = c.run(c.m, c.in)
				} else {
					y = c.m.Forward(c.in)
				}
				if c.shape == nil {
					if y.Err() == nil {
						t.Fatalf("got shape %v, want an error", y.Shape())
					}
					return
				}
				if err := y.Err(); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(y.Shape(), c.shape) {
					t.Fatalf("shape %v, want %v", y.Shape(), c.shape)
				}
				if c.vals != nil {
					got := values(t, y.To(lathe.CPU))
					if !slices.EqualFunc(got, c.vals, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
						t.Errorf("values %v, want %v", got, c.vals)
					}
				}
				if !y.RequiresGrad() {
					return
				}
				if err := y.Sum().Backward(); err != nil {
					t.Fatal(err)
				}
				for _, p := range c.m.Parameters() {
					g := p.T.Grad()
					if g == nil {
						t.Errorf("%s has no gradient", p.Name)
						continue
					}
					if !slices.Equal(g.Shape(), p.T.Shape()) {
						t.Errorf("%s's gradient has shape %v", p.Name, g.Shape())
					}
					if v := values(t, g.To(lathe.CPU)); !slices.Equal(v, make([]float64, len(v))) {
						t.Errorf("%s's gradient is %v, want zeros", p.Name, v)
					}
				}
			})
		}
	}
}
