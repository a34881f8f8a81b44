package lathe

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzEinsum draws an equation and operands for Einsum: most of the time a
// well-formed one (one to three operands over a few letters of both cases,
// a letter repeated within an operand for a diagonal, letters shared and
// summed away, size-1 dims that broadcast, "..." in some operands or all,
// an explicit or implicit output, spaces between the subscripts), often
// broken in one place (a stray or garbage byte, a second "->", an output
// letter repeated or in no operand, a size or rank that does not fit, an
// operand too many or too few), sometimes raw bytes from einsum's alphabet
// and others, and sometimes a very long equation. Operands are of one
// dtype or (rarely) two, some transposed, one sometimes passed twice, over
// values with NaN and infinities.
//
// The oracle is torch 1.13's parse (aten/src/ATen/native/Linear.cpp)
// written again here, fzEinsumRule: a refusal where torch refuses, an
// ErrValue for the equation and the operand count, an ErrShape for ranks
// and sizes, with the operands left as they were; lathe's own rule where it
// differs from torch's on purpose (Einsum's comment, README's dtypes): two
// dtypes are an ErrDType where torch would promote a product that sums
// nothing, a bool whose letters are summed is an ErrDType where torch sums
// with a single operand, and integers keep their dtype where torch's sum
// gives int64. An accepted call must give torch's shape and the operands'
// dtype, the values of a sum over every assignment of the letters done here
// in float64 (integers wrapping in int64 and cut to their width: every
// step's wrap keeps the same low bits), and wgpu:0 must match the cpu.
// Where an operand's NaN or infinity can reach an output element the order
// of the contraction decides it (0·NaN where a summed dim is empty, Inf·0
// against Inf·(0+1)), so only the devices are compared there.
func FuzzEinsum(f *testing.F) {
	// "kBB,i" of bool [[3 3 3] [1]]: B summed, refused
	f.Add([]byte{21, 0, 6, 22, 14, 14, 12, 22, 19, 19, 7, 3, 18, 14, 2, 2, 13, 10, 0, 5, 17, 8, 19, 16, 13, 245, 154, 194, 10, 177, 117, 129, 245, 73, 166, 18, 224, 85, 100, 220, 182, 144, 110, 96, 97, 60, 193, 105, 52, 176, 148, 188, 62, 98, 44, 152, 17, 140, 166, 49, 205, 238, 88, 21, 240, 193, 181, 77, 206, 6, 50, 166, 184, 249, 58, 173, 249, 137, 16, 93, 57, 201, 65, 17, 196})
	// "i,iki" of int32 [[2] [2 1 2]]
	f.Add([]byte{6, 17, 23, 5, 11, 2, 17, 7, 17, 4, 19, 13, 5, 4, 0, 15, 20, 12, 15, 20, 5, 1, 11, 9, 7, 10, 20, 192, 18, 162, 93, 141, 184, 172, 180, 214, 109, 72, 70, 237, 196, 85, 121, 102, 129, 114, 160, 38, 160, 12, 206, 128, 204, 57, 70, 201, 50, 64, 36, 136, 238, 6, 12, 34, 204, 117, 181, 76, 208, 164, 69, 90, 29, 4, 113, 130, 188, 145, 4, 249, 206, 104, 248, 208, 162, 17, 254})
	// "kik,kAA" of float16 [[3 2 3] [3 3 3]]
	f.Add([]byte{20, 19, 13, 18, 22, 10, 8, 11, 10, 4, 22, 23, 12, 10, 17, 22, 20, 4, 23, 12, 4, 9, 12, 6, 14, 14, 20, 10, 6, 14, 232, 138, 6, 77, 234, 172, 104, 128, 45, 182, 32, 154, 20, 182, 101, 110, 17, 74, 198, 141, 69, 226, 9, 58, 56, 164, 49, 28, 246, 209, 125, 37, 30, 70, 114, 109, 197, 22, 229, 144, 117, 205, 132, 12, 110, 230, 172, 105, 236, 192, 108, 182, 185, 28, 206, 200, 246, 116, 96, 53})
	// " i ,j  j " of bfloat16 [[3] [2 2]]
	f.Add([]byte{11, 10, 11, 10, 16, 13, 2, 2, 10, 17, 22, 21, 20, 1, 0, 10, 21, 6, 8, 2, 14, 19, 10, 1, 3, 2, 19, 2, 14, 6, 154, 100, 134, 2, 253, 148, 145, 169, 204, 1, 189, 105, 29, 34, 229, 229, 97, 88, 13, 106, 217, 157, 41, 128, 252, 214, 81, 129, 174, 228, 237, 238, 65, 221, 52, 65, 205, 206, 158, 166, 13, 206, 24, 110, 213, 81, 232, 73, 161, 118, 112, 40, 101, 221, 121, 146, 74, 129, 13, 253})
	// "...B,...j" of float64 [[3 1] [3 1]]
	f.Add([]byte{10, 12, 16, 6, 13, 6, 4, 2, 15, 16, 1, 3, 6, 16, 5, 18, 3, 13, 17, 1, 15, 22, 19, 17, 0, 1, 5, 6, 1, 18, 10, 209, 205, 18, 132, 32, 14, 197, 220, 232, 249, 89, 176, 58, 46, 152, 122, 17, 205, 206, 106, 160, 21, 193, 214, 148, 150, 230, 82, 58, 240, 34, 72, 226, 22, 29, 217, 134, 229, 241, 237, 86, 221, 154, 46, 73, 146, 0, 184, 205, 52, 128, 146, 196, 177, 181, 32, 246, 154, 176, 69})
	// "jjB,jj->B" of float32 [[2 2 1] [2 2]]
	f.Add([]byte{1, 21, 23, 4, 16, 22, 18, 17, 1, 19, 1, 16, 8, 22, 19, 19, 10, 6, 21, 20, 14, 10, 21, 1, 0, 0, 16, 3, 5, 0, 240, 52, 70, 172, 213, 254, 25, 22, 212, 72, 178, 26, 21, 190, 73, 117, 154, 233, 6, 137, 160, 198, 164, 113, 54, 153, 58, 212, 33, 2, 98, 205, 28, 12, 73, 48, 141, 109, 61, 117, 33, 16, 180, 104, 190, 130, 0, 138, 196, 28, 88, 182, 184, 240, 42, 45, 166, 212, 84, 200})
	// "j,ii,i->j" of float32 [[2] [2 2] [2]]
	f.Add([]byte{11, 19, 23, 7, 9, 14, 21, 7, 11, 9, 11, 15, 11, 22, 15, 10, 22, 4, 9, 15, 4, 2, 9, 4, 1, 20, 9, 20, 2, 7, 0, 78, 54, 184, 17, 229, 244, 30, 38, 48, 217, 44, 45, 140, 244, 82, 253, 250, 5, 238, 198, 118, 238, 97, 73, 9, 172, 65, 40, 73, 158, 37, 14, 109, 42, 253, 76, 125, 180, 114, 166, 37, 132, 169, 204, 74, 140, 136, 90, 76, 97, 14, 212, 216, 90, 246, 92, 212, 250, 36, 180})
	// "iij....kijk": raw bytes, refused
	f.Add([]byte{14, 9, 0, 4, 1, 6, 7, 2, 0, 1, 2, 3})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		eq, shapes := fzEinsumDraw(r)
		dt := fzCastDTypes[r.intn(len(fzCastDTypes))]
		in := make([]*Tensor, len(shapes))
		dtypes := map[DType]bool{}
		label := "einsum/" + dt.String() + "/" + fzEinsumQuote(eq)
		for i, s := range shapes {
			d := dt
			if r.intn(12) == 11 {
				d = fzCastDTypes[r.intn(len(fzCastDTypes))]
			}
			dtypes[d] = true
			in[i] = fzOperand(r, d, s)
			if i > 0 && slices.Equal(s, shapes[0]) && d == in[0].DType() && r.intn(8) == 7 {
				in[i] = in[0] // one tensor passed twice
			}
			label += dispatch.FormatShape(s)
		}
		if len(in) > 0 {
			dt = in[0].DType() // one operand may have drawn another
		}
		if len(dtypes) > 1 {
			label += "/mixed"
		}
		vals := make([][]float64, len(in))
		for i, x := range in {
			v, err := fzHost(x)
			if err != nil {
				t.Fatal(err)
			}
			vals[i] = v
		}

		plan, faults := fzEinsumRule(eq, shapes)
		if len(dtypes) > 1 || plan != nil && dt == Bool && plan.sums() {
			faults = append(faults, ErrDType)
		}
		refuse := fzOneKind(faults)
		tol := -1.0
		if plan != nil {
			tol = fzEinsumTol(plan, vals, dt)
		}
		out := fzDiff(t, label, tol, func(ts []*Tensor) *Tensor { return Einsum(eq, ts...) }, in...)
		var outShape []int
		if plan != nil {
			outShape = plan.shape(plan.out)
		}
		fzWant(t, label, out, refuse, outShape, dt)
		if refuse != nil {
			for i, x := range in {
				v, err := fzHost(x)
				if err != nil || !slices.EqualFunc(v, vals[i], func(a, b float64) bool { return fzClose(a, b, 0) }) {
					t.Fatalf("%s: a refused call changed operand %d: %v, was %v (%v)", label, i, v, vals[i], err)
				}
			}
			return
		}
		if out.Err() != nil || tol < 0 {
			return
		}
		want, dirty := fzEinsumRef(plan, vals, shapes, dt)
		got, err := fzHost(out)
		if err != nil {
			t.Fatalf("%s: reading the result: %v", label, err)
		}
		for i := range want {
			if !dirty[i] && !fzClose(got[i], want[i], tol/max(1, math.Abs(want[i]))) {
				t.Fatalf("%s: element %d is %v, the sum over every assignment %v (got %v, want %v)", label, i, got[i], want[i], got, want)
			}
		}
	})
}

// fzEinsumQuote is eq quoted for a label, cut short past 80 bytes.
func fzEinsumQuote(eq string) string {
	if len(eq) > 80 {
		return strconv.Quote(eq[:80]) + "…(" + strconv.Itoa(len(eq)) + " bytes)"
	}
	return strconv.Quote(eq)
}

// fzOneKind is the refusal that faults call for: none, their one kind, or
// errAny where they have several (lathe and torch check in other orders).
func fzOneKind(faults []error) error {
	if len(faults) == 0 {
		return nil
	}
	for _, k := range faults[1:] {
		if k != faults[0] {
			return errAny
		}
	}
	return faults[0]
}

// fzEinsumLetters are the letters a well-formed draw uses: few, so that
// operands share them, of both cases, so that the implicit output's order
// (upper case first) shows.
const fzEinsumLetters = "ijkBA"

// fzEinsumDraw draws an equation and the operands' shapes.
func fzEinsumDraw(r *fzReader) (string, [][]int) {
	// The choices past the fuzzer's bytes (0) are the well-formed ones.
	switch r.intn(16) {
	case 13, 14:
		return fzEinsumRaw(r)
	case 15:
		return fzEinsumLong(r)
	}
	eq, shapes := fzEinsumWellFormed(r)
	if r.intn(4) == 3 {
		eq = fzEinsumSpaces(r, eq, 2)
	}
	if r.intn(6) == 5 {
		eq = fzEinsumMutate(r, eq)
	}
	switch r.intn(24) {
	case 22:
		shapes = shapes[:len(shapes)-1] // one operand too few (none at all from one)
	case 23:
		shapes = append(shapes, r.shape(2, 6)) // one too many
	}
	return eq, shapes
}

// fzEinsumWellFormed is an equation of one to three operands over
// fzEinsumLetters and "...", with shapes that fit it but where a rare
// draw changes one size or rank.
func fzEinsumWellFormed(r *fzReader) (string, [][]int) {
	size := map[byte]int{}
	for i := range len(fzEinsumLetters) {
		size[fzEinsumLetters[i]] = []int{1, 2, 3, 2, 0, 1, 3, 2}[r.intn(8)]
	}
	nell := r.intn(3) // the dims "..." stands for, at most
	ellSize := make([]int, nell)
	for j := range ellSize {
		ellSize[j] = 1 + r.intn(3)
	}
	useEll := r.intn(3) == 0
	used := map[byte]int{}
	anyEll := false
	var terms []string
	var shapes [][]int
	for range 1 + r.intn(3) {
		n := r.intn(4)
		letters := make([]byte, n)
		for p := range letters {
			letters[p] = fzEinsumLetters[r.intn(len(fzEinsumLetters))]
		}
		ell := -1
		if useEll && r.intn(4) != 0 {
			ell, anyEll = r.intn(n+1), true
		}
		ones := map[byte]bool{} // letters this operand has at size 1, to broadcast
		var term strings.Builder
		var shape []int
		for p := 0; p <= n; p++ {
			if p == ell {
				term.WriteString("...")
				k := r.intn(nell + 1) // the last k of the dims, aligned from the right
				for _, s := range ellSize[nell-k:] {
					if r.intn(4) == 0 {
						s = 1
					}
					shape = append(shape, s)
				}
			}
			if p == n {
				break
			}
			l := letters[p]
			term.WriteByte(l)
			used[l]++
			if _, ok := ones[l]; !ok {
				ones[l] = r.intn(6) == 5
			}
			s := size[l]
			if ones[l] {
				s = 1
			}
			shape = append(shape, s)
		}
		switch r.intn(24) {
		case 21:
			if len(shape) > 0 {
				shape[r.intn(len(shape))] = r.intn(4) // a size that may not fit
			}
		case 22:
			shape = append(shape, 1+r.intn(2)) // a dim the subscripts do not name
		case 23:
			if len(shape) > 0 {
				shape = shape[1:] // a dim short
			}
		}
		terms = append(terms, term.String())
		shapes = append(shapes, shape)
	}
	eq := strings.Join(terms, ",")
	if r.intn(3) == 2 {
		return eq, shapes // the implicit output
	}
	var out []string
	for i := range len(fzEinsumLetters) {
		l := fzEinsumLetters[i]
		if used[l] > 0 && (used[l] == 1 || r.intn(3) == 2) && r.intn(5) != 4 {
			out = append(out, string(l))
		}
	}
	for i := len(out) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		out[i], out[j] = out[j], out[i]
	}
	if anyEll && r.intn(4) != 3 || r.intn(10) == 9 {
		out = slices.Insert(out, r.intn(len(out)+1), "...")
	}
	switch r.intn(16) {
	case 14:
		if len(out) > 0 {
			out = append(out, out[r.intn(len(out))]) // repeated
		}
	case 15:
		out = append(out, []string{"z", "Z", "k", "A"}[r.intn(4)]) // in no operand, perhaps
	}
	return eq + "->" + strings.Join(out, ""), shapes
}

// fzEinsumSpaces puts up to max spaces between eq's subscripts, commas
// and arrow, and at its ends (never inside "..." or "->").
func fzEinsumSpaces(r *fzReader, eq string, max int) string {
	var b strings.Builder
	for i := 0; i <= len(eq); {
		b.WriteString(strings.Repeat(" ", r.intn(max+1)))
		if i == len(eq) {
			break
		}
		n := 1
		if strings.HasPrefix(eq[i:], "...") {
			n = 3
		} else if strings.HasPrefix(eq[i:], "->") {
			n = 2
		}
		b.WriteString(eq[i : i+n])
		i += n
	}
	return b.String()
}

// fzEinsumMutate breaks eq in one place.
func fzEinsumMutate(r *fzReader, eq string) string {
	at := r.intn(len(eq) + 1)
	pick := func() string {
		const alphabet = " ijkzAZ.,->1_\x00\xff"
		c := r.byte()
		if c >= 224 {
			return string([]byte{c ^ 0x80}) // a byte of UTF-8's upper half, or a control
		}
		return string(alphabet[int(c)%len(alphabet)])
	}
	switch r.intn(6) {
	case 0:
		return eq[:at] + pick() + eq[at:]
	case 1:
		if at < len(eq) {
			return eq[:at] + eq[at+1:]
		}
	case 2:
		if at < len(eq) {
			return eq[:at] + pick() + eq[at+1:]
		}
	case 3:
		return eq + "->" + []string{"", "i", "->", "..."}[r.intn(4)] // a second arrow
	case 4:
		return eq[:at] + "..." + eq[at:]
	}
	return eq[:at] + "," + eq[at:]
}

// fzEinsumRaw is a string of einsum's tokens and other bytes; where torch
// reads its operands' subscripts, shapes that fit them (mostly), else
// shapes of any sizes.
func fzEinsumRaw(r *fzReader) (string, [][]int) {
	tokens := []string{"i", "j", "k", "A", "i", "j", "...", ".", ",", ",", "->", "->", "-", ">", " "}
	var b strings.Builder
	for range r.intn(14) {
		if c := r.byte(); c < 232 {
			b.WriteString(tokens[int(c)%len(tokens)])
		} else {
			b.WriteByte([]byte{0, '1', '\t', '\n', 0x80, 0xff, 'z', 'Z', '@', '[', '`', '{', '_', ';', '\'', '"'}[(c-232)%16])
		}
	}
	eq := b.String()
	lhs, _, _ := strings.Cut(eq, "->")
	terms, ok := fzEinsumTerms(lhs, false)
	if !ok || r.intn(4) == 3 {
		shapes := make([][]int, 1+r.intn(3))
		for i := range shapes {
			shapes[i] = r.shape(3, 12)
		}
		return eq, shapes
	}
	size := make([]int, 52)
	for l := range size {
		size[l] = 1 + r.intn(3)
	}
	shapes := make([][]int, len(terms))
	for i, term := range terms {
		for _, l := range term {
			if l >= 0 {
				shapes[i] = append(shapes[i], size[l])
				continue
			}
			for range r.intn(3) {
				shapes[i] = append(shapes[i], 1+r.intn(2))
			}
		}
	}
	return eq, shapes
}

// fzEinsumLong is a very long equation: every letter in one operand (or two)
// over size-1 dims with a few of size 2, one letter repeated dozens of
// times (a diagonal of a rank-k tensor of size-1 dims), thousands of spaces
// in a well-formed one, or thousands of bytes of a pattern.
func fzEinsumLong(r *fzReader) (string, [][]int) {
	const all = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	switch r.intn(4) {
	case 0:
		letters := []byte(all)
		for i := len(letters) - 1; i > 0; i-- {
			j := r.intn(i + 1)
			letters[i], letters[j] = letters[j], letters[i]
		}
		letters = letters[:26+r.intn(27)]
		shape := make([]int, len(letters))
		for i := range shape {
			shape[i] = 1
		}
		for range r.intn(3) {
			shape[r.intn(len(shape))] = 2
		}
		eq := string(letters)
		shapes := [][]int{shape}
		if r.intn(2) == 0 {
			eq += "," + eq
			shapes = append(shapes, slices.Clone(shape))
		}
		switch r.intn(3) {
		case 0:
			slices.Reverse(letters)
			eq += "->" + string(letters)
		case 1:
			eq += "->" + string(letters[:r.intn(len(letters))])
		}
		return eq, shapes
	case 1:
		k := 20 + r.intn(60)
		shape := make([]int, k)
		for i := range shape {
			shape[i] = 1
		}
		return strings.Repeat("i", k) + "->" + []string{"i", "", "ii"}[r.intn(3)], [][]int{shape}
	case 2:
		eq, shapes := fzEinsumWellFormed(r)
		at := r.intn(len(eq) + 1)
		if at > 0 && at < len(eq) && (eq[at-1] == '.' && eq[at] == '.' || eq[at-1] == '-' && eq[at] == '>') {
			at = 0 // not inside an ellipsis or the arrow
		}
		return eq[:at] + strings.Repeat(" ", 100+r.intn(3000)) + eq[at:], shapes
	}
	pattern := []string{"i,", "ij->", "...", "a", " ", "\xff", "i-", ",,"}[r.intn(8)]
	return strings.Repeat(pattern, 200+r.intn(2000)), [][]int{r.shape(2, 4)}
}

// fzEinsumPlan is an equation that torch takes, read: each operand's label
// per dim (letters A-Z 0..25 and a-z 26..51, torch's order; the dims an
// ellipsis stands for fzEllLabel+j, aligned from the right across the
// operands), the output's labels, and each label's size after size-1 dims
// broadcast.
type fzEinsumPlan struct {
	in   [][]int
	out  []int
	size map[int]int
}

const fzEllLabel = 100

func (p *fzEinsumPlan) shape(labels []int) []int {
	s := make([]int, len(labels))
	for i, l := range labels {
		s[i] = p.size[l]
	}
	return s
}

// sums reports whether some label is summed away.
func (p *fzEinsumPlan) sums() bool {
	for l := range p.size {
		if !slices.Contains(p.out, l) {
			return true
		}
	}
	return false
}

// fzEinsumTerms reads s's subscripts as torch 1.13 does: spaces ignored,
// letters, one "..." per term (-1 in the term), commas between terms (none
// in the output); ok is false where torch refuses a byte.
func fzEinsumTerms(s string, output bool) (terms [][]int, ok bool) {
	terms = [][]int{nil}
	ell := false
	for i := 0; i < len(s); i++ {
		t := &terms[len(terms)-1]
		switch c := s[i]; {
		case c == ' ':
		case c >= 'A' && c <= 'Z':
			*t = append(*t, int(c-'A'))
		case c >= 'a' && c <= 'z':
			*t = append(*t, 26+int(c-'a'))
		case c == '.':
			if ell || i+2 >= len(s) || s[i+1] != '.' || s[i+2] != '.' {
				return nil, false
			}
			ell = true
			*t = append(*t, -1)
			i += 2
		case c == ',' && !output:
			terms, ell = append(terms, nil), false
		default:
			return nil, false
		}
	}
	return terms, true
}

// fzEinsumRule is torch 1.13's einsum parse written again: the plan, or
// the kinds of the faults found (ErrValue for the equation and the count
// of operands, ErrShape for ranks and sizes). Faults that an earlier one
// hides (the shapes of an equation torch cannot read) are not looked for.
func fzEinsumRule(eq string, shapes [][]int) (*fzEinsumPlan, []error) {
	lhs, rhs, arrow := strings.Cut(eq, "->")
	terms, ok := fzEinsumTerms(lhs, false)
	if !ok {
		return nil, []error{ErrValue}
	}
	var faults []error
	var out []int
	if arrow {
		o, ok := fzEinsumTerms(rhs, true)
		if ok {
			out = o[0]
		} else {
			faults = append(faults, ErrValue)
		}
		inputs := map[int]bool{}
		for _, term := range terms {
			for _, l := range term {
				inputs[l] = true
			}
		}
		seen := map[int]bool{}
		for _, l := range out {
			if l >= 0 && (seen[l] || !inputs[l]) {
				faults = append(faults, ErrValue) // repeated, or in no operand
			}
			seen[l] = true
		}
	}
	if len(terms) != len(shapes) {
		return nil, append(faults, ErrValue)
	}
	nell := 0
	for i, term := range terms {
		letters := len(term)
		hasEll := slices.Contains(term, -1)
		if hasEll {
			letters--
		}
		switch rank := len(shapes[i]); {
		case !hasEll && letters != rank, letters > rank:
			faults = append(faults, ErrShape)
		case hasEll:
			nell = max(nell, rank-letters)
		}
	}
	if slices.Contains(faults, ErrShape) {
		return nil, faults
	}
	p := &fzEinsumPlan{size: map[int]int{}}
	count := map[int]int{}
	for i, term := range terms {
		var labels []int
		for _, l := range term {
			if l >= 0 {
				labels = append(labels, l)
				count[l]++
				continue
			}
			k := len(shapes[i]) - len(term) + 1
			for j := range k {
				labels = append(labels, fzEllLabel+nell-k+j)
			}
		}
		own := map[int]int{}
		for d, l := range labels {
			s := shapes[i][d]
			if o, ok := own[l]; ok && o != s {
				faults = append(faults, ErrShape) // a diagonal of unequal dims
			}
			own[l] = s
			switch o, ok := p.size[l]; {
			case !ok || o == 1:
				p.size[l] = s
			case s != 1 && s != o:
				faults = append(faults, ErrShape) // sizes that do not broadcast
			}
		}
		p.in = append(p.in, labels)
	}
	if len(faults) > 0 {
		return nil, faults
	}
	ellDims := make([]int, nell)
	for j := range ellDims {
		ellDims[j] = fzEllLabel + j
	}
	if !arrow {
		// The ellipsis's dims, then the letters seen once, in label order.
		p.out = ellDims
		for l := range 52 {
			if count[l] == 1 {
				p.out = append(p.out, l)
			}
		}
		return p, nil
	}
	for _, l := range out {
		if l < 0 {
			p.out = append(p.out, ellDims...)
		} else {
			p.out = append(p.out, l)
		}
	}
	return p, nil
}

// fzEinsumTol is the absolute tolerance of a contraction of vals in dt:
// dt's rounding over the largest term times the count of terms summed into
// an element, or -1 (no comparison) where a partial sum of finite terms may
// pass dt's range in some order and not in another. Integers and bool are
// exact.
func fzEinsumTol(p *fzEinsumPlan, vals [][]float64, dt DType) float64 {
	if dt.IsInt() || dt == Bool {
		return 0
	}
	term := 1.0 // the largest |product| of finite elements, at least 1
	for _, v := range vals {
		m := 1.0
		for _, e := range v {
			if !math.IsInf(e, 0) && !math.IsNaN(e) {
				m = max(m, math.Abs(e))
			}
		}
		term *= m
	}
	all, summed := 1.0, 1.0
	for l, s := range p.size {
		all *= float64(s)
		if !slices.Contains(p.out, l) {
			summed *= float64(s)
		}
	}
	eps, limit := 1e-6, float64(math.MaxFloat32)
	switch dt {
	case Float64:
		eps, limit = 1e-13, math.MaxFloat64
	case Float16:
		eps, limit = 3e-3, 65504
	case BFloat16:
		eps, limit = 2.5e-2, 3.3e38
	}
	if term*max(all, 1) > limit/8 {
		return -1
	}
	return eps * term * max(summed, 1)
}

// fzEinsumRef is the contraction by its definition: for every assignment
// of the labels, the product of the operands' elements (a size-1 dim read
// at 0) added into the output's element, in float64, or in int64 wrapping
// and cut to dt's width for integers. dirty marks the elements that an
// operand's NaN or infinity can reach (its labels' indices agree with the
// element's), whose value the order of the contraction decides.
func fzEinsumRef(p *fzEinsumPlan, vals [][]float64, shapes [][]int, dt DType) (want []float64, dirty []bool) {
	labels := make([]int, 0, len(p.size))
	for l := range p.size {
		labels = append(labels, l)
	}
	slices.Sort(labels)
	outShape := p.shape(p.out)
	n := dispatch.Numel(outShape)
	want, dirty = make([]float64, n), make([]bool, n)
	wrapped := make([]int64, n)
	at := map[int]int{}
	// offset is the row-major offset of the element that ls's labels pick
	// at the assignment at, in a tensor of shape (size-1 dims read at 0).
	offset := func(ls, shape []int) int {
		o := 0
		for d, l := range ls {
			i := at[l]
			if shape[d] == 1 {
				i = 0
			}
			o = o*shape[d] + i
		}
		return o
	}
	sizes := p.shape(labels)
	for idx := range fzOdometer(sizes) {
		for k, l := range labels {
			at[l] = idx[k]
		}
		prod, w := 1.0, int64(1)
		for i, ls := range p.in {
			v := vals[i][offset(ls, shapes[i])]
			prod *= v
			w *= int64(v)
		}
		o := offset(p.out, outShape)
		want[o] += prod
		wrapped[o] += w
	}
	for o := range want {
		switch dt {
		case Int64:
			want[o] = float64(wrapped[o])
		case Int32:
			want[o] = float64(int32(wrapped[o]))
		case Int8:
			want[o] = float64(int8(wrapped[o]))
		case Uint8:
			want[o] = float64(uint8(wrapped[o]))
		case Bool:
			want[o] = float64(min(wrapped[o], 1)) // no letter is summed: one term
		}
	}
	if dt.IsInt() || dt == Bool {
		return want, dirty
	}
	for i, ls := range p.in {
		for e := range fzOdometer(shapes[i]) {
			if v := vals[i][fzFlat(e, shapes[i])]; !math.IsNaN(v) && !math.IsInf(v, 0) {
				continue
			}
			own := map[int]int{}
			consistent := true
			for d, l := range ls {
				if j, ok := own[l]; ok && j != e[d] {
					consistent = false // off a diagonal that the operand takes
				}
				own[l] = e[d]
			}
			if !consistent {
				continue
			}
			for oi := range fzOdometer(outShape) {
				reach := true
				for d, l := range p.out {
					for dd, il := range ls {
						if il == l && shapes[i][dd] != 1 && e[dd] != oi[d] {
							reach = false
						}
					}
				}
				if reach {
					dirty[fzFlat(oi, outShape)] = true
				}
			}
		}
	}
	return want, dirty
}

// fzOdometer yields every multi-index of shape in row-major order (one,
// empty, for a 0-d shape; none for an empty one). The slice is reused.
func fzOdometer(shape []int) func(yield func([]int) bool) {
	return func(yield func([]int) bool) {
		if slices.Contains(shape, 0) {
			return
		}
		idx := make([]int, len(shape))
		for {
			if !yield(idx) {
				return
			}
			d := len(shape) - 1
			for ; d >= 0; d-- {
				if idx[d]++; idx[d] < shape[d] {
					break
				}
				idx[d] = 0
			}
			if d < 0 {
				return
			}
		}
	}
}
