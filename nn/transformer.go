package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// The transformer layers of "Attention Is All You Need" (Vaswani et al.,
// 2017) as torch.nn.TransformerEncoderLayer and TransformerDecoderLayer
// (torch 1.13) with batch_first=True: inputs and outputs are [B, L,
// d_model], or [L, B, d_model] with SeqFirst (torch's default). Their
// parameters have torch's state-dict names (self_attn.*, multihead_attn.*,
// linear1, linear2, norm1 to norm3), so a torch checkpoint loads with
// Load. The layout lives in the attention sublayers (their SeqFirst): the
// rest of a layer acts on the last dim alone.

// DimFeedforward sets the inner size of a transformer layer's feed-forward
// block (torch's dim_feedforward; 2048 by default).
func DimFeedforward(n int) Option {
	return Option{"dim_feedforward", func(o *options) { o.dimFeedforward, o.dimFeedforwardSet = n, true }}
}

// Activation picks a transformer layer's feed-forward activation by
// torch's name, "relu" (the default) or "gelu" (torch's activation).
func Activation(name string) Option {
	return Option{"activation", func(o *options) { o.activation = name }}
}

// LayerNormEps sets the eps of a transformer layer's LayerNorms (torch's
// layer_norm_eps; 1e-5 by default).
func LayerNormEps(eps float64) Option {
	return Option{"layer_norm_eps", func(o *options) { o.layerNormEps, o.layerNormEpsSet = eps, true }}
}

// NormFirst makes a transformer layer normalise each block's input rather
// than the residual sum (pre-norm; torch's norm_first=True).
func NormFirst() Option { return Option{"norm_first", func(o *options) { o.normFirst = true }} }

// transformerParts are what both layers build from their options: the
// checked options with torch's defaults, the activation, and the
// parameters' constructor options.
type transformerParts struct {
	o          options
	activation Module
	params     []Option // dtype and device, for the sublayers
}

func transformerOptions(layer, op string, dModel, nhead int, opts []Option) (transformerParts, *lathe.Error) {
	o, err := layerOptions(layer, opts)
	if err != nil {
		return transformerParts{}, err
	}
	if !o.dropoutSet {
		o.dropout = 0.1
	}
	if !o.layerNormEpsSet {
		o.layerNormEps = 1e-5
	}
	if !o.dimFeedforwardSet {
		o.dimFeedforward = 2048
	}
	p := transformerParts{o: o, params: []Option{WithDType(o.dtype), OnDevice(o.device)}}
	switch o.activation {
	case "", "relu":
		p.activation = ReLU{}
	case "gelu":
		p.activation = GELU{}
	default:
		return p, nnError(op, lathe.ErrValue, "activation", "is \""+o.activation+"\"", "use \"relu\" or \"gelu\"")
	}
	if err := checkHeads(op, "d_model", "nhead", dModel, nhead, o); err != nil {
		return p, err
	}
	if n := o.dimFeedforward; n <= 0 || n > math.MaxInt/dModel {
		return p, nnError(op, lathe.ErrShape, "dim_feedforward", "is "+strconv.Itoa(n), "give a feed-forward size > 0 whose weights fit in memory")
	}
	return p, nil
}

// newAttention is a layer's MultiheadAttention: its dropout, no rotary.
func (p transformerParts) newAttention(dModel, nhead int) *MultiheadAttention {
	opts := append([]Option{DropoutProb(p.o.dropout)}, p.params...)
	if p.o.seqFirst {
		opts = append(opts, SeqFirst())
	}
	return NewMultiheadAttention(dModel, nhead, opts...)
}

func (p transformerParts) newNorm(dModel int) *LayerNorm {
	n := NewLayerNorm([]int{dModel}, p.params...)
	n.Eps = p.o.layerNormEps
	return n
}

// feedForwardBlock is the position-wise block shared by both layers:
// linear2(dropout(activation(linear1(x)))).
type feedForwardBlock struct {
	Linear1, Linear2 *Linear
	Dropout          *Dropout
	Activation       Module
}

func (f feedForwardBlock) missing() bool {
	return isNil(f.Linear1) || isNil(f.Linear2) || isNil(f.Dropout) || isNil(f.Activation)
}

// missingPart is the error of a layer built by hand without one of its
// sublayers, which Forward would otherwise dereference.
func missingPart(op, constructor string) *lathe.Error {
	return nnError(op, lathe.ErrValue, "l", "lacks a sublayer (a nil field)", "build the layer with "+constructor)
}

func (f feedForwardBlock) forward(x *lathe.Tensor) *lathe.Tensor {
	return f.Linear2.Forward(f.Dropout.Forward(f.Activation.Forward(f.Linear1.Forward(x))))
}

// TransformerEncoderLayer is self-attention and a feed-forward block,
// each with a residual connection and a LayerNorm: after the sum
// (post-norm, torch's default) or before the block (NormFirst).
type TransformerEncoderLayer struct {
	Base
	SelfAttn *MultiheadAttention
	feedForwardBlock
	Norm1, Norm2       *LayerNorm
	Dropout1, Dropout2 *Dropout
	NormFirst          bool
}

const encoderOp = "transformer_encoder_layer"

// NewTransformerEncoderLayer makes an encoder layer of width dModel with
// nhead heads (which must divide dModel). It takes DimFeedforward,
// DropoutProb, Activation, LayerNormEps, NormFirst, SeqFirst, WithDType and
// OnDevice, with torch's defaults (2048, 0.1, "relu", 1e-5, post-norm) but
// lathe's batch-first layout.
func NewTransformerEncoderLayer(dModel, nhead int, opts ...Option) *TransformerEncoderLayer {
	l := &TransformerEncoderLayer{}
	p, err := transformerOptions("TransformerEncoderLayer", encoderOp, dModel, nhead, opts)
	if err != nil {
		l.Register(err.Arg, lathe.Failed(err))
		return l
	}
	l.NormFirst = p.o.normFirst
	l.SelfAttn = p.newAttention(dModel, nhead)
	l.feedForwardBlock = feedForwardBlock{
		Linear1:    NewLinear(dModel, p.o.dimFeedforward, p.params...),
		Linear2:    NewLinear(p.o.dimFeedforward, dModel, p.params...),
		Dropout:    NewDropout(p.o.dropout),
		Activation: p.activation,
	}
	l.Norm1, l.Norm2 = p.newNorm(dModel), p.newNorm(dModel)
	l.Dropout1, l.Dropout2 = NewDropout(p.o.dropout), NewDropout(p.o.dropout)
	l.RegisterModule("self_attn", l.SelfAttn)
	l.RegisterModule("linear1", l.Linear1)
	l.RegisterModule("dropout", l.Dropout)
	l.RegisterModule("linear2", l.Linear2)
	l.RegisterModule("norm1", l.Norm1)
	l.RegisterModule("norm2", l.Norm2)
	l.RegisterModule("dropout1", l.Dropout1)
	l.RegisterModule("dropout2", l.Dropout2)
	return l
}

var encoderArgs = attnArgs{encoderOp, "src", "src", "src", "src_mask", "src_key_padding_mask"}

// Forward encodes src, [B, L, d_model], without masks.
func (l *TransformerEncoderLayer) Forward(src *lathe.Tensor) *lathe.Tensor {
	return l.Encode(src, AttentionMasks{})
}

// Encode encodes src, [B, L, d_model] ([L, B, d_model] where SeqFirst),
// or one sequence [L, d_model] (with a key padding mask of [L]), with the
// self-attention's masks (torch's src_mask, src_key_padding_mask and
// is_causal).
func (l *TransformerEncoderLayer) Encode(src *lathe.Tensor, masks AttentionMasks) *lathe.Tensor {
	return l.encode(encoderArgs, src, masks)
}

// encode is Encode with the names its errors give: the layer's, or those
// of the stack that runs it.
func (l *TransformerEncoderLayer) encode(n attnArgs, src *lathe.Tensor, masks AttentionMasks) *lathe.Tensor {
	if l == nil {
		return lathe.Failed(nilModule(n.op, "l"))
	}
	if err := Err(l); err != nil {
		return lathe.Failed(err)
	}
	if isNil(l.SelfAttn) || l.feedForwardBlock.missing() || isNil(l.Norm1) || isNil(l.Norm2) || isNil(l.Dropout1) || isNil(l.Dropout2) {
		return lathe.Failed(missingPart(n.op, "NewTransformerEncoderLayer"))
	}
	if err := l.SelfAttn.checkInputs(n, src, src, src); err != nil {
		return lathe.Failed(err)
	}
	selfAttention := func(x *lathe.Tensor) *lathe.Tensor {
		out, _ := l.SelfAttn.attend(n, x, x, x, masks, noWeights, nil)
		return l.Dropout1.Forward(out)
	}
	feedForward := func(x *lathe.Tensor) *lathe.Tensor { return l.Dropout2.Forward(l.forward(x)) }
	// What the blocks make on the way goes with the graph (lathe.Compose).
	return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		x := a[0]
		if l.NormFirst {
			x = x.Add(selfAttention(l.Norm1.Forward(x)))
			return x.Add(feedForward(l.Norm2.Forward(x)))
		}
		x = l.Norm1.Forward(x.Add(selfAttention(x)))
		return l.Norm2.Forward(x.Add(feedForward(x)))
	}, src)
}

// TransformerDecoderLayer is self-attention over the target, attention
// from the target to the encoder's output (memory), and a feed-forward
// block, each with a residual connection and a LayerNorm placed as in
// TransformerEncoderLayer.
type TransformerDecoderLayer struct {
	Base
	SelfAttn, MultiheadAttn *MultiheadAttention
	feedForwardBlock
	Norm1, Norm2, Norm3          *LayerNorm
	Dropout1, Dropout2, Dropout3 *Dropout
	NormFirst                    bool
}

const decoderOp = "transformer_decoder_layer"

// NewTransformerDecoderLayer makes a decoder layer of width dModel with
// nhead heads, taking the options of NewTransformerEncoderLayer.
func NewTransformerDecoderLayer(dModel, nhead int, opts ...Option) *TransformerDecoderLayer {
	l := &TransformerDecoderLayer{}
	p, err := transformerOptions("TransformerDecoderLayer", decoderOp, dModel, nhead, opts)
	if err != nil {
		l.Register(err.Arg, lathe.Failed(err))
		return l
	}
	l.NormFirst = p.o.normFirst
	l.SelfAttn = p.newAttention(dModel, nhead)
	l.MultiheadAttn = p.newAttention(dModel, nhead)
	l.feedForwardBlock = feedForwardBlock{
		Linear1:    NewLinear(dModel, p.o.dimFeedforward, p.params...),
		Linear2:    NewLinear(p.o.dimFeedforward, dModel, p.params...),
		Dropout:    NewDropout(p.o.dropout),
		Activation: p.activation,
	}
	l.Norm1, l.Norm2, l.Norm3 = p.newNorm(dModel), p.newNorm(dModel), p.newNorm(dModel)
	l.Dropout1, l.Dropout2, l.Dropout3 = NewDropout(p.o.dropout), NewDropout(p.o.dropout), NewDropout(p.o.dropout)
	l.RegisterModule("self_attn", l.SelfAttn)
	l.RegisterModule("multihead_attn", l.MultiheadAttn)
	l.RegisterModule("linear1", l.Linear1)
	l.RegisterModule("dropout", l.Dropout)
	l.RegisterModule("linear2", l.Linear2)
	l.RegisterModule("norm1", l.Norm1)
	l.RegisterModule("norm2", l.Norm2)
	l.RegisterModule("norm3", l.Norm3)
	l.RegisterModule("dropout1", l.Dropout1)
	l.RegisterModule("dropout2", l.Dropout2)
	l.RegisterModule("dropout3", l.Dropout3)
	return l
}

var (
	decoderSelfArgs  = attnArgs{decoderOp, "tgt", "tgt", "tgt", "tgt_mask", "tgt_key_padding_mask"}
	decoderCrossArgs = attnArgs{decoderOp, "tgt", "memory", "memory", "memory_mask", "memory_key_padding_mask"}
)

// Forward fails: a decoder layer needs the encoder's output too (Decode).
// It is there so that the layer is a Module, which Save, Load and the
// optimizers take.
func (l *TransformerDecoderLayer) Forward(*lathe.Tensor) *lathe.Tensor {
	if err := Err(l); err != nil {
		return lathe.Failed(err)
	}
	return lathe.Failed(nnError(decoderOp, lathe.ErrValue, "memory", "is missing: Forward takes one tensor",
		"call Decode(tgt, memory, tgtMasks, memoryMasks)"))
}

// Decode runs the layer on tgt, [B, L, d_model], attending to memory,
// [B, S, d_model] (both seq-first where SeqFirst), or on one sequence of
// each without the batch dim ([L, d_model], [S, d_model]): tgtMasks are the
// self-attention's (torch's tgt_mask, tgt_key_padding_mask,
// tgt_is_causal), memoryMasks the attention to memory's (memory_mask,
// memory_key_padding_mask).
func (l *TransformerDecoderLayer) Decode(tgt, memory *lathe.Tensor, tgtMasks, memoryMasks AttentionMasks) *lathe.Tensor {
	return l.decode(decoderSelfArgs, decoderCrossArgs, tgt, memory, tgtMasks, memoryMasks)
}

// decode is Decode with the names its errors give, as encode.
func (l *TransformerDecoderLayer) decode(self, cross attnArgs, tgt, memory *lathe.Tensor, tgtMasks, memoryMasks AttentionMasks) *lathe.Tensor {
	if l == nil {
		return lathe.Failed(nilModule(self.op, "l"))
	}
	if err := Err(l); err != nil {
		return lathe.Failed(err)
	}
	if isNil(l.SelfAttn) || isNil(l.MultiheadAttn) || l.feedForwardBlock.missing() || isNil(l.Norm1) || isNil(l.Norm2) || isNil(l.Norm3) ||
		isNil(l.Dropout1) || isNil(l.Dropout2) || isNil(l.Dropout3) {
		return lathe.Failed(missingPart(self.op, "NewTransformerDecoderLayer"))
	}
	if err := l.MultiheadAttn.checkInputs(cross, tgt, memory, memory); err != nil {
		return lathe.Failed(err)
	}
	if l.SelfAttn.SeqFirst != l.MultiheadAttn.SeqFirst {
		return lathe.Failed(nnError(self.op, lathe.ErrValue, "l", "has a seq-first and a batch-first attention", "give SelfAttn and MultiheadAttn one SeqFirst"))
	}
	selfAttention := func(x *lathe.Tensor) *lathe.Tensor {
		out, _ := l.SelfAttn.attend(self, x, x, x, tgtMasks, noWeights, nil)
		return l.Dropout1.Forward(out)
	}
	crossAttention := func(x, memory *lathe.Tensor) *lathe.Tensor {
		out, _ := l.MultiheadAttn.attend(cross, x, memory, memory, memoryMasks, noWeights, nil)
		return l.Dropout2.Forward(out)
	}
	feedForward := func(x *lathe.Tensor) *lathe.Tensor { return l.Dropout3.Forward(l.forward(x)) }
	return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		x, memory := a[0], a[1]
		if l.NormFirst {
			x = x.Add(selfAttention(l.Norm1.Forward(x)))
			x = x.Add(crossAttention(l.Norm2.Forward(x), memory))
			return x.Add(feedForward(l.Norm3.Forward(x)))
		}
		x = l.Norm1.Forward(x.Add(selfAttention(x)))
		x = l.Norm2.Forward(x.Add(crossAttention(x, memory)))
		return l.Norm3.Forward(x.Add(feedForward(x)))
	}, tgt, memory)
}
