package nn

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestBadTensorArguments gives each tensor argument of nn's layers and
// losses a nil, a zero and a released tensor in turn, the others valid:
// the error is ErrValue (nil, zero) or ErrReleased, names the layer's op
// and the argument, and the call neither panics nor reads the tensor (a
// released x read as a rank of -1 was once reported as "-1-d", and its
// nil shape as 0-d).
func TestBadTensorArguments(t *testing.T) {
	lathe.Seed(1)
	seq := func() *lathe.Tensor { return lathe.RandN(lathe.CPU, lathe.Float32, 3, 2, 8) } // (L, N, E)
	img := func() *lathe.Tensor { return lathe.RandN(lathe.CPU, lathe.Float32, 2, 4, 6, 6) }
	vec := func() *lathe.Tensor { return lathe.RandN(lathe.CPU, lathe.Float32, 2, 8) }
	vec3 := func() *lathe.Tensor { return lathe.RandN(lathe.CPU, lathe.Float32, 2, 3, 8) }
	vol := func() *lathe.Tensor { return lathe.RandN(lathe.CPU, lathe.Float32, 1, 2, 4, 4, 4) }
	labels := func() *lathe.Tensor { return lathe.FromSlice(lathe.CPU, []int64{1, 0}) }
	tokens := func() *lathe.Tensor { return lathe.FromSlice(lathe.CPU, []int64{1, 3, 5}) }
	mha := NewMultiheadAttention(8, 2)
	enc := NewTransformerEncoderLayer(8, 2, DimFeedforward(16))
	dec := NewTransformerDecoderLayer(8, 2, DimFeedforward(16))
	lstm, gru, rnn := NewLSTM(8, 4), NewGRU(8, 4), NewRNN(8, 4)
	lstmCell, gruCell := NewLSTMCell(8, 4), NewGRUCell(8, 4)
	lstmProj, bilinear := NewLSTM(8, 4, ProjSize(2)), NewBilinear(8, 3, 5)
	embBag := NewEmbeddingBag(10, 4, Mode("sum"))
	embBagFreq := NewEmbeddingBag(10, 4, Mode("mean"), ScaleGradByFreq(), MaxNorm(1))
	embFreq := NewEmbedding(10, 8, ScaleGradByFreq(), MaxNorm(1))
	rows := []struct {
		name string
		args func() []*lathe.Tensor
		call func(a []*lathe.Tensor) *lathe.Tensor
	}{
		{"linear", func() []*lathe.Tensor { return []*lathe.Tensor{vec()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewLinear(8, 3).Forward(a[0]) }},
		{"conv2d", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewConv2d(4, 2, 3).Forward(a[0]) }},
		{"max_pool2d", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewMaxPool2d(2).Forward(a[0]) }},
		{"batch_norm2d", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewBatchNorm2d(4).Forward(a[0]) }},
		{"group_norm", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewGroupNorm(2, 4).Forward(a[0]) }},
		{"layer_norm", func() []*lathe.Tensor { return []*lathe.Tensor{vec()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewLayerNorm([]int{8}).Forward(a[0]) }},
		{"rms_norm", func() []*lathe.Tensor { return []*lathe.Tensor{vec()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewRMSNorm([]int{8}).Forward(a[0]) }},
		{"embedding", func() []*lathe.Tensor { return []*lathe.Tensor{tokens()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewEmbedding(10, 8).Forward(a[0]) }},
		{"embedding scale_grad_by_freq max_norm", func() []*lathe.Tensor { return []*lathe.Tensor{tokens()} }, func(a []*lathe.Tensor) *lathe.Tensor { return embFreq.Forward(a[0]) }},
		{"embedding_bag scale_grad_by_freq max_norm", func() []*lathe.Tensor { return []*lathe.Tensor{tokens().Reshape(1, 3)} }, func(a []*lathe.Tensor) *lathe.Tensor { return embBagFreq.Forward(a[0]) }},
		{"upsample", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewUpsample(ScaleFactor(2)).Forward(a[0]) }},
		{"flatten", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return Flatten{}.Forward(a[0]) }},
		{"rotary", func() []*lathe.Tensor { return []*lathe.Tensor{seq()} }, func(a []*lathe.Tensor) *lathe.Tensor { return ApplyRotary(a[0], 0, 10000) }},
		{"mha", func() []*lathe.Tensor { return []*lathe.Tensor{seq(), seq(), seq()} }, func(a []*lathe.Tensor) *lathe.Tensor {
			return mha.Attend(a[0], a[1], a[2], AttentionMasks{})
		}},
		{"encoder_layer", func() []*lathe.Tensor { return []*lathe.Tensor{seq()} }, func(a []*lathe.Tensor) *lathe.Tensor { return enc.Forward(a[0]) }},
		{"decoder_layer", func() []*lathe.Tensor { return []*lathe.Tensor{seq(), seq()} }, func(a []*lathe.Tensor) *lathe.Tensor {
			return dec.Decode(a[0], a[1], AttentionMasks{}, AttentionMasks{})
		}},
		{"lstm", func() []*lathe.Tensor { return []*lathe.Tensor{seq()} }, func(a []*lathe.Tensor) *lathe.Tensor { return lstm.Forward(a[0]) }},
		{"gru", func() []*lathe.Tensor { return []*lathe.Tensor{seq()} }, func(a []*lathe.Tensor) *lathe.Tensor { return gru.Forward(a[0]) }},
		{"lstm_proj_state", func() []*lathe.Tensor {
			return []*lathe.Tensor{seq(), lathe.Zeros(lathe.CPU, lathe.Float32, 1, 2, 2), lathe.Zeros(lathe.CPU, lathe.Float32, 1, 2, 4)}
		}, func(a []*lathe.Tensor) *lathe.Tensor {
			out, _, _ := lstmProj.ForwardState(a[0], a[1], a[2])
			return out
		}},
		{"bilinear", func() []*lathe.Tensor { return []*lathe.Tensor{vec(), vec().Narrow(1, 0, 3)} }, func(a []*lathe.Tensor) *lathe.Tensor {
			return bilinear.ForwardPair(a[0], a[1])
		}},
		{"embedding_bag", func() []*lathe.Tensor {
			return []*lathe.Tensor{tokens(), lathe.FromSlice(lathe.CPU, []int64{0, 1}), lathe.RandN(lathe.CPU, lathe.Float32, 3)}
		}, func(a []*lathe.Tensor) *lathe.Tensor {
			return embBag.ForwardBags(a[0], a[1], a[2])
		}},
		{"identity", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return Identity{}.Forward(a[0]) }},
		{"flatten_dims", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewFlatten(0, 2).Forward(a[0]) }},
		{"unflatten", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewUnflatten(1, 2, -1).Forward(a[0]) }},
		{"rnn_state", func() []*lathe.Tensor { return []*lathe.Tensor{seq(), lathe.Zeros(lathe.CPU, lathe.Float32, 1, 2, 4)} }, func(a []*lathe.Tensor) *lathe.Tensor {
			out, _ := rnn.ForwardState(a[0], a[1])
			return out
		}},
		{"lstm_cell", func() []*lathe.Tensor {
			return []*lathe.Tensor{vec(), lathe.Zeros(lathe.CPU, lathe.Float32, 2, 4), lathe.Zeros(lathe.CPU, lathe.Float32, 2, 4)}
		}, func(a []*lathe.Tensor) *lathe.Tensor {
			h, _ := lstmCell.Step(a[0], a[1], a[2])
			return h
		}},
		{"gru_cell", func() []*lathe.Tensor { return []*lathe.Tensor{vec()} }, func(a []*lathe.Tensor) *lathe.Tensor { return gruCell.Forward(a[0]) }},
		{"elu", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewELU().Forward(a[0]) }},
		{"selu", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return SELU{}.Forward(a[0]) }},
		{"hardtanh", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewHardtanh().Forward(a[0]) }},
		{"threshold", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewThreshold(0, 1).Forward(a[0]) }},
		{"softmax", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewSoftmax(1).Forward(a[0]) }},
		{"glu", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewGLU().Forward(a[0]) }},
		{"mish", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return Mish{}.Forward(a[0]) }},
		{"max_pool1d", func() []*lathe.Tensor { return []*lathe.Tensor{vec3()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewMaxPool1d(2).Forward(a[0]) }},
		{"avg_pool1d", func() []*lathe.Tensor { return []*lathe.Tensor{vec3()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewAvgPool1d(2).Forward(a[0]) }},
		{"adaptive_avg_pool1d", func() []*lathe.Tensor { return []*lathe.Tensor{vec3()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewAdaptiveAvgPool1d(2).Forward(a[0]) }},
		{"max_pool3d", func() []*lathe.Tensor { return []*lathe.Tensor{vol()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewMaxPool3d(2).Forward(a[0]) }},
		{"avg_pool3d", func() []*lathe.Tensor { return []*lathe.Tensor{vol()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewAvgPool3d(2).Forward(a[0]) }},
		{"adaptive_avg_pool3d", func() []*lathe.Tensor { return []*lathe.Tensor{vol()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewAdaptiveAvgPool3d(2).Forward(a[0]) }},
		{"adaptive_max_pool2d", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewAdaptiveMaxPool2d(2).Forward(a[0]) }},
		{"zero_pad2d", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewZeroPad2d(1).Forward(a[0]) }},
		{"constant_pad1d", func() []*lathe.Tensor { return []*lathe.Tensor{vec3()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewConstantPad1d(1, 1).Forward(a[0]) }},
		{"reflection_pad2d", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewReflectionPad2d(1).Forward(a[0]) }},
		{"replication_pad3d", func() []*lathe.Tensor { return []*lathe.Tensor{vol()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewReplicationPad3d(1).Forward(a[0]) }},
		{"pixel_shuffle", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewPixelShuffle(2).Forward(a[0]) }},
		{"pixel_unshuffle", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewPixelUnshuffle(2).Forward(a[0]) }},
		{"channel_shuffle", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewChannelShuffle(2).Forward(a[0]) }},
		{"unfold", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewUnfold(2).Forward(a[0]) }},
		{"local_response_norm", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewLocalResponseNorm(2).Forward(a[0]) }},
		{"dropout2d", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewDropout2d(0.5).Forward(a[0]) }},
		{"dropout1d", func() []*lathe.Tensor { return []*lathe.Tensor{vec3()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewDropout1d(0.5).Forward(a[0]) }},
		{"dropout3d", func() []*lathe.Tensor { return []*lathe.Tensor{vol()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewDropout3d(0.5).Forward(a[0]) }},
		{"alpha_dropout", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewAlphaDropout(0.5).Forward(a[0]) }},
		{"feature_alpha_dropout", func() []*lathe.Tensor { return []*lathe.Tensor{img()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewFeatureAlphaDropout(0.5).Forward(a[0]) }},
		{"fold", func() []*lathe.Tensor { return []*lathe.Tensor{lathe.RandN(lathe.CPU, lathe.Float32, 2, 8, 4)} }, func(a []*lathe.Tensor) *lathe.Tensor {
			return NewFold([]int{3, 3}, 2).Forward(a[0])
		}},
		{"cosine_similarity", func() []*lathe.Tensor { return []*lathe.Tensor{vec(), vec()} }, func(a []*lathe.Tensor) *lathe.Tensor {
			return NewCosineSimilarity().ForwardPair(a[0], a[1])
		}},
		{"pairwise_distance", func() []*lathe.Tensor { return []*lathe.Tensor{vec(), vec()} }, func(a []*lathe.Tensor) *lathe.Tensor {
			return NewPairwiseDistance().ForwardPair(a[0], a[1])
		}},
		{"max_unpool2d", func() []*lathe.Tensor {
			v, i := NewMaxPool2d(2).ForwardWithIndices(img())
			return []*lathe.Tensor{v, i}
		}, func(a []*lathe.Tensor) *lathe.Tensor {
			return NewMaxUnpool2d(2).ForwardIndices(a[0], a[1])
		}},
		{"grad_scaler", func() []*lathe.Tensor { return []*lathe.Tensor{vec().Sum()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NewGradScaler().Scale(a[0]) }},
		{"cross_entropy", func() []*lathe.Tensor { return []*lathe.Tensor{vec(), labels()} }, func(a []*lathe.Tensor) *lathe.Tensor { return CrossEntropy(a[0], a[1]) }},
		{"nll", func() []*lathe.Tensor { return []*lathe.Tensor{vec(), labels()} }, func(a []*lathe.Tensor) *lathe.Tensor { return NLL(a[0], a[1]) }},
		{"mse", func() []*lathe.Tensor { return []*lathe.Tensor{vec(), vec()} }, func(a []*lathe.Tensor) *lathe.Tensor { return MSE(a[0], a[1]) }},
		{"bce_with_logits", func() []*lathe.Tensor { return []*lathe.Tensor{vec(), vec().Sigmoid()} }, func(a []*lathe.Tensor) *lathe.Tensor { return BCEWithLogits(a[0], a[1]) }},
	}
	// The hidden states may be nil (zeros), from this argument on.
	optional := map[string]int{"rnn_state": 1, "lstm_cell": 1, "lstm_proj_state": 1, "embedding_bag": 2}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			if err := row.call(row.args()).Err(); err != nil {
				t.Fatalf("valid arguments: %v", err)
			}
			for i := range row.args() {
				released := row.args()[i]
				released.Release()
				for _, bad := range []struct {
					name string
					t    *lathe.Tensor
					kind error
				}{{"nil", nil, lathe.ErrValue}, {"zero", &lathe.Tensor{}, lathe.ErrValue}, {"released", released, lathe.ErrReleased}} {
					if from, ok := optional[row.name]; ok && bad.t == nil && i >= from {
						continue
					}
					args := row.args()
					args[i] = bad.t
					err := row.call(args).Err()
					var e *lathe.Error
					switch {
					case !errors.As(err, &e) || !errors.Is(err, bad.kind):
						t.Errorf("%s arg %d: %v, want a *lathe.Error of kind %v", bad.name, i, err, bad.kind)
					case e.Arg == "" || e.Op == "" || e.Op == "err":
						t.Errorf("%s arg %d: %q names no op or argument", bad.name, i, err)
					case !strings.Contains(e.Site, "badargs_test.go"):
						t.Errorf("%s arg %d: %q is not located at the call", bad.name, i, err)
					}
				}
			}
		})
	}
}

// TestReleasedParameters: a layer whose parameter was released fails its
// Forward, Err and a new optimizer with an ErrReleased that names the
// parameter (Err alone misses a released tensor, which RMSNorm and the
// recurrent layers once checked their weights with).
func TestReleasedParameters(t *testing.T) {
	x := lathe.RandN(lathe.CPU, lathe.Float32, 3, 2, 8)
	lin, rms, lstm, cell := NewLinear(8, 3), NewRMSNorm([]int{8}), NewLSTM(8, 4), NewGRUCell(8, 4)
	for _, l := range []struct {
		name, param string
		m           Module
		released    *lathe.Tensor
		forward     func() *lathe.Tensor
	}{
		{"linear", "weight", lin, lin.Weight, func() *lathe.Tensor { return lin.Forward(x) }}, // its op names it w
		{"rms_norm", "weight", rms, rms.Weight, func() *lathe.Tensor { return rms.Forward(x) }},
		{"lstm", "weight_hh_l0", lstm, lstm.Weights[0].WeightHH, func() *lathe.Tensor { return lstm.Forward(x) }},
		{"gru_cell", "weight_ih", cell, cell.WeightIH, func() *lathe.Tensor { return cell.Forward(x.Narrow(0, 0, 1).Squeeze(0)) }},
	} {
		t.Run(l.name, func(t *testing.T) {
			l.released.Release()
			_, optErr := NewSGD(l.m.Parameters(), 0.1)
			for what, err := range map[string]error{"forward": l.forward().Err(), "Err": Err(l.m), "NewSGD": optErr} {
				var e *lathe.Error
				if !errors.Is(err, lathe.ErrReleased) || !errors.As(err, &e) || (e.Arg != l.param && !(what == "forward" && e.Arg == "w")) {
					t.Errorf("%s: %v, want an ErrReleased naming %q", what, err, l.param)
				}
			}
		})
	}
}

// TestNilOptions: a nil LossOption sets nothing (it panicked).
func TestNilOptions(t *testing.T) {
	x, labels := lathe.RandN(lathe.CPU, lathe.Float32, 2, 3), lathe.FromSlice(lathe.CPU, []int64{0, 2})
	if err := CrossEntropy(x, labels, LossOption(nil)).Err(); err != nil {
		t.Errorf("CrossEntropy with a nil option: %v", err)
	}
}
