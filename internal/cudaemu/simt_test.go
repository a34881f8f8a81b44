package cudaemu

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimtScheduler runs simt.h's fibers on the kernels of
// testdata/simt_check.cpp (barriers in 3-D blocks and in loops, shuffles
// in a partial warp, a barrier that some threads have left, blocks that
// CUDA refuses) with each
// context switch: simt_switch, and the ucontext fallback that hosts other
// than x86-64 build.
func TestSimtScheduler(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skipf("%v: no C++ compiler (g++)", ErrUnavailable)
	}
	for _, variant := range []struct{ name, flag string }{{"simt_switch", ""}, {"ucontext", "-DSIMT_UCONTEXT"}} {
		t.Run(variant.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "simt_check")
			args := append(cxxFlags[:len(cxxFlags):len(cxxFlags)], "-I.", "-o", bin, "testdata/simt_check.cpp")
			if variant.flag != "" {
				args = append(args, variant.flag)
			}
			if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
				t.Fatalf("%s %s: %v\n%s", cxx, strings.Join(args, " "), err, out)
			}
			// Its last line says ok; a sanitizer in LD_PRELOAD may warn above.
			out, err := exec.Command(bin).CombinedOutput()
			if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); err != nil || lines[len(lines)-1] != "ok" {
				t.Fatalf("simt_check: %v\n%s", err, out)
			}
		})
	}
}
