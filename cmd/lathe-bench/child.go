package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// child is a long-lived process that measures workloads on request: the
// PyTorch side (build/bench_torch.py, torch.go) and lathe's own job of
// several ranks under mpirun (ranks.go). It answers one JSON line on
// stdout for each JSON line it reads on stdin, so that its samples can be
// taken between others': the process stays up for the whole run and
// nothing is re-imported or re-warmed between samples.
type child struct {
	name   string // for errors: "bench_torch.py", "the 2-rank job"
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tail
	dead   error // set once the child fails; every later call returns it
	frozen bool  // stopped by freeze; call and close resume it first
	// cleanup, when set, runs once the child has ended.
	cleanup func()
}

// request is one line to a child.
type request struct {
	Op      string  `json:"op"` // hello, setup, sample, release
	Threads int     `json:"threads,omitempty"`
	Spec    *spec   `json:"spec,omitempty"`
	Device  string  `json:"device,omitempty"`
	Warmup  int     `json:"warmup,omitempty"`
	Target  float64 `json:"target_s,omitempty"`
	Comment string  `json:"comment,omitempty"`
}

// reply is one line from a child.
type reply struct {
	OK      bool       `json:"ok"`
	Error   string     `json:"error"`
	Reps    int        `json:"reps"`
	Seconds float64    `json:"seconds"`
	Info    *torchInfo `json:"info"`
}

// startChild starts cmd as a child that answers requests.
func startChild(name string, cmd *exec.Cmd) (*child, error) {
	c := &child{name: name, cmd: cmd, stderr: &tail{max: 4096}}
	cmd.Stderr = c.stderr
	dieWithParent(cmd)
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.stdout = bufio.NewReader(out)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", cmd.Path, err)
	}
	return c, nil
}

// call sends req and reads its reply into r. A reply with ok false is an
// error with the child's message; a broken pipe or a bad line kills the
// child for the rest of the run, with what it wrote on stderr.
func (c *child) call(req request, r *reply) error {
	if c.dead != nil {
		return c.dead
	}
	c.thaw()
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		c.dead = fmt.Errorf("%s stopped: %w%s", c.name, err, c.stderr.String())
		return c.dead
	}
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		return fail(err)
	}
	out, err := c.stdout.ReadBytes('\n')
	if err != nil {
		return fail(err)
	}
	*r = reply{}
	if err := json.Unmarshal(out, r); err != nil {
		return fail(fmt.Errorf("bad reply %q: %w", bytes.TrimSpace(out), err))
	}
	if !r.OK {
		return errors.New(c.name + ": " + r.Error)
	}
	return nil
}

// close ends the child's input, which makes it quit, and waits for it
// (killing it after grace), so that no child outlives the run.
func (c *child) close(grace time.Duration) {
	c.thaw()
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		c.cmd.Process.Kill()
		<-done
	}
	if c.cleanup != nil {
		c.cleanup()
	}
}

// prepare builds w in the child on device (the child's name for it),
// warms it up and calibrates it as latheSampler does; the sampler it
// returns asks for one sample a call.
func (c *child) prepare(w workload, device string, warmup int, target time.Duration) (*childSampler, error) {
	var r reply
	if err := c.call(request{Op: "setup", Spec: &w.spec, Device: device, Warmup: warmup, Target: target.Seconds(), Comment: w.Name}, &r); err != nil {
		return nil, err
	}
	return &childSampler{c: c, reps: r.Reps}, nil
}

// release drops the child's current workload.
func (c *child) release() {
	var r reply
	c.call(request{Op: "release"}, &r)
}

// childSampler takes a child's samples of its current workload.
type childSampler struct {
	c    *child
	reps int
}

func (s *childSampler) process() *child { return s.c }

func (s *childSampler) sample() (float64, error) {
	var r reply
	if err := s.c.call(request{Op: "sample"}, &r); err != nil {
		return 0, err
	}
	return r.Seconds, nil
}

// tail keeps the last max bytes written to it: the child's stderr, kept
// for the error that says why it stopped.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

// String is the kept text as a suffix for an error message ("" if none).
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return "; its stderr ends:\n" + s
}
