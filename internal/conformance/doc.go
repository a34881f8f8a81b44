// Package conformance runs lathe's op cases on every device lathe can open
// and compares each result with the value PyTorch 1.13 computed for it.
//
// The cases live in testdata/conformance/*.json, made by
// build/torchref/gen.py (see its README). Each case names an op key; ops.go
// maps the key to the lathe call, so a case is data and a new op is one line
// in the table. Tolerances are stated in one place, tolerance.go.
//
// The gradient cases (grad.json, grad_cases.go) run the same table with the
// float inputs requiring gradients and compare lathe.Grad with torch's
// gradients, on every device, and on the CPU with central differences too
// (grad_test.go). A case whose graph meets an op without a gradient rule in
// this build is skipped, naming the op.
//
// The package sits on the root lathe package only, as a user would, and is
// internal because its API is the test table, not a library.
package conformance
