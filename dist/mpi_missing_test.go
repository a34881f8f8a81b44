package dist

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestMPIMissing: where Open MPI does not open (LATHE_MPI_LIB names no
// library), Init under mpirun's variables is an ErrUnavailable that says
// what to install, at the caller's site, not a crash. It runs in a child process, since a
// process opens the library once.
func TestMPIMissing(t *testing.T) {
	if os.Getenv("LATHE_MPI_MISSING_CHILD") == "1" {
		g, err := Init(context.Background(), Config{})
		if g != nil || !errors.Is(err, lathe.ErrUnavailable) {
			fmt.Printf("child: Init gave %v, %v; want ErrUnavailable\n", g, err)
			os.Exit(1)
		}
		fmt.Printf("child: %v\n", err)
		os.Exit(0)
	}
	out, err := testenv.RunChild("TestMPIMissing", "LATHE_MPI_MISSING_CHILD=1", "LATHE_MPI_LIB=/nonexistent/libmpi.so.40",
		"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=0")
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the child failed: %v", err)
	}
	if !strings.Contains(string(out), "child: ") || !strings.Contains(string(out), "Open MPI") {
		t.Errorf("the child's error does not name Open MPI:\n%s", out)
	}
	// The error is made inside a sync.Once; its site is still the caller's.
	if !strings.Contains(string(out), "[called at mpi_missing_test.go:") {
		t.Errorf("the child's error does not give Init's caller as its site:\n%s", out)
	}
}
