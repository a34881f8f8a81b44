package dist

import (
	"os"
	"testing"
)

// unsetenv removes v for the rest of the test (t.Setenv has restored it
// by the end).
func unsetenv(t *testing.T, v string) {
	t.Helper()
	os.Unsetenv(v)
}
