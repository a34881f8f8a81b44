package cuda

// moduleSource returns the PTX text of module name (kernels/ptx/<name>.ptx,
// embedded in the binary) and whether there is one. The kernels package is
// wired in here where it exists; until then no module is found, and every
// launch is an ErrUnsupported error naming the module.
var moduleSource = func(name string) ([]byte, bool) { return nil, false }
