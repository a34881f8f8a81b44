package lathe

import (
	"slices"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Einsum is a composite: the equation is parsed and checked against the
// operands' shapes on the host (einsumParse), then lowered to views,
// diagonals (a reshape and a strided slice), sums, one batched MatMul per
// pair of operands (an elementwise Mul where the pair shares no summed
// letter) and a final permute, contracting left to right as torch 1.13's
// einsum (aten/src/ATen/native/Linear.cpp) does without opt_einsum. Every
// step is an op with its own gradient rule, so einsum has gradients of
// any order on every device that has those ops.

// Label ids: 'A'..'Z' are 0..25 and 'a'..'z' 26..51, torch's order (so
// the implicit output sorts upper case first); the dims an ellipsis covers
// are ellipsisLabel+j, aligned from the right across operands.
const (
	letterLabels  = 52
	ellipsisLabel = letterLabels
)

// einsumPlan is a checked equation: each operand's label per dim, the
// output's labels, and each label's size after broadcasting.
type einsumPlan struct {
	eq   string
	in   [][]int
	out  []int
	size map[int]int
}

var opEinsum = dispatch.Register(&dispatch.Op[*einsumPlan]{
	Schema:  dispatch.Schema{Name: "einsum", Args: []string{"operands"}, Variadic: true},
	Compose: composedBy(einsumRun),
})

// Einsum evaluates the Einstein summation that equation describes over the
// operands, as torch.einsum: each operand's subscripts are letters
// (a-z, A-Z), one per dim, separated by commas; "->" is followed by the
// output's subscripts. Letters that appear in more than one operand and
// not in the output are multiplied and summed over; letters of the output
// are kept in its order. Without "->", the output is the letters that
// appear exactly once, in alphabetical order (upper case first). "..."
// stands for the dims a subscript does not name (the same number of
// trailing, broadcast dims in each operand that has it) and, in the output,
// where those dims go (first, in the implicit output). A letter repeated
// within an operand takes that operand's diagonal ("ii->i", "ii" the
// trace). Spaces are ignored. A dim of size 1 broadcasts against the same
// letter's size in another operand, as torch. Examples:
//
//	"bhqd,bhkd->bhqk"      attention scores (q·kᵀ per batch and head)
//	"bij,bjk->bik"         batched matrix product
//	"i,j->ij"              outer product
//	"...ij,...jk->...ik"   matmul over any leading dims
//
// With two operands the work is one batched MatMul; more are contracted
// left to right. The operands must share a dtype (else ErrDType) that
// MatMul and Sum run in, and the result has it (integers too, where torch
// 1.13 gives int64 for an equation that sums a letter of one operand
// alone, as "ij->i", and int32 for one that does not, as "ij,jk->ik"):
// torch 1.13 refuses two dtypes where a letter is
// summed and promotes them where none is ("i,j->ij"), and lathe refuses
// both, as its MatMul does. Bool operands are refused (ErrDType) where a
// letter is summed (torch sums one bool operand as int64 and refuses two):
// cast them to Int64 first. Where none is, bool works as in torch
// ("i,j->ij" is a logical and). Errors: an ErrValue naming the equation
// and the position of a character that is no subscript, a bad ellipsis or
// arrow, an output letter that is repeated or in no operand, or a count of
// operands that differs from the equation's; an ErrShape naming the operand whose
// rank differs from its subscripts, or the operand and letter whose size
// disagrees with another's.
func Einsum(equation string, operands ...*Tensor) *Tensor {
	const op = "einsum"
	if len(operands) == 0 {
		return failed(errorf(op, ErrValue, "operands", "are none", "pass the tensors that equation "+strconv.Quote(equation)+" names"))
	}
	for i, x := range operands {
		if x == nil || (x.t == nil && x.err == nil) {
			return failed(errorf(op, ErrValue, "operands["+strconv.Itoa(i)+"]", "is nil", "pass a tensor made by a lathe constructor"))
		}
		if err := x.check(op); err != nil {
			return failed(err)
		}
	}
	for i, x := range operands[1:] {
		if x.t.DType != operands[0].t.DType {
			return failed(errorf(op, ErrDType, "operands["+strconv.Itoa(i+1)+"]", "is "+x.t.DType.String()+
				" but operands[0] is "+operands[0].t.DType.String(), "cast one with .Cast("+operands[0].t.DType.GoString()+")"))
		}
	}
	shapes := make([][]int, len(operands))
	for i, x := range operands {
		shapes[i] = x.t.Shape
	}
	p, err := einsumParse(equation, shapes)
	if err != nil {
		return failed(err)
	}
	if l, ok := p.summed(); ok && operands[0].t.DType == Bool {
		// Refused here, where the error can name einsum's operands and
		// letter, rather than by the Sum or MatMul it lowers to.
		return failed(errorf(op, ErrDType, "operands", "are bool, and "+strconv.Quote(equation)+" sums over "+letterOf(l),
			"cast them with .Cast(lathe.Int64) first, e.g. to count true values"))
	}
	return apply(opEinsum, p, operands...)
}

// summed returns a label that some operand has and the output does not
// (the first in operand order), which einsum sums over.
func (p *einsumPlan) summed() (int, bool) {
	for _, labels := range p.in {
		for _, l := range labels {
			if !slices.Contains(p.out, l) {
				return l, true
			}
		}
	}
	return 0, false
}

// einsumError is an ErrValue about the equation, at byte pos (-1: none).
func einsumError(eq string, pos int, detail, fix string) *Error {
	where := ""
	if pos >= 0 {
		where = " at index " + strconv.Itoa(pos)
	}
	return errorf("einsum", ErrValue, "equation", strconv.Quote(eq)+where+": "+detail, fix)
}

// einsumTerm is one operand's (or the output's) subscripts: labels in
// order, with ellipsis at index ell (-1: none).
type einsumTerm struct {
	labels []int
	ell    int
	start  int // byte offset in the equation, for errors
}

// einsumScan reads the subscripts of eq[from:to] split at commas (one
// term for the output, which takes no commas).
func einsumScan(eq string, from, to int, output bool) ([]einsumTerm, error) {
	terms := []einsumTerm{{ell: -1, start: from}}
	for i := from; i < to; i++ {
		t := &terms[len(terms)-1]
		switch c := eq[i]; {
		case c == ' ':
		case c >= 'A' && c <= 'Z':
			t.labels = append(t.labels, int(c-'A'))
		case c >= 'a' && c <= 'z':
			t.labels = append(t.labels, int(c-'a')+26)
		case c == '.':
			if i+2 >= to || eq[i+1] != '.' || eq[i+2] != '.' {
				return nil, einsumError(eq, i, "'.' is not part of an ellipsis (...)", "write an ellipsis as three dots")
			}
			if t.ell >= 0 {
				return nil, einsumError(eq, i, "a second ellipsis in one operand", "use at most one ... per operand")
			}
			t.ell = len(t.labels)
			i += 2
		case c == ',' && !output:
			terms = append(terms, einsumTerm{ell: -1, start: i + 1})
		default:
			what := "invalid subscript " + strconv.Quote(string(c)) + ", subscripts must be in [a-zA-Z]"
			if c == '-' || c == '>' {
				what = "a stray " + strconv.Quote(string(c)) + " (the output follows one \"->\")"
			}
			return nil, einsumError(eq, i, what, "use letters, commas between operands, ... and one ->")
		}
	}
	return terms, nil
}

// letterOf names label l for an error: its letter, or the ellipsis dim.
func letterOf(l int) string {
	switch {
	case l < 26:
		return string(rune('A' + l))
	case l < letterLabels:
		return string(rune('a' + l - 26))
	}
	return "... dim " + strconv.Itoa(l-ellipsisLabel)
}

// einsumParse checks eq against the operands' shapes and returns the plan.
func einsumParse(eq string, shapes [][]int) (*einsumPlan, error) {
	const op = "einsum"
	arrow := strings.Index(eq, "->")
	lhsEnd := len(eq)
	if arrow >= 0 {
		lhsEnd = arrow
	}
	terms, err := einsumScan(eq, 0, lhsEnd, false)
	if err != nil {
		return nil, err
	}
	if len(terms) != len(shapes) {
		return nil, einsumError(eq, -1, "names "+strconv.Itoa(len(terms))+" operands but "+strconv.Itoa(len(shapes))+" were given",
			"pass one tensor per comma-separated term")
	}
	// Each operand's rank against its subscripts; the ellipsis covers the rest.
	nell := 0
	for i, t := range terms {
		r := len(shapes[i])
		switch {
		case t.ell < 0 && len(t.labels) != r, t.ell >= 0 && len(t.labels) > r:
			arg := "operands[" + strconv.Itoa(i) + "]"
			detail := "has rank " + strconv.Itoa(r) + " but its subscripts in " + strconv.Quote(eq) + " name " +
				strconv.Itoa(len(t.labels)) + " dims"
			fix := "give one letter per dim"
			if t.ell < 0 {
				fix += ", or ... for the dims not named"
			}
			return nil, errorf(op, ErrShape, arg, detail, fix)
		}
		if t.ell >= 0 {
			nell = max(nell, r-len(t.labels))
		}
	}
	p := &einsumPlan{eq: eq, in: make([][]int, len(terms)), size: map[int]int{}}
	count := map[int]int{}
	for i, t := range terms {
		r := len(shapes[i])
		labels := slices.Clone(t.labels)
		if t.ell >= 0 {
			// The ellipsis's dims, the last of nell aligned from the right.
			ell := make([]int, r-len(t.labels))
			for j := range ell {
				ell[j] = ellipsisLabel + nell - len(ell) + j
			}
			labels = slices.Insert(labels, t.ell, ell...)
		}
		arg := "operands[" + strconv.Itoa(i) + "]"
		own := map[int]int{}
		for d, l := range labels {
			s := shapes[i][d]
			if l < letterLabels {
				count[l]++
			}
			if prev, ok := own[l]; ok && prev != s {
				return nil, errorf(op, ErrShape, arg, "repeats subscript "+letterOf(l)+" of "+strconv.Quote(eq)+
					" over dims of sizes "+strconv.Itoa(prev)+" and "+strconv.Itoa(s)+", which a diagonal needs equal",
					"give the repeated dims one size")
			}
			own[l] = s
			switch prev, ok := p.size[l]; {
			case !ok || prev == 1:
				p.size[l] = s
			case s != 1 && s != prev:
				return nil, errorf(op, ErrShape, arg, "has size "+strconv.Itoa(s)+" for subscript "+letterOf(l)+" of "+
					strconv.Quote(eq)+" but an earlier operand has "+strconv.Itoa(prev)+", which does not broadcast",
					"make the sizes of "+letterOf(l)+" equal, or 1")
			}
		}
		p.in[i] = labels
	}
	ellDims := make([]int, nell)
	for j := range ellDims {
		ellDims[j] = ellipsisLabel + j
	}
	if arrow < 0 {
		// Implicit output: the ellipsis dims, then the letters seen once.
		p.out = ellDims
		for l := range letterLabels {
			if count[l] == 1 {
				p.out = append(p.out, l)
			}
		}
		return p, nil
	}
	outs, err := einsumScan(eq, arrow+2, len(eq), true)
	if err != nil {
		return nil, err
	}
	o := outs[0]
	seen := map[int]bool{}
	for k, l := range o.labels {
		pos := einsumLetterPos(eq, arrow+2, k)
		if seen[l] {
			return nil, einsumError(eq, pos, "output subscript "+letterOf(l)+" appears more than once", "name each output letter once")
		}
		if count[l] == 0 {
			return nil, einsumError(eq, pos, "output subscript "+letterOf(l)+" is in no operand", "name only letters of the operands")
		}
		seen[l] = true
	}
	if o.ell >= 0 {
		// With no ellipsis in the operands it covers no dims, as torch's.
		p.out = append(append(append(p.out, o.labels[:o.ell]...), ellDims...), o.labels[o.ell:]...)
	} else {
		p.out = append(p.out, o.labels...)
	}
	return p, nil
}

// einsumLetterPos is the byte offset of the k-th letter after from.
func einsumLetterPos(eq string, from, k int) int {
	for i := from; i < len(eq); i++ {
		if c := eq[i]; c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return -1
}

// einsumOperand is a tensor with one label per dim.
type einsumOperand struct {
	x      *Tensor
	labels []int
}

// einsumRun lowers a checked plan to ops.
func einsumRun(args []*Tensor, p *einsumPlan) *Tensor {
	operands := make([]einsumOperand, len(args))
	for i, x := range args {
		o := einsumOperand{x: x, labels: slices.Clone(p.in[i])}
		o = o.diagonals()
		// Size-1 dims broadcast to the letter's size (a view).
		shape := make([]int, len(o.labels))
		for d, l := range o.labels {
			shape[d] = p.size[l]
		}
		if !slices.Equal(shape, o.x.t.Shape) {
			o.x = o.x.Expand(shape...)
		}
		operands[i] = o
	}
	// needed[k] are the labels that operands after k or the output use.
	needed := make([]map[int]bool, len(operands))
	later := map[int]bool{}
	for _, l := range p.out {
		later[l] = true
	}
	for k := len(operands) - 1; k >= 0; k-- {
		needed[k] = maps(later)
		for _, l := range operands[k].labels {
			later[l] = true
		}
	}
	acc := operands[0].sumOut(needed[0], nil)
	for k := 1; k < len(operands); k++ {
		b := operands[k].sumOut(needed[k], acc.labels)
		acc = acc.sumOut(needed[k], b.labels)
		acc = einsumPair(acc, b, needed[k], p.size)
		if acc.x.err != nil {
			return acc.x
		}
	}
	acc = acc.sumOut(needed[len(operands)-1], nil)
	if acc.x.err != nil {
		return acc.x
	}
	perm := make([]int, len(p.out))
	for i, l := range p.out {
		perm[i] = slices.Index(acc.labels, l)
	}
	if !isIdentity(perm) {
		return acc.x.Permute(perm...)
	}
	for _, x := range args {
		if acc.x.t == x.t {
			// An operand unchanged ("ij->ij"): a view of it, so that
			// releasing the result leaves the operand alone.
			return acc.x.View(acc.x.t.Shape...)
		}
	}
	return acc.x
}

func maps(m map[int]bool) map[int]bool {
	c := make(map[int]bool, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func isIdentity(perm []int) bool {
	for i, d := range perm {
		if i != d {
			return false
		}
	}
	return true
}

// diagonals takes the diagonal of each letter that o repeats: the two dims
// moved last, made one of n·n elements and sliced with step n+1.
func (o einsumOperand) diagonals() einsumOperand {
	for {
		p, q := -1, -1
		for i, l := range o.labels {
			if j := slices.Index(o.labels[i+1:], l); j >= 0 {
				p, q = i, i+1+j
				break
			}
		}
		if p < 0 {
			return o
		}
		perm := make([]int, 0, len(o.labels))
		labels := make([]int, 0, len(o.labels)-1)
		shape := make([]int, 0, len(o.labels)-1)
		for d := range o.labels {
			if d != p && d != q {
				perm = append(perm, d)
				labels = append(labels, o.labels[d])
				shape = append(shape, o.x.t.Shape[d])
			}
		}
		n := o.x.t.Shape[p]
		perm = append(perm, p, q)
		o.x = o.x.Permute(perm...).Reshape(append(shape, n*n)...).Slice(-1, 0, n*n, n+1)
		o.labels = append(labels, o.labels[p])
		if o.x.err != nil {
			return o
		}
	}
}

// sumOut sums the dims whose labels neither keep nor other holds.
func (o einsumOperand) sumOut(keep map[int]bool, other []int) einsumOperand {
	var dims []int
	var labels []int
	for d, l := range o.labels {
		if keep[l] || slices.Contains(other, l) {
			labels = append(labels, l)
		} else {
			dims = append(dims, d)
		}
	}
	if len(dims) == 0 || o.x.err != nil {
		return o
	}
	// The operands' dtype, which the MatMuls that follow need: an integer
	// Sum would widen to int64 (torch's einsum gives int64 where it sums
	// a letter alone, and the operands' dtype elsewhere).
	return einsumOperand{x: o.x.reduce(ops.Sum, false, 0, dims), labels: labels}
}

// einsumPair contracts a and b (each label's size already broadcast):
// letters in both that later operands or the output need are batch dims,
// the other shared ones are summed by a MatMul, and the rest are kept.
func einsumPair(a, b einsumOperand, keep map[int]bool, size map[int]int) einsumOperand {
	if b.x.err != nil {
		return b
	}
	var batch, sum, left, right []int
	for _, l := range a.labels {
		switch {
		case !slices.Contains(b.labels, l):
			left = append(left, l)
		case keep[l]:
			batch = append(batch, l)
		default:
			sum = append(sum, l)
		}
	}
	for _, l := range b.labels {
		if !slices.Contains(a.labels, l) {
			right = append(right, l)
		}
	}
	sizes := func(ls []int) (s []int, n int) {
		n = 1
		for _, l := range ls {
			s = append(s, size[l])
			n *= size[l]
		}
		return s, n
	}
	bs, nb := sizes(batch)
	ls, nl := sizes(left)
	rs, nr := sizes(right)
	_, nk := sizes(sum)
	out := einsumOperand{labels: slices.Concat(batch, left, right)}
	if len(sum) == 0 {
		// Nothing summed: a broadcast product, [batch, left, 1…] × [batch, 1…, right].
		ones := func(k int) []int { return make([]int, k) }
		x := a.arrange(batch, left).Reshape(slices.Concat(bs, ls, fill(ones(len(right)), 1))...)
		y := b.arrange(batch, right).Reshape(slices.Concat(bs, fill(ones(len(left)), 1), rs)...)
		out.x = x.Mul(y)
		return out
	}
	// Each side is laid out in the order its dims already have where it
	// can (k before q in a [.., k, q] operand, say) and transposed as a
	// view, so that the reshape to three dims copies nothing where x is
	// contiguous: bhqd,bhkd->bhqk reads k as [bh, k, d]ᵀ, not a copy.
	var x, y *Tensor
	if a.before(sum, left) {
		x = a.arrange(batch, sum, left).Reshape(nb, nk, nl).MT()
	} else {
		x = a.arrange(batch, left, sum).Reshape(nb, nl, nk)
	}
	if b.before(right, sum) {
		y = b.arrange(batch, right, sum).Reshape(nb, nr, nk).MT()
	} else {
		y = b.arrange(batch, sum, right).Reshape(nb, nk, nr)
	}
	out.x = x.MatMul(y).Reshape(slices.Concat(bs, ls, rs)...)
	return out
}

// before says whether every dim of o labelled in first comes before every
// dim labelled in second (false if either is empty).
func (o einsumOperand) before(first, second []int) bool {
	if len(first) == 0 || len(second) == 0 {
		return false
	}
	last := -1
	for _, l := range first {
		last = max(last, slices.Index(o.labels, l))
	}
	for _, l := range second {
		if slices.Index(o.labels, l) < last {
			return false
		}
	}
	return true
}

func fill(s []int, v int) []int {
	for i := range s {
		s[i] = v
	}
	return s
}

// arrange permutes o's dims into the order of the label groups given.
func (o einsumOperand) arrange(groups ...[]int) *Tensor {
	var perm []int
	for _, g := range groups {
		for _, l := range g {
			perm = append(perm, slices.Index(o.labels, l))
		}
	}
	if isIdentity(perm) {
		return o.x
	}
	return o.x.Permute(perm...)
}
