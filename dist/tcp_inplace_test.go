package dist

import (
	"context"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
)

// tcpGroups are the groups of size ranks over TCP in this process; with
// copying, their engines copy tensors as MPI's do (hostEngine.inPlace).
func tcpGroups(t *testing.T, size int, copying bool) []*Group {
	gs := make([]*Group, size)
	for r, e := range tcpRanks(t, size) {
		var h hostEngine = e
		if copying {
			h = copyingEngine{e}
		}
		gs[r] = &Group{rank: r, size: size, dev: lathe.CPU, engine: TCP, host: h}
	}
	return gs
}

// copyingEngine is the TCP engine as the collectives see MPI's.
type copyingEngine struct{ *tcpEngine }

func (copyingEngine) inPlace() bool { return false }

// eachWay runs f on groups of two ranks over TCP that take tensors' own
// memory, and on groups that copy them.
func eachWay(t *testing.T, f func(t *testing.T, gs []*Group)) {
	for _, copying := range []bool{false, true} {
		t.Run(map[bool]string{false: "in place", true: "copying"}[copying], func(t *testing.T) { f(t, tcpGroups(t, 2, copying)) })
	}
}

// TestTCPGroupInPlace: a group over TCP reads the cpu tensors it is given
// in place and writes its results into their tensors' own memory, each
// collective giving the values that an engine that copies gives, and
// leaving its input as it was (a broadcast's receivers too); strided
// views, bool and bfloat16 go through copies alike.
func TestTCPGroupInPlace(t *testing.T) { eachWay(t, testGroupInPlace) }

func testGroupInPlace(t *testing.T, gs []*Group) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// rank r's input: [[r+1, r+2, r+3], [r+4, r+5, r+6]] as float32.
	input := func(r int) *lathe.Tensor {
		return lathe.FromSlice(lathe.CPU, []float32{float32(r + 1), float32(r + 2), float32(r + 3), float32(r + 4), float32(r + 5), float32(r + 6)}, 2, 3)
	}
	for _, c := range []struct {
		name string
		run  func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error)
		want func(r int) []float32
	}{
		{"all_reduce sum", func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error) { return g.AllReduce(ctx, x, Sum) },
			func(int) []float32 { return []float32{3, 5, 7, 9, 11, 13} }},
		{"all_reduce mean", func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error) { return g.AllReduce(ctx, x, Mean) },
			func(int) []float32 { return []float32{1.5, 2.5, 3.5, 4.5, 5.5, 6.5} }},
		{"all_reduce max of a transposed view", func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error) {
			v := x.Transpose(0, 1)
			defer v.Release()
			return g.AllReduce(ctx, v, Max)
		}, func(int) []float32 { return []float32{2, 5, 3, 6, 4, 7} }},
		{"broadcast from 1", func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error) { return g.Broadcast(ctx, x, 1) },
			func(int) []float32 { return []float32{2, 3, 4, 5, 6, 7} }},
		{"all_gather", func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error) { return g.AllGather(ctx, x) },
			func(int) []float32 { return []float32{1, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 7} }},
		{"reduce_scatter", func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error) { return g.ReduceScatter(ctx, x, Sum) },
			func(r int) []float32 { return []float32{3, 5, 7, 9, 11, 13}[3*r : 3*r+3] }},
		{"send and recv", func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error) {
			if g.rank == 0 {
				return nil, g.Send(ctx, x, 1)
			}
			return g.Recv(ctx, 0)
		}, func(r int) []float32 { return []float32{1, 2, 3, 4, 5, 6}[:6*r] }},
	} {
		err := onRanks(2, func(r int) error {
			x := input(r)
			defer x.Release()
			y, err := c.run(gs[r], x)
			if err != nil {
				return err
			}
			var got []float32
			if y != nil {
				defer y.Release()
				got, _ = y.Float32s()
			}
			if want := c.want(r); !slices.Equal(got, want) {
				t.Errorf("%s: rank %d got %v, want %v", c.name, r, got, want)
			}
			if v, _ := x.Float32s(); !slices.Equal(v, []float32{float32(r + 1), float32(r + 2), float32(r + 3), float32(r + 4), float32(r + 5), float32(r + 6)}) {
				t.Errorf("%s: rank %d's input is now %v", c.name, r, v)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}

	err := onRanks(2, func(r int) error {
		b := lathe.FromSlice(lathe.CPU, []bool{r == 0, false, true})
		defer b.Release()
		or, err := gs[r].AllReduce(ctx, b, Sum)
		if err != nil {
			return err
		}
		defer or.Release()
		if got, _ := or.Bools(); !slices.Equal(got, []bool{true, false, true}) {
			t.Errorf("bool or: rank %d got %v", r, got)
		}
		h := lathe.Full(lathe.CPU, lathe.BFloat16, float64(r)+0.5, 3)
		defer h.Release()
		s, err := gs[r].AllReduce(ctx, h, Sum)
		if err != nil {
			return err
		}
		defer s.Release()
		if got, _ := s.Float32s(); s.DType() != lathe.BFloat16 || !slices.Equal(got, []float32{2, 2, 2}) {
			t.Errorf("bfloat16 sum: rank %d got %v %v", r, s.DType(), got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTCPCollectivesTakeNoHeap: a collective of 4 MB (float32) or 2 MB
// (bfloat16) over TCP takes no new Go heap for its data, once its frames and its result's pool block
// are warm: the input is read in place and the result made in its
// tensor's memory, or, where the engine copies, the copies reuse the
// group's memory. With new copies, an all-reduce on two ranks took 24 MB.
func TestTCPCollectivesTakeNoHeap(t *testing.T) { eachWay(t, testCollectivesTakeNoHeap) }

func testCollectivesTakeNoHeap(t *testing.T, gs []*Group) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, dt := range []lathe.DType{lathe.Float32, lathe.BFloat16} {
		xs := []*lathe.Tensor{lathe.Ones(lathe.CPU, dt, 1024, 1024), lathe.Ones(lathe.CPU, dt, 1024, 1024)}
		testDTypeTakesNoHeap(t, ctx, gs, dt, xs)
	}
}

func testDTypeTakesNoHeap(t *testing.T, ctx context.Context, gs []*Group, dt lathe.DType, xs []*lathe.Tensor) {
	for name, call := range map[string]func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error){
		"all_reduce":     func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error) { return g.AllReduce(ctx, x, Sum) },
		"broadcast":      func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error) { return g.Broadcast(ctx, x, 0) },
		"all_gather":     func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error) { return g.AllGather(ctx, x) },
		"reduce_scatter": func(g *Group, x *lathe.Tensor) (*lathe.Tensor, error) { return g.ReduceScatter(ctx, x, Sum) },
	} {
		round := func() {
			err := onRanks(2, func(r int) error {
				y, err := call(gs[r], xs[r])
				if err == nil {
					y.Release()
				}
				return err
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		round()
		round()
		// With the collector off: a collection empties the cpu's scratch
		// sync.Pool, whose next bfloat16 sum takes a new float32 buffer
		// (4 MB): CI saw 1235 KB a call once, under load.
		gc := debug.SetGCPercent(-1)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const rounds = 5
		for range rounds {
			round()
		}
		runtime.ReadMemStats(&after)
		debug.SetGCPercent(gc)
		if per := (after.TotalAlloc - before.TotalAlloc) / rounds; per > 1<<20 {
			t.Errorf("%s of a %v [1024, 1024] on two ranks took %d KB of Go heap a call", name, dt, per>>10)
		}
	}
}
