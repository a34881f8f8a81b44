package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// The connectionist temporal classification loss (Graves et al. 2006,
// "Connectionist temporal classification", section 4.1), as
// torch.nn.functional.ctc_loss (torch 1.13's LossCTC.cpp). It is a
// composite: the forward variables α over the extended label sequence
// (blank, l₁, blank, l₂, ..., blank: 2S+1 positions) are updated once per
// time step by a few batched ops, log-add-exps of α, α shifted by one and
// α shifted by two where the skip is allowed, so that every device runs it
// and autodiff differentiates it to any order.

type ctcAttrs struct {
	blank     int
	reduction Reduction
	zeroInf   bool
	unbatched bool
	// The sizes the value checks need: the time steps of log_probs, its
	// classes, and the target capacity (the padded width, or the length
	// of the concatenated targets).
	steps, classes, capacity int
}

var (
	opCTCLoss             = withCTCChecks(composite("ctc_loss", []string{"log_probs", "targets", "input_lengths", "target_lengths", "target_labels"}, ctcLoss))
	opCTCLossConcatenated = withCTCChecks(compositeVariant("ctc_loss", "concatenated", []string{"log_probs", "targets", "input_lengths", "target_lengths", "target_labels", "target_total"}, ctcLoss))
)

// withCTCChecks gives ctc_loss its value checks: input lengths in
// [0, T], target lengths in [0, S] (padded targets) or ≥ 0 summing to the
// length of the concatenated targets, as torch checks them, and labels
// (the targets within each sample's length, math.MinInt64 elsewhere) in [0, C) and
// not the blank.
func withCTCChecks(op *dispatch.Op[ctcAttrs]) *dispatch.Op[ctcAttrs] {
	op.Checks = func(in []*dispatch.Tensor, a ctcAttrs) []dispatch.ValueCheck {
		for _, t := range in[1:] {
			if t.DType != Int64 {
				return nil
			}
		}
		maxTarget := int64(a.capacity)
		if len(in) > 5 {
			maxTarget = math.MaxInt64
		}
		steps, classes, blank := int64(a.steps), int64(a.classes), int64(a.blank)
		checks := []dispatch.ValueCheck{
			{Arg: 2, Min: 0, Max: steps, Fail: func(v int64) *dispatch.Error {
				return &Error{Kind: ErrValue, Arg: "input_lengths", Found: strconv.FormatInt(v, 10),
					Detail: "holds " + strconv.FormatInt(v, 10) + ", outside [0, " + strconv.FormatInt(steps, 10) + "]: log_probs has " + strconv.FormatInt(steps, 10) + " time steps",
					Fix:    "give each sample's number of time steps, at most the size of log_probs' dim 0"}
			}},
			{Arg: 3, Min: 0, Max: maxTarget, Fail: func(v int64) *dispatch.Error {
				d := "holds " + strconv.FormatInt(v, 10) + ", a negative length"
				if v >= 0 {
					d = "holds " + strconv.FormatInt(v, 10) + ", more than the " + strconv.FormatInt(maxTarget, 10) + " labels a row of targets holds"
				}
				return &Error{Kind: ErrValue, Arg: "target_lengths", Found: strconv.FormatInt(v, 10), Detail: d,
					Fix: "give each sample's number of labels, at most the size of targets' dim 1"}
			}},
			{Arg: 4, Min: 0, Max: classes - 1, Ignore: math.MinInt64, Ignoring: true, Fail: func(v int64) *dispatch.Error {
				return &Error{Kind: ErrIndex, Arg: "targets", Found: strconv.FormatInt(v, 10),
					Detail: "holds label " + strconv.FormatInt(v, 10) + ", out of range for the " + strconv.FormatInt(classes, 10) + " classes of log_probs",
					Fix:    "use labels in [0, " + strconv.FormatInt(classes, 10) + ")"}
			}},
			{Arg: 4, Min: blank, Max: blank, Outside: true, Fail: func(v int64) *dispatch.Error {
				return &Error{Kind: ErrValue, Arg: "targets", Found: strconv.FormatInt(v, 10),
					Detail: "holds the blank " + strconv.FormatInt(v, 10) + " among its labels (torch computes a meaningless value for it)",
					Fix:    "leave the blank out of the targets, or pass the blank's index as blank"}
			}},
		}
		if len(in) > 5 {
			total := int64(a.capacity)
			checks = append(checks, dispatch.ValueCheck{Arg: 5, Min: total, Max: total, Fail: func(v int64) *dispatch.Error {
				return &Error{Kind: ErrValue, Arg: "target_lengths", Found: strconv.FormatInt(v, 10),
					Detail: "sum to " + strconv.FormatInt(v, 10) + ", but the concatenated targets hold " + strconv.FormatInt(total, 10) + " labels",
					Fix:    "give target lengths that add up to the length of targets"}
			}})
		}
		return checks
	}
	return op
}

// CTCLoss is torch.nn.functional.ctc_loss(logProbs, targets, inputLengths,
// targetLengths, blank, reduction, zeroInfinity): the negative log
// likelihood of each sample's target sequence under the alignments of
// its first inputLengths[n] time steps, where a label repeats over
// consecutive steps and the class blank separates labels.
//
// logProbs is [T, N, C] (log-probabilities, e.g. LogSoftmax(2)'s), or
// [T, C] for one sample (unbatched). targets is [N, S], padded (values
// past a sample's length are not read), or 1-D, the N samples' labels
// concatenated; unbatched, it is [S]. inputLengths and targetLengths are
// integer tensors of N values (one value, 0-d or [1], unbatched). The
// loss is +Inf where no alignment exists (a target longer than its
// input, counting a blank between repeated labels); ZeroInfinity sets
// those losses and their gradients to 0. ReduceNone gives the [N] losses
// (0-d unbatched), ReduceSum their sum, ReduceMean the mean of each loss
// divided by its target length (at least 1), as torch's.
//
// As torch's, an input length outside [0, T], a target length that is
// negative or past targets' size (or, concatenated, lengths that do not
// sum to its size), and a blank outside [0, C) are errors (ErrValue);
// unlike torch, which reads them as they are, so is a label that is the
// blank (ErrValue) or outside [0, C) (ErrIndex), and a negative length
// (torch reads memory before its buffers). On a GPU the value checks run
// there and their error comes with the next synchronisation. Integer
// targets only (torch also takes float ones). float16 and bfloat16 are
// computed in float32 and rounded once (torch's cpu has no kernel for
// them; its autocast computes the loss in float32). An input length of 0
// gives a loss of 0 for an empty target, else +Inf (torch 1.13 reads
// memory it never wrote), and T = 0 is allowed, where torch 1.13 fails.
//
// The gradient is the loss's exact derivative, to any order. torch's
// ctc_loss_backward returns exp(logProbs) minus the posteriors instead,
// the gradient with respect to the logits of a log_softmax in front:
// through LogSoftmax both are the same, but with respect to logProbs
// themselves lathe's lacks torch's exp(logProbs) term. Where a loss is
// +Inf without ZeroInfinity, torch's gradient is NaN and lathe's finite.
func CTCLoss(logProbs, targets, inputLengths, targetLengths *Tensor, blank int, reduction Reduction, zeroInfinity bool) *Tensor {
	const op = "ctc_loss"
	a := ctcAttrs{blank: blank, reduction: reduction, zeroInf: zeroInfinity}
	args := []*Tensor{logProbs, targets, inputLengths, targetLengths}
	names := []string{"log_probs", "targets", "input_lengths", "target_lengths"}
	for i, t := range args {
		if err := t.CheckArg(op, names[i]); err != nil {
			return failed(err)
		}
	}
	concatenated, err := ctcValidate(&a, args)
	if err != nil {
		e := *err
		e.Op, e.Site = op, dispatch.CallSite()
		return failed(&e)
	}
	// The integer arguments as Int64 (torch takes any integer dtype).
	var casts []*Tensor
	for i := 1; i < 4; i++ {
		if args[i].t.DType != Int64 {
			args[i] = args[i].Cast(Int64)
			casts = append(casts, args[i])
		}
	}
	tg, il, tl := args[1], args[2], args[3]
	var out *Tensor
	if concatenated {
		// Every element of concatenated targets is a label; the total is
		// checked against their number.
		total := Compose(func(a []*Tensor) *Tensor { return a[0].Sum() }, tl)
		out = apply(opCTCLossConcatenated, a, logProbs, tg, il, tl, tg, total)
		casts = append(casts, total)
	} else {
		labels := Compose(func(a []*Tensor) *Tensor { return ctcLabels(a[0], a[1], a[0].t.Rank() == 1) }, tg, tl)
		out = apply(opCTCLoss, a, logProbs, tg, il, tl, labels)
		casts = append(casts, labels)
	}
	ReleaseWithGraph(out, casts...)
	return out
}

// ctcLabels is targets where a position is within its sample's target
// length, and math.MinInt64 elsewhere (padding, which is not read), for the value
// checks. single says targets is one sample's [S].
func ctcLabels(tg, tl *Tensor, single bool) *Tensor {
	if single {
		tg, tl = tg.Unsqueeze(0), tl.Reshape(1)
	}
	s := tg.t.Shape[1]
	pos := tg.joined(Arange(tg.Device(), Int64, 0, float64(s), 1))
	within := pos.Unsqueeze(0).Lt(tl.Unsqueeze(1))
	return Where(within, tg, tg.scalarLike("ctc_loss", math.MinInt64))
}

// ctcValidate checks what the arguments' shapes, dtypes, devices and the
// attributes can say, fills in the sizes a of the value checks, and says
// whether targets are concatenated.
func ctcValidate(a *ctcAttrs, args []*Tensor) (bool, *Error) {
	lp, tg, il, tl := args[0], args[1], args[2], args[3]
	dev := lp.t.Device
	for i, t := range args[1:] {
		if t.t.Device != dev {
			name := []string{"targets", "input_lengths", "target_lengths"}[i]
			return false, &Error{Kind: ErrDevice, Arg: name, Expected: dev.String(), Found: t.t.Device.String(),
				Detail: "is on " + t.t.Device.String() + " but log_probs is on " + dev.String(), Fix: "move it with .To(" + dev.String() + ")"}
		}
	}
	if !a.reduction.Valid() {
		return false, reductionError(a.reduction)
	}
	if err := floatArg(lp, "log_probs"); err != nil {
		return false, err
	}
	for i, t := range args[1:] {
		if dt := t.t.DType; !dt.IsInt() {
			name := []string{"targets", "input_lengths", "target_lengths"}[i]
			return false, &Error{Kind: ErrDType, Arg: name, Found: dt.String(),
				Detail: "is " + dt.String() + ", but ctc_loss takes integer labels and lengths", Fix: "cast it with .Cast(lathe.Int64)"}
		}
	}
	shape := func(t *Tensor) string { return dispatch.FormatShape(t.t.Shape) }
	var n int
	switch lp.t.Rank() {
	case 3:
		n = lp.t.Shape[1]
	case 2:
		a.unbatched = true
	default:
		return false, &Error{Kind: ErrShape, Arg: "log_probs", Expected: "[T, N, C] or [T, C]", Found: shape(lp),
			Detail: "has shape " + shape(lp) + ", but ctc_loss takes [T, N, C] (time, batch, classes) or [T, C] for one sample",
			Fix:    "give log_probs a time dim, a batch dim and a class dim"}
	}
	a.steps, a.classes = lp.t.Shape[0], lp.t.Shape[lp.t.Rank()-1]
	if a.blank < 0 || a.blank >= a.classes {
		return false, &Error{Kind: ErrValue, Arg: "blank", Found: strconv.Itoa(a.blank),
			Detail: "is " + strconv.Itoa(a.blank) + ", outside the " + strconv.Itoa(a.classes) + " classes of log_probs (torch: blank must be in label range)",
			Fix:    "give the blank's class index, in [0, " + strconv.Itoa(a.classes) + ")"}
	}
	if a.unbatched {
		for i, t := range []*Tensor{il, tl} {
			if t.t.Numel() != 1 || t.t.Rank() > 1 {
				name := []string{"input_lengths", "target_lengths"}[i]
				return false, &Error{Kind: ErrShape, Arg: name, Expected: "[] or [1]", Found: shape(t),
					Detail: "has shape " + shape(t) + ", but an unbatched log_probs " + shape(lp) + " takes one length", Fix: "give one length, 0-d or [1]"}
			}
		}
		if tg.t.Rank() != 1 {
			return false, &Error{Kind: ErrShape, Arg: "targets", Expected: "[S]", Found: shape(tg),
				Detail: "has shape " + shape(tg) + ", but an unbatched log_probs " + shape(lp) + " takes one sample's [S] targets", Fix: "give targets of shape [S]"}
		}
		a.capacity = tg.t.Shape[0]
		return false, nil
	}
	want := dispatch.FormatShape([]int{n})
	for i, t := range []*Tensor{il, tl} {
		if t.t.Rank() != 1 || t.t.Shape[0] != n {
			name := []string{"input_lengths", "target_lengths"}[i]
			return false, &Error{Kind: ErrShape, Arg: name, Expected: want, Found: shape(t),
				Detail: "has shape " + shape(t) + ", but log_probs " + shape(lp) + " has " + strconv.Itoa(n) + " samples (torch: must be of size batch_size)",
				Fix:    "give one length per sample"}
		}
	}
	switch {
	case tg.t.Rank() == 1:
		a.capacity = tg.t.Shape[0]
		return true, nil
	case tg.t.Rank() == 2 && tg.t.Shape[0] == n:
		a.capacity = tg.t.Shape[1]
		return false, nil
	}
	return false, &Error{Kind: ErrShape, Arg: "targets", Expected: "[" + strconv.Itoa(n) + ", S] or [ΣS]", Found: shape(tg),
		Detail: "has shape " + shape(tg) + ", but log_probs " + shape(lp) + " takes padded [N, S] targets or the N samples' labels concatenated",
		Fix:    "give one row of labels per sample, or a 1-D tensor of them all"}
}

// ctcLoss is the composite's body: in[0] log_probs, in[1] targets, in[2]
// and in[3] the input and target lengths, all checked by CTCLoss and the
// op's value checks.
func ctcLoss(in []*Tensor, a ctcAttrs) *Tensor {
	const op = "ctc_loss"
	lp, tg, il, tl := in[0], in[1], in[2], in[3]
	dt := lp.t.DType
	if dt == Float16 || dt == BFloat16 {
		lp = lp.promoteTo(op, "log_probs", Float32)
	}
	if a.unbatched {
		lp, tl, il = lp.Unsqueeze(1), tl.Reshape(1), il.Reshape(1)
		tg = tg.Unsqueeze(0)
	}
	if tg.t.Rank() == 1 {
		tg = ctcPad(tg, tl)
	}
	steps, n, c, s := lp.t.Shape[0], lp.t.Shape[1], lp.t.Shape[2], tg.t.Shape[1]
	ext := 2*s + 1
	// On a GPU the value checks report bad lengths and labels later: the
	// ops below read them clamped into range, so that no op of the body
	// leaves a failure of its own pending.
	tg = tg.Clamp(0, float64(c-1))
	il = il.Clamp(0, float64(steps)).Unsqueeze(1) // [N, 1]
	tl = tl.Clamp(0, float64(s)).Unsqueeze(1)
	negInf := lp.scalarLike(op, math.Inf(-1))

	// The extended labels [N, 2S+1]: blank, l₁, blank, ..., l_S, blank.
	blanks := tg.MulScalar(0).AddScalar(float64(a.blank))
	var labels *Tensor
	if s == 0 {
		labels = il.MulScalar(0).AddScalar(float64(a.blank))
	} else {
		labels = Concat([]*Tensor{Stack([]*Tensor{blanks, tg}, 2).Reshape(n, 2*s), blanks.Narrow(1, 0, 1)}, 1)
	}
	// A skip from position p-2 to p is allowed where the label at p is
	// not the blank and differs from the one at p-2 (Graves et al. eq. 6).
	var skip *Tensor
	if ext > 2 {
		prev := Concat([]*Tensor{labels.Narrow(1, 0, 2), labels.Narrow(1, 0, ext-2)}, 1)
		skip = labels.NeScalar(float64(a.blank)).LogicalAnd(labels.Ne(prev))
	}
	shift := func(alpha *Tensor, k int) *Tensor {
		return Concat([]*Tensor{negInf.Expand(n, k), alpha.Narrow(1, 0, ext-k)}, 1)
	}

	alpha := negInf.Expand(n, ext)
	if steps > 0 {
		// lp at each step's extended labels, [T, N, 2S+1].
		lpe := lp.Gather(2, labels.Unsqueeze(0).Expand(steps, n, ext))
		if lpe.err != nil {
			return lpe // not a step of the loop below on a failed tensor
		}
		pos := lp.joined(Arange(lp.Device(), Int64, 0, float64(ext), 1))
		alpha = Where(pos.LtScalar(2), lpe.Narrow(0, 0, 1).Reshape(n, ext), negInf)
		for t := 1; t < steps; t++ {
			next := alpha
			if ext > 1 {
				next = logAddExp(op, next, shift(alpha, 1), false)
			}
			if skip != nil {
				next = logAddExp(op, next, Where(skip, shift(alpha, 2), negInf), false)
			}
			next = next.Add(lpe.Narrow(0, t, 1).Reshape(n, ext))
			if alpha = Where(il.GtScalar(float64(t)), next, alpha); alpha.err != nil {
				return alpha
			}
		}
	}
	// The likelihood: α at the last step of each sample's input, at its
	// final blank (2L) and last label (2L-1, where L > 0).
	last := alpha.Gather(1, tl.MulScalar(2))
	prevLabel := Where(tl.GtScalar(0), alpha.Gather(1, tl.MulScalar(2).SubScalar(1).Clamp(0, float64(ext-1))), negInf)
	ll := logAddExp(op, last, prevLabel, false)
	// No input: likelihood 1 for an empty target (torch's loss 0), 0 else.
	empty := Where(tl.EqScalar(0), lp.scalarLike(op, 0), negInf)
	ll = Where(il.EqScalar(0), empty, ll)
	loss := ll.Neg().Reshape(n)
	if a.zeroInf {
		loss = Where(loss.IsPosInf(), lp.scalarLike(op, 0), loss)
	}
	switch a.reduction {
	case ReduceMean:
		loss = loss.Div(tl.Reshape(n).Clamp(1, math.Max(1, float64(s))).Cast(loss.t.DType)).Mean()
	case ReduceSum:
		loss = loss.Sum()
	case ReduceNone:
		if a.unbatched {
			loss = loss.Reshape()
		}
	}
	if loss.err == nil && loss.t.DType != dt {
		loss = loss.Cast(dt)
	}
	return loss
}

// ctcPad lays concatenated targets [ΣL] out as [N, ΣL] rows, sample n's
// labels first in its row; the rest is padding (clamped reads of the
// labels), which the recursion never reads.
func ctcPad(tg, tl *Tensor) *Tensor {
	total, n := tg.t.Shape[0], tl.t.Shape[0]
	if total == 0 {
		return tg.Reshape(1, 0).Expand(n, 0)
	}
	start := tl.CumSum(0).Sub(tl).Unsqueeze(1) // [N, 1]
	pos := tg.joined(Arange(tg.Device(), Int64, 0, float64(total), 1)).Unsqueeze(0)
	idx := start.Add(pos).Clamp(0, float64(total-1)).Reshape(n * total)
	return tg.Gather(0, idx).Reshape(n, total)
}
