package lathe

// The backends lathe links. Each registers itself with dispatch by name in
// its init, as a database/sql driver does; this is the one place the root
// package names them, and nothing above dispatch imports one otherwise.
import (
	_ "github.com/lathe-ml/lathe/backends/cpu"  // registers cpu
	_ "github.com/lathe-ml/lathe/backends/cuda" // registers cuda
	_ "github.com/lathe-ml/lathe/backends/wgpu" // registers wgpu
)
