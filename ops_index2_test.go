package lathe

import (
	"runtime/debug"
	"slices"
	"testing"
)

// Tests of ops_index2.go and ops_shape2.go beyond the conformance suite
// (internal/conformance, index2.json, which compares their values and
// gradients with torch's on every device): their rows of the bad-input
// table, the errors that name op and argument, index checks on every
// device, and that a training step through each leaves nothing behind.

// biFirst is the first piece of a split, or its error.
func biFirst(ts []*Tensor, err error) *Tensor {
	if err != nil {
		return failed(err)
	}
	return ts[0]
}

// biIndex2Ops are the bad-input rows of the ops of ops_index2.go and
// ops_shape2.go (the stacks, block_diag, unbind and tensor_split too,
// though no op of theirs is registered).
func biIndex2Ops() map[string]biOp {
	t := map[string]biOp{}
	t["take"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biIdx(dev, []int32{-1, 4}, 2)} },
		call: func(a []*Tensor) *Tensor { return a[0].Take(a[1]) }, kinds: "ai",
		huge: func(dev Device) *Tensor { return biF(dev, 2, 3).Take(Zeros(dev, Int32, 1, 1).Expand(biHuge, biHuge)) }}
	t["take_along_dim"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biIdx(dev, []int32{2, 0}, 1, 2)} },
		call: func(a []*Tensor) *Tensor { return a[0].TakeAlongDim(a[1], 1) }, kinds: "ai",
		huge: func(dev Device) *Tensor {
			return biF(dev, 1, 1).TakeAlongDim(Zeros(dev, Int32, 1, 1).Expand(biHuge, biHuge), 1)
		}}
	t["take_along_dim_flat"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biIdx(dev, []int32{5, 0}, 2)} },
		call: func(a []*Tensor) *Tensor { return a[0].TakeAlongDim(a[1]) }, kinds: "ai",
		huge: func(dev Device) *Tensor {
			return biF(dev, 2, 3).TakeAlongDim(Zeros(dev, Int32, 1, 1).Expand(biHuge, biHuge))
		}}
	along := func(f func(x, i, s *Tensor) *Tensor) biOp {
		return biOp{args: func(dev Device) []*Tensor {
			return []*Tensor{biF(dev, 2, 3), biIdx(dev, []int32{2, 0}, 2), biF(dev, 2, 2)}
		}, call: func(a []*Tensor) *Tensor { return f(a[0], a[1], a[2]) }, kinds: "ais",
			huge: func(dev Device) *Tensor {
				return f(biBig(dev, biHuge, biHuge), biIdx(dev, []int32{0}, 1), biBig(dev, biHuge, 1))
			}}
	}
	t["index_add"] = along(func(x, i, s *Tensor) *Tensor { return x.IndexAdd(1, i, s, 0.5) })
	t["index_copy"] = along(func(x, i, s *Tensor) *Tensor { return x.IndexCopy(-1, i, s) })
	t["index_fill"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biIdx(dev, []int32{-1}, 1)} },
		call: func(a []*Tensor) *Tensor { return a[0].IndexFill(1, a[1], 2) }, kinds: "ai",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).IndexFill(0, biIdx(dev, []int32{0}, 1), 2) }}
	for name, r := range map[string]string{"scatter_reduce": "amax", "scatter_reduce/sum": "sum"} {
		t[name] = biOp{args: func(dev Device) []*Tensor {
			return []*Tensor{biF(dev, 2, 3), biIdx(dev, []int32{0, 2, 0, 1}, 2, 2), biF(dev, 2, 2)}
		}, call: func(a []*Tensor) *Tensor { return a[0].ScatterReduce(1, a[1], a[2], r, false) }, kinds: "ais",
			huge: func(dev Device) *Tensor {
				return biBig(dev, biHuge, biHuge).ScatterReduce(1, Zeros(dev, Int32, 1, 1).Expand(2, 1), biF(dev, 2, 1), r, true)
			}}
	}
	t["masked_scatter"] = biOp{args: func(dev Device) []*Tensor {
		return []*Tensor{biF(dev, 2, 3), biF(dev, 3).GtScalar(1), biF(dev, 6)}
	}, call: func(a []*Tensor) *Tensor { return a[0].MaskedScatter(a[1], a[2]) }, kinds: "acs",
		huge: func(dev Device) *Tensor {
			return biBig(dev, biHuge, biHuge).MaskedScatter(Ones(dev, Bool, 1), biF(dev, 1))
		}}
	t["unique_consecutive"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor {
			v, i, c := a[0].UniqueConsecutive(true, true)
			for _, r := range []*Tensor{i, c} {
				if err := r.Err(); err != nil {
					return failed(err)
				}
			}
			return v
		}, kinds: "a",
		huge: func(dev Device) *Tensor {
			v, _, _ := biBig(dev, biHuge, biHuge).UniqueConsecutive(false, false)
			return v
		}}
	t["rot90"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Rot90(1) }, kinds: "a",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).Rot90(-1) }}
	t["diag_embed"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].DiagEmbed(1, 0, 2) }, kinds: "a",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge).DiagEmbed(0, -2, -1) }}
	t["vander"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Vander(-1, true) }, kinds: "a",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge).Vander(biHuge, false) }}
	for name, f := range map[string]func([]*Tensor) *Tensor{
		"hstack": HStack, "vstack": VStack, "dstack": DStack, "column_stack": ColumnStack,
	} {
		t[name] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 2, 3)} },
			call: f, kinds: "fs",
			huge: func(dev Device) *Tensor { return f([]*Tensor{biBig(dev, biHuge, biHuge), biBig(dev, biHuge, biHuge)}) }}
	}
	t["block_diag"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return BlockDiag(a...) }, kinds: "aa",
		huge: func(dev Device) *Tensor { return BlockDiag(biBig(dev, biHuge, 1), biBig(dev, 1, biHuge)) }}
	t["unbind"] = biView(func(x *Tensor) *Tensor { return biFirst(x.Unbind(1)) }, nil)
	t["tensor_split"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return biFirst(a[0].TensorSplit(2, 1)) }, kinds: "a",
		huge: func(dev Device) *Tensor { return biFirst(biF(dev, 2, 3).TensorSplit(1<<50, 1)) }}
	t["tensor_split_at"] = biView(func(x *Tensor) *Tensor { return biFirst(x.TensorSplitAt([]int{1, -1}, 1)) }, nil)
	t["fliplr"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Fliplr() }, kinds: "a",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).Fliplr() }}
	t["flipud"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Flipud() }, kinds: "a",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).Flipud() }}
	return t
}

func TestIndex2Errors(t *testing.T) {
	x := Arange(CPU, Float32, 0, 6, 1).Reshape(2, 3)
	i64 := func(v ...int64) *Tensor { return FromSlice(CPU, v, len(v)) }
	var nilT *Tensor
	moreOpsErr(t, "take of nil", nilT.Take(i64(0)).Err(), ErrValue, "take", "x")
	moreOpsErr(t, "take nil index", x.Take(nil).Err(), ErrValue, "take", "index")
	moreOpsErr(t, "take float index", x.Take(Zeros(CPU, Float32, 1)).Err(), ErrDType, "take", "index")
	moreOpsErr(t, "take 6 of 6", x.Take(i64(6)).Err(), ErrIndex, "take", "index")
	moreOpsErr(t, "take -7 of 6", x.Take(i64(-7)).Err(), ErrIndex, "take", "index")
	moreOpsErr(t, "take of nothing", Zeros(CPU, Float32, 0).Take(i64(0)).Err(), ErrIndex, "take", "index")
	moreOpsErr(t, "take_along_dim two dims", x.TakeAlongDim(i64(0).Reshape(1, 1), 0, 1).Err(), ErrValue, "take_along_dim", "dim")
	moreOpsErr(t, "take_along_dim rank", x.TakeAlongDim(i64(0), 1).Err(), ErrShape, "take_along_dim", "index")
	moreOpsErr(t, "take_along_dim broadcast", x.TakeAlongDim(i64(0, 0, 0).Reshape(3, 1), 1).Err(), ErrShape, "take_along_dim", "index")
	moreOpsErr(t, "take_along_dim dim 2", x.TakeAlongDim(i64(0).Reshape(1, 1), 2).Err(), ErrIndex, "take_along_dim", "dim")
	moreOpsErr(t, "take_along_dim 0-d", Scalar(CPU, float32(1)).TakeAlongDim(i64(0).Reshape(), 0).Err(), ErrIndex, "take_along_dim", "dim")
	moreOpsErr(t, "take_along_dim -1", x.TakeAlongDim(i64(-1).Reshape(1, 1), 1).Err(), ErrIndex, "take_along_dim", "index")
	moreOpsErr(t, "take_along_dim flat 6", x.TakeAlongDim(i64(6)).Err(), ErrIndex, "take_along_dim", "index")

	src := Ones(CPU, Float32, 2, 1)
	moreOpsErr(t, "index_add 3", x.IndexAdd(1, i64(3), src, 1).Err(), ErrIndex, "index_add", "index")
	moreOpsErr(t, "index_add -1", x.IndexAdd(1, i64(-1), src, 1).Err(), ErrIndex, "index_add", "index")
	moreOpsErr(t, "index_add 2-d index", x.IndexAdd(1, i64(0).Reshape(1, 1), src, 1).Err(), ErrShape, "index_add", "index")
	moreOpsErr(t, "index_add source shape", x.IndexAdd(1, i64(0), Ones(CPU, Float32, 1, 1), 1).Err(), ErrShape, "index_add", "source")
	moreOpsErr(t, "index_add source dtype", x.IndexAdd(1, i64(0), src.Cast(Float64), 1).Err(), ErrDType, "index_add", "source")
	moreOpsErr(t, "index_add nil source", x.IndexAdd(1, i64(0), nil, 1).Err(), ErrValue, "index_add", "source")
	moreOpsErr(t, "index_add dim 2", x.IndexAdd(2, i64(0), src, 1).Err(), ErrIndex, "index_add", "dim")
	moreOpsErr(t, "index_add int alpha 1.5", x.Cast(Int64).IndexAdd(1, i64(0), src.Cast(Int64), 1.5).Err(), ErrDType, "index_add", "alpha")
	moreOpsErr(t, "index_add bool alpha 2", x.Cast(Bool).IndexAdd(1, i64(0), src.Cast(Bool), 2).Err(), ErrValue, "index_add", "alpha")
	moreOpsErr(t, "index_copy 3", x.IndexCopy(1, i64(3), src).Err(), ErrIndex, "index_copy", "index")
	moreOpsErr(t, "index_fill 3", x.IndexFill(1, i64(3), 0).Err(), ErrIndex, "index_fill", "index")
	moreOpsErr(t, "index_fill -4", x.IndexFill(1, i64(-4), 0).Err(), ErrIndex, "index_fill", "index")
	moreOpsErr(t, "index_fill int 1.5", x.Cast(Int32).IndexFill(1, i64(0), 1.5).Err(), ErrDType, "index_fill", "value")
	moreOpsErr(t, "index_fill int8 300", x.Cast(Int8).IndexFill(1, i64(0), 300).Err(), ErrValue, "index_fill", "value")

	ix := FromSlice(CPU, []int64{0, 2}, 1, 2)
	moreOpsErr(t, "scatter_reduce max", x.ScatterReduce(1, ix, src.Reshape(1, 2), "max", true).Err(), ErrValue, "scatter_reduce", "reduce")
	moreOpsErr(t, "scatter_reduce 3", x.ScatterReduce(1, FromSlice(CPU, []int64{3}, 1, 1), src, "sum", true).Err(), ErrIndex, "scatter_reduce", "index")
	moreOpsErr(t, "scatter_reduce src dtype", x.ScatterReduce(1, ix, Ones(CPU, Int64, 1, 2), "sum", true).Err(), ErrDType, "scatter_reduce", "src")
	moreOpsErr(t, "scatter_reduce index shape", x.ScatterReduce(1, ix, Ones(CPU, Float32, 1, 1), "sum", true).Err(), ErrShape, "scatter_reduce", "index")
	moreOpsErr(t, "scatter_reduce bool mean", x.Cast(Bool).ScatterReduce(1, ix, Ones(CPU, Bool, 1, 2), "mean", true).Err(), ErrDType, "scatter_reduce", "x")
	moreOpsErr(t, "scatter_reduce nil src", x.ScatterReduce(1, ix, nil, "sum", true).Err(), ErrValue, "scatter_reduce", "src")

	first := func(ts []*Tensor, err error) error { return err }
	moreOpsErr(t, "unbind of 0-d", first(Scalar(CPU, float32(1)).Unbind(0)), ErrShape, "unbind", "x")
	moreOpsErr(t, "unbind dim 2", first(x.Unbind(2)), ErrIndex, "unbind", "dim")
	moreOpsErr(t, "tensor_split 0", first(x.TensorSplit(0, 1)), ErrValue, "tensor_split", "sections")
	moreOpsErr(t, "tensor_split 2^50", first(x.TensorSplit(1<<50, 1)), ErrOutOfMemory, "tensor_split", "sections")
	moreOpsErr(t, "tensor_split_at 0-d", first(Scalar(CPU, float32(1)).TensorSplitAt([]int{1}, 0)), ErrShape, "tensor_split", "x")
	moreOpsErr(t, "hstack of none", HStack(nil).Err(), ErrValue, "hstack", "tensors")
	moreOpsErr(t, "vstack of a nil", VStack([]*Tensor{x, nil}).Err(), ErrValue, "vstack", "tensors[1]")
	moreOpsErr(t, "vstack of mismatched", VStack([]*Tensor{x, Ones(CPU, Float32, 4)}).Err(), ErrShape, "vstack", "tensors[1]")
	moreOpsErr(t, "dstack of dtypes", DStack([]*Tensor{x, x.Cast(Int32)}).Err(), ErrDType, "dstack", "tensors[1]")
	moreOpsErr(t, "fliplr of a vector", Ones(CPU, Float32, 3).Fliplr().Err(), ErrShape, "fliplr", "x")
	moreOpsErr(t, "flipud of 0-d", Scalar(CPU, float32(1)).Flipud().Err(), ErrShape, "flipud", "x")
	moreOpsErr(t, "rot90 of a vector", Ones(CPU, Float32, 3).Rot90(1).Err(), ErrShape, "rot90", "x")
	moreOpsErr(t, "rot90 one dim", x.Rot90(1, 0).Err(), ErrValue, "rot90", "dims")
	moreOpsErr(t, "rot90 same dims", x.Rot90(1, 0, -2).Err(), ErrValue, "rot90", "dims")
	moreOpsErr(t, "rot90 dim 2", x.Rot90(1, 0, 2).Err(), ErrIndex, "rot90", "dims")
	moreOpsErr(t, "diag_embed same dims", x.DiagEmbed(0, 1, -2).Err(), ErrValue, "diag_embed", "dim2")
	moreOpsErr(t, "diag_embed dim 3", x.DiagEmbed(0, 3, 1).Err(), ErrIndex, "diag_embed", "dim1")
	moreOpsErr(t, "diag_embed of 0-d", Scalar(CPU, float32(1)).DiagEmbed(0, -2, -1).Err(), ErrIndex, "diag_embed", "x")
	moreOpsErr(t, "diag_embed offset past ints", x.DiagEmbed(1<<62, 0, 1).Err(), ErrShape, "diag_embed", "offset")
	moreOpsErr(t, "block_diag of none", BlockDiag().Err(), ErrValue, "block_diag", "tensors")
	moreOpsErr(t, "block_diag of rank 3", BlockDiag(x, Ones(CPU, Float32, 1, 1, 1)).Err(), ErrShape, "block_diag", "tensors[1]")
	m := FromSlice(CPU, []bool{true, false, true}, 3)
	moreOpsErr(t, "masked_scatter short source", x.MaskedScatter(m, Ones(CPU, Float32, 3)).Err(), ErrShape, "masked_scatter", "source")
	moreOpsErr(t, "masked_scatter source dtype", x.MaskedScatter(m, Ones(CPU, Int64, 6)).Err(), ErrDType, "masked_scatter", "source")
	moreOpsErr(t, "masked_scatter float mask", x.MaskedScatter(Ones(CPU, Float32, 3), Ones(CPU, Float32, 6)).Err(), ErrDType, "masked_scatter", "mask")
	moreOpsErr(t, "masked_scatter mask shape", x.MaskedScatter(Ones(CPU, Bool, 2), Ones(CPU, Float32, 6)).Err(), ErrShape, "masked_scatter", "mask")
	_, inv, _ := nilT.UniqueConsecutive(true, false)
	moreOpsErr(t, "unique_consecutive of nil", inv.Err(), ErrValue, "unique_consecutive", "x")
	moreOpsErr(t, "vander of a matrix", x.Vander(-1, false).Err(), ErrShape, "vander", "x")
	moreOpsErr(t, "vander n -2", Ones(CPU, Float32, 3).Vander(-2, false).Err(), ErrValue, "vander", "n")
}

// TestIndex2ChecksOnEveryDevice: an index out of range is an ErrIndex that
// names the op and its index on every device, a GPU's at the read, and
// leaves nothing for a later Synchronize.
func TestIndex2ChecksOnEveryDevice(t *testing.T) {
	for _, dev := range biDevices(t) {
		x := Arange(CPU, Float32, 0, 6, 1).Reshape(2, 3).To(dev)
		bad := func(v ...int64) *Tensor { return FromSlice(CPU, v, len(v)).To(dev) }
		for _, c := range []struct {
			op  string
			out func() *Tensor
		}{
			{"take", func() *Tensor { return x.Take(bad(0, -7)) }},
			{"take_along_dim", func() *Tensor { return x.TakeAlongDim(bad(3, 0).Reshape(2, 1), 1) }},
			{"take_along_dim", func() *Tensor { return x.TakeAlongDim(bad(-1)) }},
			{"index_add", func() *Tensor { return x.IndexAdd(0, bad(2), Ones(dev, Float32, 1, 3), 1) }},
			{"index_copy", func() *Tensor { return x.IndexCopy(0, bad(-1), Ones(dev, Float32, 1, 3)) }},
			{"index_fill", func() *Tensor { return x.IndexFill(1, bad(0, -4), 1) }},
			{"scatter_reduce", func() *Tensor {
				return x.ScatterReduce(1, bad(0, 5).Reshape(1, 2), Ones(dev, Float32, 1, 2), "prod", true)
			}},
		} {
			_, err := c.out().Float32s()
			moreOpsErr(t, dev.String()+": "+c.op, err, ErrIndex, c.op, "index")
			if err := Synchronize(dev); err != nil {
				t.Errorf("%v: Synchronize after the failed %s was read: %v", dev, c.op, err)
			}
		}
	}
}

// TestIndex2Values: a few values worked by hand, on every device: scatter
// reductions whose runs are long (the scan's doubling steps), write the
// last element of each run, and an IndexCopy whose index repeats.
func TestIndex2Values(t *testing.T) {
	for _, dev := range biDevices(t) {
		x := FromSlice(CPU, []float32{1, 2, 3}, 3).To(dev)
		idx := FromSlice(CPU, []int64{2, 0, 2, 2, 0, 2, 2, 1, 2}, 9).To(dev)
		src := FromSlice(CPU, []float32{2, 3, -1, 2, 0.5, 1, 2, 4, -0.5}, 9).To(dev)
		for _, c := range []struct {
			reduce string
			self   bool
			want   []float32
		}{
			{"prod", true, []float32{1.5, 8, 12}}, {"prod", false, []float32{1.5, 4, 4}},
			{"amax", true, []float32{3, 4, 3}}, {"amin", false, []float32{0.5, 4, -1}},
			{"sum", false, []float32{3.5, 4, 5.5}}, {"mean", true, []float32{1.5, 3, 8.5 / 7}},
		} {
			got, err := x.ScatterReduce(0, idx, src, c.reduce, c.self).Float32s()
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("%v: scatter_reduce %s self=%v: %v %v, want %v", dev, c.reduce, c.self, got, err, c.want)
			}
		}
		got, err := x.IndexCopy(0, FromSlice(CPU, []int64{1, 1}, 2).To(dev), FromSlice(CPU, []float32{7, 9}, 2).To(dev)).Float32s()
		if err != nil || !slices.Equal(got, []float32{1, 9, 3}) {
			t.Errorf("%v: index_copy with a repeated index: %v %v, want the last write [1 9 3]", dev, got, err)
		}
	}
}

// TestIndex2LeaveNothing: a training step through each composite of
// ops_index2.go and ops_shape2.go takes no new memory from the device's
// pool once warm, with the collector off.
func TestIndex2LeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := RandN(CPU, Float32, 4, 6).To(dev).RequireGrad()
		y := RandN(CPU, Float32, 4, 6).To(dev)
		i1 := FromSlice(CPU, []int64{3, 0, 3}, 3).To(dev)
		mask := y.GtScalar(0)
		i2 := FromSlice(CPU, []int64{0, 5, 5, 1, 0, 0, 2, 2, 5, 1, 1, 1}, 2, 6).To(dev)
		steps := map[string]func(x *Tensor) *Tensor{
			"take":           func(x *Tensor) *Tensor { return x.Take(i1) },
			"take_along_dim": func(x *Tensor) *Tensor { return x.TakeAlongDim(i2.Narrow(0, 0, 1), 1) },
			"index_add":      func(x *Tensor) *Tensor { return x.IndexAdd(0, i1, y.Narrow(0, 0, 3), 2) },
			"index_copy":     func(x *Tensor) *Tensor { return y.IndexCopy(0, i1, x.Narrow(0, 0, 3)) },
			"index_fill":     func(x *Tensor) *Tensor { return x.IndexFill(1, i1, 2) },
			"hstack":         func(x *Tensor) *Tensor { return HStack([]*Tensor{x, y}) },
			"column_stack":   func(x *Tensor) *Tensor { return ColumnStack([]*Tensor{x.Reshape(-1), y.Reshape(-1)}) },
			"rot90":          func(x *Tensor) *Tensor { return x.Rot90(3) },
			"diag_embed":     func(x *Tensor) *Tensor { return x.DiagEmbed(1, 0, 2) },
			"block_diag":     func(x *Tensor) *Tensor { return BlockDiag(x, y.Narrow(0, 0, 1)) },
			"vander":         func(x *Tensor) *Tensor { return x.Reshape(-1).Vander(3, false) },
			"fliplr":         func(x *Tensor) *Tensor { return x.Fliplr() },
			"masked_scatter": func(x *Tensor) *Tensor { return y.MaskedScatter(mask, x) },
			"unique_consecutive": func(x *Tensor) *Tensor {
				v, i, c := x.UniqueConsecutive(true, true)
				i.Release()
				c.Release()
				return v
			},
			"unbind": func(x *Tensor) *Tensor {
				ts, err := x.Unbind(0)
				if err != nil {
					return failed(err)
				}
				return ts[1]
			},
		}
		for _, r := range []string{"sum", "mean", "prod", "amax", "amin"} {
			steps["scatter_reduce/"+r] = func(x *Tensor) *Tensor { return x.ScatterReduce(1, i2, y, r, r != "mean") }
		}
		for name, f := range steps {
			warmStepsTakeNothing(t, dev, name, x, f, true)
		}
	}
}
