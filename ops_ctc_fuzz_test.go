package lathe

import (
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzCTC draws ctc_loss calls: batched and unbatched log-probabilities of
// every float dtype (and an integer one, refused), padded and
// concatenated targets, lengths and labels mostly valid and now and then
// past either end, negative, the blank or of a float dtype, a blank in
// and out of range, each reduction and one that does not exist, with and
// without zero_infinity. Its oracle is FuzzLossMore's: nothing panics,
// errors are lathe's kinds, wgpu:0 refuses what the cpu refuses (a value
// check's error on the cpu against an argument's on the device is lathe's
// order, fzSameKind) and gives the cpu's values for moderate
// log-probabilities, a reduced loss is 0-d, and where the loss is
// accepted its gradient has the log-probabilities' shape and dtype.
func FuzzCTC(f *testing.F) {
	f.Add([]byte{0, 3, 2, 3, 2, 0, 1, 2, 1, 3, 3, 2, 1, 1, 0, 0})
	f.Add([]byte{1, 4, 1, 4, 3, 1, 2, 3, 1, 2, 4, 3, 0, 1, 1, 1})
	f.Add([]byte{2, 2, 2, 2, 1, 0, 1, 1, 1, 2, 1, 1, 2, 0, 0, 1})
	fzGPUFor(f)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzCTC(t, &fzReader{b: data}) })
}

func fuzzCTC(t *testing.T, r *fzReader) {
	dt := [8]DType{Float32, Float32, Float32, Float64, Float64, Float16, BFloat16, Int32}[r.intn(8)]
	T, N, C, S := r.intn(5), 1+r.intn(3), 1+r.intn(4), r.intn(4)
	unbatched := r.intn(8) == 0
	if unbatched {
		N = 1
	}
	moderate := r.intn(4) != 0
	lpShape := []int{T, N, C}
	if unbatched {
		lpShape = []int{T, C}
	}
	lp := r.mathOperand(dt, lpShape, moderate)
	if moderate && dt.IsFloat() && r.intn(2) == 0 {
		lp = lp.LogSoftmax(-1)
	}
	blank := 0
	switch r.intn(8) {
	case 0:
		blank = C - 1
	case 1:
		blank = [3]int{-1, C, 1 << 40}[r.intn(3)]
	}
	// odd is a value past either end now and then (one time in 16).
	odd := func(v, lo, hi int) int {
		if r.intn(16) == 0 {
			return [4]int{lo - 1, hi + 1, -(1 << 40), 1 << 40}[r.intn(4)]
		}
		return v
	}
	intDType := func() DType {
		if r.intn(32) == 0 {
			return Float32 // refused: lengths and labels are integers
		}
		return [4]DType{Int64, Int64, Int64, Int32}[r.intn(4)]
	}
	il, tl := make([]float64, N), make([]float64, N)
	for n := range N {
		il[n] = float64(odd(r.intn(T+1), 0, T))
		tl[n] = float64(odd(r.intn(S+1), 0, S))
	}
	label := func() float64 {
		v := r.intn(C)
		if v == blank && C > 1 {
			v = (v + 1) % C
		}
		return float64(odd(v, 0, C-1))
	}
	var targets *Tensor
	concatenated := r.intn(4) == 0
	if concatenated {
		total := 0
		for _, v := range tl {
			total += max(int(v), 0) % 8
		}
		v := make([]float64, total)
		for i := range v {
			v[i] = label()
		}
		targets = fzTensor(v, intDType(), []int{total})
	} else {
		ts := []int{N, S}
		if unbatched {
			ts = []int{S}
		}
		v := make([]float64, dispatch.Numel(ts))
		for i := range v {
			v[i] = label()
		}
		targets = fzTensor(v, intDType(), ts)
	}
	lenShape := []int{N}
	if unbatched && r.intn(2) == 0 {
		lenShape = nil // 0-d
	}
	ilT, tlT := fzTensor(il, intDType(), lenShape), fzTensor(tl, intDType(), lenShape)
	red := Reduction(r.intn(3))
	if r.intn(16) == 0 {
		red = Reduction(3 + r.intn(4))
	}
	zeroInf := r.intn(2) == 0
	label0 := "ctc_loss/" + dt.String() + dispatch.FormatShape(lpShape) + "/targets " + targets.DType().String() + dispatch.FormatShape(targets.Shape()) +
		"/lengths " + ilT.DType().String() + " " + strconv.Quote(fmtFloats(il)) + " " + strconv.Quote(fmtFloats(tl)) +
		"/blank " + strconv.Itoa(blank) + "/" + red.String() + "/zero_infinity " + strconv.FormatBool(zeroInf)
	call := func(in []*Tensor) *Tensor { return CTCLoss(in[0], in[1], in[2], in[3], blank, red, zeroInf) }
	out := fzDevices(t, label0, mathTol(dt, moderate), call, lp, targets, ilT, tlT)
	if out.Err() != nil {
		return
	}
	if red != ReduceNone && out.Rank() != 0 {
		t.Fatalf("%s: reduction %v gave shape %v", label0, red, out.Shape())
	}
	x := lp.Clone().RequireGrad()
	g, err := Grad(call([]*Tensor{x, targets, ilT, tlT}).Sum(), []*Tensor{x})
	if err != nil {
		fzKind(t, label0+" (gradient)", err)
		return
	}
	if !slices.Equal(g[0].Shape(), lpShape) || g[0].DType() != dt {
		t.Fatalf("%s: gradient %v %v", label0, g[0].DType(), g[0].Shape())
	}
	if _, err := fzHost(g[0]); err != nil {
		fzKind(t, label0+" (gradient read)", err)
	}
}

// fmtFloats is v as integers, for a label.
func fmtFloats(v []float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += strconv.FormatFloat(x, 'g', -1, 64)
	}
	return s
}
