package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/lathe-ml/lathe"
)

// With --vs-torch, lathe's side of a row runs in a child of its own, this
// binary again with sideEnv set, as PyTorch's runs in bench_torch.py, and
// while one side takes a sample the other's process is stopped (alternate,
// child.freeze). Each side's idle threads spin for a while after its work,
// OpenBLAS's for about 0.1 s after every threaded product (lathe and
// PyTorch are linked to the same OpenBLAS), and beside the other side's
// sample they took a core from it. In three alternating runs of 15
// samples, with the other side awake against stopped: lathe's bmm f32
// 32x128³ 1.80–2.00 ms against 0.99–1.41, its GPT step 28.9–31.2 against
// 21.7–27.2 ms; PyTorch's MLP step 1.58–2.04 against 1.29–1.65 ms. A
// stopped process takes no core, so each side is timed as a program alone
// on the machine is; nothing pauses between samples, each side resuming
// as soon as the other has stopped.
//
// A row of several ranks stops only the job's first process (mpirun, or
// PyTorch's rank 0); the other ranks wait asleep between samples
// (ranks.go).

const (
	sideEnv        = "LATHE_BENCH_SIDE"
	sideProfileEnv = "LATHE_BENCH_SIDE_CPUPROFILE"
)

// startSide starts lathe's side, which writes a CPU profile to profile
// when it is not "".
func startSide(profile string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), sideEnv+"=1", sideProfileEnv+"="+profile)
	c, err := startChild("lathe's side", cmd)
	if err != nil {
		return nil, err
	}
	var r reply
	if err := c.call(request{Op: "hello"}, &r); err != nil {
		c.close(time.Second)
		return nil, err
	}
	return c, nil
}

// asChild runs this process as the child that its environment names (a
// rank of a job, lathe's side) and says so, with the exit code; main and
// the tests' TestMain call it first.
func asChild() (code int, ok bool) {
	switch {
	case os.Getenv(rankWorkerEnv) != "": // ranks.go
		return rankWorker(), true
	case os.Getenv(sideEnv) != "":
		return sideWorker(), true
	}
	return 0, false
}

// sideWorker serves lathe's side of the rows until its input ends.
func sideWorker() int {
	stop, err := startCPUProfile(os.Getenv(sideProfileEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "lathe-bench side:", err)
		return 1
	}
	in := bufio.NewReader(os.Stdin)
	var s *latheSampler
	drop := func() {
		if s != nil {
			s.p.release()
			settle(s.dev)
			s = nil
		}
	}
	serve(func() []byte {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return nil
		}
		return line
	}, func(req request, r *reply) error {
		switch req.Op {
		case "hello":
		case "setup":
			drop()
			var err error
			if s, err = setupSide(req); err != nil {
				return err
			}
			r.Reps = s.reps
		case "sample":
			if s == nil {
				return errors.New("sample before setup")
			}
			sec, err := s.sample()
			r.Seconds = sec
			return err
		case "release":
			drop()
		default:
			return fmt.Errorf("unknown op %q", req.Op)
		}
		return nil
	}, func(r reply) {
		out, _ := json.Marshal(r)
		os.Stdout.Write(append(out, '\n'))
	})
	drop()
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "lathe-bench side:", err)
		return 1
	}
	return 0
}

// setupSide prepares a setup request's workload (prepareSampler).
func setupSide(req request) (*latheSampler, error) {
	if req.Spec == nil {
		return nil, errors.New("setup without a spec")
	}
	dev, err := lathe.ParseDevice(req.Device)
	if err != nil {
		return nil, err
	}
	return prepareSampler(workload{spec: *req.Spec, Name: req.Comment}, dev, req.Warmup, time.Duration(req.Target*float64(time.Second)))
}

// serve answers request lines from next with handle until next returns
// nil or a quit request comes, passing each reply to send: the loop of
// every child of lathe-bench's own (ranks.go, sideWorker).
func serve(next func() []byte, handle func(request, *reply) error, send func(reply)) {
	for {
		line := next()
		if line == nil {
			return
		}
		var req request
		r := reply{OK: true}
		if err := json.Unmarshal(line, &req); err != nil {
			r = reply{Error: err.Error()}
		} else if req.Op == "quit" {
			return
		} else if err := handle(req, &r); err != nil {
			r = reply{Error: err.Error()}
		}
		send(r)
	}
}
