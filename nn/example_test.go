package nn_test

import (
	"bytes"
	"fmt"
	"math"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// A Linear layer fits y = 2x - 1 by gradient descent with momentum.
func ExampleLinear() {
	lathe.Seed(1)
	model := nn.NewLinear(1, 1, nn.WithDType(lathe.Float64))
	opt, err := nn.NewSGD(model.Parameters(), 0.1, nn.Momentum(0.9))
	if err != nil {
		fmt.Println(err)
		return
	}
	x := lathe.FromSlice(lathe.CPU, []float64{-1, -0.5, 0, 0.5, 1, 1.5}, 6, 1)
	y := x.MulScalar(2).SubScalar(1)
	for range 200 {
		opt.ZeroGrad()
		loss := nn.MSE(model.Forward(x), y)
		if err := loss.Backward(); err != nil {
			fmt.Println(err)
			return
		}
		if err := opt.Step(); err != nil {
			fmt.Println(err)
			return
		}
	}
	w, _ := model.Weight.Item()
	b, _ := model.Bias.Item()
	fmt.Printf("weight %.3f, bias %.3f\n", w, b)
	// Output: weight 2.000, bias -1.000
}

// A small classifier: Sequential layers, cross-entropy and Adam. Each
// index learns its own class.
func ExampleSequential() {
	lathe.Seed(2)
	model := nn.Sequential(nn.NewEmbedding(4, 8), nn.ReLU{}, nn.NewLinear(8, 4))
	for _, p := range model.Parameters() {
		fmt.Println(p.Name, p.T.Shape())
	}
	opt, err := nn.NewAdam(model.Parameters(), 0.1)
	if err != nil {
		fmt.Println(err)
		return
	}
	classes := lathe.FromSlice(lathe.CPU, []int32{0, 1, 2, 3}, 4)
	for range 50 {
		opt.ZeroGrad()
		if err := nn.CrossEntropy(model.Forward(classes), classes).Backward(); err != nil {
			fmt.Println(err)
			return
		}
		if err := opt.Step(); err != nil {
			fmt.Println(err)
			return
		}
	}
	predicted, err := model.Forward(classes).ArgMax(1).Cast(lathe.Int32).Int32s()
	fmt.Println("predicted", predicted, err)
	// Output:
	// 0.weight [4 8]
	// 2.weight [4 8]
	// 2.bias [4]
	// predicted [0 1 2 3] <nil>
}

// Save writes a model's parameters in the safetensors format, which
// PyTorch reads too; Load reads them into a model of the same layout.
func ExampleSave() {
	lathe.Seed(3)
	trained := nn.Sequential(nn.NewLinear(3, 2), nn.GELU{})
	var file bytes.Buffer
	if err := nn.Save(&file, trained); err != nil {
		fmt.Println(err)
		return
	}
	fresh := nn.Sequential(nn.NewLinear(3, 2), nn.GELU{})
	if err := nn.Load(&file, fresh); err != nil {
		fmt.Println(err)
		return
	}
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3}, 1, 3)
	a, _ := trained.Forward(x).Float32s()
	b, _ := fresh.Forward(x).Float32s()
	fmt.Println("same outputs:", fmt.Sprint(a) == fmt.Sprint(b))
	// Output: same outputs: true
}

// scaled is a custom module: a Linear child and a parameter of its own,
// with the bookkeeping from an embedded nn.Base.
type scaled struct {
	nn.Base
	proj  *nn.Linear
	scale *lathe.Tensor
}

func newScaled() *scaled {
	s := &scaled{proj: nn.NewLinear(3, 2)}
	s.RegisterModule("proj", s.proj)
	s.scale = s.Register("scale", lathe.Full(lathe.CPU, lathe.Float32, 2, 2))
	s.RegisterBuffer("calls", lathe.Scalar(lathe.CPU, int64(0)))
	return s
}

func (s *scaled) Forward(x *lathe.Tensor) *lathe.Tensor { return s.proj.Forward(x).Mul(s.scale) }

// A custom module embeds nn.Base, registers what it holds, and gets
// Parameters, Buffers, To and Train with PyTorch's state-dict names.
func ExampleBase() {
	lathe.Seed(4)
	m := newScaled()
	for _, p := range m.Parameters() {
		fmt.Println("parameter", p.Name, p.T.Shape())
	}
	for _, p := range m.Buffers() {
		fmt.Println("buffer", p.Name)
	}
	if err := m.To(lathe.CPU); err != nil {
		fmt.Println(err)
		return
	}
	m.Train(false)
	y := m.Forward(lathe.Ones(lathe.CPU, lathe.Float32, 1, 3))
	fmt.Println(y.Shape(), m.Training(), nn.Err(m))
	// Output:
	// parameter proj.weight [2 3]
	// parameter proj.bias [2]
	// parameter scale [2]
	// buffer calls
	// [1 2] false <nil>
}

// A pre-norm encoder layer over a padded batch, and token-by-token
// generation through a MultiheadAttention with rotary embeddings and a
// KVCache: each step attends to every token before it.
func ExampleTransformerEncoderLayer() {
	lathe.Seed(3)
	enc := nn.NewTransformerEncoderLayer(16, 4, nn.DimFeedforward(32), nn.NormFirst())
	x := lathe.RandN(lathe.CPU, lathe.Float32, 2, 5, 16)
	pad := lathe.FromSlice(lathe.CPU, []bool{false, false, false, false, false, false, false, false, true, true}, 2, 5)
	y := enc.Encode(x, nn.AttentionMasks{KeyPadding: pad, Causal: true})
	fmt.Println("encoded", y.Shape(), y.Err())

	attn := nn.NewMultiheadAttention(16, 4)
	attn.RotaryBase = 10000
	var cache nn.KVCache
	for pos := range 5 {
		attn.Step(x.Narrow(1, pos, 1), &cache)
	}
	fmt.Println("cached", cache.K.Shape())
	// Output:
	// encoded [2 5 16] <nil>
	// cached [2 4 5 4]
}

// A small encoder-decoder Transformer (torch's nn.Transformer) over a
// padded source batch, decoding a target causally with torch's square
// subsequent mask; its parameters have torch's state-dict names.
func ExampleTransformer() {
	lathe.Seed(4)
	model := nn.NewTransformer(16, 4, nn.NumEncoderLayers(2), nn.NumDecoderLayers(2), nn.DimFeedforward(32), nn.DropoutProb(0))
	src := lathe.RandN(lathe.CPU, lathe.Float32, 2, 6, 16) // [batch, source length, d_model]
	tgt := lathe.RandN(lathe.CPU, lathe.Float32, 2, 4, 16) // [batch, target length, d_model]
	pad := lathe.FromSlice(lathe.CPU, []bool{
		false, false, false, false, false, false,
		false, false, false, false, true, true, // the second source ends in two pads
	}, 2, 6)
	out := model.Transform(src, tgt,
		nn.AttentionMasks{KeyPadding: pad},
		nn.AttentionMasks{Attn: nn.GenerateSquareSubsequentMask(4, lathe.CPU)}, // or Causal: true
		nn.AttentionMasks{KeyPadding: pad})
	fmt.Println("out", out.Shape(), out.Err())

	params := model.Parameters()
	fmt.Println(len(params), "parameters:", params[0].Name, "...", params[len(params)-1].Name)
	fmt.Println(out.Sum().Backward())
	// Output:
	// out [2 4 16] <nil>
	// 64 parameters: encoder.layers.0.self_attn.in_proj_weight ... decoder.norm.bias
	// <nil>
}

// The initialisations of torch.nn.init rebind a layer's parameter in
// place: here a Linear's weight drawn as kaiming_uniform_ for a ReLU
// network, U(-b, b) with b = gain·√(3/fan_in), and its bias zeroed.
func ExampleKaimingUniform() {
	lathe.Seed(1)
	l := nn.NewLinear(64, 32)
	if err := nn.KaimingUniform(l.Weight, 0, "fan_in", "relu"); err != nil {
		fmt.Println(err)
		return
	}
	if err := nn.Zeros(l.Bias); err != nil {
		fmt.Println(err)
		return
	}
	gain, _ := nn.CalculateGain("relu")
	w, _ := l.Weight.Abs().Max().Item()
	b, _ := l.Bias.Abs().Max().Item()
	fmt.Println(l.Weight.Shape(), l.Weight.RequiresGrad(), w <= gain*math.Sqrt(3.0/64), b)
	// Output: [32 64] true true 0
}

// A batch of sequences of different lengths, packed: an LSTM runs each
// over its own length, and its final states are each sequence's own last.
func ExamplePackSequence() {
	a := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2, 1) // 2 steps of 1 feature
	b := lathe.FromSlice(lathe.CPU, []float32{3, 4, 5}, 3, 1)
	p := nn.PackSequence([]*lathe.Tensor{a, b}, false)
	fmt.Println(p.Data, p.BatchSizes, p.SortedIndices)
	lstm := nn.NewLSTM(1, 2)
	out, hn, _ := lstm.ForwardPacked(p, nil, nil)
	padded, lengths := nn.PadPackedSequence(out, true, 0, 0)
	fmt.Println(padded.Shape(), lengths, hn.Shape())
	// Output:
	// tensor([[3.],
	//         [1.],
	//         [4.],
	//         [2.],
	//         [5.]]) [2 2 1] [1 0]
	// [2 3 2] [2 3] [1 2 2]
}
