package cudaemu

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

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

const entryPoint = `#include "runtime.h"
std::map<std::string, std::pair<void *, lathe_emu_caller>> &lathe_emu_table() {
	static std::map<std::string, std::pair<void *, lathe_emu_caller>> t;
	return t;
}
extern "C" int lathe_emu_launch(const char *name, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, void **args) {
	auto it = lathe_emu_table().find(name);
	if (it == lathe_emu_table().end()) return -1;
	auto e = it->second;
	launch(dim3(gx, gy, gz), dim3(bx, by, bz), [&] { e.second(e.first, args); });
	return 0;
}
`

var entryRE = regexp.MustCompile(`\.visible \.entry (\w+)\(`)

// Build compiles every kernels/cuda/*.cu (under root, the repository) with
// cxx into dir/libcudaemu.so and returns its path. The kernels of each
// module are found from its PTX (kernels/ptx), so the table holds exactly
// what the backend can launch.
func Build(cxx, root, dir string) (string, error) {
	cudaDir, emuDir := filepath.Join(root, "kernels/cuda"), filepath.Join(root, "kernels/emu/testdata")
	if err := os.WriteFile(filepath.Join(dir, "runtime.h"), []byte(runtime), 0o644); err != nil {
		return "", err
	}
	srcs := map[string]string{"entry.cpp": entryPoint}
	ptxs, _ := filepath.Glob(filepath.Join(root, "kernels/ptx/*.ptx"))
	for _, p := range ptxs {
		mod := strings.TrimSuffix(filepath.Base(p), ".ptx")
		text, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "#include \"runtime.h\"\n#include \"%s.cu\"\n", mod)
		for i, m := range entryRE.FindAllSubmatch(text, -1) {
			fmt.Fprintf(&b, "static lathe_emu_reg r%d(%q, &%s);\n", i, m[1], m[1])
		}
		srcs[mod+".cpp"] = b.String()
	}
	names := make([]string, 0, len(srcs))
	for n := range srcs {
		names = append(names, n)
	}
	sort.Strings(names)
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	objs := make([]string, len(names))
	for i, n := range names {
		src := filepath.Join(dir, n)
		if err := os.WriteFile(src, []byte(srcs[n]), 0o644); err != nil {
			return "", err
		}
		objs[i] = strings.TrimSuffix(src, ".cpp") + ".o"
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(cxx, "-std=c++20", "-O0", "-fPIC", "-pthread", "-w", "-I"+dir, "-I"+cudaDir, "-I"+emuDir, "-c", "-o", objs[i], src)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("%s %s: %v\n%s", cxx, n, err, firstLines(out, 30))
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return "", err
		}
	}
	lib := filepath.Join(dir, "libcudaemu.so")
	args := append([]string{"-shared", "-pthread", "-o", lib}, objs...)
	if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s -shared: %v\n%s", cxx, err, out)
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
