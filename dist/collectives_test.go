package dist

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
)

func init() { scenarios["collectives"] = collectiveChecks }

var allDTypes = []lathe.DType{lathe.Float32, lathe.Float64, lathe.Float16, lathe.BFloat16, lathe.Int32, lathe.Int64,
	lathe.Int8, lathe.Uint8, lathe.Bool}

// rankValues is rank r's input: small values that every dtype holds
// exactly, whose sums over a few ranks stay exact too.
func rankValues(dt lathe.DType, r, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		switch {
		case dt == lathe.Bool:
			v[i] = float64(b2i((i+r)%3 == 0))
		case dt == lathe.Uint8:
			v[i] = float64(i%7 + 2*r)
		case dt.IsFloat():
			v[i] = float64(i%7-3+2*r) + 0.5*float64(r%2)
		default:
			v[i] = float64(i%7 - 3 + 2*r)
		}
	}
	return v
}

func makeTensor(t *testing.T, dt lathe.DType, v []float64, shape ...int) *lathe.Tensor {
	t.Helper()
	x := lathe.FromSlice(lathe.CPU, v, shape...).Cast(dt)
	if len(shape) == 0 {
		x = lathe.FromSlice(lathe.CPU, v).Reshape().Cast(dt)
	}
	if err := x.Err(); err != nil {
		t.Fatalf("making a %v tensor: %v", dt, err)
	}
	return x
}

func values64(t *testing.T, x *lathe.Tensor) []float64 {
	t.Helper()
	v, err := x.Cast(lathe.Float64).Float64s()
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	return v
}

func expect(t *testing.T, name string, got *lathe.Tensor, err error, dt lathe.DType, shape []int, want []float64) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if got.DType() != dt || !slices.Equal(got.Shape(), shape) {
		t.Errorf("%s: got %v %v, want %v %v", name, got.DType(), got.Shape(), dt, shape)
		return
	}
	g := values64(t, got)
	for i := range want {
		if g[i] != want[i] && !(math.IsNaN(g[i]) && math.IsNaN(want[i])) {
			t.Errorf("%s: element %d is %v, want %v", name, i, g[i], want[i])
			return
		}
	}
}

func reduceWant(dt lathe.DType, op ReduceOp, size, n int) []float64 {
	want := make([]float64, n)
	for i := range want {
		for r := range size {
			v := rankValues(dt, r, n)[i]
			switch {
			case r == 0:
				want[i] = v
			case dt == lathe.Bool && (op == Sum || op == Max):
				want[i] = math.Max(want[i], v)
			case op == Sum || op == Mean:
				want[i] += v
			case op == Max:
				want[i] = math.Max(want[i], v)
			case op == Min:
				want[i] = math.Min(want[i], v)
			}
		}
		if op == Mean {
			want[i] /= float64(size)
		}
	}
	return want
}

func collectiveChecks(t *testing.T, g *Group) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, size := g.Rank(), g.Size()
	shapes := [][]int{{}, {0}, {1}, {7}, {3, 5}, {1000}}
	for _, dt := range allDTypes {
		for _, op := range []ReduceOp{Sum, Mean, Max, Min} {
			for _, shape := range shapes {
				n := 1
				for _, s := range shape {
					n *= s
				}
				name := fmt.Sprintf("all_reduce/%v/%v/%v", dt, op, shape)
				x := makeTensor(t, dt, rankValues(dt, r, n), shape...)
				got, err := g.AllReduce(ctx, x, op)
				if op == Mean && !dt.IsFloat() {
					if !errors.Is(err, lathe.ErrDType) {
						t.Errorf("%s: got %v, want an ErrDType", name, err)
					}
					continue
				}
				expect(t, name, got, err, dt, shape, reduceWant(dt, op, size, n))
				// reduce_scatter of the same input: this rank's rows.
				if len(shape) == 0 {
					continue
				}
				rows, rowLen := shape[0], n/max(shape[0], 1)
				lo := r*(rows/size) + min(r, rows%size)
				mine := rows/size + b2i(r < rows%size)
				name = fmt.Sprintf("reduce_scatter/%v/%v/%v", dt, op, shape)
				got, err = g.ReduceScatter(ctx, x, op)
				expect(t, name, got, err, dt, append([]int{mine}, shape[1:]...), reduceWant(dt, op, size, n)[lo*rowLen:(lo+mine)*rowLen])
			}
		}
		for _, shape := range shapes {
			n := 1
			for _, s := range shape {
				n *= s
			}
			for root := range size {
				name := fmt.Sprintf("broadcast/%v/%v/root%d", dt, shape, root)
				got, err := g.Broadcast(ctx, makeTensor(t, dt, rankValues(dt, r, n), shape...), root)
				expect(t, name, got, err, dt, shape, rankValues(dt, root, n))
			}
		}
		// all_gather with uneven first sizes: rank r has 2r+1 rows of 3,
		// and a zero-size case where rank 0 has none.
		for _, rows := range []func(int) int{func(r int) int { return 2*r + 1 }, func(r int) int { return r }} {
			var want []float64
			total := 0
			for q := range size {
				want = append(want, rankValues(dt, q, 3*rows(q))...)
				total += rows(q)
			}
			name := fmt.Sprintf("all_gather/%v/rows%d", dt, rows(r))
			got, err := g.AllGather(ctx, makeTensor(t, dt, rankValues(dt, r, 3*rows(r)), rows(r), 3))
			expect(t, name, got, err, dt, []int{total, 3}, want)
		}
		got, err := g.AllGather(ctx, makeTensor(t, dt, rankValues(dt, r, 1)))
		var want []float64
		for q := range size {
			want = append(want, rankValues(dt, q, 1)...)
		}
		expect(t, fmt.Sprintf("all_gather/%v/0-d", dt), got, err, dt, []int{size}, want)

		// send and recv around the ring, each rank sending first or
		// receiving first by parity so that the pairs meet.
		for _, shape := range shapes {
			n := 1
			for _, s := range shape {
				n *= s
			}
			name := fmt.Sprintf("send_recv/%v/%v", dt, shape)
			to, from := (r+1)%size, (r+size-1)%size
			x := makeTensor(t, dt, rankValues(dt, r, n), shape...)
			var got *lathe.Tensor
			var err error
			if r%2 == 0 {
				if err = g.Send(ctx, x, to); err == nil {
					got, err = g.Recv(ctx, from)
				}
			} else {
				if got, err = g.Recv(ctx, from); err == nil {
					err = g.Send(ctx, x, to)
				}
			}
			expect(t, name, got, err, dt, shape, rankValues(dt, from, n))
		}
	}

	// Mismatches make every rank fail together, and the group goes on.
	mismatch := []struct {
		name string
		kind error
		call func() error
	}{
		{"shape", lathe.ErrShape, func() error {
			_, err := g.AllReduce(ctx, lathe.Zeros(lathe.CPU, lathe.Float32, 2+r), Sum)
			return err
		}},
		{"dtype", lathe.ErrDType, func() error {
			_, err := g.AllReduce(ctx, lathe.Zeros(lathe.CPU, allDTypes[r], 2), Sum)
			return err
		}},
		{"op", lathe.ErrValue, func() error {
			_, err := g.AllReduce(ctx, lathe.Zeros(lathe.CPU, lathe.Float32, 2), []ReduceOp{Sum, Max}[r%2])
			return err
		}},
		{"root", lathe.ErrValue, func() error {
			_, err := g.Broadcast(ctx, lathe.Zeros(lathe.CPU, lathe.Float32, 2), r)
			return err
		}},
		{"call", lathe.ErrValue, func() error {
			if r == 0 {
				return g.Barrier(ctx)
			}
			_, err := g.AllGather(ctx, lathe.Zeros(lathe.CPU, lathe.Float32, 2))
			return err
		}},
		{"gather-tail", lathe.ErrShape, func() error {
			_, err := g.AllGather(ctx, lathe.Zeros(lathe.CPU, lathe.Float32, 2, 1+r))
			return err
		}},
		{"failed-on-rank1", lathe.ErrValue, func() error {
			x := lathe.Zeros(lathe.CPU, lathe.Float32, 2)
			if r == 1 {
				x = lathe.Failed(lathe.NewError("test", lathe.ErrValue, "", "a failed tensor", ""))
			}
			_, err := g.AllReduce(ctx, x, Sum)
			return err
		}},
		{"released-on-rank1", nil, func() error {
			x := lathe.Zeros(lathe.CPU, lathe.Float32, 2)
			if r == 1 {
				x.Release()
			}
			_, err := g.AllReduce(ctx, x, Sum)
			if r == 1 && !errors.Is(err, lathe.ErrReleased) {
				return fmt.Errorf("rank 1 got %v, want ErrReleased", err)
			}
			if r == 0 && !errors.Is(err, lathe.ErrValue) {
				return fmt.Errorf("rank 0 got %v, want ErrValue", err)
			}
			return nil
		}},
		{"root-out-of-range", lathe.ErrIndex, func() error {
			_, err := g.Broadcast(ctx, lathe.Zeros(lathe.CPU, lathe.Float32, 2), 5)
			return err
		}},
		{"nil-tensor", lathe.ErrValue, func() error {
			_, err := g.AllReduce(ctx, nil, Sum)
			return err
		}},
	}
	for _, m := range mismatch {
		err := m.call()
		if m.kind == nil {
			if err != nil {
				t.Errorf("mismatch %s: %v", m.name, err)
			}
		} else if !errors.Is(err, m.kind) {
			t.Errorf("mismatch %s: got %v, want a %v", m.name, err, m.kind)
		}
		// The group is still usable.
		if err := g.Barrier(ctx); err != nil {
			t.Fatalf("barrier after mismatch %s: %v", m.name, err)
		}
	}

	// A Recv that nothing matches ends at its deadline, and the group
	// stays usable; so do bad peers.
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	start := time.Now()
	_, err := g.Recv(short, (r+1)%size)
	cancel2()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("recv with nothing sent: %v after %v, want a deadline error within it", err, time.Since(start))
	}
	if _, err := g.Recv(ctx, r); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("recv from self: %v", err)
	}
	if err := g.Send(ctx, lathe.Zeros(lathe.CPU, lathe.Float32, 1), size); !errors.Is(err, lathe.ErrIndex) {
		t.Errorf("send to rank %d: %v", size, err)
	}
	if err := g.Barrier(ctx); err != nil {
		t.Fatalf("barrier after the recv timeout: %v", err)
	}
}
