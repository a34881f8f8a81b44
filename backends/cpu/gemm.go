package cpu

// gemmName says which BLAS serves matrix products.
func gemmName() string { return "gonum" }
