package dist

import (
	"context"
	"hash/fnv"
	"slices"

	"github.com/lathe-ml/lathe"
)

// ReduceOp is how AllReduce and ReduceScatter combine the ranks' tensors.
type ReduceOp int

// The reductions, as torch.distributed.ReduceOp's.
const (
	Sum  ReduceOp = iota // element-wise sum; on bool, logical or (as torch)
	Mean                 // the sum divided by Size(), for float dtypes
	Max                  // element-wise maximum; on bool, logical or
	Min                  // element-wise minimum; on bool, logical and
)

// String is the op's name: sum, mean, max or min.
func (o ReduceOp) String() string {
	switch o {
	case Sum:
		return "sum"
	case Mean:
		return "mean"
	case Max:
		return "max"
	case Min:
		return "min"
	}
	return "ReduceOp(" + itoa(int(o)) + ")"
}

// Before its data moves, every collective exchanges a small header with
// every rank (an all-gather of headerLen int64s): what each rank called,
// with what dtype and shape, and whether its arguments passed its own
// checks. So a rank whose tensor is failed, released, on the wrong device
// or of another shape makes every rank return an error together, and the
// group stays usable, where MPI would read past a buffer or wait forever.
const headerLen = 8

const (
	hKind = iota
	hOp
	hRoot
	hDType
	hRank // the tensor's number of dims
	hTail // a hash of its sizes after the first
	hDim0
	hOK // 1: the rank's own checks passed
)

const (
	kindBarrier = iota + 1
	kindAllReduce
	kindBroadcast
	kindAllGather
	kindReduceScatter
)

var kindNames = map[int64]string{kindBarrier: "barrier", kindAllReduce: "all_reduce", kindBroadcast: "broadcast", kindAllGather: "all_gather",
	kindReduceScatter: "reduce_scatter"}

// call is one collective on this rank: what it was asked, what its own
// checks found, and its input's host copy.
type call struct {
	op     string
	kind   int64
	reduce ReduceOp
	root   int
	x      *lathe.Tensor // after the casts of 16-bit floats
	dt     lathe.DType   // x's dtype as the caller gave it
	work   lathe.DType   // the dtype the data travels in: dt, or float32 for a 16-bit float reduction
	shape  []int
	data   hostBuf         // x's elements on the host (host engines), while withData runs
	count  int             // x's elements
	temps  []*lathe.Tensor // casts and copies made for the call, released when it is queued
	err    error
}

// onDevice says whether c's data moves on the device: a collective of a
// group with a device engine (NCCL). Barriers and Send and Recv use the
// host engine in every group.
func (g *Group) onDevice(c *call) bool {
	return g.comm != nil && c.kind >= kindAllReduce && c.kind <= kindReduceScatter
}

// release frees the temporaries c made.
func (c *call) release() {
	for _, t := range c.temps {
		t.Release()
	}
	c.temps = nil
}

// prepare checks x (alive, on the group's device, a dtype the op takes)
// and, for a device engine, makes it contiguous (withData reads it for a
// host engine); the caller releases c once its data is queued.
func (g *Group) prepare(c *call, x *lathe.Tensor) {
	if err := x.CheckArg(c.op, "x"); err != nil {
		c.err = err
		return
	}
	if dev := x.Device(); dev != g.dev {
		c.err = lathe.NewError(c.op, lathe.ErrDevice, "x", "is on "+dev.String()+" but the group runs on "+g.dev.String(),
			"move it with x.To("+devExpr(g.dev)+")")
		return
	}
	c.dt, c.shape, c.x = x.DType(), x.Shape(), x
	c.work = c.dt
	reducing := c.kind == kindAllReduce || c.kind == kindReduceScatter
	if reducing && c.reduce == Mean && !c.dt.IsFloat() {
		c.err = lathe.NewError(c.op, lathe.ErrDType, "x", "is "+c.dt.String()+", and a mean needs a float dtype",
			"cast it with x.Cast(lathe.Float32), or reduce with dist.Sum")
		return
	}
	if reducing && (c.reduce < Sum || c.reduce > Min) {
		c.err = lathe.NewError(c.op, lathe.ErrValue, "op", "is "+c.reduce.String()+", not a reduction", "use dist.Sum, dist.Mean, dist.Max or dist.Min")
		return
	}
	if reducing && (c.dt == lathe.Float16 || c.dt == lathe.BFloat16) {
		c.x, c.work = x.Cast(lathe.Float32), lathe.Float32
		c.temps = append(c.temps, c.x)
	}
	if g.onDevice(c) && !c.x.IsContiguous() {
		c.x = c.x.Contiguous()
		c.temps = append(c.temps, c.x)
	}
	if c.err = c.x.Err(); c.err != nil {
		return
	}
	c.count = c.x.Numel()
	if c.count > maxCount {
		c.err = lathe.NewError(c.op, lathe.ErrShape, "x", "has "+itoa(c.count)+" elements, more than one call moves (2³¹-1)",
			"split it, with x.Chunk, into parts below that")
	}
}

// maxCount is MPI's count limit (an int).
const maxCount = 1<<31 - 1

func devExpr(d lathe.Device) string {
	if d == lathe.CPU {
		return "lathe.CPU"
	}
	return "the group's device, " + d.String()
}

func (c *call) header() []int64 {
	h := make([]int64, headerLen)
	h[hKind], h[hOp], h[hRoot] = c.kind, int64(c.reduce), int64(c.root)
	if c.err != nil {
		return h
	}
	h[hOK], h[hDType], h[hRank] = 1, int64(c.dt), int64(len(c.shape))
	tail := c.shape
	if len(tail) > 0 {
		h[hDim0], tail = int64(tail[0]), tail[1:]
	}
	f := fnv.New64a()
	for _, s := range tail {
		var b [8]byte
		for i := range b {
			b[i] = byte(uint64(s) >> (8 * i))
		}
		f.Write(b[:])
	}
	h[hTail] = int64(f.Sum64() >> 1)
	return h
}

// agree exchanges headers; it returns every rank's, or the error that all
// ranks return together.
func (g *Group) agree(ctx context.Context, c *call, sameDim0 bool) ([][]int64, error) {
	mine := c.header()
	all := make([]int64, headerLen*g.size)
	counts := slices.Repeat([]int{headerLen}, g.size)
	check := namedCall(ctx, "the ranks' check that they made the same call")
	if err := g.host.allGather(check, hostBuf{b: asBytes(mine), t: tInt64}, hostBuf{b: asBytes(all), t: tInt64}, counts); err != nil {
		return nil, opError(c.op, err)
	}
	hs := make([][]int64, g.size)
	for r := range hs {
		hs[r] = all[r*headerLen : (r+1)*headerLen]
	}
	if c.err != nil {
		return nil, opError(c.op, c.err)
	}
	for r, h := range hs {
		if h[hOK] == 0 && h[hKind] == c.kind {
			return nil, lathe.NewError(c.op, lathe.ErrValue, "", "rank "+itoa(r)+"'s arguments failed its checks (its error says why), so no rank ran it",
				"fix the call on rank "+itoa(r))
		}
	}
	for r, h := range hs {
		var what string
		switch {
		case h[hKind] != c.kind:
			name := kindNames[h[hKind]]
			if name == "" {
				name = "another call"
			}
			what = "called " + name + " while this rank called " + c.op
		case h[hOp] != mine[hOp]:
			what = "reduces with " + ReduceOp(h[hOp]).String() + ", this rank with " + c.reduce.String()
		case h[hRoot] != mine[hRoot]:
			what = "has root " + itoa(int(h[hRoot])) + ", this rank " + itoa(c.root)
		case h[hDType] != mine[hDType]:
			what = "has a " + lathe.DType(h[hDType]).String() + " tensor, this rank a " + c.dt.String() + " one"
		case h[hRank] != mine[hRank] || h[hTail] != mine[hTail] || (sameDim0 && h[hDim0] != mine[hDim0]):
			what = "has a tensor of another shape than this rank's " + shapeString(c.shape)
			if !sameDim0 {
				what += " (only the first size may differ)"
			}
		default:
			continue
		}
		kind := lathe.ErrShape
		if h[hDType] != mine[hDType] && h[hKind] == c.kind {
			kind = lathe.ErrDType
		} else if h[hKind] != c.kind || h[hOp] != mine[hOp] || h[hRoot] != mine[hRoot] {
			kind = lathe.ErrValue
		}
		return nil, lathe.NewError(c.op, kind, "x", "does not match rank "+itoa(r)+"'s call: rank "+itoa(r)+" "+what,
			"make the same call, with tensors of the same dtype and shape, on every rank")
	}
	return hs, nil
}

func shapeString(s []int) string {
	out := "["
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += itoa(v)
	}
	return out + "]"
}

// withData runs body with c.data holding c.x's elements on the host, for
// a host engine: x's own memory where the engine may take it (lendHost),
// until body returns. Where x cannot be read, c.err says why and body runs
// still, so that agree fails the call on every rank together.
func (g *Group) withData(c *call, body func() (*lathe.Tensor, error)) (*lathe.Tensor, error) {
	if c.err != nil || g.onDevice(c) {
		return body()
	}
	var out *lathe.Tensor
	ran, err := lendHost(c.x, g.spare(), func(h hostBuf) error {
		c.data = h
		var err error
		out, err = body()
		return err
	})
	if !ran {
		c.err = err
		return body()
	}
	return out, err
}

// hostResult makes the tensor of dt and shape on the group's device whose
// elements fill writes as host bytes (makeHost), and finishes it.
func (g *Group) hostResult(c *call, dt lathe.DType, shape []int, mean bool, fill func(out hostBuf) error) (*lathe.Tensor, error) {
	return g.finish(c, makeHost(g.dev, dt, shape, g.spare(), fill), mean)
}

// spare is the memory for the copies of an engine that needs them (see
// hostEngine.inPlace), or nil for one that takes tensors' own.
func (g *Group) spare() *hostPool {
	if g.host.inPlace() {
		return nil
	}
	return &g.copies
}

// finish makes c's result from t, the engine's (of dtype c.work, or c.dt):
// divided by the group's size for a mean, and cast back to the caller's
// 16-bit float where the reduction ran in float32.
func (g *Group) finish(c *call, t *lathe.Tensor, mean bool) (*lathe.Tensor, error) {
	if mean {
		m := t.DivScalar(float64(g.size))
		t.Release()
		t = m
	}
	if t.Err() == nil && t.DType() != c.dt {
		f := t
		t = f.Cast(c.dt)
		f.Release()
	}
	if err := t.Err(); err != nil {
		return nil, resultError(c.op, err)
	}
	return t, nil
}

// reduceOf maps a ReduceOp and dtype to the engine's reduction: bool is
// carried as bytes 0 and 1, so its sum (logical or) is their max.
func reduceOf(op ReduceOp, dt lathe.DType) reduceOp {
	switch {
	case op == Max || (op == Sum && dt == lathe.Bool):
		return opMax
	case op == Min:
		return opMin
	}
	return opSum
}

// AllReduce returns the element-wise reduction of x over every rank
// (torch.distributed.all_reduce; x itself is unchanged, as lathe's tensors
// are): every rank passes a tensor of the same dtype and shape, and gets
// the same result. Sum, Max and Min take every dtype (on bool: or, or,
// and; integers wrap as they do in C), Mean the float ones; float16 and
// bfloat16 are reduced in float32 and rounded once. A failed, released or
// mismatched x on any rank, or one on another device than the group's
// (ErrDevice), makes every rank return an error, and the group stays
// usable; a rank that never calls makes the others' calls end at their
// context's deadline, and the group unusable.
func (g *Group) AllReduce(ctx context.Context, x *lathe.Tensor, op ReduceOp) (*lathe.Tensor, error) {
	c := &call{op: "all_reduce", kind: kindAllReduce, reduce: op}
	if err := g.usable(c.op, ctx); err != nil {
		return nil, err
	}
	g.prepare(c, x)
	defer c.release()
	return g.withData(c, func() (*lathe.Tensor, error) {
		if _, err := g.agree(ctx, c, true); err != nil {
			return nil, err
		}
		if g.onDevice(c) {
			return g.allReduceDevice(ctx, c)
		}
		return g.hostResult(c, c.work, c.shape, op == Mean, func(out hostBuf) error {
			return g.host.allReduce(ctx, c.data, out, reduceOf(op, c.dt))
		})
	})
}

// Broadcast returns root's x on every rank (torch.distributed.broadcast):
// every rank passes a tensor of the same dtype and shape, whose values
// only root's matter. Errors are AllReduce's; a root outside the group is
// an ErrIndex.
func (g *Group) Broadcast(ctx context.Context, x *lathe.Tensor, root int) (*lathe.Tensor, error) {
	c := &call{op: "broadcast", kind: kindBroadcast, root: root}
	if err := g.usable(c.op, ctx); err != nil {
		return nil, err
	}
	if root < 0 || root >= g.size {
		c.err = lathe.NewError(c.op, lathe.ErrIndex, "root", "is "+itoa(root)+", outside the group of "+itoa(g.size), "give a rank from 0 to Size()-1")
	} else {
		g.prepare(c, x)
	}
	defer c.release()
	return g.withData(c, func() (*lathe.Tensor, error) {
		if _, err := g.agree(ctx, c, true); err != nil {
			return nil, err
		}
		if g.onDevice(c) {
			return g.broadcastDevice(ctx, c)
		}
		// On root too the result is a new tensor with x's values.
		return g.hostResult(c, c.dt, c.shape, false, func(out hostBuf) error {
			if g.rank == root {
				copy(out.b, c.data.b)
			}
			return g.host.broadcast(ctx, out, root)
		})
	})
}

// AllGather returns the ranks' tensors joined along dim 0, rank 0's first
// (torch.distributed.all_gather_into_tensor): every rank passes a tensor of
// the same dtype and the same sizes after the first, and the first may
// differ between ranks; a 0-d tensor counts as one of size [1]. Errors are
// AllReduce's.
func (g *Group) AllGather(ctx context.Context, x *lathe.Tensor) (*lathe.Tensor, error) {
	c := &call{op: "all_gather", kind: kindAllGather}
	if err := g.usable(c.op, ctx); err != nil {
		return nil, err
	}
	g.prepare(c, x)
	defer c.release()
	if c.err == nil && len(c.shape) == 0 {
		c.shape = []int{1}
	}
	return g.withData(c, func() (*lathe.Tensor, error) { return g.allGather(ctx, c) })
}

// allGather is AllGather's part that runs with c's data on the host.
func (g *Group) allGather(ctx context.Context, c *call) (*lathe.Tensor, error) {
	hs, err := g.agree(ctx, c, false)
	if err != nil {
		return nil, err
	}
	rowLen := 1
	for _, s := range c.shape[1:] {
		rowLen *= s
	}
	counts := make([]int, g.size)
	rows, total := 0, 0
	for r, h := range hs {
		counts[r] = int(h[hDim0]) * rowLen
		rows += int(h[hDim0])
		total += counts[r]
	}
	if total > maxCount {
		return nil, lathe.NewError(c.op, lathe.ErrShape, "x", "would gather "+itoa(total)+" elements, more than one call moves (2³¹-1)",
			"gather smaller parts")
	}
	if g.onDevice(c) {
		return g.allGatherDevice(ctx, c, counts, rows)
	}
	return g.hostResult(c, c.dt, append([]int{rows}, c.shape[1:]...), false, func(out hostBuf) error {
		return g.host.allGather(ctx, c.data, out, counts)
	})
}

// ReduceScatter reduces x over every rank, as AllReduce, and returns this
// rank's part of the result along dim 0 (torch.distributed's
// reduce_scatter_tensor): the first size is split as torch.tensor_split
// splits it, so with n rows and Size() ranks, the first n mod Size() ranks
// get one row more than the rest (a rank may get none). x must have at
// least one dim. Errors are AllReduce's.
func (g *Group) ReduceScatter(ctx context.Context, x *lathe.Tensor, op ReduceOp) (*lathe.Tensor, error) {
	c := &call{op: "reduce_scatter", kind: kindReduceScatter, reduce: op}
	if err := g.usable(c.op, ctx); err != nil {
		return nil, err
	}
	g.prepare(c, x)
	defer c.release()
	if c.err == nil && len(c.shape) == 0 {
		c.err = lathe.NewError(c.op, lathe.ErrShape, "x", "is 0-d, and its first dim is what ranks share", "reshape it to [1] or more")
	}
	return g.withData(c, func() (*lathe.Tensor, error) { return g.reduceScatter(ctx, c) })
}

// reduceScatter is ReduceScatter's part that runs with c's data on the host.
func (g *Group) reduceScatter(ctx context.Context, c *call) (*lathe.Tensor, error) {
	if _, err := g.agree(ctx, c, true); err != nil {
		return nil, err
	}
	rows, rowLen := c.shape[0], 1
	for _, s := range c.shape[1:] {
		rowLen *= s
	}
	counts := make([]int, g.size)
	for r := range counts {
		counts[r] = (rows/g.size + b2i(r < rows%g.size)) * rowLen
	}
	if g.onDevice(c) {
		return g.reduceScatterDevice(ctx, c, counts)
	}
	shape := append([]int{counts[g.rank] / max(rowLen, 1)}, c.shape[1:]...)
	if rowLen == 0 {
		shape[0] = rows/g.size + b2i(g.rank < rows%g.size)
	}
	return g.hostResult(c, c.work, shape, c.reduce == Mean, func(out hostBuf) error {
		return g.host.reduceScatter(ctx, c.data, out, counts, reduceOf(c.reduce, c.dt))
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
