package dist

import (
	"context"

	"github.com/lathe-ml/lathe"
)

// newNCCLGroup is the NCCL engine's Init.
func newNCCLGroup(ctx context.Context, g *Group) error {
	return lathe.NewError("init", lathe.ErrUnavailable, "", "the NCCL engine is not wired to cuda tensors yet", "")
}
