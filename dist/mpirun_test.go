package dist

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/mpitest"
)

// The MPI tests run this test binary under mpirun: TestMPI/<scenario>
// starts `mpirun -np 2 --oversubscribe <this binary> -test.run
// ^TestMPIWorker$` with LATHE_DIST_SCENARIO set, and each rank runs the
// scenario's checks in TestMPIWorker. A machine without mpirun skips them
// by name (`make deps` installs Open MPI).

const scenarioEnv = "LATHE_DIST_SCENARIO"

// scenarios are the worker checks, by name.
var scenarios = map[string]func(t *testing.T, g *Group){}

// closeMayFail names the scenarios whose group may end unable to finalize
// MPI (a peer died), where Close's ErrUnavailable is the right answer.
var closeMayFail = map[string]bool{}

// TestMPIWorker is one rank of a scenario; it does nothing outside mpirun
// or torchrun's variables (TestTorchRun), whose engines it checks.
func TestMPIWorker(t *testing.T) {
	name := os.Getenv(scenarioEnv)
	if name == "" {
		t.Skip("runs only as a rank under mpirun or torchrun's variables (TestMPI and TestTorchRun start it)")
	}
	f := scenarios[name]
	if f == nil {
		t.Fatalf("no scenario %q", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := Init(ctx, Config{})
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	want := map[Launcher]Engine{MPIRun: MPI, TorchRun: TCP}[g.env.Launcher]
	if g.Size() != 2 || g.engine != want {
		t.Errorf("group %v: want 2 ranks over %s", g, want)
	}
	defer func() {
		err := g.Close()
		switch {
		case err != nil && closeMayFail[name] && errors.Is(err, lathe.ErrUnavailable):
			fmt.Printf("rank %d: close: %v\n", g.Rank(), err)
		case err != nil:
			t.Errorf("close: %v", err)
		}
	}()
	f(t, g)
}

// mpirun returns the command that starts n ranks of this test binary in
// scenario, or skips t where there is no Open MPI.
func mpirun(t *testing.T, n int, scenario string, mpiArgs ...string) *exec.Cmd {
	t.Helper()
	cmd := mpitest.Command(t, n, "TestMPIWorker", []string{scenarioEnv + "=" + scenario}, mpiArgs...)
	if err := openMPI(); err != nil {
		if mpitest.Required() {
			t.Fatal(err)
		}
		t.Skipf("mpirun is here but lathe cannot open Open MPI: %v", err)
	}
	return cmd
}

// runRanks runs scenario on n ranks and fails t unless every rank passed.
func runRanks(t *testing.T, n int, scenario string) string {
	t.Helper()
	out, err := mpitest.Run(mpirun(t, n, scenario), 90*time.Second)
	if err != nil || mpitest.Passed(out, "TestMPIWorker") != n {
		t.Fatalf("mpirun -np %d %s: %v\n%s", n, scenario, err, out)
	}
	return out
}

// TestMPI runs the scenarios on two ranks: the collectives for every dtype
// and op, with values checked (collectives_test.go); DDP against one
// process (ddp_test.go); and peers that leave (peer_test.go).
func TestMPI(t *testing.T) {
	for _, name := range []string{"collectives", "ddp", "peer-exits"} {
		t.Run(name, func(t *testing.T) {
			out := runRanks(t, 2, name)
			if testing.Verbose() {
				t.Log(out)
			}
		})
	}
	// A rank that dies without a word to MPI: with --enable-recovery
	// mpirun lets the job go on, and the survivor's all-reduce ends with
	// an error by its deadline (and it finalizes and exits cleanly).
	t.Run("peer-crashes/enable-recovery", func(t *testing.T) {
		out, err := mpitest.Run(mpirun(t, 2, "peer-crashes", "--enable-recovery"), 60*time.Second)
		if err != nil || !strings.Contains(out, "rank 0: all_reduce ended") || strings.Contains(out, "--- FAIL") {
			t.Fatalf("mpirun: %v\n%s", err, out)
		}
	})
	// By default mpirun itself ends the whole job when a rank dies: the
	// survivor is stopped by its launcher, not left hanging.
	t.Run("peer-crashes/default", func(t *testing.T) {
		start := time.Now()
		out, err := mpitest.Run(mpirun(t, 2, "peer-crashes"), 60*time.Second)
		if err == nil || errors.Is(err, context.DeadlineExceeded) || strings.Contains(out, "--- FAIL") {
			t.Fatalf("mpirun after %v: %v, want it to end the job with an error\n%s", time.Since(start), err, out)
		}
	})
}
