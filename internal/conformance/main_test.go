package conformance

import (
	"fmt"
	"os"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestMain hands the devices' driver state back after the tests, so
// that compute-sanitizer's leak check (make gpu-check's memcheck step)
// reports what is left when the primary context is destroyed.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := lathe.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}
