package nn

import (
	"errors"
	"maps"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// packedCase is a configuration of packed_ref.py's CASES, by the same name.
type packedCase struct {
	kind                           rnnKind // kindRNNTanh for RNN; Nonlinearity in opts
	in, hidden, steps              int
	lengths                        []int
	opts                           []Option
	layers, dirs, proj             int
	batchFirst, withState, enforce bool
}

var packedCases = map[string]packedCase{
	"lstm/unsorted/h0":     {kindLSTM, 3, 4, 5, []int{3, 5, 2}, nil, 1, 1, 0, false, true, false},
	"lstm/l2/bidir/sorted": {kindLSTM, 2, 3, 4, []int{4, 3, 3, 1}, []Option{NumLayers(2), Bidirectional()}, 2, 2, 0, false, false, true},
	"lstm/bidir/proj/batch_first/h0": {kindLSTM, 3, 4, 4, []int{2, 4, 1}, []Option{Bidirectional(), ProjSize(2), BatchFirst()},
		1, 2, 2, true, true, false},
	"gru/l2/bidir/ties/h0": {kindGRU, 3, 4, 4, []int{2, 4, 4, 1}, []Option{NumLayers(2), Bidirectional()}, 2, 2, 0, false, true, false},
	"gru/l1/sorted":        {kindGRU, 2, 3, 3, []int{3, 3}, nil, 1, 1, 0, false, false, true},
	"rnn/relu/bidir/h0":    {kindRNNTanh, 3, 4, 5, []int{1, 5, 3}, []Option{Nonlinearity("relu"), Bidirectional()}, 1, 2, 0, false, true, false},
	"rnn/l2/nobias":        {kindRNNTanh, 3, 3, 4, []int{4, 2, 3}, []Option{NumLayers(2), NoBias()}, 2, 1, 0, false, false, false},
}

// packedRun builds case c's module in dt on dev with the reference
// weights, packs the input, runs it forward and back, and returns its
// values under packedRef's keys and the packed output.
func packedRun(t *testing.T, c packedCase, dt lathe.DType, dev lathe.Device) (map[string]*lathe.Tensor, *PackedSequence) {
	t.Helper()
	opts := append(slices.Clone(c.opts), WithDType(dt), OnDevice(dev))
	var m Module
	run := func(p *PackedSequence, h0, c0 *lathe.Tensor) (*PackedSequence, *lathe.Tensor, *lathe.Tensor) {
		panic("unreachable")
	}
	switch c.kind {
	case kindLSTM:
		l := NewLSTM(c.in, c.hidden, opts...)
		m, run = l, l.ForwardPacked
	case kindGRU:
		g := NewGRU(c.in, c.hidden, opts...)
		m = g
		run = func(p *PackedSequence, h0, _ *lathe.Tensor) (*PackedSequence, *lathe.Tensor, *lathe.Tensor) {
			o, h := g.ForwardPacked(p, h0)
			return o, h, nil
		}
	default:
		r := NewRNN(c.in, c.hidden, opts...)
		m = r
		run = func(p *PackedSequence, h0, _ *lathe.Tensor) (*PackedSequence, *lathe.Tensor, *lathe.Tensor) {
			o, h := r.ForwardPacked(p, h0)
			return o, h, nil
		}
	}
	ps := m.Parameters()
	setSeqWeights(t, ps, 0, dt, dev)
	n := len(c.lengths)
	xshape := []int{c.steps, n, c.in}
	if c.batchFirst {
		xshape = []int{n, c.steps, c.in}
	}
	hsize := c.hidden
	if c.proj > 0 {
		hsize = c.proj
	}
	x := seq(0.5, 0.3, xshape...).MulScalar(1.5).Cast(dt).To(dev).RequireGrad()
	inputs := []*lathe.Tensor{x}
	var h0, c0 *lathe.Tensor
	if c.withState {
		h0 = seq(0.41, 1, c.layers*c.dirs, n, hsize).MulScalar(0.5).Cast(dt).To(dev).RequireGrad()
		inputs = append(inputs, h0)
		if c.kind == kindLSTM {
			c0 = seq(0.29, 2, c.layers*c.dirs, n, c.hidden).MulScalar(0.5).Cast(dt).To(dev).RequireGrad()
			inputs = append(inputs, c0)
		}
	}
	p := PackPaddedSequence(x, c.lengths, c.batchFirst, c.enforce)
	out, hn, cn := run(p, h0, c0)
	if err := out.Err(); err != nil {
		t.Fatal(err)
	}
	padded, lengths := PadPackedSequence(out, c.batchFirst, 0, 0)
	if !slices.Equal(lengths, c.lengths) {
		t.Errorf("pad_packed_sequence's lengths %v, want %v", lengths, c.lengths)
	}
	w := func(y *lathe.Tensor, scale, shift float64) *lathe.Tensor {
		return y.Mul(seq(scale, shift, y.Shape()...).Cast(dt).To(dev)).Sum()
	}
	loss := w(out.Data, 0.23, 0.7).Add(w(hn, 0.31, 1.3))
	got := map[string]*lathe.Tensor{"out": out.Data, "padded": padded, "hn": hn}
	if cn != nil {
		loss = loss.Add(w(cn, 0.17, 0.4))
		got["cn"] = cn
	}
	names := []string{"x", "h0", "c0"}[:len(inputs)]
	params := make([]*lathe.Tensor, len(ps))
	for i, q := range ps {
		names, params[i] = append(names, q.Name), q.T
	}
	grads, err := lathe.Grad(loss, append(inputs, params...))
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range grads {
		got["grad/"+names[i]] = g
	}
	return got, out
}

// Packed RNN, LSTM and GRU against torch's on exchanged weights: the packed
// output and its padded form, the final states, the batch sizes and
// order, and the gradients with respect to the input, the initial states
// and every parameter, in float64 on the cpu.
func TestPackedMatchesTorch(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(packedCases)) {
		t.Run(name, func(t *testing.T) {
			ref, ok := packedRef[name]
			if !ok {
				t.Fatal("no reference: run build/torchref/packed_ref.py")
			}
			got, out := packedRun(t, packedCases[name], lathe.Float64, lathe.CPU)
			checkRef(t, got, ref.v, 1e-9)
			order := packedOrderRef[name]
			sorted := out.SortedIndices
			if sorted == nil {
				sorted = []int{}
			}
			if !slices.Equal(out.BatchSizes, order[0]) || !slices.Equal(sorted, order[1]) {
				t.Errorf("batch sizes %v and sorted indices %v, want %v and %v", out.BatchSizes, sorted, order[0], order[1])
			}
		})
	}
	if len(packedRef) != len(packedCases) {
		t.Errorf("%d reference cases, %d Go cases", len(packedRef), len(packedCases))
	}
}

// The same cases in float32 on wgpu:0.
func TestPackedMatchesTorchWGPU(t *testing.T) {
	testenv.HostOnly(t)
	dev := lathe.WGPU(0)
	for _, info := range lathe.DeviceStatus() {
		if info.Device == dev && !info.Available {
			testenv.SkipDevice(t, dev.String(), "%s is unavailable: %s", dev, info.Detail)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(packedCases)) {
		t.Run(name, func(t *testing.T) {
			got, _ := packedRun(t, packedCases[name], lathe.Float32, dev)
			t.Logf("max abs diff %.3g", checkRef(t, got, packedRef[name].v, 1e-4))
		})
	}
}

// TestPackSequenceAndPad checks PadSequence, PackSequence and
// PadPackedSequence's totalLength and padding value against what they
// must give, and their gradients.
func TestPackSequenceAndPad(t *testing.T) {
	a := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3, 4}, 2, 2).RequireGrad()
	b := lathe.FromSlice(lathe.CPU, []float32{5, 6, 7, 8, 9, 10}, 3, 2).RequireGrad()
	padded := PadSequence([]*lathe.Tensor{a, b}, true, -1)
	want := []float32{1, 2, 3, 4, -1, -1, 5, 6, 7, 8, 9, 10}
	if got, err := padded.Float32s(); err != nil || !slices.Equal(got, want) || !slices.Equal(padded.Shape(), []int{2, 3, 2}) {
		t.Errorf("pad_sequence: %v %v %v, want %v [2 3 2]", got, padded.Shape(), err, want)
	}
	p := PackSequence([]*lathe.Tensor{a, b}, false)
	if got, err := p.Data.Float32s(); err != nil || !slices.Equal(got, []float32{5, 6, 1, 2, 7, 8, 3, 4, 9, 10}) ||
		!slices.Equal(p.BatchSizes, []int{2, 2, 1}) || !slices.Equal(p.SortedIndices, []int{1, 0}) || !slices.Equal(p.UnsortedIndices, []int{1, 0}) {
		t.Errorf("pack_sequence: %v %v %+v", got, err, p)
	}
	back, lengths := PadPackedSequence(p, false, 7, 4)
	want = []float32{1, 2, 5, 6, 3, 4, 7, 8, 7, 7, 9, 10, 7, 7, 7, 7}
	if got, err := back.Float32s(); err != nil || !slices.Equal(got, want) || !slices.Equal(lengths, []int{2, 3}) {
		t.Errorf("pad_packed_sequence: %v %v %v, want %v [2 3]", got, lengths, err, want)
	}
	if err := p.Data.MulScalar(2).Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	for _, x := range []*lathe.Tensor{a, b} {
		g, _ := x.Grad().Float32s()
		for _, v := range g {
			if v != 2 {
				t.Errorf("gradient %v, want 2s", g)
				break
			}
		}
	}
}

// TestPackedErrors checks that bad lengths, batches and states are error
// values of the right kind.
func TestPackedErrors(t *testing.T) {
	x := lathe.Zeros(lathe.CPU, lathe.Float32, 4, 3, 2)
	good := PackPaddedSequence(x, []int{4, 2, 1}, false, true)
	l := NewLSTM(2, 3)
	_, hnBad, _ := l.ForwardPacked(good, lathe.Zeros(lathe.CPU, lathe.Float32, 1, 2, 3), nil)
	wrongFeatures, _ := NewGRU(5, 3).ForwardPacked(good, nil)
	zeroLen, _ := PadPackedSequence(&PackedSequence{Data: lathe.Zeros(lathe.CPU, lathe.Float32, 3, 2), BatchSizes: []int{2, 0, 1}}, false, 0, 0)
	tooShort, _ := PadPackedSequence(good, false, 0, 3)
	forged, _ := NewRNN(2, 3).ForwardPacked(&PackedSequence{Data: good.Data, BatchSizes: []int{3, 2, 1}}, nil)
	for _, c := range []struct {
		name string
		err  error
		kind error
	}{
		{"unsorted/enforce", PackPaddedSequence(x, []int{2, 4, 1}, false, true).Err(), lathe.ErrValue},
		{"length0", PackPaddedSequence(x, []int{4, 0, 1}, false, false).Err(), lathe.ErrValue},
		{"length>T", PackPaddedSequence(x, []int{5, 2, 1}, false, false).Err(), lathe.ErrValue},
		{"length>T/batch_first", PackPaddedSequence(x, []int{4, 2, 1}, true, false).Err(), lathe.ErrShape},
		{"batch mismatch", PackPaddedSequence(x, []int{4, 2}, false, false).Err(), lathe.ErrShape},
		{"rank1", PackPaddedSequence(lathe.Zeros(lathe.CPU, lathe.Float32, 4), []int{4}, false, false).Err(), lathe.ErrShape},
		{"nil input", PackPaddedSequence(nil, []int{1}, false, false).Err(), lathe.ErrValue},
		{"pad_sequence/empty", PadSequence(nil, false, 0).Err(), lathe.ErrValue},
		{"pad_sequence/trailing", PadSequence([]*lathe.Tensor{lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3), lathe.Zeros(lathe.CPU, lathe.Float32, 2, 4)}, false, 0).Err(), lathe.ErrShape},
		{"pad_sequence/dtype", PadSequence([]*lathe.Tensor{lathe.Zeros(lathe.CPU, lathe.Float32, 2), lathe.Zeros(lathe.CPU, lathe.Float64, 2)}, false, 0).Err(), lathe.ErrDType},
		{"pack_sequence/0d", PackSequence([]*lathe.Tensor{lathe.Zeros(lathe.CPU, lathe.Float32)}, false).Err(), lathe.ErrShape},
		{"h0 batch", hnBad.Err(), lathe.ErrShape},
		{"features", wrongFeatures.Err(), lathe.ErrShape},
		{"batch size 0", zeroLen.Err(), lathe.ErrValue},
		{"total_length", tooShort.Err(), lathe.ErrValue},
		{"forged batch sizes", forged.Err(), lathe.ErrShape},
		{"nil packed", (*PackedSequence)(nil).Err(), lathe.ErrValue},
	} {
		var e *lathe.Error
		if !errors.As(c.err, &e) || !errors.Is(c.err, c.kind) {
			t.Errorf("%s: %v, want a %v", c.name, c.err, c.kind)
		}
	}
}

// TestPackedLeavesNothing checks, with the collector off, that warm steps
// of packing, a bidirectional LSTM over the packed batch and padding it
// back take no memory.
func TestPackedLeavesNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, info := range lathe.DeviceStatus() {
		dev := info.Device
		if !info.Available || (dev != lathe.CPU && dev != lathe.WGPU(0)) {
			continue
		}
		l := NewLSTM(2, 3, Bidirectional(), NumLayers(2), OnDevice(dev))
		x := lathe.RandN(lathe.CPU, lathe.Float32, 4, 3, 2).To(dev).RequireGrad()
		step := func() {
			p := PackPaddedSequence(x, []int{2, 4, 1}, false, false)
			out, hn, cn := l.ForwardPacked(p, nil, nil)
			padded, _ := PadPackedSequence(out, false, 0, 0)
			loss := lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor { return a[0].Sum().Add(a[1].Sum()).Add(a[2].Sum()) }, padded, hn, cn)
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			for _, r := range []*lathe.Tensor{loss, padded, hn, cn, out.Data, p.Data} {
				r.Release()
			}
			x.ZeroGrad()
			for _, q := range l.Parameters() {
				q.T.ZeroGrad()
			}
		}
		step()
		step()
		s0, _ := lathe.MemoryStats(dev)
		step()
		step()
		s1, _ := lathe.MemoryStats(dev)
		if s1.Allocated > s0.Allocated || s1.Allocs-s1.CacheHits != s0.Allocs-s0.CacheHits {
			t.Errorf("%s: two warm steps took %d bytes and %d new blocks", dev, s1.Allocated-s0.Allocated, (s1.Allocs-s1.CacheHits)-(s0.Allocs-s0.CacheHits))
		}
	}
}
