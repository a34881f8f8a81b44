// Package ptx carries lathe's CUDA kernels, compiled to PTX, into the
// binary. The .ptx files are generated from kernels/cuda/*.cu by
// `make kernels` (go run ./build/nvrtc) and committed, so that building
// lathe needs no CUDA toolkit; `make test` checks that they are what the
// sources give (through the manifest sources.sha256 that make kernels
// writes beside them) and that ptxas assembles each for sm_90, and
// `make ptx-archs` assembles each for every architecture from sm_70.
// The cuda backend loads a module by name, once per device
// (cuModuleLoadData), and the driver compiles it for the GPU at hand.
package ptx

import (
	"embed"
	"sort"
	"strings"
)

//go:embed *.ptx
var files embed.FS

// Module returns the PTX text of module name (elementwise, reduce, ...),
// NUL-terminated as cuModuleLoadData needs it, and whether there is one.
func Module(name string) ([]byte, bool) {
	b, err := files.ReadFile(name + ".ptx")
	if err != nil {
		return nil, false
	}
	return append(b, 0), true
}

// Names lists the modules, sorted.
func Names() []string {
	entries, _ := files.ReadDir(".") // an embedded folder always reads
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".ptx"))
	}
	sort.Strings(names)
	return names
}
