package cudaemu

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrUnavailable is the cause when the emulation cannot be built or opened
// on this machine: no C++20 compiler (g++, or $CXX) or no cgo. Tests skip
// on it; any other error of Load is a failure.
var ErrUnavailable = errors.New("cudaemu: the CUDA host emulation is unavailable")

// simt emulates the CUDA built-ins the kernels use (simt.h).
//
//go:embed simt.h
var simt string

// runtime is the C++ side of the library: the kernels' table, filled by
// each module's translation unit, and the launch entry point.
const runtime = `#include "simt.h"
#include <map>
#include <string>
#include <utility>

typedef void (*lathe_emu_caller)(void *, void **);
std::map<std::string, std::pair<void *, lathe_emu_caller>> &lathe_emu_table();

template <typename... A, size_t... I>
void lathe_emu_apply(void (*f)(A...), void **a, std::index_sequence<I...>) { f(*(A *)a[I]...); }

template <typename... A>
lathe_emu_caller lathe_emu_caller_of(void (*)(A...)) {
	return [](void *f, void **a) { lathe_emu_apply((void (*)(A...))f, a, std::index_sequence_for<A...>{}); };
}

struct lathe_emu_reg {
	template <typename F>
	lathe_emu_reg(const char *name, F *f) { lathe_emu_table()[name] = {(void *)f, lathe_emu_caller_of(f)}; }
};
`

// entryPoint defines the table, simt.h's context switch (SIMT_MAIN) and
// lathe_emu_launch, which returns -1 for a kernel not in the table, else
// simt.h's launch's result. Launches run one at a time, whatever thread
// calls (the Go side, or the stand-in driver on the backend's threads):
// simt.h's grid, block, fiber and barrier state is the library's.
const entryPoint = `#define SIMT_MAIN
#include "runtime.h"
#include <mutex>
std::map<std::string, std::pair<void *, lathe_emu_caller>> &lathe_emu_table() {
	static std::map<std::string, std::pair<void *, lathe_emu_caller>> t;
	return t;
}
struct lathe_emu_job {
	std::pair<void *, lathe_emu_caller> kernel;
	void **args;
};
extern "C" int lathe_emu_launch(const char *name, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, void **args) {
	static std::mutex one_at_a_time;
	std::lock_guard<std::mutex> hold(one_at_a_time);
	auto it = lathe_emu_table().find(name);
	if (it == lathe_emu_table().end()) return -1;
	lathe_emu_job job{it->second, args};
	return launch(dim3(gx, gy, gz), dim3(bx, by, bz), [](void *j) {
		auto *job = (lathe_emu_job *)j;
		job->kernel.second(job->kernel.first, job->args);
	}, &job);
}
`

// cxxFlags compile every translation unit. -O0: the kernels run on small
// inputs, and optimising hundreds of template instantiations would be most
// of the build.
var cxxFlags = []string{"-std=c++20", "-O0", "-fPIC", "-w"}

var entryRE = regexp.MustCompile(`\.visible \.entry (\w+)\(`)

// sources are the library's C++ files by name: simt.h, runtime.h, the
// entry point, and one file per module of kernels/ptx (under root, the
// repository) that includes the module's kernels/cuda source and registers
// the kernels its PTX has, so the table holds exactly what the backend can
// launch.
func sources(root string) (map[string]string, error) {
	srcs := map[string]string{"simt.h": simt, "runtime.h": runtime, "entry.cpp": entryPoint}
	ptxs, err := filepath.Glob(filepath.Join(root, "kernels/ptx/*.ptx"))
	if err == nil && len(ptxs) == 0 {
		err = fmt.Errorf("cudaemu: no PTX modules in %s", filepath.Join(root, "kernels/ptx"))
	}
	if err != nil {
		return nil, err
	}
	for _, p := range ptxs {
		mod := strings.TrimSuffix(filepath.Base(p), ".ptx")
		text, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "#include \"runtime.h\"\n#include \"%s.cu\"\n", mod)
		for i, m := range entryRE.FindAllSubmatch(text, -1) {
			fmt.Fprintf(&b, "static lathe_emu_reg r%d(%q, &%s);\n", i, m[1], m[1])
		}
		srcs[mod+".cpp"] = b.String()
	}
	return srcs, nil
}

// build compiles srcs (with root's kernels/cuda on the include path) with
// cxx and flags into dir/libcudaemu.so, one translation unit per module in
// parallel, and returns the library's path.
func build(cxx, root, dir string, flags []string, srcs map[string]string) (string, error) {
	cudaDir := filepath.Join(root, "kernels/cuda")
	var units []string
	for n, text := range srcs {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(text), 0o644); err != nil {
			return "", err
		}
		if strings.HasSuffix(n, ".cpp") {
			units = append(units, n)
		}
	}
	sort.Strings(units)
	var wg sync.WaitGroup
	errs := make([]error, len(units))
	objs := make([]string, len(units))
	for i, n := range units {
		src := filepath.Join(dir, n)
		objs[i] = strings.TrimSuffix(src, ".cpp") + ".o"
		wg.Go(func() {
			args := append(flags[:len(flags):len(flags)], "-I"+dir, "-I"+cudaDir, "-c", "-o", objs[i], src)
			if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("cudaemu: %s %s: %v\n%s", cxx, n, err, firstLines(out, 30))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	lib := filepath.Join(dir, "libcudaemu.so")
	args := append(append(flags[:len(flags):len(flags)], "-shared", "-o", lib), objs...)
	if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("cudaemu: %s -shared: %v\n%s", cxx, err, out)
	}
	for _, o := range objs {
		os.Remove(o)
	}
	return lib, nil
}

func firstLines(b []byte, n int) []byte {
	lines := bytes.SplitN(b, []byte("\n"), n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return bytes.Join(lines, []byte("\n"))
}

var loads sync.Map // absolute root -> func() (*Emulator, error)

// Load returns the emulation of the kernels under root (the repository's
// folder: kernels/cuda and kernels/ptx), Library's, opened. An error wraps
// ErrUnavailable where there is no compiler or no cgo.
func Load(root string) (*Emulator, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	f, _ := loads.LoadOrStore(abs, sync.OnceValues(func() (*Emulator, error) {
		if !cgoEnabled {
			return nil, fmt.Errorf("%w: opening the library needs cgo", ErrUnavailable)
		}
		lib, err := Library(abs)
		if err != nil {
			return nil, err
		}
		return Open(lib)
	}))
	return f.(func() (*Emulator, error))()
}

var libraries sync.Map // absolute root and flags -> func() (string, error)

// Library returns the path of the emulation library of the kernels under
// root, compiled with the C++ compiler $CXX (g++ where unset): a shared
// library whose lathe_emu_launch takes cuLaunchKernel's arguments (a
// kernel's name, the grid, the block, the parameters' addresses). A
// process builds it at most once per root, and processes share builds
// through the user's cache folder (lathe/cudaemu), keyed by a hash of every
// source, the compiler's version and the flags, so a test run whose kernels
// have not changed builds nothing. An error wraps ErrUnavailable where
// there is no compiler.
func Library(root string) (string, error) { return libraryOnce(root, cxxFlags) }

// sanitizeFlags build the library with AddressSanitizer.
var sanitizeFlags = []string{"-fsanitize=address", "-fno-omit-frame-pointer"}

// SanitizedLibrary is Library built with AddressSanitizer: a kernel that
// reads or writes outside the allocation it reaches stops the process with
// ASan's report, which names the kernel. A process that opens it must
// have loaded ASan's runtime first (LD_PRELOAD=ASanRuntime()).
func SanitizedLibrary(root string) (string, error) {
	return libraryOnce(root, append(cxxFlags[:len(cxxFlags):len(cxxFlags)], sanitizeFlags...))
}

// ASanRuntime returns the path of the C++ compiler's AddressSanitizer
// runtime (libasan), or an error wrapping ErrUnavailable where it has none.
func ASanRuntime() (string, error) {
	cxx, err := compiler()
	if err != nil {
		return "", err
	}
	out, err := exec.Command(cxx, "-print-file-name=libasan.so").Output()
	path := strings.TrimSpace(string(out))
	if err == nil && filepath.IsAbs(path) {
		if path, err = filepath.EvalSymlinks(path); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("%w: %s has no AddressSanitizer runtime (libasan)", ErrUnavailable, cxx)
}

func libraryOnce(root string, flags []string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	key := abs + "\x00" + strings.Join(flags, " ")
	f, _ := libraries.LoadOrStore(key, sync.OnceValues(func() (string, error) { return library(abs, flags) }))
	return f.(func() (string, error))()
}

// compiler returns the path of the C++ compiler: $CXX, or g++.
func compiler() (string, error) {
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	path, err := exec.LookPath(cxx)
	if err != nil {
		return "", fmt.Errorf("%w: no C++ compiler (%v): install g++ to run the CUDA kernels on the host", ErrUnavailable, err)
	}
	return path, nil
}

func library(root string, flags []string) (string, error) {
	path, err := compiler()
	if err != nil {
		return "", err
	}
	version, err := exec.Command(path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s --version: %v", ErrUnavailable, path, err)
	}
	srcs, err := sources(root)
	if err != nil {
		return "", err
	}
	key, err := buildKey(root, path, version, flags, srcs)
	if err != nil {
		return "", err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	base = filepath.Join(base, "lathe", "cudaemu")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	// The lock makes a second process wait for the first's build instead
	// of repeating it; correctness does not depend on it, as a build is
	// published by renaming its folder into place.
	unlock := lock(filepath.Join(base, "lock"))
	defer unlock()
	lib := filepath.Join(base, key, "libcudaemu.so")
	if fi, err := os.Stat(lib); err == nil {
		if time.Since(fi.ModTime()) > 24*time.Hour {
			now := time.Now()
			os.Chtimes(lib, now, now) // marks it used, for prune; daily, so go test's cache sees no change
		}
	} else {
		tmp, err := os.MkdirTemp(base, "build-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(tmp) // gone after the rename, unless it failed
		if _, err := build(path, root, tmp, flags, srcs); err != nil {
			return "", err
		}
		if err := os.Rename(tmp, filepath.Join(base, key)); err != nil {
			if _, err2 := os.Stat(lib); err2 != nil {
				return "", err // not another process's build in place
			}
		}
		prune(base, key)
	}
	return lib, nil
}

// buildKey hashes everything a build depends on: the compiler and its
// version, the flags, the generated sources and every file of kernels/cuda.
func buildKey(root, cxx string, version []byte, flags []string, srcs map[string]string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%q\x00", cxx, version, flags)
	names := make([]string, 0, len(srcs))
	for n := range srcs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00%s", n, len(srcs[n]), srcs[n])
	}
	cudaDir := filepath.Join(root, "kernels/cuda")
	entries, err := os.ReadDir(cudaDir)
	if err != nil {
		return "", err
	}
	for _, e := range entries { // sorted by name
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(cudaDir, e.Name()))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "cuda/%s\x00%d\x00%s", e.Name(), len(b), b)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// prune removes the cache's builds unused for a week (other worktrees'
// and older sources') and build folders left by a killed process.
func prune(base, keep string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		name := filepath.Join(base, e.Name())
		if !e.IsDir() || e.Name() == keep {
			continue
		}
		at, age := name, 7*24*time.Hour
		if strings.HasPrefix(e.Name(), "build-") {
			age = time.Hour
		} else {
			at = filepath.Join(name, "libcudaemu.so")
		}
		if fi, err := os.Stat(at); err == nil && time.Since(fi.ModTime()) > age {
			os.RemoveAll(name)
		}
	}
}
