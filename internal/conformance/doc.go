// Package conformance runs lathe's op cases on every device lathe can open
// and compares each result with the value PyTorch 1.13 computed for it.
//
// The cases live in testdata/conformance/*.json, made by
// build/torchref/gen.py (see its README). Each case names an op key; ops.go
// maps the key to the lathe call, so a case is data and a new op is one line
// in the table. Tolerances are stated in one place, tolerance.go.
//
// The package sits on the root lathe package only, as a user would, and is
// internal because its API is the test table, not a library. Ops that are
// not yet in this build have their table entries in ops_pending.go behind the
// "pending" build tag; without it their cases are skipped by name.
package conformance
