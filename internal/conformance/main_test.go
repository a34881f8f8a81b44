package conformance

import (
	"fmt"
	"os"
	"testing"

	"github.com/lathe-ml/lathe/backends/cuda"
)

// TestMain hands the cuda devices back to the driver after the tests, so
// that compute-sanitizer's leak check (make gpu-check's memcheck step)
// reports what is left when the primary context is destroyed.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := cuda.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}
