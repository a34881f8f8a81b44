//go:build !cgo

package dist

import (
	"context"

	"github.com/lathe-ml/lathe"
)

// Without cgo there is no way to call MPI: the engine is unavailable.

func noCgoMPI() error {
	return lathe.NewError("init", lathe.ErrUnavailable, "", "the MPI engine is unavailable: lathe was built without cgo (CGO_ENABLED=0), and it calls Open MPI through cgo",
		"build with CGO_ENABLED=1")
}

func openMPI() error { return noCgoMPI() }

func newMPIEngine(ctx context.Context) (hostEngine, error) { return nil, noCgoMPI() }
