package lathe

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// loopEinsum is einsum by its definition: every assignment of sizes to
// the letters, the product of the operands' elements, added into the
// output's element. eq has explicit output and no ellipsis; data are
// row-major.
func loopEinsum(eq string, shapes [][]int, data [][]float64) ([]int, []float64) {
	lhs, rhs, _ := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	size := map[byte]int{}
	var letters []byte
	for i, term := range terms {
		for d := range len(term) {
			if _, ok := size[term[d]]; !ok {
				letters = append(letters, term[d])
			}
			size[term[d]] = max(size[term[d]], shapes[i][d])
		}
	}
	outShape := make([]int, len(rhs))
	n := 1
	for d := range len(rhs) {
		outShape[d] = size[rhs[d]]
		n *= outShape[d]
	}
	out := make([]float64, n)
	at := map[byte]int{}
	// offset is the row-major index of term's letters at the current
	// assignment (a size-1 dim broadcasts: index 0).
	offset := func(term string, shape []int) int {
		o := 0
		for d := range len(term) {
			i := at[term[d]]
			if shape[d] == 1 {
				i = 0
			}
			o = o*shape[d] + i
		}
		return o
	}
	var walk func(k int)
	walk = func(k int) {
		if k == len(letters) {
			v := 1.0
			for i, term := range terms {
				v *= data[i][offset(term, shapes[i])]
			}
			out[offset(rhs, outShape)] += v
			return
		}
		for i := range size[letters[k]] {
			at[letters[k]] = i
			walk(k + 1)
		}
	}
	walk(0)
	return outShape, out
}

// randomEinsum makes a valid equation of 1 to 3 operands over letters
// a-e, some repeated within an operand (diagonals), and a leading
// ellipsis group that the reference spells X, Y: it returns lathe's
// equation, the reference's (explicit, no ellipsis) and the shapes.
func randomEinsum(r *rand.Rand) (eq, ref string, shapes [][]int) {
	size := map[byte]int{}
	for c := byte('a'); c <= 'e'; c++ {
		size[c] = r.IntN(4) // 0 too: empty dims
		if r.IntN(4) > 0 {
			size[c]++
		}
	}
	size['X'], size['Y'] = 1+r.IntN(3), 1+r.IntN(2)
	nops := 1 + r.IntN(3)
	ell := r.IntN(3) == 0
	ellLetters := "XY"[:r.IntN(3)]
	var terms, refTerms []string
	used := map[byte]int{}
	for range nops {
		var t []byte
		for range r.IntN(4) {
			t = append(t, byte('a'+r.IntN(5)))
		}
		var shape []int
		rt := string(t)
		lt := string(t)
		if ell {
			rt = ellLetters + rt
			lt = "..." + lt
		}
		for i := range len(rt) {
			shape = append(shape, size[rt[i]])
			used[rt[i]]++
		}
		terms, refTerms = append(terms, lt), append(refTerms, rt)
		shapes = append(shapes, shape)
	}
	var out []byte
	for c, n := range used {
		if c >= 'a' && (n == 1 || r.IntN(3) == 0) && r.IntN(4) > 0 {
			out = append(out, c)
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	lo, ro := string(out), string(out)
	if ell {
		lo, ro = "..."+lo, ellLetters+ro
	}
	return strings.Join(terms, ",") + "->" + lo, strings.Join(refTerms, ",") + "->" + ro, shapes
}

// TestEinsumRandom checks Einsum on random valid equations against the
// loop, in float64 on the cpu, with transposed operands half the time.
func TestEinsumRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 1))
	for k := range 300 {
		eq, ref, shapes := randomEinsum(r)
		data := make([][]float64, len(shapes))
		ops := make([]*Tensor, len(shapes))
		for i, s := range shapes {
			n := 1
			for _, d := range s {
				n *= d
			}
			data[i] = make([]float64, n)
			for j := range data[i] {
				data[i][j] = float64(r.IntN(9) - 4)
			}
			ops[i] = FromSlice(CPU, data[i], n).Reshape(s...)
			if len(s) >= 2 && r.IntN(2) == 0 {
				// The same values through a transposed layout.
				ops[i] = FromSlice(CPU, data[i], n).Reshape(s...).MT().Contiguous().MT()
			}
		}
		t.Run(fmt.Sprintf("%d/%s", k, eq), func(t *testing.T) {
			wantShape, want := loopEinsum(ref, shapes, data)
			got := Einsum(eq, ops...)
			if err := got.Err(); err != nil {
				t.Fatalf("shapes %v: %v", shapes, err)
			}
			if !slices.Equal(got.Shape(), wantShape) {
				t.Fatalf("shapes %v: shape %v, want %v", shapes, got.Shape(), wantShape)
			}
			g, err := got.Float64s()
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Abs(g[i]-want[i]) > 1e-9 {
					t.Fatalf("shapes %v: element %d is %v, want %v (all %v, want %v)", shapes, i, g[i], want[i], g, want)
				}
			}
		})
	}
}

// TestEinsumAttention runs the contractions attention code writes, and the
// implicit output, against the loop (float32 on every device that opens).
func TestEinsumAttention(t *testing.T) {
	cases := []struct {
		eq, ref string
		shapes  [][]int
	}{
		{"bhqd,bhkd->bhqk", "", [][]int{{2, 3, 4, 5}, {2, 3, 6, 5}}},
		{"bhqk,bhkd->bhqd", "", [][]int{{2, 3, 4, 6}, {2, 3, 6, 5}}},
		{"bij,bjk->bik", "", [][]int{{3, 2, 4}, {3, 4, 5}}},
		{"ij->ji", "", [][]int{{3, 4}}},
		{"ii->i", "", [][]int{{4, 4}}},
		{"i,i->", "", [][]int{{5}, {5}}},
		{"i,j->ij", "", [][]int{{3}, {4}}},
		{"...ij,...jk->...ik", "XYij,XYjk->XYik", [][]int{{2, 3, 2, 4}, {2, 3, 4, 5}}},
		{"bn,anm,bm->ba", "", [][]int{{2, 3}, {4, 3, 5}, {2, 5}}},
		{"ij,jk", "ij,jk->ik", [][]int{{2, 3}, {3, 4}}},
		{"ba,ab", "ba,ab->", [][]int{{2, 3}, {3, 2}}},
		{"Ba,aC", "Ba,aC->BC", [][]int{{2, 3}, {3, 2}}},
		{"ii", "ii->", [][]int{{3, 3}}},
		{"iij->ji", "", [][]int{{3, 3, 2}}},
		{"i j -> j i", "ij->ji", [][]int{{2, 3}}},
		{"ij,jk->ik", "", [][]int{{2, 1}, {3, 4}}}, // j broadcasts from 1
		{"bij,bjk->bik", "", [][]int{{1, 2, 3}, {4, 3, 2}}},
	}
	for _, dev := range biDevices(t) {
		for _, c := range cases {
			t.Run(dev.String()+"/"+c.eq, func(t *testing.T) {
				ref := c.ref
				if ref == "" {
					ref = c.eq
				}
				data := make([][]float64, len(c.shapes))
				ops := make([]*Tensor, len(c.shapes))
				for i, s := range c.shapes {
					n := 1
					for _, d := range s {
						n *= d
					}
					data[i] = make([]float64, n)
					f := make([]float32, n)
					for j := range data[i] {
						data[i][j] = float64((j*7+i*3)%11 - 5)
						f[j] = float32(data[i][j])
					}
					ops[i] = FromSlice(dev, f, n).Reshape(s...)
				}
				wantShape, want := loopEinsum(ref, c.shapes, data)
				got := Einsum(c.eq, ops...)
				if err := got.Err(); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Shape(), wantShape) {
					t.Fatalf("shape %v, want %v", got.Shape(), wantShape)
				}
				g, err := got.Float32s()
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if float64(g[i]) != want[i] {
						t.Fatalf("element %d is %v, want %v", i, g[i], want[i])
					}
				}
			})
		}
	}
}

// TestEinsumErrors checks the kind and the text of each refusal.
func TestEinsumErrors(t *testing.T) {
	a := Ones(CPU, Float32, 2, 3)
	b := Ones(CPU, Float32, 3, 4)
	cases := []struct {
		eq   string
		ops  []*Tensor
		kind error
		text string
	}{
		{"i1", []*Tensor{Ones(CPU, Float32, 2, 3)}, ErrValue, `"i1" at index 1: invalid subscript "1"`},
		{"ij->j>", []*Tensor{a}, ErrValue, "at index 5"},
		{"ij-", []*Tensor{a}, ErrValue, "at index 2"},
		{"..i->i", []*Tensor{Ones(CPU, Float32, 2)}, ErrValue, "at index 0: '.' is not part of an ellipsis"},
		{"......", []*Tensor{a}, ErrValue, "a second ellipsis"},
		{"ij->.", []*Tensor{a}, ErrValue, "at index 4"},
		{"ij->ii", []*Tensor{a}, ErrValue, "at index 5: output subscript i appears more than once"},
		{"ij->k", []*Tensor{a}, ErrValue, "at index 4: output subscript k is in no operand"},
		{"i,i", []*Tensor{Ones(CPU, Float32, 2)}, ErrValue, "names 2 operands but 1 were given"},
		{"i", []*Tensor{Ones(CPU, Float32, 2), Ones(CPU, Float32, 2)}, ErrValue, "names 1 operands but 2 were given"},
		{"ij", []*Tensor{Ones(CPU, Float32, 2, 3, 4)}, ErrShape, "operands[0]"},
		{"ij,jk", []*Tensor{Ones(CPU, Float32, 2, 2), b}, ErrShape, "size 3 for subscript j"},
		{"ii->i", []*Tensor{a}, ErrShape, "repeats subscript i"},
		{"...i,...i->...", []*Tensor{a, Ones(CPU, Float32, 4, 3)}, ErrShape, "... dim 0"},
		{"i,i", []*Tensor{Ones(CPU, Float32, 2), Ones(CPU, Float64, 2)}, ErrDType, "operands[1]"},
		{"i,i", []*Tensor{Ones(CPU, Float32, 2), nil}, ErrValue, "operands[1]"},
		{"i", nil, ErrValue, "operands"},
		{"i,i", []*Tensor{Ones(CPU, Float32, 2), Failed(errors.New("boom"))}, nil, "boom"},
		{"i->", []*Tensor{Ones(CPU, Bool, 2)}, ErrDType, `argument "operands" are bool, and "i->" sums over i`},
		{"ij,jk->ik", []*Tensor{Ones(CPU, Bool, 2, 3), Ones(CPU, Bool, 3, 4)}, ErrDType, "sums over j"},
		{"bij,bkj->bk", []*Tensor{Ones(CPU, Bool, 2, 2, 3), Ones(CPU, Bool, 2, 4, 3)}, ErrDType, "sums over i"},
	}
	for _, c := range cases {
		t.Run(c.eq, func(t *testing.T) {
			err := Einsum(c.eq, c.ops...).Err()
			if err == nil {
				t.Fatal("no error")
			}
			if c.kind != nil && !errors.Is(err, c.kind) {
				t.Errorf("error %v is not %v", err, c.kind)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("error %q does not say %q", err, c.text)
			}
			if c.kind != nil && !strings.HasPrefix(err.Error(), "lathe: einsum:") {
				t.Errorf("error %q does not start with lathe: einsum:", err)
			}
		})
	}
}
