package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// Transformer is torch.nn.Transformer (torch 1.13), the encoder-decoder
// model of "Attention Is All You Need" (Vaswani et al., 2017): an encoder
// stack over the source and a decoder stack over the target that attends
// to the encoder's output, each stack ending in a LayerNorm. Its
// parameters have torch's state-dict names (encoder.layers.{i}.…,
// encoder.norm.…, decoder.layers.{i}.…, decoder.norm.…), so a torch
// checkpoint loads with Load.
type Transformer struct {
	Base
	Encoder       *TransformerEncoder
	Decoder       *TransformerDecoder
	DModel, NHead int
}

const transformerOp = "transformer"

// NumEncoderLayers sets the number of Transformer's encoder layers
// (torch's num_encoder_layers; 6 by default).
func NumEncoderLayers(n int) Option {
	return Option{"num_encoder_layers", func(o *options) { o.numEncoderLayers, o.numEncoderLayersSet = n, true }}
}

// NumDecoderLayers sets the number of Transformer's decoder layers
// (torch's num_decoder_layers; 6 by default).
func NumDecoderLayers(n int) Option {
	return Option{"num_decoder_layers", func(o *options) { o.numDecoderLayers, o.numDecoderLayersSet = n, true }}
}

// NewTransformer makes a Transformer of width dModel with nhead heads
// (torch's defaults are 512 and 8). It takes NumEncoderLayers,
// NumDecoderLayers and the options of NewTransformerEncoderLayer, with
// torch's defaults (6 and 6 layers, dim_feedforward 2048, dropout 0.1,
// "relu", layer_norm_eps 1e-5, post-norm), but lathe's batch-first layout
// unless SeqFirst. As torch does, every parameter of more than one dim is
// then re-initialised xavier-uniform.
func NewTransformer(dModel, nhead int, opts ...Option) *Transformer {
	m := &Transformer{DModel: dModel, NHead: nhead}
	lo := layerOpts(opts)
	o, err := layerOptions("Transformer", opts)
	var parts transformerParts
	if err == nil {
		parts, err = transformerOptions("TransformerEncoderLayer", transformerOp, dModel, nhead, lo)
	}
	if !o.numEncoderLayersSet {
		o.numEncoderLayers = 6
	}
	if !o.numDecoderLayersSet {
		o.numDecoderLayers = 6
	}
	for _, c := range []struct {
		arg string
		n   int
	}{{"num_encoder_layers", o.numEncoderLayers}, {"num_decoder_layers", o.numDecoderLayers}} {
		if err == nil && c.n < 0 {
			err = nnError(transformerOp, lathe.ErrValue, c.arg, "is "+strconv.Itoa(c.n), "give a layer count ≥ 0")
		}
	}
	if err != nil {
		m.Register(err.Arg, lathe.Failed(err))
		return m
	}
	m.Encoder = NewTransformerEncoder(func() *TransformerEncoderLayer { return NewTransformerEncoderLayer(dModel, nhead, lo...) },
		o.numEncoderLayers, parts.newNorm(dModel))
	m.Decoder = NewTransformerDecoder(func() *TransformerDecoderLayer { return NewTransformerDecoderLayer(dModel, nhead, lo...) },
		o.numDecoderLayers, parts.newNorm(dModel))
	m.RegisterModule("encoder", m.Encoder)
	m.RegisterModule("decoder", m.Decoder)
	for _, p := range m.Parameters() { // torch's Transformer._reset_parameters
		if p.T.Rank() > 1 && p.T.Numel() > 0 {
			// torch's fans: dim 1 and dim 0, times the size of the dims after.
			field := p.T.Numel() / p.T.Dim(0) / p.T.Dim(1)
			in, out := p.T.Dim(1)*field, p.T.Dim(0)*field
			if err := rebind(p.T, newParam(uniform(o.dtype, math.Sqrt(6/float64(in+out)), p.T.Shape()...), o), nil); err != nil {
				m.Register("reset_parameters", lathe.Failed(err))
				break
			}
		}
	}
	return m
}

// layerOpts are opts less Transformer's own, for its layers.
func layerOpts(opts []Option) []Option {
	var out []Option
	for _, o := range opts {
		if o.name != "num_encoder_layers" && o.name != "num_decoder_layers" {
			out = append(out, o)
		}
	}
	return out
}

var (
	transformerSrcArgs   = attnArgs{transformerOp, "src", "src", "src", "src_mask", "src_key_padding_mask"}
	transformerTgtArgs   = attnArgs{transformerOp, "tgt", "tgt", "tgt", "tgt_mask", "tgt_key_padding_mask"}
	transformerCrossArgs = attnArgs{transformerOp, "tgt", "memory", "memory", "memory_mask", "memory_key_padding_mask"}
)

// Forward fails: a Transformer needs a target too (Transform). It is there
// so that the model is a Module.
func (m *Transformer) Forward(*lathe.Tensor) *lathe.Tensor {
	if err := Err(m); err != nil {
		return lathe.Failed(err)
	}
	return lathe.Failed(nnError(transformerOp, lathe.ErrValue, "tgt", "is missing: Forward takes one tensor",
		"call Transform(src, tgt, srcMasks, tgtMasks, memoryMasks)"))
}

// Transform encodes src, [B, S, d_model], with srcMasks (torch's src_mask,
// src_key_padding_mask) and decodes tgt, [B, T, d_model], with tgtMasks
// (tgt_mask, tgt_key_padding_mask) attending to the encoding with
// memoryMasks (memory_mask, memory_key_padding_mask): torch's forward. The
// result is [B, T, d_model]; with SeqFirst every tensor has its sequence
// dim first.
func (m *Transformer) Transform(src, tgt *lathe.Tensor, srcMasks, tgtMasks, memoryMasks AttentionMasks) *lathe.Tensor {
	if m == nil {
		return lathe.Failed(nilModule(transformerOp, "m"))
	}
	if err := Err(m); err != nil {
		return lathe.Failed(err)
	}
	if isNil(m.Encoder) || isNil(m.Decoder) {
		return lathe.Failed(nnError(transformerOp, lathe.ErrValue, "m", "lacks its encoder or decoder (a nil field)", "build the model with NewTransformer"))
	}
	for i, t := range []*lathe.Tensor{src, tgt} {
		arg := [...]string{"src", "tgt"}[i]
		if err := t.CheckArg(transformerOp, arg); err != nil {
			return lathe.Failed(err)
		}
		if t.Rank() != 3 || t.Dim(2) != m.DModel {
			return lathe.Failed(nnError(transformerOp, lathe.ErrShape, arg, "has shape "+shapeString(t.Shape())+" but the model takes 3 dims of which the last is d_model "+
				strconv.Itoa(m.DModel), "give "+arg+" the model's width as its last dim"))
		}
	}
	bd := 0
	if len(m.Decoder.Layers) > 0 && !isNil(m.Decoder.Layers[0]) && !isNil(m.Decoder.Layers[0].SelfAttn) {
		bd = m.Decoder.Layers[0].SelfAttn.batchDim()
	}
	if src.Dim(bd) != tgt.Dim(bd) {
		return lathe.Failed(nnError(transformerOp, lathe.ErrShape, "tgt", "has batch "+strconv.Itoa(tgt.Dim(bd))+" but src has "+strconv.Itoa(src.Dim(bd)),
			"give src and tgt one batch size"))
	}
	// The encoding, which only the decoder reads, goes with the result's
	// graph (or at once without one), as the stacks' own intermediates do.
	memory := m.Encoder.encode(transformerSrcArgs, src, srcMasks)
	out := m.Decoder.decode(transformerTgtArgs, transformerCrossArgs, tgt, memory, tgtMasks, memoryMasks)
	lathe.ReleaseWithGraph(out, memory)
	return out
}

// GenerateSquareSubsequentMask is torch's
// Transformer.generate_square_subsequent_mask: a float32 [n, n] mask on
// dev, -Inf above the diagonal and 0 elsewhere, that lets position i
// attend to positions up to i when added to the scores. (AttentionMasks'
// Causal says the same without a tensor, and lets the fused attention
// kernel apply it.)
func GenerateSquareSubsequentMask(n int, dev lathe.Device) *lathe.Tensor {
	return lathe.Full(dev, lathe.Float32, math.Inf(-1), n, n).Triu(1)
}
