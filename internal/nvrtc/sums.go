package nvrtc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
)

// SumsFile is the name of the manifest that `make kernels` writes beside
// the PTX it generates.
const SumsFile = "sources.sha256"

// Sums is the manifest of a generation: the SHA-256 of every source in
// srcDir (the .cu files and the .cuh headers they include) and of every
// generated file in ptx, in sha256sum's format with paths relative to
// outDir, where it is written (so `sha256sum -c sources.sha256` run there
// checks it). The PTX is a function of these sources and of Header's
// options and NVRTC version, which each file's first lines carry; so a
// tree whose sources and PTX match its manifest, and whose headers are
// current, holds the PTX that `make kernels` gives, without compiling it
// again (NVRTC takes minutes over lathe's kernels).
func Sums(srcDir, outDir string, ptx map[string][]byte) ([]byte, error) {
	var srcs []string
	for _, pattern := range []string{"*.cu", "*.cuh"} {
		found, err := filepath.Glob(filepath.Join(srcDir, pattern))
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, found...)
	}
	sort.Strings(srcs)
	var b bytes.Buffer
	line := func(name string, content []byte) {
		sum := sha256.Sum256(content)
		b.WriteString(hex.EncodeToString(sum[:]) + "  " + filepath.ToSlash(name) + "\n")
	}
	for _, path := range srcs {
		content, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(outDir, path)
		if err != nil {
			return nil, err
		}
		line(rel, content)
	}
	names := make([]string, 0, len(ptx))
	for name := range ptx {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		line(name, ptx[name])
	}
	return b.Bytes(), nil
}
