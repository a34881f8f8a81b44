// Package mpitest starts a test binary's ranks under Open MPI's mpirun,
// for the tests of package dist and of examples/ddp: each test runs its own
// binary as the ranks, with an environment variable telling the rank
// which checks to make. lathe-bench starts its ranks with the same
// arguments (Argv).
package mpitest

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Command is `mpirun -np n --oversubscribe [mpiArgs] <this test binary>
// -test.run ^test$ -test.v` with env added, for ranks on this machine
// (shared memory without CMA, which a container's ptrace rules often
// refuse; --allow-run-as-root as root). Without mpirun it skips t, or
// fails it when LATHE_REQUIRE_MPI=1 (make mpi, after make deps).
func Command(t *testing.T, n int, test string, env []string, mpiArgs ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("mpirun")
	if err != nil {
		msg := "no mpirun on PATH: Open MPI's openmpi-bin and libopenmpi3, which `make deps` installs"
		if Required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	argv := append(Argv(n), mpiArgs...)
	argv = append(argv, os.Args[0], "-test.run", "^"+test+"$", "-test.v", "-test.count=1")
	cmd := exec.Command(path, argv...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// Argv is mpirun's arguments, before the program, for n ranks on this
// machine: oversubscribed, shared memory without CMA (which a container's
// ptrace rules often refuse), and --allow-run-as-root as root.
func Argv(n int) []string {
	argv := []string{"-np", strconv.Itoa(n), "--oversubscribe"}
	if os.Geteuid() == 0 {
		argv = append(argv, "--allow-run-as-root")
	}
	return append(argv, "--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none")
}

// Required says whether a missing Open MPI is a failure here.
func Required() bool { return os.Getenv("LATHE_REQUIRE_MPI") == "1" }

// Run runs cmd, killing it after d; its output is stdout and stderr.
func Run(cmd *exec.Cmd, d time.Duration) (string, error) {
	var b strings.Builder
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return b.String(), err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		return b.String(), context.DeadlineExceeded
	}
}

// Passed counts the ranks whose test passed in out.
func Passed(out, test string) int { return strings.Count(out, "--- PASS: "+test) }
