// Package emucuda runs a test binary's cuda:0 cases on an emulated device:
// the cuda backend opened on the stand-in driver
// (backends/cuda/testdata/fakecuda.c), whose launches run lathe's kernels
// on the host emulation of kernels/cuda (internal/cudaemu), with cuBLAS and
// cuDNN turned off or played by their stand-ins (Setup). Where there
// is no GPU that is as close as a test gets to cuda:0: the backend's
// launches, layouts, composites, gradient rules, library calls and errors,
// with the real kernels. What it cannot show is the GPU's timing, its
// memory model and the real libraries (make gpu-check).
//
// The cases run in a child process of the test binary (the driver is
// opened once per process), whose summary lines (internal/testenv) name
// the device "cuda:0 (host emulation)", never cuda:0.
package emucuda

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/internal/cudaemu"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// Setup is how the emulated device is set up.
type Setup int

const (
	// Kernels turns cuBLAS and cuDNN off (LATHE_CUBLAS_LIB=off): products
	// and convolutions run on lathe's own kernels, on the emulation.
	Kernels Setup = iota
	// StandIns opens the stand-ins for them
	// (backends/cuda/testdata/fakecublas.c, fakecudnn.c), which compute
	// the calls' results on the host in float64 and refuse what the
	// libraries refuse: what runs is lathe's side of the calls (layouts,
	// transposes, descriptors, the choice of algorithm).
	StandIns
	// Memcheck is Kernels on the emulation built with AddressSanitizer
	// (cudaemu.SanitizedLibrary), with the caching allocator off
	// (LATHE_CUDA_NO_CACHING=1) so that each tensor is an allocation of
	// its own: a kernel that reads or writes past its tensors' memory,
	// or a copy past a buffer, ends the child with ASan's report, as
	// compute-sanitizer's memcheck does on a GPU (make gpu-check).
	Memcheck
)

// String names the setup, as RunEach's subtests are named.
func (s Setup) String() string {
	switch s {
	case Kernels:
		return "kernels"
	case StandIns:
		return "libraries"
	case Memcheck:
		return "memcheck"
	}
	return "setup(" + strconv.Itoa(int(s)) + ")"
}

// RunEach runs Run with each of setups, as a subtest named for it.
func RunEach(t *testing.T, root, pattern string, setups ...Setup) {
	for _, setup := range setups {
		t.Run(setup.String(), func(t *testing.T) { Run(t, root, pattern, setup) })
	}
}

// Run runs the calling test binary's tests that pattern (as -test.run
// takes it) selects in a child process where cuda:0 is the emulated
// device, and fails t with the child's failures, or where no cuda:0 case
// passed (a subtest named for it, or the test that pattern names). A
// pattern that leaves out the other devices' subtests ("Test$/^cuda:0")
// suits a test that checks nothing after its subtests, as a suite that
// only counts them; "Test.*" runs every test, whose device loops leave the
// devices this run does not emulate to the parent (testenv.ParentRuns). root is the
// repository's folder; env is added to the child's environment. In the
// child it skips t (the parent's test). It skips where the run requires
// the real cuda:0 (LATHE_REQUIRE_DEVICES, as make test and make gpu-check
// set it on a GPU machine), which runs those cases itself; where the
// emulation or the stand-in cannot be built (no C or C++ compiler); without
// cgo; and under -short.
func Run(t *testing.T, root, pattern string, setup Setup, env ...string) {
	t.Helper()
	if os.Getenv(testenv.EmulatedEnv) != "" {
		t.Skip("in the child, which runs the cases themselves")
	}
	if testenv.Required("cuda:0") {
		t.Skip("the run requires the real cuda:0, which runs these cases")
	}
	if testing.Short() {
		t.Skip("emulating the kernels takes a while")
	}
	if !cgoEnabled {
		t.Skip("the cuda backend opens a driver only with cgo (CGO_ENABLED=0)")
	}
	library, how := cudaemu.Library, ""
	if setup == Memcheck {
		library, how = cudaemu.SanitizedLibrary, "=host emulation; AddressSanitizer"
	}
	lib, err := library(root)
	skipUnavailable(t, err)
	standIn := func(name string) string {
		return testenv.SharedLibrary(t, filepath.Join(root, "backends/cuda/testdata", name+".c"))
	}
	cublas, cudnn := "off", "off"
	switch setup {
	case StandIns:
		how = "=host emulation; stand-in cuBLAS and cuDNN"
		cublas, cudnn = standIn("fakecublas"), standIn("fakecudnn")
	case Memcheck:
		asan, err := cudaemu.ASanRuntime()
		skipUnavailable(t, err)
		// Go handles its own signals, and its heap is not the C heap that
		// LeakSanitizer would scan.
		env = append(env, "LD_PRELOAD="+asan, "ASAN_OPTIONS=handle_segv=0:allow_user_segv_handler=1:detect_leaks=0",
			"LATHE_CUDA_NO_CACHING=1")
	}
	out, err := testenv.RunChild(pattern, append(env, testenv.EmulatedEnv+"=cuda:0"+how,
		"LATHE_CUDA_LIB="+standIn("fakecuda"), "LATHE_FAKE_CUDA_EMU="+lib, "LATHE_CUBLAS_LIB="+cublas, "LATHE_CUDNN_LIB="+cudnn)...)
	// A case counts where its name has cuda:0 in it, or where it is the
	// test that pattern names whole (one on cuda:0 without subtests).
	passed := regexp.MustCompile(`(?m)^\s*--- PASS: (\S*cuda:0\S*|`+regexp.QuoteMeta(pattern)+`) `).FindAllStringIndex(out, -1)
	if err == nil && len(passed) == 0 {
		err = errors.New("no cuda:0 case passed")
	}
	if err != nil {
		t.Fatalf("on the emulated cuda:0 (%s): %v\n%s", pattern, err, failures(out))
	}
	t.Logf("%d cuda:0 cases passed on the host emulation, %d tests and cases skipped", len(passed), strings.Count(out, "--- SKIP: "))
}

// skipUnavailable skips t where err says that the emulation cannot be
// built here, and fails it on any other error.
func skipUnavailable(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, cudaemu.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// failures picks a verbose test run's failures, with what they logged,
// out of out, and AddressSanitizer's report; or its last lines where it
// has neither (a crash).
func failures(out string) string {
	var b strings.Builder
	if i := strings.Index(out, "ERROR: AddressSanitizer"); i >= 0 {
		report := out[strings.LastIndex(out[:i], "\n")+1:]
		if end := strings.Index(report, "SUMMARY: AddressSanitizer"); end >= 0 {
			report = report[:end+strings.IndexByte(report[end:]+"\n", '\n')]
		}
		b.WriteString(report + "\n")
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "--- FAIL") {
			continue
		}
		b.WriteString(l + "\n")
		indent := len(l) - len(strings.TrimLeft(l, " ")) + 4
		for _, m := range lines[i+1:] {
			if len(m)-len(strings.TrimLeft(m, " ")) < indent || b.Len() > 20_000 {
				break
			}
			b.WriteString(m + "\n")
		}
	}
	if b.Len() == 0 && len(lines) > 40 {
		return strings.Join(lines[len(lines)-40:], "\n")
	}
	return b.String()
}
