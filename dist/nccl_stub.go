package dist

import (
	"context"

	"github.com/lathe-ml/lathe"
)

// newNCCLGroup is the NCCL engine's Init. The binding (nccl.go) and the
// rendezvous of its unique id (store.go, or MPI under mpirun) are in
// place; what is missing is the way to cuda tensors' device memory and
// stream, which the cuda backend does not yet hand to packages above
// dispatch. Until it does, the engine reports why it cannot run.
func newNCCLGroup(ctx context.Context, g *Group) error {
	if err := ncclOpen(); err != nil {
		return err
	}
	return lathe.NewError("init", lathe.ErrUnsupported, "cfg.Device", "is "+g.dev.String()+": NCCL opened ("+ncclDescribe()+
		"), but lathe's cuda tensors do not yet give dist their device memory and stream", "train on lathe.CPU over MPI for now")
}
