package model

import (
	"strconv"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// Config is the shape of a GPT.
type Config struct {
	Vocab   int         // tokens the model reads and predicts
	Context int         // the longest sequence Forward takes
	Layers  int         // transformer blocks
	Heads   int         // attention heads; Dim must be a multiple
	Dim     int         // d_model, the width of the residual stream
	Rotary  bool        // rotary positions in each head instead of a learned position table
	DType   lathe.DType // Float32 or Float64; zero means Float32
}

// Check says what is wrong with c, naming the field, or nil.
func (c Config) Check() error {
	if err := c.check(); err != nil {
		return err
	}
	return nil
}

// check is Check as a *lathe.Error.
func (c Config) check() *lathe.Error {
	bad := func(field string, v int, want string) *lathe.Error {
		return lathe.NewError("gpt", lathe.ErrValue, field, "is "+strconv.Itoa(v), want)
	}
	switch {
	case c.Vocab < 1:
		return bad("Vocab", c.Vocab, "use a vocabulary of at least one token")
	case c.Context < 1:
		return bad("Context", c.Context, "use a context of at least one token")
	case c.Layers < 0:
		return bad("Layers", c.Layers, "use zero or more layers")
	case c.Heads < 1:
		return bad("Heads", c.Heads, "use at least one head")
	case c.Dim < 1 || c.Dim%c.Heads != 0:
		return bad("Dim", c.Dim, "use a positive multiple of Heads ("+strconv.Itoa(c.Heads)+")")
	case c.Rotary && (c.Dim/c.Heads)%2 != 0:
		return bad("Dim", c.Dim, "rotary positions rotate pairs of a head's dims: make Dim/Heads even")
	case c.DType != 0 && c.DType != lathe.Float32 && c.DType != lathe.Float64:
		return lathe.NewError("gpt", lathe.ErrDType, "DType", "is "+c.DType.String(), "use lathe.Float32 or lathe.Float64")
	}
	return nil
}

// GPT is a decoder-only transformer (GPT-2's layout): token embeddings
// plus learned positions (or rotary positions in attention, nn.ApplyRotary), Layers
// pre-norm blocks of causal self-attention and an MLP, a final LayerNorm,
// and an output head tied to the token embeddings. Its state-dict names
// are those of build/torchref/gpt.py's torch module, so weights move
// between the two through nn.Save and nn.Load.
type GPT struct {
	nn.Base
	Config
	TokEmb *nn.Embedding // tok_emb: [Vocab, Dim], also the output head
	PosEmb *nn.Embedding // pos_emb: [Context, Dim]; nil with Rotary
	Blocks []*Block      // blocks.0, blocks.1, ...
	NormF  *nn.LayerNorm // ln_f
}

// New makes a GPT on the cpu with GPT-2's initialisation: weights
// N(0, 0.02²), the projections into the residual stream N(0, (0.02/√(2·Layers))²),
// biases zero, LayerNorms the identity. It draws from lathe's stream, so
// call lathe.Seed first for a reproducible model. A Config that cannot make
// a model is a *lathe.Error naming the field.
func New(c Config) (*GPT, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.DType == 0 {
		c.DType = lathe.Float32
	}
	g := &GPT{Config: c}
	g.TokEmb = &nn.Embedding{Weight: normal(c.DType, 0.02, c.Vocab, c.Dim)}
	g.RegisterModule("tok_emb", g.TokEmb)
	if !c.Rotary {
		g.PosEmb = &nn.Embedding{Weight: normal(c.DType, 0.02, c.Context, c.Dim)}
		g.RegisterModule("pos_emb", g.PosEmb)
	}
	for i := range c.Layers {
		b := newBlock(c)
		// "blocks.<i>" is the name torch's nn.ModuleList gives its items.
		g.RegisterModule("blocks."+strconv.Itoa(i), b)
		g.Blocks = append(g.Blocks, b)
	}
	g.NormF = nn.NewLayerNorm([]int{c.Dim}, nn.WithDType(c.DType))
	g.RegisterModule("ln_f", g.NormF)
	if err := nn.Err(g); err != nil {
		return nil, err
	}
	return g, nil
}

// Forward maps tokens [B, L] (Int64 or Int32, 1 ≤ L ≤ Context) to logits
// [B, L, Vocab]: position i's logits predict token i+1 from tokens 0..i.
func (g *GPT) Forward(tokens *lathe.Tensor) *lathe.Tensor {
	if err := tokens.Err(); err != nil {
		return tokens
	}
	s := tokens.Shape()
	if len(s) != 2 || s[1] < 1 || s[1] > g.Context {
		return lathe.Failed(lathe.NewError("gpt", lathe.ErrShape, "tokens", "has shape "+shapeString(s),
			"pass [batch, length] with 1 ≤ length ≤ Context ("+strconv.Itoa(g.Context)+"); crop longer sequences to their last Context tokens"))
	}
	// The intermediates go with the graph (or at once, without one): the
	// caller holds only the logits.
	var tmp scratch
	logits := g.head(g.hidden(tokens, 0, nil, &tmp), &tmp)
	lathe.ReleaseWithGraph(logits, tmp.ts...)
	return logits
}

// hidden is the residual stream after the blocks, [B, L, Dim], for tokens
// [B, L] at positions offset…offset+L-1. With caches (one per block, each
// holding offset positions) each block reads its cached keys and values and
// appends tokens'; s collects the temporaries, the result among them (see
// scratch).
func (g *GPT) hidden(tokens *lathe.Tensor, offset int, caches []nn.KVCache, s *scratch) *lathe.Tensor {
	l := tokens.Shape()[1]
	h := s.add(g.TokEmb.Forward(tokens))
	if !g.Rotary {
		pos := s.add(lathe.Arange(tokens.Device(), lathe.Int64, float64(offset), float64(offset+l), 1))
		h = s.add(h.Add(s.add(g.PosEmb.Forward(pos))))
	}
	for i, b := range g.Blocks {
		var c *nn.KVCache
		if caches != nil {
			c = &caches[i]
		}
		h = s.add(b.forward(h, c, s))
	}
	return h
}

// head maps the residual stream h to logits. It shares the token table
// (weight tying, as GPT-2): logits are LayerNorm(h)·Eᵀ, torch's
// F.linear(ln_f(h), tok_emb.weight).
func (g *GPT) head(h *lathe.Tensor, s *scratch) *lathe.Tensor {
	return s.add(g.NormF.Forward(h)).Linear(g.TokEmb.Weight, nil)
}

// Loss is the mean cross-entropy of logits [B, L, Vocab] against targets
// [B, L], the next tokens.
func Loss(logits, targets *lathe.Tensor) *lathe.Tensor {
	if err := logits.Err(); err != nil {
		return logits
	}
	s := logits.Shape()
	if len(s) != 3 {
		return lathe.Failed(lathe.NewError("gpt loss", lathe.ErrShape, "logits", "has shape "+shapeString(s), "pass GPT.Forward's [batch, length, vocab] logits"))
	}
	return nn.CrossEntropy(logits.Reshape(-1, s[2]), targets.Reshape(-1))
}

// normal draws N(0, std²) on the cpu as a parameter.
func normal(dt lathe.DType, std float64, shape ...int) *lathe.Tensor {
	return lathe.RandN(lathe.CPU, dt, shape...).MulScalar(std).RequireGrad()
}

func shapeString(s []int) string {
	out := "["
	for i, d := range s {
		if i > 0 {
			out += ", "
		}
		out += strconv.Itoa(d)
	}
	return out + "]"
}
