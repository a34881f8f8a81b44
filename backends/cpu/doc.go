// Package cpu is lathe's CPU backend: plain Go loops, spread over goroutines
// for large tensors, and gonum's BLAS for matrix products. It is always
// available; importing it registers the "cpu" device with dispatch.
//
// A cpu buffer is a Go slice of the dtype's type ([]float32, ..., []bool),
// so memory is the garbage collector's and Release only returns it sooner.
package cpu
