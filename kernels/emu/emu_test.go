package emu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKernelsOnHost builds and runs each testdata/*_test.cpp.
func TestKernelsOnHost(t *testing.T) {
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		t.Skipf("no C++ compiler (%s: %v): install g++ to run the kernels on the host", cxx, err)
	}
	srcs, err := filepath.Glob("testdata/*_test.cpp")
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no testdata/*_test.cpp (%v)", err)
	}
	dir := t.TempDir()
	for _, src := range srcs {
		name := strings.TrimSuffix(filepath.Base(src), "_test.cpp")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			bin := filepath.Join(dir, name)
			start := time.Now()
			// -O0: the programs are small and run briefly, and optimising
			// hundreds of kernel instantiations is most of a build.
			build := exec.CommandContext(ctx, cxx, "-std=c++20", "-O0", "-pthread", "-w", "-I../cuda", "-I../../internal/cudaemu", "-o", bin, src)
			if out, err := build.CombinedOutput(); err != nil {
				if strings.Contains(string(out), "barrier") && strings.Contains(string(out), "No such file") {
					t.Skipf("%s has no C++20 <barrier>: %s", cxx, out)
				}
				t.Fatalf("%s %s: %v\n%s", cxx, src, err, out)
			}
			built := time.Since(start)
			out, err := exec.CommandContext(ctx, bin).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", name, err, out)
			}
			t.Logf("%s (built in %v, ran in %v)", strings.TrimSpace(string(out)), built.Round(time.Millisecond), (time.Since(start) - built).Round(time.Millisecond))
		})
	}
}
