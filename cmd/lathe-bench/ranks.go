package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/dist"
	"github.com/lathe-ml/lathe/internal/mpitest"
)

// A row of several ranks (spec.Ranks) is measured in a job of its own: as
// many lathe-bench processes, which mpirun starts with rankWorkerEnv set
// (or this process, with torchrun's variables: spec.Launcher). They make a
// dist group over MPI (or TCP), and rank 0 answers the requests of a child
// (child.go) on its standard input and output, which mpirun connects to
// this process. Rank 0 passes each request on to the other ranks, so every
// rank builds, warms up, calibrates and samples the workload together;
// the time is rank 0's. Each rank has an equal share of this process's
// threads (GOMAXPROCS), as PyTorch's ranks have on its side.
//
// The requests reach the other ranks over a Unix socket (rankSocketEnv),
// not MPI: a rank waiting in an MPI call polls, and spins for its first
// second (dist's pacer), so a rank waiting between two of lathe's samples
// would spin on a core while PyTorch's sample, or another row, runs (the
// MLP step in one process read 8.2 ms beside an idle job, 2.0-2.7 ms
// without one). A socket's reader sleeps, as gloo's waiting ranks do.

const (
	rankWorkerEnv = "LATHE_BENCH_RANK_WORKER"
	rankSocketEnv = "LATHE_BENCH_RANK_SOCKET"
)

// startRanks starts a job of n ranks, for one row: a job that ran other
// rows would carry their heaps (after the 64 MB all-reduces, the next row's
// DDP step took 16-22 ms a step for a second or more, against 2.4). The
// launcher is mpirun, or with "torchrun" this process, which starts the
// ranks with torchrun's variables as torchrun would.
func startRanks(n int, launcher string) (*child, error) {
	if why := mpiMissing(); why != "" && launcher != "torchrun" {
		return nil, errors.New(why)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lathe-bench-ranks")
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), rankWorkerEnv+"=1", rankSocketEnv+"="+filepath.Join(dir, "requests"),
		"GOMAXPROCS="+strconv.Itoa(max(1, runtime.GOMAXPROCS(0)/n)))
	var cmd *exec.Cmd
	var others []*exec.Cmd // the ranks after 0, under torchrun's variables
	if launcher == "torchrun" {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		for r := range n {
			c := exec.Command(self)
			c.Env = append(slices.Clip(env), "RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n), "LOCAL_RANK="+strconv.Itoa(r),
				"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
			if r == 0 {
				cmd = c
				continue
			}
			c.Stderr = os.Stderr
			dieWithParent(c)
			if err := c.Start(); err != nil {
				stopRanks(others, 0)
				os.RemoveAll(dir)
				return nil, err
			}
			others = append(others, c)
		}
	} else {
		mpirun, _ := exec.LookPath("mpirun")
		cmd = exec.Command(mpirun, append(mpitest.Argv(n), self)...)
		cmd.Env = env
	}
	c, err := startChild(fmt.Sprintf("the %d-rank job", n), cmd)
	if err != nil {
		stopRanks(others, 0)
		os.RemoveAll(dir)
		return nil, err
	}
	c.cleanup = func() {
		stopRanks(others, rankGrace) // rank 0 told them to quit
		os.RemoveAll(dir)
	}
	var r reply
	if err := c.call(request{Op: "hello"}, &r); err != nil {
		c.close(rankGrace)
		return nil, err
	}
	return c, nil
}

// rankGrace is how long a job has to end once its input ends: each rank
// finalizes MPI, which waits for the others.
const rankGrace = 10 * time.Second

// stopRanks waits up to grace for each of cmds to end, then kills it.
func stopRanks(cmds []*exec.Cmd, grace time.Duration) {
	for _, c := range cmds {
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(grace):
			c.Process.Kill()
			<-done
		}
	}
}

// freePort is a TCP port that nothing listens on now, for a job's
// MASTER_PORT.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// mpiMissing says why no job of ranks can start here, or "".
func mpiMissing() string {
	if _, err := exec.LookPath("mpirun"); err != nil {
		return "no mpirun on PATH (Open MPI's openmpi-bin and libopenmpi3, which make deps installs)"
	}
	return ""
}

// rankWorker is one rank of a job: it serves requests until its input
// (rank 0's) ends, and returns the process's exit code.
func rankWorker() int {
	ctx := context.Background()
	g, err := dist.Init(ctx, dist.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "lathe-bench rank:", err)
		return 1
	}
	w := &rankBench{g: g}
	next, err := requests(g)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lathe-bench rank:", err)
		return 1
	}
	serve(next, w.handle, func(r reply) {
		if g.Rank() == 0 {
			out, _ := json.Marshal(r)
			os.Stdout.Write(append(out, '\n'))
		}
	})
	w.drop()
	if err := g.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "lathe-bench rank:", err)
		return 1
	}
	return 0
}

// rankBench is a rank's current workload.
type rankBench struct {
	g    *dist.Group
	p    *prepared
	reps int
}

// requests returns the function that gives this rank its next request
// line: on rank 0 from standard input, passed on to every other rank over
// the job's socket; on the others from that socket. The end of either is
// a quit request.
func requests(g *dist.Group) (func() []byte, error) {
	path := os.Getenv(rankSocketEnv)
	quit := []byte(`{"op":"quit"}`)
	deadline := time.Now().Add(time.Minute)
	if g.Rank() != 0 {
		var conn net.Conn
		var err error
		for conn, err = net.Dial("unix", path); err != nil && time.Now().Before(deadline); conn, err = net.Dial("unix", path) {
			time.Sleep(10 * time.Millisecond) // rank 0 is not listening yet
		}
		if err != nil {
			return nil, err
		}
		in := bufio.NewReader(conn)
		return func() []byte {
			line, err := in.ReadBytes('\n')
			if err != nil {
				return quit
			}
			return line
		}, nil
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetDeadline(deadline)
	var peers []net.Conn
	for len(peers) < g.Size()-1 {
		conn, err := ln.Accept()
		if err != nil {
			return nil, err
		}
		peers = append(peers, conn)
	}
	ln.Close()
	in := bufio.NewReader(os.Stdin)
	return func() []byte {
		line, err := in.ReadBytes('\n')
		if err != nil {
			line = append(quit, '\n')
		}
		for _, p := range peers {
			p.Write(line)
		}
		return line
	}, nil
}

// handle serves one request on this rank.
func (w *rankBench) handle(req request, r *reply) error {
	switch req.Op {
	case "hello":
		return nil
	case "setup":
		w.drop()
		if req.Spec == nil {
			return errors.New("setup without a spec")
		}
		p, err := prepareRanks(w.g, workload{spec: *req.Spec, Name: req.Comment})
		if err := w.agree(err); err != nil {
			if p != nil {
				p.release()
			}
			return err
		}
		w.p = p
		// A fresh job's heaps, MPI's shared memory and pool start cold: the
		// first steps of a DDP row took 3-4 times the later ones, which
		// warmUp's time absorbs.
		target := time.Duration(req.Target * float64(time.Second))
		if err := warmUp(w.timeSteps, req.Warmup, target); err != nil {
			return err
		}
		if w.reps, err = calibrateReps(w.timeSteps, target); err != nil {
			return err
		}
		r.Reps = w.reps
	case "sample":
		if w.p == nil {
			return errors.New("sample before setup")
		}
		d, err := w.timeSteps(w.reps)
		if err != nil {
			return err
		}
		r.Seconds = d.Seconds() / float64(w.reps)
	case "release":
		w.drop()
	default:
		return fmt.Errorf("unknown op %q", req.Op)
	}
	return nil
}

// agree returns err on this rank and an error on every other rank where
// any rank's err is not nil, so that a setup that failed on one rank stops
// them all before they meet at timeSteps' barrier.
func (w *rankBench) agree(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ok := int32(1)
	if err != nil {
		ok = 0
	}
	all, aerr := w.g.AllReduce(ctx, lathe.FromSlice(lathe.CPU, []int32{ok}), dist.Min)
	if aerr != nil {
		return errors.Join(err, aerr)
	}
	v, aerr := all.Int32s()
	all.Release()
	switch {
	case err != nil:
		return err
	case aerr != nil:
		return aerr
	case v[0] == 0:
		return errors.New("another rank could not set the workload up")
	}
	return nil
}

// timeSteps runs n steps on every rank from a barrier and returns rank
// 0's time, the same on every rank, so that calibrateReps decides alike
// on all of them.
func (w *rankBench) timeSteps(n int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := w.g.Barrier(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	for range n {
		if err := w.p.step(); err != nil {
			return 0, err
		}
	}
	d, err := w.g.Broadcast(ctx, lathe.FromSlice(lathe.CPU, []int64{int64(time.Since(start))}), 0)
	if err != nil {
		return 0, err
	}
	v, err := d.Int64s()
	d.Release()
	if err != nil {
		return 0, err
	}
	return time.Duration(v[0]), nil
}

func (w *rankBench) drop() {
	if w.p != nil {
		w.p.release()
		w.p = nil
	}
}
