package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// SharedLibrary builds the C file src into a shared library in a folder of
// t's, with the C compiler $CC (cc where unset), and returns its path. It
// skips t where there is no C compiler: the stand-ins for GPU libraries
// that the tests build this way are what they need a compiler for.
func SharedLibrary(t testing.TB, src string) string {
	t.Helper()
	cc, err := exec.LookPath(os.Getenv("CC"))
	if os.Getenv("CC") == "" || err != nil {
		if cc, err = exec.LookPath("cc"); err != nil {
			t.Skipf("no C compiler to build %s", src)
		}
	}
	lib := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), ".c")+".so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", src, err, out)
	}
	return lib
}
