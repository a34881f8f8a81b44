package nn

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// EmbeddingBag is torch.nn.EmbeddingBag: it sums, averages or takes the
// elementwise max of the rows of Weight ([num, dim]) that each bag of
// indices names, without making the [n, dim] lookup of every index a
// caller would reduce. Entries equal to the padding row (Padded,
// PaddingIdx) are left out of their bags, counted in no mean, and get no
// gradient; an empty bag gives zeros, as torch's.
type EmbeddingBag struct {
	Weight *lathe.Tensor
	// Mode is "sum", "mean" (NewEmbeddingBag's default) or "max".
	Mode string
	// IncludeLastOffset takes offsets as B+1 boundaries, the last the end
	// of the last bag (torch's include_last_offset).
	IncludeLastOffset bool
	Padded            bool
	PaddingIdx        int
	// MaxNorm, when not 0, renormalises each row that a Forward's input
	// names (every index of it, in a bag or not) and whose NormType-norm
	// exceeds it to norm MaxNorm, in Weight, before the lookup (torch's
	// max_norm; NormType 0 is the 2-norm), as Embedding's MaxNorm does.
	MaxNorm, NormType float64
	// ScaleGradByFreq scales the gradient each row of Weight gets from a
	// Forward by 1 over the number of times its index appears in that
	// Forward's input (torch's scale_grad_by_freq); modes "sum" and
	// "mean" only, as torch's. torch 1.13's cpu kernel divides some rows
	// by the count of another index (a row that appears once, after one
	// that appears three times, gets a third of its gradient); lathe
	// gives every row its own count, as torch's Embedding does.
	ScaleGradByFreq bool
}

const embeddingBagOp = "embedding_bag"

// IncludeLastOffset makes an EmbeddingBag take B+1 offsets, the last the
// end of the last bag, as torch's include_last_offset=True.
func IncludeLastOffset() Option {
	return Option{"include_last_offset", func(o *options) { o.includeLastOffset = true }}
}

// NewEmbeddingBag makes an EmbeddingBag of num rows of size dim,
// initialised N(0, 1) as PyTorch does, the padding row zeros. Options:
// Mode ("sum", "mean", the default, or "max"; checked by Forward, as
// torch does), IncludeLastOffset, PaddingIdx, MaxNorm, NormType,
// ScaleGradByFreq, WithDType, OnDevice. torch's sparse is not taken.
func NewEmbeddingBag(num, dim int, opts ...Option) *EmbeddingBag {
	o, err := layerOptions("EmbeddingBag", opts)
	switch {
	case err != nil:
	case num < 0 || dim < 0:
		err = nnError(embeddingBagOp, lathe.ErrShape, "", "has num_embeddings="+strconv.Itoa(num)+", embedding_dim="+strconv.Itoa(dim)+
			", which must be ≥ 0", "use sizes ≥ 0")
	case o.paddingIdxSet && (o.paddingIdx < -num || o.paddingIdx >= num):
		err = nnError(embeddingBagOp, lathe.ErrValue, "padding_idx", "is "+strconv.Itoa(o.paddingIdx)+" for "+strconv.Itoa(num)+" embeddings",
			"give a row in [-"+strconv.Itoa(num)+", "+strconv.Itoa(num)+"), negative ones counting from the end")
	case o.maxNormSet && !(o.maxNorm > 0):
		err = nnError(embeddingBagOp, lathe.ErrValue, "max_norm", "is "+strconv.FormatFloat(o.maxNorm, 'g', -1, 64), "give a positive finite max_norm")
	case o.normTypeSet && !(o.normType > 0):
		err = nnError(embeddingBagOp, lathe.ErrValue, "norm_type", "is "+strconv.FormatFloat(o.normType, 'g', -1, 64),
			"give a positive p (math.Inf(1) for the max norm)")
	}
	if o.paddingIdx < 0 {
		o.paddingIdx += num
	}
	mode := o.bagMode
	if mode == "" {
		mode = "mean"
	}
	e := &EmbeddingBag{Mode: mode, IncludeLastOffset: o.includeLastOffset, Padded: o.paddingIdxSet, PaddingIdx: o.paddingIdx,
		MaxNorm: o.maxNorm, NormType: o.normType, ScaleGradByFreq: o.scaleGradByFreq}
	if err == nil && (math.IsInf(e.MaxNorm, 1) || math.IsNaN(e.MaxNorm)) {
		err = nnError(embeddingBagOp, lathe.ErrValue, "max_norm", "is "+strconv.FormatFloat(e.MaxNorm, 'g', -1, 64), "give a positive finite max_norm")
	}
	if err != nil {
		e.Weight = lathe.Failed(err)
		return e
	}
	e.Weight = embeddingWeight(num, dim, e.Padded, e.PaddingIdx, o)
	return e
}

// Forward reduces the bags of a 2-D x [B, N] (Int64 or Int32), each row
// one bag of N indices, to [B, dim].
func (e *EmbeddingBag) Forward(x *lathe.Tensor) *lathe.Tensor { return e.ForwardBags(x, nil, nil) }

// ForwardBags reduces the bags of x to [B, dim], as torch's
// forward(input, offsets, per_sample_weights): x is 2-D [B, N] with
// offsets nil, or 1-D [n] with offsets 1-D (Int64 or Int32), bag i
// x[offsets[i]:offsets[i+1]] (the last to the end of x, or, with
// IncludeLastOffset, B+1 offsets bound B bags, and the entries after the
// last offset are in none: so in every mode, where torch 1.13 leaves them
// out of a sum but divides a mean's last bag by the count to the end of
// x, and its max mode corrupts memory). offsets start at 0, do
// not decrease and do not pass n. perSampleWeights (nil for none), x's
// shape and Weight's dtype, scales each entry in mode "sum" (torch
// refuses it in the others) and gets a gradient. The indices and offsets
// are read to the host to lay the bags out: the work is a gather of
// [B, longest bag, dim], so one very long bag among short ones costs
// memory in proportion.
func (e *EmbeddingBag) ForwardBags(x, offsets, perSampleWeights *lathe.Tensor) *lathe.Tensor {
	const op = embeddingBagOp
	if e == nil {
		return lathe.Failed(nilModule(op, "e"))
	}
	if err := e.Weight.CheckArg(op, "weight"); err != nil {
		return lathe.Failed(err)
	}
	if err := x.CheckArg(op, "input"); err != nil {
		return lathe.Failed(err)
	}
	fail := func(kind error, arg, detail, fix string) *lathe.Tensor {
		return lathe.Failed(nnError(op, kind, arg, detail, fix))
	}
	if e.Weight.Rank() != 2 {
		return fail(lathe.ErrShape, "weight", "has shape "+shapeString(e.Weight.Shape()), "give a [num_embeddings, embedding_dim] weight")
	}
	num, dim, dt := e.Weight.Dim(0), e.Weight.Dim(1), e.Weight.DType()
	mode := e.Mode
	if mode != "sum" && mode != "mean" && mode != "max" {
		return fail(lathe.ErrValue, "mode", "is "+strconv.Quote(mode), `use "sum", "mean" or "max"`)
	}
	if e.Padded && (e.PaddingIdx < 0 || e.PaddingIdx >= num) {
		return fail(lathe.ErrValue, "padding_idx", "is "+strconv.Itoa(e.PaddingIdx)+" for "+strconv.Itoa(num)+" embeddings", "give a row in [0, "+strconv.Itoa(num)+")")
	}
	switch {
	case !(e.MaxNorm >= 0) || math.IsInf(e.MaxNorm, 1):
		return fail(lathe.ErrValue, "max_norm", "is "+strconv.FormatFloat(e.MaxNorm, 'g', -1, 64), "give a positive finite max_norm, or 0 for none")
	case !(e.NormType >= 0):
		return fail(lathe.ErrValue, "norm_type", "is "+strconv.FormatFloat(e.NormType, 'g', -1, 64),
			"give a positive p (math.Inf(1) for the max norm), or 0 for the 2-norm")
	case e.ScaleGradByFreq && mode == "max": // torch: "max mode does not support scaling the gradient by the frequency"
		return fail(lathe.ErrValue, "scale_grad_by_freq", "is set in mode \"max\", which does not support it", `use mode "sum" or "mean", or leave ScaleGradByFreq out`)
	}
	intDType := func(t *lathe.Tensor) bool { return t.DType() == lathe.Int64 || t.DType() == lathe.Int32 }
	if !intDType(x) {
		return fail(lathe.ErrDType, "input", "is "+x.DType().String(), "give Int64 or Int32 indices")
	}
	var bounds []int64 // bag i is idx[bounds[i]:bounds[i+1]]
	idx, err := hostInts(x)
	if err != nil {
		return lathe.Failed(wrapErr(op, err))
	}
	n := len(idx)
	switch x.Rank() {
	case 2:
		if offsets != nil {
			return fail(lathe.ErrValue, "offsets", "is given for a 2-D input, whose rows are the bags", "pass nil offsets, or a 1-D input")
		}
		rows, cols := x.Dim(0), x.Dim(1)
		for i := range rows + 1 {
			bounds = append(bounds, int64(i*cols))
		}
	case 1:
		if err := offsets.CheckArg(op, "offsets"); err != nil {
			return lathe.Failed(err)
		}
		if offsets.Rank() != 1 || !intDType(offsets) {
			return fail(lathe.ErrShape, "offsets", "is "+offsets.DType().String()+shapeString(offsets.Shape()), "give 1-D Int64 or Int32 offsets")
		}
		off, err := hostInts(offsets)
		if err != nil {
			return lathe.Failed(wrapErr(op, err))
		}
		for i, o := range off {
			switch {
			case i == 0 && o != 0:
				return fail(lathe.ErrValue, "offsets", "starts at "+strconv.FormatInt(o, 10)+", not 0", "start the first bag at 0")
			case i > 0 && o < off[i-1]:
				return fail(lathe.ErrValue, "offsets", "decreases at "+strconv.Itoa(i), "give non-decreasing offsets")
			case o > int64(n):
				return fail(lathe.ErrValue, "offsets", "has "+strconv.FormatInt(o, 10)+", past the input's length "+strconv.Itoa(n), "give offsets of at most the input's length")
			}
		}
		bounds = off
		if !e.IncludeLastOffset || len(off) == 0 {
			bounds = append(slices.Clone(off), int64(n))
		}
	default:
		return fail(lathe.ErrShape, "input", "is "+strconv.Itoa(x.Rank())+"-d", "give a 2-D input, or a 1-D one with offsets")
	}
	for _, v := range idx {
		if v < 0 || v >= int64(num) {
			return fail(lathe.ErrIndex, "input", "holds "+strconv.FormatInt(v, 10)+", out of range for "+strconv.Itoa(num)+" embeddings", "give indices in [0, "+strconv.Itoa(num)+")")
		}
	}
	if perSampleWeights != nil {
		if err := perSampleWeights.CheckArg(op, "per_sample_weights"); err != nil {
			return lathe.Failed(err)
		}
		switch {
		case mode != "sum":
			return fail(lathe.ErrValue, "per_sample_weights", "is given in mode "+strconv.Quote(mode), `use mode "sum", or no weights`)
		case !slices.Equal(perSampleWeights.Shape(), x.Shape()):
			return fail(lathe.ErrShape, "per_sample_weights", "has shape "+shapeString(perSampleWeights.Shape())+" but the input "+shapeString(x.Shape()), "give one weight per index")
		case perSampleWeights.DType() != dt:
			return fail(lathe.ErrDType, "per_sample_weights", "is "+perSampleWeights.DType().String()+" but the weight is "+dt.String(), "cast it to the weight's dtype")
		}
	}
	// positions [B, L] into the looked-up rows, n the zero row and n+1 the
	// -inf row (max's filler, so that it never wins; an empty bag's
	// first position is the zero row).
	bags := len(bounds) - 1
	if bags < 0 {
		bags = 0
	}
	filler := int64(n)
	if mode == "max" {
		filler = int64(n + 1)
	}
	longest := 1
	members := make([][]int64, bags)
	counts := make([]float64, bags)
	for b := range bags {
		for p := bounds[b]; p < bounds[b+1]; p++ {
			if !e.Padded || idx[p] != int64(e.PaddingIdx) {
				members[b] = append(members[b], p)
			}
		}
		longest = max(longest, len(members[b]))
		counts[b] = math.Max(1, float64(len(members[b])))
	}
	pos := make([]int64, bags*longest)
	for b, m := range members {
		row := pos[b*longest : (b+1)*longest]
		for i := range row {
			row[i] = filler
		}
		copy(row, m)
		if len(m) == 0 {
			row[0] = int64(n)
		}
	}
	if e.MaxNorm != 0 { // every check passed: the forward changes the weight only where it succeeds
		if err := renormRows(e.Weight, x, e.MaxNorm, e.NormType); err != nil {
			return lathe.Failed(wrapErr(op, err))
		}
	}
	dev := e.Weight.Device()
	fillRows := append(make([]float64, dim), slices.Repeat([]float64{math.Inf(-1)}, dim)...)
	temps := []*lathe.Tensor{
		upload(lathe.FromSlice(lathe.CPU, pos, bags*longest), lathe.Int64, dev),
		upload(lathe.FromSlice(lathe.CPU, fillRows, 2, dim), dt, dev),
		upload(lathe.FromSlice(lathe.CPU, counts, bags, 1), dt, dev),
		lathe.Zeros(dev, dt, 1),
	}
	scaled := e.ScaleGradByFreq && e.Weight.RequiresGrad()
	if scaled {
		temps = append(temps, freqScale(idx, dt, dev))
	}
	args := append([]*lathe.Tensor{e.Weight, x}, temps...)
	if perSampleWeights != nil {
		args = append(args, perSampleWeights)
	}
	out := lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		w, ix, p, fill, cnt, zero := a[0], a[1].Reshape(n), a[2], a[3], a[4], a[5]
		looked := w.IndexSelect(0, ix)
		a = a[6:]
		if scaled {
			if err := scaleGrad(looked, a[0]); err != nil {
				return lathe.Failed(err)
			}
			a = a[1:]
		}
		rows := lathe.Concat([]*lathe.Tensor{looked, fill}, 0) // [n+2, dim]
		g := rows.IndexSelect(0, p).Reshape(bags, longest, dim)
		if len(a) > 0 {
			psw := lathe.Concat([]*lathe.Tensor{a[0].Reshape(n), zero}, 0).IndexSelect(0, p).Reshape(bags, longest, 1)
			g = g.Mul(psw)
		}
		switch mode {
		case "max":
			v, _ := g.MaxDim(1, false)
			return v
		case "mean":
			return g.Sum(1).Div(cnt)
		}
		return g.Sum(1)
	}, args...)
	lathe.ReleaseWithGraph(out, temps...)
	return out
}

// upload gives t, made on the cpu, in dt on dev, releasing what it made
// on the way.
func upload(t *lathe.Tensor, dt lathe.DType, dev lathe.Device) *lathe.Tensor {
	c := t.Cast(dt)
	r := c.To(dev)
	if c != r {
		c.Release()
	}
	if t != c && t != r {
		t.Release()
	}
	return r
}

// hostInts reads an integer tensor's values to the host.
func hostInts(t *lathe.Tensor) ([]int64, error) {
	c := t.To(lathe.CPU)
	defer c.Release()
	i := c.Cast(lathe.Int64)
	defer i.Release()
	return i.Int64s()
}

// Parameters lists "weight".
func (e *EmbeddingBag) Parameters() []Param { return []Param{{Name: "weight", T: e.Weight}} }

// To moves the weight to dev.
func (e *EmbeddingBag) To(dev lathe.Device) error { return moveParams(e.Parameters(), dev) }

// Train does nothing: EmbeddingBag acts the same in both modes.
func (e *EmbeddingBag) Train(bool) {}
