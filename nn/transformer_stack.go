package nn

import (
	"errors"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// The stacks of torch.nn.TransformerEncoder and TransformerDecoder (torch
// 1.13): N layers run in turn, every one given the same masks, and an
// optional final LayerNorm. Their parameters have torch's state-dict
// names, layers.{i}.… and norm.…, so a torch checkpoint loads with Load.
//
// torch builds a stack by deep-copying one layer, so that its layers start
// with equal weights (until nn.Transformer re-initialises them); lathe
// calls a constructor once per layer instead, so each layer is
// independent from the start and may even be configured differently.

// TransformerEncoder is a stack of encoder layers.
type TransformerEncoder struct {
	Base
	Layers []*TransformerEncoderLayer
	// Norm is applied to the last layer's output; nil for none (torch's
	// norm=None).
	Norm *LayerNorm
}

// TransformerDecoder is a stack of decoder layers, each attending to the
// same memory.
type TransformerDecoder struct {
	Base
	Layers []*TransformerDecoderLayer
	// Norm is applied to the last layer's output; nil for none.
	Norm *LayerNorm
}

const (
	encoderStackOp = "transformer_encoder"
	decoderStackOp = "transformer_decoder"
)

// NewTransformerEncoder stacks numLayers encoder layers, each made by a
// call of newLayer, and norm (nil for none) after them:
//
//	enc := nn.NewTransformerEncoder(func() *nn.TransformerEncoderLayer {
//		return nn.NewTransformerEncoderLayer(512, 8)
//	}, 6, nn.NewLayerNorm([]int{512}))
//
// A nil newLayer, a negative numLayers, or a newLayer that returns nil or
// a layer it returned before gives a stack whose Err says so; a layer
// that failed to build fails the stack.
func NewTransformerEncoder(newLayer func() *TransformerEncoderLayer, numLayers int, norm *LayerNorm) *TransformerEncoder {
	s := &TransformerEncoder{}
	layers, err := buildLayers(encoderStackOp, newLayer, numLayers)
	if err != nil {
		s.Register(err.Arg, lathe.Failed(err))
		return s
	}
	s.Layers, s.Norm = layers, norm
	registerStack(&s.Base, layers, norm)
	return s
}

// NewTransformerDecoder stacks numLayers decoder layers made by newLayer
// and norm, as NewTransformerEncoder does.
func NewTransformerDecoder(newLayer func() *TransformerDecoderLayer, numLayers int, norm *LayerNorm) *TransformerDecoder {
	s := &TransformerDecoder{}
	layers, err := buildLayers(decoderStackOp, newLayer, numLayers)
	if err != nil {
		s.Register(err.Arg, lathe.Failed(err))
		return s
	}
	s.Layers, s.Norm = layers, norm
	registerStack(&s.Base, layers, norm)
	return s
}

// buildLayers calls newLayer n times and checks that each call made a new
// layer: one layer twice in a stack would share its weights, and an
// optimizer would step them twice.
func buildLayers[L interface {
	comparable
	Module
}](op string, newLayer func() L, n int) ([]L, *lathe.Error) {
	if newLayer == nil {
		return nil, nnError(op, lathe.ErrValue, "new_layer", "is nil", "pass a function that makes a layer")
	}
	if n < 0 || n > maxLayers {
		return nil, nnError(op, lathe.ErrValue, "num_layers", "is "+strconv.Itoa(n), "give a layer count from 0 to "+strconv.Itoa(maxLayers))
	}
	var layers []L
	seen := map[L]bool{}
	for i := range n {
		l := newLayer()
		switch {
		case isNil(l):
			return nil, nnError(op, lathe.ErrValue, "new_layer", "returned nil for layer "+strconv.Itoa(i), "return a layer from each call")
		case Err(l) != nil:
			// The layers after a failed one would fail alike (memory,
			// arguments): the stack stops at the first.
			return nil, failedLayer(op, i, Err(l))
		case seen[l]:
			return nil, nnError(op, lathe.ErrValue, "new_layer", "returned one layer twice (layers "+strconv.Itoa(len(layers))+" and "+strconv.Itoa(i)+
				" would share weights)", "make a new layer in each call")
		}
		seen[l] = true
		layers = append(layers, l)
	}
	return layers, nil
}

// failedLayer is a stack's error for its layer i, which failed with
// cause: of the cause's kind (ErrOutOfMemory where the layers no longer
// fit), wrapping it.
func failedLayer(op string, i int, cause error) *lathe.Error {
	kind := error(lathe.ErrValue)
	var le *lathe.Error
	if errors.As(cause, &le) && le.Kind != nil {
		kind = le.Kind
	}
	e := nnError(op, kind, "new_layer", "made layer "+strconv.Itoa(i)+" failed", "fix what the layer's error says")
	e.Err = cause
	return e
}

// registerStack registers layers as layers.{i} and norm, when there is
// one, as norm: torch's names.
func registerStack[L Module](b *Base, layers []L, norm *LayerNorm) {
	for i, l := range layers {
		b.RegisterModule("layers."+strconv.Itoa(i), l)
	}
	if norm != nil {
		b.RegisterModule("norm", norm)
	}
}

var (
	encoderStackArgs      = attnArgs{encoderStackOp, "src", "src", "src", "mask", "src_key_padding_mask"}
	decoderStackSelfArgs  = attnArgs{decoderStackOp, "tgt", "tgt", "tgt", "tgt_mask", "tgt_key_padding_mask"}
	decoderStackCrossArgs = attnArgs{decoderStackOp, "tgt", "memory", "memory", "memory_mask", "memory_key_padding_mask"}
)

// Forward encodes src without masks.
func (s *TransformerEncoder) Forward(src *lathe.Tensor) *lathe.Tensor {
	return s.Encode(src, AttentionMasks{})
}

// Encode runs every layer on src, [B, L, d_model] ([L, B, d_model] for
// SeqFirst layers), with masks (torch's mask and src_key_padding_mask),
// then Norm.
func (s *TransformerEncoder) Encode(src *lathe.Tensor, masks AttentionMasks) *lathe.Tensor {
	return s.encode(encoderStackArgs, src, masks)
}

func (s *TransformerEncoder) encode(n attnArgs, src *lathe.Tensor, masks AttentionMasks) *lathe.Tensor {
	if s == nil {
		return lathe.Failed(nilModule(n.op, "s"))
	}
	if err := Err(s); err != nil {
		return lathe.Failed(err)
	}
	if err := src.CheckArg(n.op, n.query); err != nil {
		return lathe.Failed(err)
	}
	// Each layer's output is the next one's alone (released with the
	// graph: lathe.Compose).
	return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		x := a[0]
		for _, l := range s.Layers {
			x = l.encode(n, x, masks)
		}
		if s.Norm != nil {
			x = s.Norm.Forward(x)
		}
		return x
	}, src)
}

// Forward fails: a decoder needs the encoder's output too (Decode). It is
// there so that the stack is a Module.
func (s *TransformerDecoder) Forward(*lathe.Tensor) *lathe.Tensor {
	if err := Err(s); err != nil {
		return lathe.Failed(err)
	}
	return lathe.Failed(nnError(decoderStackOp, lathe.ErrValue, "memory", "is missing: Forward takes one tensor",
		"call Decode(tgt, memory, tgtMasks, memoryMasks)"))
}

// Decode runs every layer on tgt, [B, L, d_model], attending to memory,
// [B, S, d_model] (both seq-first for SeqFirst layers), with the same
// masks for every layer (torch's tgt_mask, tgt_key_padding_mask in
// tgtMasks; memory_mask, memory_key_padding_mask in memoryMasks), then
// Norm.
func (s *TransformerDecoder) Decode(tgt, memory *lathe.Tensor, tgtMasks, memoryMasks AttentionMasks) *lathe.Tensor {
	return s.decode(decoderStackSelfArgs, decoderStackCrossArgs, tgt, memory, tgtMasks, memoryMasks)
}

func (s *TransformerDecoder) decode(self, cross attnArgs, tgt, memory *lathe.Tensor, tgtMasks, memoryMasks AttentionMasks) *lathe.Tensor {
	if s == nil {
		return lathe.Failed(nilModule(self.op, "s"))
	}
	if err := Err(s); err != nil {
		return lathe.Failed(err)
	}
	for _, a := range []struct {
		arg string
		t   *lathe.Tensor
	}{{self.query, tgt}, {cross.key, memory}} {
		if err := a.t.CheckArg(self.op, a.arg); err != nil {
			return lathe.Failed(err)
		}
	}
	return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		x := a[0]
		for _, l := range s.Layers {
			x = l.decode(self, cross, x, a[1], tgtMasks, memoryMasks)
		}
		if s.Norm != nil {
			x = s.Norm.Forward(x)
		}
		return x
	}, tgt, memory)
}
