package ptx

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-ml/lathe/internal/nvrtc"
)

// The CUDA toolchain that `make deps` unpacks, relative to this folder.
const (
	nvrtcLib = "../../.deps/cuda/lib/libnvrtc.so.11.2"
	ptxas    = "../../.deps/cuda/bin/ptxas"
	sources  = "../cuda"
)

// archs are the real architectures every module is assembled for in make
// test: Hopper, the H200's. ptxas checks each instruction against the
// PTX's own .target (sm_70) whatever the architecture it assembles for, so
// one shows what the PTX asks of the GPU; `make ptx-archs` and gpu-check
// assemble for every architecture from sm_70 to sm_90 (three here cost
// another minute and a half of CPU in every make test).
var archs = []string{"sm_90"}

// committed reads the .ptx files of this folder by name.
func committed(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob("*.ptx")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = b
	}
	return out
}

// TestFresh checks that the committed PTX is byte for byte what NVRTC
// gives from kernels/cuda, so that no one edits a .cu without running
// `make kernels`. Compiling every module takes NVRTC about two minutes of
// CPU here, so where the sources and the PTX are those that make kernels
// recorded in sources.sha256, and each file's header names today's options
// and NVRTC, the PTX is what a compile would give and none is run. Any
// other tree, or LATHE_PTX_COMPILE=1, compiles the sources and compares.
func TestFresh(t *testing.T) {
	t.Parallel()
	lib, err := nvrtc.Open(nvrtcLib)
	if err != nil {
		t.Skipf("NVRTC is not installed (%v): run make deps", err)
	}
	have := committed(t)
	changed := changedSince(t, lib, have)
	if changed == "" && os.Getenv("LATHE_PTX_COMPILE") == "" {
		t.Logf("the sources and the PTX are those %s records, with current headers: not compiled again (LATHE_PTX_COMPILE=1 compiles)", nvrtc.SumsFile)
		return
	}
	if changed != "" {
		t.Logf("compiling the sources again: %s", changed)
	}
	start := time.Now()
	fresh, err := nvrtc.Generate(lib, sources)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NVRTC compiled %d modules in %v", len(fresh), time.Since(start).Round(time.Millisecond))
	for name, want := range fresh {
		got, ok := have[name]
		switch {
		case !ok:
			t.Errorf("kernels/ptx/%s is missing: run make kernels and commit it", name)
		case !bytes.Equal(got, want):
			t.Errorf("kernels/ptx/%s is stale (not what kernels/cuda gives): run make kernels and commit it", name)
		}
	}
	for name := range have {
		if _, ok := fresh[name]; !ok {
			t.Errorf("kernels/ptx/%s has no source in kernels/cuda: remove it (make kernels does)", name)
		}
	}
	if !t.Failed() && changed != "" {
		t.Errorf("the PTX is fresh, but %s: run make kernels and commit what it writes", changed)
	}
}

// changedSince says what differs from the generation sources.sha256
// records: a source or PTX file whose hash is not the one recorded (or
// that is missing, or new), or a PTX header that today's options or NVRTC
// would write otherwise. It is "" where nothing does.
func changedSince(t *testing.T, lib *nvrtc.Library, have map[string][]byte) string {
	t.Helper()
	recorded, err := os.ReadFile(nvrtc.SumsFile)
	if err != nil {
		return "kernels/ptx/" + nvrtc.SumsFile + " does not read (" + err.Error() + ")"
	}
	now, err := nvrtc.Sums(sources, ".", have)
	if err != nil {
		t.Fatal(err)
	}
	if diff := firstDifference(sumLines(recorded), sumLines(now)); diff != "" {
		return "kernels/ptx/" + nvrtc.SumsFile + " " + diff
	}
	major, minor, err := lib.Version()
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range have {
		if !bytes.HasPrefix(text, []byte(nvrtc.Header(strings.TrimSuffix(name, ".ptx")+".cu", major, minor))) {
			return name + "'s header is not what NVRTC " + strconv.Itoa(major) + "." + strconv.Itoa(minor) + " with today's options writes"
		}
	}
	return ""
}

// sumLines reads a manifest in sha256sum's format: hash by path.
func sumLines(manifest []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(manifest)), "\n") {
		if hash, path, ok := strings.Cut(line, "  "); ok {
			out[path] = hash
		}
	}
	return out
}

// firstDifference says, in path order, the first file whose hash differs
// between two manifests, or that one of them lacks ("" where none).
func firstDifference(recorded, now map[string]string) string {
	paths := make([]string, 0, len(recorded)+len(now))
	for p := range recorded {
		paths = append(paths, p)
	}
	for p := range now {
		if _, ok := recorded[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		switch was, is := recorded[p], now[p]; {
		case was == "":
			return "has no line for " + p
		case is == "":
			return "lists " + p + ", which is gone"
		case was != is:
			return "records another hash of " + p
		}
	}
	return ""
}

// TestAssemble runs ptxas on every module for every architecture in archs,
// in parallel, and fails on any error or warning ptxas prints.
func TestAssemble(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(ptxas); err != nil {
		t.Skipf("ptxas is not installed (%v): run make deps", err)
	}
	names := Names()
	if len(names) == 0 {
		t.Fatal("no PTX modules are embedded")
	}
	type job struct{ module, arch string }
	var jobs []job
	for _, m := range names {
		for _, a := range archs {
			jobs = append(jobs, job{m, a})
		}
	}
	// Each ptxas is single-threaded: one per core, and the biggest modules
	// first so that the last to start is a short one.
	sort.SliceStable(jobs, func(i, j int) bool { return size(jobs[i].module) > size(jobs[j].module) })
	dir := t.TempDir()
	start := time.Now()
	var mu sync.Mutex
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			out := filepath.Join(dir, j.module+"."+j.arch+".cubin")
			cmd := exec.CommandContext(ctx, ptxas, "-arch="+j.arch, "-o", out, j.module+".ptx")
			msg, err := cmd.CombinedOutput()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("ptxas -arch=%s %s.ptx: %v\n%s", j.arch, j.module, err, msg)
			} else if len(bytes.TrimSpace(msg)) > 0 {
				t.Errorf("ptxas -arch=%s %s.ptx warns:\n%s", j.arch, j.module, msg)
			}
		}()
	}
	wg.Wait()
	t.Logf("ptxas assembled %d modules for %s in %v", len(names), strings.Join(archs, ", "), time.Since(start).Round(time.Millisecond))
}

// size is a module's PTX length, for scheduling.
func size(module string) int {
	b, _ := Module(module)
	return len(b)
}

// TestModule checks the lookup that the cuda backend loads modules through.
func TestModule(t *testing.T) {
	for _, name := range Names() {
		b, ok := Module(name)
		if !ok || len(b) == 0 || b[len(b)-1] != 0 {
			t.Errorf("Module(%q) = %d bytes, %v: want NUL-terminated PTX", name, len(b), ok)
		}
		if !bytes.Contains(b, []byte(".version 7.")) {
			t.Errorf("Module(%q) has no PTX .version 7.x line", name)
		}
	}
	if _, ok := Module("no_such_module"); ok {
		t.Error(`Module("no_such_module") reports a module`)
	}
}

// TestCastsTestTheRange: a float-to-integer cast compiles to cvt.rzi,
// which saturates past the integer's range (3e9 to 2147483647) and gives
// 0 for NaN, where the cpu and torch on x86 give the most negative
// integer; elementwise.cu's Convert tests the range itself, so every such
// cast entry compares the float before it converts (issue 15, defect 15).
func TestCastsTestTheRange(t *testing.T) {
	src, err := os.ReadFile("elementwise.ptx")
	if err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`(?s)\.visible \.entry (cast_(?:strided(?:32)?_)?f(?:32|64)_i(?:32|64))\((.*?)\n}`)
	compare := regexp.MustCompile(`setp\.\w+\.f(?:32|64)\s`)
	found := 0
	for _, m := range entry.FindAllSubmatch(src, -1) {
		found++
		if !compare.Match(m[2]) {
			t.Errorf("%s converts with no float comparison: cvt's saturation decides out-of-range values", m[1])
		}
	}
	if found != 12 {
		t.Errorf("found %d float-to-integer cast entries, want 12", found)
	}
}

// TestDenseKernelsVectorise: the dense form of every elementwise kernel
// (kernels/cuda/dense.cuh's dense_map: unary, binary, where, cast, fill,
// their float16 and bfloat16 modules, and narrow.cu's conversions)
// must move whole 16-byte Vecs with vector instructions, which is what it
// is for and what the host emulation cannot show: a Vec whose alignment
// NVRTC did not see would compile to one access per element, correct and
// slow. Each such entry has a vector store (st.global.v2/v4), and each
// that reads memory a vector load.
func TestDenseKernelsVectorise(t *testing.T) {
	entry := regexp.MustCompile(`(?s)\.visible \.entry (\w+)\((.*?)\n}`)
	store := regexp.MustCompile(`st\.global\.v[24]\.`)
	// A read-only load (ld.global.nc) where NVRTC can tell the input is
	// not written during the kernel; the trigonometric functions' table
	// reads leave it unsure, so a plain vector load there.
	load := regexp.MustCompile(`ld\.global(?:\.nc)?\.v[24]\.`)
	found := 0
	for _, mod := range []string{"unary", "trig", "binary", "elementwise", "narrow", "unary_f16", "unary_bf16", "trig_f16", "trig_bf16", "binary_f16", "binary_bf16", "elementwise_half"} {
		src, err := os.ReadFile(mod + ".ptx")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range entry.FindAllSubmatch(src, -1) {
			name := string(m[1])
			if strings.Contains(name, "_strided") || strings.HasPrefix(name, "logical_") {
				continue
			}
			found++
			if !store.Match(m[2]) {
				t.Errorf("%s.ptx: %s has no vector store", mod, name)
			}
			if !strings.HasPrefix(name, "fill_") && !load.Match(m[2]) {
				t.Errorf("%s.ptx: %s has no vector load", mod, name)
			}
		}
	}
	if found < 337 {
		t.Errorf("found %d dense elementwise entries, want every op and dtype's (337 since the 16-bit modules)", found)
	}
	t.Logf("%d dense entries vectorise", found)
}
