package lathe

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzViews draws a chain of one to five view ops (reshape, view, flatten,
// permute, transpose, mt, narrow, slice, expand, broadcast_to, squeeze,
// unsqueeze) with dims and sizes that are often out of range or near
// int's edges, over a tensor whose elements are their own positions. A
// model here follows each op as PyTorch defines it, on the list of
// positions a view holds: lathe must accept what the model accepts (view
// may refuse strides that it cannot lay out), refuse the rest with
// ErrShape, ErrIndex or ErrValue, never reach outside the storage, and give
// the model's elements, on the cpu and on wgpu:0.
func FuzzViews(f *testing.F) {
	f.Add([]byte{2, 3, 4, 0, 2, 1, 0})
	f.Add([]byte{3, 2, 3, 4, 4, 1, 1, 2, 5, 2, 0, 3, 2})
	f.Add([]byte{2, 1, 3, 6, 3, 2, 4, 3, 9, 0, 1})
	f.Add([]byte{1, 4, 5, 0, 2, 7, 1, 8, 0, 10})
	f.Add([]byte{2, 2, 2, 11, 2, 4, 0, 2, 1, 6, 3, 1, 3, 2})
	f.Add([]byte{1, 3, 4, 0, 250, 2})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		shape := r.shape(4, 64)
		n := dispatch.Numel(shape)
		pos := make([]float64, n)
		for i := range pos {
			pos[i] = float64(i)
		}
		m := &fzViewModel{shape: shape, at: slices.Clone(pos)}
		var steps []fzViewStep
		for range 1 + r.intn(5) {
			s := fzDrawViewStep(r, len(m.shape))
			s.ok, s.want = m.step(s)
			steps = append(steps, s)
			if !s.ok || len(m.at) == 0 && dispatch.Numel(m.shape) > 0 {
				break // refused, or too large to follow element by element
			}
		}
		run := func(base *Tensor) *Tensor {
			x, storage := base, n
			for i, s := range steps {
				y := s.call(x)
				label := fmt.Sprintf("step %d %s on %v", i, s, x.Shape())
				switch err := y.Err(); {
				case err == nil && !s.ok:
					t.Fatalf("%s: gave %v, but PyTorch refuses it", label, y.Shape())
				case err != nil && s.ok && !(s.op == "view" && errorsIs(err, ErrShape)):
					t.Fatalf("%s: %v, but PyTorch gives shape %v", label, err, s.want)
				case err != nil:
					if k := fzKind(t, label, err); k != ErrShape && k != ErrIndex && k != ErrValue {
						t.Fatalf("%s: error kind %v, want ErrShape, ErrIndex or ErrValue: %v", label, k, err)
					}
					return y
				}
				if !slices.Equal(y.Shape(), s.want) {
					t.Fatalf("%s: shape %v, want %v", label, y.Shape(), s.want)
				}
				if y.t.Storage != x.t.Storage {
					// Reshape copied: a fresh buffer of the result's size.
					storage = y.Numel()
				}
				fzStorageBound(t, label, y, storage)
				x = y
			}
			return x
		}
		out := run(fzTensor(pos, Float32, shape))
		if out.Err() != nil || len(m.at) == 0 && dispatch.Numel(m.shape) > 0 {
			return
		}
		got, err := fzHost(out)
		if err != nil {
			t.Fatalf("reading the result: %v", err)
		}
		if !slices.Equal(got, m.at) {
			t.Fatalf("elements %v, want %v (steps %v)", got, m.at, steps)
		}
		if gpu := fzGPU(); gpu != nil {
			fzSame(t, "on "+gpu.String(), out, run(fzTensor(pos, Float32, shape).To(*gpu)), 0)
		}
	})
}

func errorsIs(err, kind error) bool {
	e, ok := err.(*Error)
	return ok && e.Kind == kind
}

// fzViewStep is one drawn view op: its arguments, and once the model has
// seen it, whether PyTorch accepts it and the shape it gives.
type fzViewStep struct {
	op   string
	dims []int // permute's dims, squeeze's, transpose's pair, one dim
	a    []int // sizes, or narrow's and slice's numbers
	ok   bool
	want []int
}

func (s fzViewStep) String() string { return fmt.Sprintf("%s(%v %v)", s.op, s.dims, s.a) }

var fzViewOps = []string{"reshape", "view", "flatten", "permute", "transpose", "mt", "narrow", "slice", "expand", "broadcast_to", "squeeze", "unsqueeze"}

func fzDrawViewStep(r *fzReader, rank int) fzViewStep {
	s := fzViewStep{op: fzViewOps[r.intn(len(fzViewOps))]}
	switch s.op {
	case "reshape", "view", "expand", "broadcast_to":
		k := r.intn(5)
		for range k {
			v := r.size()
			if r.intn(6) == 0 {
				v = -1
			}
			s.a = append(s.a, v)
		}
	case "permute":
		s.dims = r.perm(rank)
	case "transpose":
		s.dims = []int{r.dim(rank), r.dim(rank)}
	case "narrow":
		s.dims = []int{r.dim(rank)}
		s.a = []int{r.dim(4), r.size()}
	case "slice":
		s.dims = []int{r.dim(rank)}
		s.a = []int{r.dim(4), r.dim(4), r.size()}
	case "squeeze":
		for range r.intn(3) {
			s.dims = append(s.dims, r.dim(rank))
		}
	case "unsqueeze":
		s.dims = []int{r.dim(rank + 1)}
	}
	return s
}

// perm is a permutation of rank dims, sometimes one that repeats a dim,
// has one too few or names one out of range.
func (r *fzReader) perm(rank int) []int {
	p := make([]int, rank)
	for i := range p {
		p[i] = i
	}
	for i := rank - 1; i > 0; i-- {
		j := r.intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	switch r.intn(8) {
	case 0:
		if rank > 0 {
			p = p[1:]
		}
	case 1:
		if rank > 1 {
			p[0] = p[1]
		}
	case 2:
		if rank > 0 {
			p[0] = r.dim(rank)
		}
	}
	return p
}

func (s fzViewStep) call(x *Tensor) *Tensor {
	switch s.op {
	case "reshape":
		return x.Reshape(s.a...)
	case "view":
		return x.View(s.a...)
	case "flatten":
		return x.Flatten()
	case "permute":
		return x.Permute(s.dims...)
	case "transpose":
		return x.Transpose(s.dims[0], s.dims[1])
	case "mt":
		return x.MT()
	case "narrow":
		return x.Narrow(s.dims[0], s.a[0], s.a[1])
	case "slice":
		return x.Slice(s.dims[0], s.a[0], s.a[1], s.a[2])
	case "expand":
		return x.Expand(s.a...)
	case "broadcast_to":
		return x.BroadcastTo(s.a...)
	case "squeeze":
		return x.Squeeze(s.dims...)
	}
	return x.Unsqueeze(s.dims[0])
}

// fzViewModel is a view as PyTorch defines it: a shape and, row-major, the
// position in the base tensor of each element (nil once the view has more
// elements than the model follows).
type fzViewModel struct {
	shape []int
	at    []float64
}

// fzModelMax bounds the elements the model follows; past it only the
// shape is checked, and the chain stops (a copy would be gigabytes).
const fzModelMax = 4096

// normDim is PyTorch's dim wrapping (a 0-d tensor takes 0 and -1).
func normDim(d, rank int) (int, bool) {
	r := max(rank, 1)
	if d < -r || d >= r {
		return 0, false
	}
	if d < 0 {
		d += r
	}
	return d, true
}

// step follows s: whether PyTorch accepts it and the shape it gives. A
// shape whose product passes an int is refused (lathe's CheckedNumel,
// where torch's int64 would wrap), unless a size of 0 makes it empty.
func (m *fzViewModel) step(s fzViewStep) (bool, []int) {
	rank := len(m.shape)
	switch s.op {
	case "reshape", "view", "flatten":
		sizes := s.a
		if s.op == "flatten" {
			sizes = []int{-1}
		}
		n := dispatch.Numel(m.shape)
		infer, known, zero, over := -1, 1, false, false
		for i, v := range sizes {
			switch {
			case v == -1 && infer < 0:
				infer = i
			case v < 0:
				return false, nil
			case v == 0:
				zero = true
			case known > math.MaxInt/v:
				over = true
			default:
				known *= v
			}
		}
		switch {
		case zero:
			known = 0
		case over:
			return false, nil
		}
		shape := slices.Clone(sizes)
		if infer >= 0 {
			if known == 0 || n%known != 0 {
				return false, nil
			}
			shape[infer] = n / known
		} else if known != n {
			return false, nil
		}
		return m.set(shape, m.at)
	case "permute":
		if len(s.dims) != rank {
			return false, nil
		}
		seen := make([]bool, max(rank, 1))
		dims := make([]int, len(s.dims))
		for i, d := range s.dims {
			nd, ok := normDim(d, rank)
			if !ok || seen[nd] {
				return false, nil
			}
			seen[nd], dims[i] = true, nd
		}
		shape := make([]int, rank)
		for i, d := range dims {
			shape[i] = m.shape[d]
		}
		return m.set(shape, m.remap(shape, func(idx []int) []int {
			src := make([]int, rank)
			for i, d := range dims {
				src[d] = idx[i]
			}
			return src
		}))
	case "transpose", "mt":
		d0, d1 := -2, -1
		if s.op == "transpose" {
			d0, d1 = s.dims[0], s.dims[1]
		} else if rank < 2 {
			return false, nil
		}
		a, ok0 := normDim(d0, rank)
		b, ok1 := normDim(d1, rank)
		if !ok0 || !ok1 {
			return false, nil
		}
		if rank == 0 {
			return m.set([]int{}, m.at)
		}
		shape := slices.Clone(m.shape)
		shape[a], shape[b] = shape[b], shape[a]
		return m.set(shape, m.remap(shape, func(idx []int) []int {
			src := slices.Clone(idx)
			src[a], src[b] = src[b], src[a]
			return src
		}))
	case "narrow", "slice":
		if rank == 0 {
			return false, nil
		}
		d, ok := normDim(s.dims[0], rank)
		if !ok {
			return false, nil
		}
		size := m.shape[d]
		var start, count, step int
		if s.op == "narrow" {
			start, count, step = s.a[0], s.a[1], 1
			if start < -size || start > size {
				return false, nil
			}
			if start < 0 {
				start += size
			}
			if count < 0 || count > size-start {
				return false, nil
			}
		} else {
			step = s.a[2]
			if step < 1 {
				return false, nil
			}
			clamp := func(i int) int {
				if i < 0 {
					i += size
				}
				return min(max(i, 0), size)
			}
			start = clamp(s.a[0])
			if stop := clamp(s.a[1]); stop > start {
				count = (stop-start-1)/step + 1
			}
		}
		shape := slices.Clone(m.shape)
		shape[d] = count
		return m.set(shape, m.remap(shape, func(idx []int) []int {
			src := slices.Clone(idx)
			src[d] = start + idx[d]*step
			return src
		}))
	case "expand", "broadcast_to":
		lead := len(s.a) - rank
		if lead < 0 {
			return false, nil
		}
		shape := make([]int, len(s.a))
		for i, v := range s.a {
			switch {
			case i < lead && v < 0:
				return false, nil
			case i < lead:
				shape[i] = v
			case v == -1 || v == m.shape[i-lead]:
				shape[i] = m.shape[i-lead]
			case m.shape[i-lead] == 1 && v >= 0:
				shape[i] = v
			default:
				return false, nil
			}
		}
		if fzProdOverflows(shape...) {
			return false, nil
		}
		return m.set(shape, m.remap(shape, func(idx []int) []int {
			src := make([]int, rank)
			for i := range rank {
				if m.shape[i] != 1 {
					src[i] = idx[i+lead]
				}
			}
			return src
		}))
	case "squeeze":
		drop := make([]bool, rank)
		if len(s.dims) == 0 {
			for d, v := range m.shape {
				drop[d] = v == 1
			}
		}
		seen := make([]bool, max(rank, 1))
		for _, d := range s.dims {
			nd, ok := normDim(d, rank)
			if !ok || seen[nd] {
				return false, nil
			}
			seen[nd] = true
			if nd < rank && m.shape[nd] == 1 {
				drop[nd] = true
			}
		}
		shape := []int{}
		for d, v := range m.shape {
			if !drop[d] {
				shape = append(shape, v)
			}
		}
		return m.set(shape, m.at)
	}
	// unsqueeze
	d, ok := normDim(s.dims[0], rank+1)
	if !ok {
		return false, nil
	}
	shape := append(append(slices.Clone(m.shape[:d]), 1), m.shape[d:]...)
	return m.set(shape, m.at)
}

// set makes shape and at the model's, and shape the step's result.
func (m *fzViewModel) set(shape []int, at []float64) (bool, []int) {
	m.shape, m.at = shape, at
	return true, shape
}

// remap is the positions of a view of shape whose element idx is the
// current view's element src(idx); nil when it has too many to follow.
func (m *fzViewModel) remap(shape []int, src func(idx []int) []int) []float64 {
	n := dispatch.Numel(shape)
	if m.at == nil && dispatch.Numel(m.shape) > 0 || n > fzModelMax {
		return nil
	}
	out := make([]float64, 0, n)
	idx := make([]int, len(shape))
	for range n {
		s := src(idx)
		flat := 0
		for d, i := range s {
			flat = flat*m.shape[d] + i
		}
		out = append(out, m.at[flat])
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}
