//go:build !cgo

package cpu

// openBLAS is unavailable in a build without cgo: gonum does the work.
func openBLAS() (gemmFunc[float32], gemmFunc[float64], string, string) {
	return nil, nil, "", "built without cgo"
}
