// Command nvrtc compiles lathe's CUDA C kernels (kernels/cuda/*.cu) to PTX
// (kernels/ptx/*.ptx) with NVRTC, which `make deps` puts in .deps/cuda.
// `make kernels` runs it from the repository root; the PTX it writes is
// committed, and `make test` checks that it is what the sources give.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/lathe-ml/lathe/internal/nvrtc"
)

func main() {
	lib := flag.String("lib", ".deps/cuda/lib/libnvrtc.so.11.2", "the NVRTC library to open")
	src := flag.String("src", "kernels/cuda", "folder of the .cu sources")
	out := flag.String("out", "kernels/ptx", "folder the .ptx files are written to")
	flag.Parse()
	if err := run(*lib, *src, *out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(libPath, srcDir, outDir string) error {
	lib, err := nvrtc.Open(libPath)
	if err != nil {
		return err
	}
	files, err := nvrtc.Generate(lib, srcDir)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := write(filepath.Join(outDir, name), files[name]); err != nil {
			return err
		}
	}
	// The manifest, which lets make test see that the PTX is fresh
	// without compiling it again (kernels/ptx's TestFresh).
	sums, err := nvrtc.Sums(srcDir, outDir, files)
	if err != nil {
		return err
	}
	if err := write(filepath.Join(outDir, nvrtc.SumsFile), sums); err != nil {
		return err
	}
	// A .ptx whose source is gone would still be embedded: remove it.
	stale, err := filepath.Glob(filepath.Join(outDir, "*.ptx"))
	if err != nil {
		return err
	}
	for _, path := range stale {
		if _, ok := files[filepath.Base(path)]; !ok {
			if err := os.Remove(path); err != nil {
				return err
			}
			fmt.Println("removed", path)
		}
	}
	return nil
}

// write writes content to path where it differs from what path holds:
// unchanged files are left alone, so their times do not move.
func write(path string, content []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
		return nil
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return nil
}
