package cuda

import "github.com/lathe-ml/lathe/kernels/ptx"

// moduleSource returns the PTX text of module name (kernels/ptx/<name>.ptx,
// embedded in the binary, NUL-terminated as cuModuleLoadData wants) and
// whether there is one. A variable, so that tests can stand in for it.
var moduleSource = ptx.Module
