package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/emucuda"
	"github.com/lathe-ml/lathe/internal/mpitest"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestMain makes the test binary a child of its own kind when a run starts
// it as one (a rank of a dist row's job, lathe's side), as main does for
// lathe-bench.
func TestMain(m *testing.M) {
	if code, ok := asChild(); ok {
		os.Exit(code)
	}
	if os.Getenv(orphanEnv) != "" {
		os.Exit(leaveFrozenChild())
	}
	os.Exit(m.Run())
}

// runQuick measures the quick table on device with one short sample per
// row and returns the JSON report it wrote.
func runQuick(t *testing.T, device string, vsTorch bool) report {
	t.Helper()
	dir := t.TempDir()
	cfg := config{Devices: []string{device}, Quick: true, Samples: 1, MinSample: time.Millisecond, VsTorch: vsTorch, Python: "/usr/bin/python3",
		JSON: filepath.Join(dir, "bench.json"), Plot: filepath.Join(dir, "bench.svg")}
	var tableOut, notes bytes.Buffer
	if _, err := run(cfg, &tableOut, newProgress(&notes)); err != nil {
		t.Fatalf("run: %v\nnotes:\n%s", err, notes.String())
	}
	raw, err := os.ReadFile(cfg.JSON)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("the JSON does not decode: %v", err)
	}
	if st, err := os.Stat(cfg.Plot); err != nil || st.Size() == 0 {
		t.Errorf("no plot written: %v", err)
	}
	works := table(true)
	if len(rep.Rows) != len(works) {
		t.Fatalf("%d rows in the JSON, want one per workload (%d)", len(rep.Rows), len(works))
	}
	for i, r := range rep.Rows {
		// A job of several ranks runs on the cpu over MPI, where it opens.
		if r.Skipped != "" && works[i].Ranks > 1 && (device != "cpu" || !mpitest.Required() && mpiMissing() != "") {
			t.Logf("%s: skipped: %s", r.Workload, r.Skipped)
			continue
		}
		if r.Workload != works[i].Name || r.Lathe == nil || r.Lathe.Err != "" || r.Lathe.Median <= 0 {
			t.Errorf("row %d (%s): %+v", i, works[i].Name, r.Lathe)
		}
		if !strings.Contains(tableOut.String(), r.Workload) {
			t.Errorf("the table has no line for %s", r.Workload)
		}
	}
	return rep
}

// TestQuickRun runs every workload of the quick table on the cpu.
func TestQuickRun(t *testing.T) { runQuick(t, "cpu", false) }

// TestQuickRunCUDA runs every workload of the quick table on cuda:0 where
// it opens: a GPU, or the host emulation's (TestEmulatedCUDA), which
// rehearses make gpu-check's bench step.
func TestQuickRunCUDA(t *testing.T) {
	if err := lathe.Zeros(lathe.CUDA(0), lathe.Float32, 1).Err(); err != nil {
		testenv.SkipDevice(t, "cuda:0", "cuda:0 does not open: %v", err)
	}
	runQuick(t, "cuda:0", false)
}

// TestEmulatedCUDA runs TestQuickRunCUDA on cuda:0 as the host emulation
// plays it (internal/emucuda), where there is no GPU.
func TestEmulatedCUDA(t *testing.T) {
	emucuda.Run(t, "../..", "TestQuickRunCUDA", emucuda.Kernels)
}

// TestQuickRunVsTorch runs it beside PyTorch, where /usr/bin/python3 has it.
func TestQuickRunVsTorch(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		t.Skip("PyTorch: /usr/bin/python3 cannot import torch:", err)
	}
	rep := runQuick(t, "cpu", true)
	for _, r := range rep.Rows {
		if r.Spec.DType == "f16" && strings.Contains(r.NoTorch, "no torch.float16 matmul") {
			continue // torch 1.13's cpu has no float16 matmul; the row says so
		}
		if r.Torch == nil || r.Torch.Err != "" || r.Torch.Median <= 0 {
			t.Errorf("%s: no PyTorch figure: %+v %s", r.Workload, r.Torch, r.NoTorch)
		}
	}
}

// TestProfileBesideTorch: with --vs-torch, lathe's side runs in a child
// of its own, and --cpuprofile is that child's profile.
func TestProfileBesideTorch(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		t.Skip("PyTorch: /usr/bin/python3 cannot import torch:", err)
	}
	profile := filepath.Join(t.TempDir(), "cpu.prof")
	cfg := config{Devices: []string{"cpu"}, Quick: true, Filter: "^sum", Samples: 5, MinSample: 50 * time.Millisecond, VsTorch: true,
		Python: "/usr/bin/python3", CPUProfile: profile}
	var out, notes bytes.Buffer
	rep, err := run(cfg, &out, newProgress(&notes))
	if err != nil {
		t.Fatalf("run: %v\n%s", err, notes.String())
	}
	if len(rep.Rows) == 0 || rep.Rows[0].Torch == nil || rep.Rows[0].Torch.Median <= 0 {
		t.Fatalf("no PyTorch figures: %+v", rep.Rows)
	}
	st, err := os.Stat(profile)
	if err != nil || st.Size() == 0 {
		t.Fatalf("no profile from lathe's side: %v", err)
	}
	top, err := exec.Command("go", "tool", "pprof", "-top", profile).CombinedOutput()
	if err != nil {
		t.Fatalf("the profile does not read: %v\n%s", err, top)
	}
	if !strings.Contains(string(top), "splitSum") {
		t.Errorf("the profile has no samples of lathe's sum:\n%s", top)
	}
}

// TestRankSetupFails: a setup that fails on one rank of a job is the row's
// error on rank 0, at once, not a wait at the others' barrier.
func TestRankSetupFails(t *testing.T) {
	if why := mpiMissing(); why != "" {
		if mpitest.Required() {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	t.Setenv(failSetupEnv, "1")
	cfg := config{Samples: 1, Warmup: 1, MinSample: time.Millisecond}
	start := time.Now()
	r := measureRow(cfg, allReduce(1<<10, 2), lathe.CPU, nil, nil, func(int) {})
	if r.Lathe == nil || !strings.Contains(r.Lathe.Err, "another rank could not set the workload up") {
		t.Fatalf("row: %+v, want rank 0's error that another rank failed", r.Lathe)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the row took %v to fail", d)
	}
}
