// Package refbackend is a fourth backend, for tests only: "ref", host
// memory of float32s and int32s with a handful of kernels in plain loops.
// It exists to show, and to test, that a backend is a folder and a blank
// import: it registers itself by name, its device parses and opens through
// the registry, and whatever it lacks (an op's kernel, a dtype, a caching
// allocator, a value checker) is answered by dispatch the same way as for
// any backend. Nothing outside this folder names it.
package refbackend
