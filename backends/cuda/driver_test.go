//go:build cgo

package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// TestLibraryOff: a library's variable set to "off" turns it off, even
// where a name after it would open; set to a path, that path comes first.
func TestLibraryOff(t *testing.T) {
	const env = "LATHE_TEST_LIB"
	t.Setenv(env, "off")
	_, err := openLibrary("libc", env, []string{"libc.so.6"}, nil)
	if !errors.Is(err, dispatch.ErrUnavailable) || !strings.Contains(err.Error(), "libc is turned off (LATHE_TEST_LIB=off)") {
		t.Errorf("with %s=off: %v, want ErrUnavailable saying that it is turned off", env, err)
	}
	t.Setenv(env, "libc.so.6")
	if path, err := openLibrary("libc", env, []string{"libm.so.6"}, nil); err != nil || path != "libc.so.6" {
		t.Errorf("with %s=libc.so.6: opened %q, %v; want libc.so.6", env, path, err)
	}
	t.Setenv(env, "")
	if path, err := openLibrary("libc", env, []string{"/nonexistent/libc.so", "libc.so.6"}, nil); err != nil || path != "libc.so.6" {
		t.Errorf("unset: opened %q, %v; want the first name that opens, libc.so.6", path, err)
	}
}
