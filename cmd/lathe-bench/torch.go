package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lathe-ml/lathe"
)

// torchScript is where bench_torch.py lives, relative to the module root.
const torchScript = "build/bench_torch.py"

// torchInfo is what the PyTorch child says of itself.
type torchInfo struct {
	Python         string `json:"python"`
	Version        string `json:"version"`
	BLAS           string `json:"blas"`     // BLAS_INFO of torch's build, and MKL/OpenMP availability
	Threads        int    `json:"threads"`  // torch.get_num_threads() after set_num_threads
	Parallel       string `json:"parallel"` // torch.__config__.parallel_info()
	InteropThreads int    `json:"interop_threads"`
}

// torchChild is a long-lived bench_torch.py process. It answers one JSON
// line on stdout for each JSON line it reads on stdin, so that its samples
// can be taken between lathe's: the process stays up for the whole run and
// nothing is re-imported or re-warmed between samples.
type torchChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tail
	info   torchInfo
	dead   error // set once the child fails; every later call returns it
}

// torchRequest is one line to the child.
type torchRequest struct {
	Op      string  `json:"op"` // hello, setup, sample, release, quit
	Threads int     `json:"threads,omitempty"`
	Spec    *spec   `json:"spec,omitempty"`
	Device  string  `json:"device,omitempty"`
	Warmup  int     `json:"warmup,omitempty"`
	Target  float64 `json:"target_s,omitempty"`
	Comment string  `json:"comment,omitempty"`
}

// torchReply is one line from the child.
type torchReply struct {
	OK      bool       `json:"ok"`
	Error   string     `json:"error"`
	Reps    int        `json:"reps"`
	Seconds float64    `json:"seconds"`
	Info    *torchInfo `json:"info"`
}

// findTorchScript looks for build/bench_torch.py above the working
// directory (go run from anywhere in the module) and then beside this
// source file (a binary built from this checkout).
func findTorchScript() (string, error) {
	var tried []string
	if dir, err := os.Getwd(); err == nil {
		for {
			p := filepath.Join(dir, torchScript)
			tried = append(tried, p)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			up := filepath.Dir(dir)
			if up == dir {
				break
			}
			dir = up
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		p := filepath.Join(filepath.Dir(file), "..", "..", torchScript)
		tried = append(tried, p)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found (tried %s); pass --torch-script", torchScript, strings.Join(tried, ", "))
}

// startTorch starts the child with python and script and sets its thread
// count to threads, lathe's GOMAXPROCS, so that both sides use the same
// cores. An error says why PyTorch cannot be used (no python, no torch).
func startTorch(python, script string, threads int) (*torchChild, error) {
	if script == "" {
		var err error
		if script, err = findTorchScript(); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(python, "-u", script)
	// OpenMP reads its thread count at start-up, before set_num_threads.
	// Its idle threads wait passively: spinning, they take the cores from
	// lathe's samples that run in between (the two processes alternate),
	// which slowed both sides' MLP steps several times over.
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS="+strconv.Itoa(threads), "MKL_NUM_THREADS="+strconv.Itoa(threads),
		"OMP_WAIT_POLICY=PASSIVE")
	c := &torchChild{cmd: cmd, stderr: &tail{max: 4096}}
	cmd.Stderr = c.stderr
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
		return nil, fmt.Errorf("cannot start %s: %w", python, err)
	}
	var r torchReply
	if err := c.call(torchRequest{Op: "hello", Threads: threads}, &r); err != nil {
		c.close()
		return nil, err
	}
	if r.Info == nil {
		c.close()
		return nil, errors.New("bench_torch.py: hello reply has no info")
	}
	c.info = *r.Info
	c.info.Python = python
	return c, nil
}

// call sends req and reads its reply into r. A reply with ok false is an
// error with the child's message; a broken pipe or a bad line kills the
// child for the rest of the run, with what it wrote on stderr.
func (c *torchChild) call(req torchRequest, r *torchReply) error {
	if c.dead != nil {
		return c.dead
	}
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		c.dead = fmt.Errorf("bench_torch.py stopped: %w%s", err, c.stderr.String())
		return c.dead
	}
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		return fail(err)
	}
	reply, err := c.stdout.ReadBytes('\n')
	if err != nil {
		return fail(err)
	}
	*r = torchReply{}
	if err := json.Unmarshal(reply, r); err != nil {
		return fail(fmt.Errorf("bad reply %q: %w", bytes.TrimSpace(reply), err))
	}
	if !r.OK {
		return errors.New("torch: " + r.Error)
	}
	return nil
}

// close asks the child to quit and waits for it (killing it after a
// second), so that no python process outlives the run.
func (c *torchChild) close() {
	c.stdin.Close() // the child quits at end of input
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

// torchDevice is PyTorch's name for a lathe device, or why it has none.
func torchDevice(dev lathe.Device) (string, error) {
	switch dev.Kind {
	case lathe.CPU.Kind:
		return "cpu", nil
	case lathe.CUDA(0).Kind:
		return dev.String(), nil
	}
	return "", fmt.Errorf("PyTorch has no %v device", dev.Kind)
}

// prepare builds w in the child on dev, warms it up and calibrates it as
// latheSampler does; the sampler it returns asks for one sample a call.
func (c *torchChild) prepare(w workload, dev lathe.Device, warmup int, target time.Duration) (sampler, error) {
	name, err := torchDevice(dev)
	if err != nil {
		return nil, err
	}
	var r torchReply
	if err := c.call(torchRequest{Op: "setup", Spec: &w.spec, Device: name, Warmup: warmup, Target: target.Seconds(), Comment: w.Name}, &r); err != nil {
		return nil, err
	}
	return &torchSampler{c: c, reps: r.Reps}, nil
}

// release drops the child's current workload.
func (c *torchChild) release() {
	var r torchReply
	c.call(torchRequest{Op: "release"}, &r)
}

// torchSampler takes the child's samples of its current workload.
type torchSampler struct {
	c    *torchChild
	reps int
}

func (s *torchSampler) sample() (float64, error) {
	var r torchReply
	if err := s.c.call(torchRequest{Op: "sample"}, &r); err != nil {
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
