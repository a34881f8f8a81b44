//go:build !cgo

package dist

import (
	"context"

	"github.com/lathe-ml/lathe"
)

// Without cgo there is no way to call NCCL: the engine is unavailable.

func ncclOpen() error {
	return lathe.NewError("init", lathe.ErrUnavailable, "", "the NCCL engine is unavailable: lathe was built without cgo (CGO_ENABLED=0)",
		"build with CGO_ENABLED=1")
}

func ncclDescribe() string { return "" }

// ncclJoin is never reached: ncclOpen fails first.
func ncclJoin(context.Context, *Group) (deviceEngine, error) { return nil, ncclOpen() }
