package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// busyChild is a child that spins on a core until it is closed.
func busyChild(t *testing.T) *child {
	t.Helper()
	c, err := startChild("a busy loop", exec.Command("/bin/sh", "-c", "while :; do :; done"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.close(0) })
	return c
}

// cpuTicks is the CPU time process pid has used, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return utime + stime
}

// TestFreeze: a frozen child uses no CPU until it is thawed, and a call
// (which a frozen child could not answer) thaws it first.
func TestFreeze(t *testing.T) {
	c := busyChild(t)
	pid := c.cmd.Process.Pid
	c.freeze()
	if !allStopped(pid) {
		t.Fatal("freeze returned before the child stopped")
	}
	before := cpuTicks(t, pid)
	time.Sleep(200 * time.Millisecond)
	if used := cpuTicks(t, pid) - before; used > 1 {
		t.Errorf("the frozen child used %d ticks of CPU in 200 ms", used)
	}
	c.thaw()
	before = cpuTicks(t, pid)
	time.Sleep(200 * time.Millisecond)
	if used := cpuTicks(t, pid) - before; used < 2 {
		t.Errorf("the thawed child used %d ticks of CPU in 200 ms; it should be spinning", used)
	}
	if allStopped(pid) {
		t.Error("the thawed child is still stopped")
	}
}

// TestCallThaws: a call to a frozen child, which could not answer it,
// resumes the child first.
func TestCallThaws(t *testing.T) {
	c, err := startChild("an answering loop", exec.Command("/bin/sh", "-c", `while read line; do echo '{"ok":true}'; done`))
	if err != nil {
		t.Fatal(err)
	}
	defer c.close(time.Second)
	c.freeze()
	done := make(chan error, 1)
	go func() { done <- c.call(request{Op: "hello"}, &reply{}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill() // ends the call, and the test
		t.Fatal("a call to a frozen child got no answer: call did not thaw it")
	}
}

// otherSide is a sampler whose process is a busy child, and whose sample
// records whether the other sampler's process was stopped meanwhile.
type otherSide struct {
	c     *child
	other *otherSide
	seen  []bool
}

func (s *otherSide) process() *child { return s.c }

func (s *otherSide) sample() (float64, error) {
	s.c.thaw() // as childSampler's call does
	s.seen = append(s.seen, allStopped(s.other.c.cmd.Process.Pid))
	return 1, nil
}

// TestAlternateStopsOthers: while one sampler samples, every other
// sampler's process is stopped.
func TestAlternateStopsOthers(t *testing.T) {
	a, b := &otherSide{c: busyChild(t)}, &otherSide{c: busyChild(t)}
	a.other, b.other = b, a
	alternate([]sampler{a, b}, 3, func(int) {})
	for _, s := range []*otherSide{a, b} {
		if len(s.seen) != 3 {
			t.Fatalf("%d samples, want 3", len(s.seen))
		}
		for i, stopped := range s.seen {
			if !stopped {
				t.Errorf("sample %d ran beside the other side's running process", i)
			}
		}
	}
}

// orphanEnv makes the test binary leaveFrozenChild (TestFrozenChildDiesWithParent).
const orphanEnv = "LATHE_BENCH_TEST_ORPHAN"

// leaveFrozenChild starts a busy child, freezes it, prints its pid and
// exits without closing it, as a lathe-bench killed between samples does.
func leaveFrozenChild() int {
	c, err := startChild("a busy loop", exec.Command("/bin/sh", "-c", "while :; do :; done"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	c.freeze()
	fmt.Println(c.cmd.Process.Pid)
	return 0
}

// TestFrozenChildDiesWithParent: a child that its parent left stopped,
// dying, does not stay behind.
func TestFrozenChildDiesWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux ties a child's life to its parent's")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), orphanEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the parent said %q", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return // gone
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && stat[i+2] == 'Z' {
			return // dead, waiting for init to reap it
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the child (pid %d) outlived its parent by 10 s: %s", pid, stat)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
