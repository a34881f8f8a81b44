// Package dist is lathe's data-parallel training across processes, as
// torch.distributed: a process group (Init, from the launcher's
// environment: mpirun's OMPI_COMM_WORLD_* or torchrun's RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR and MASTER_PORT), collectives on tensors
// (AllReduce, Broadcast, AllGather, ReduceScatter, Send and Recv, each
// returning a new tensor, since lathe's tensors do not change), DDP,
// which keeps a model's replicas in step by averaging their gradients,
// and Sampler, which splits a data set among the ranks.
//
// The collectives run on engines that people already run, loaded with
// dlopen at run time as the CUDA driver is, so the package builds
// everywhere (also with CGO_ENABLED=0) and an engine that does not open is
// an ErrUnavailable that says why: Open MPI (libmpi.so.40) for cpu
// tensors under mpirun, and NCCL (libnccl.so.2) for cuda tensors. Under
// torchrun, cpu tensors (and a cuda group's headers) go over lathe's own
// TCP engine, as PyTorch's gloo: no library to load. A lone process is a
// group of one that needs none.
//
// Every call takes a context.Context. MPI's calls are made non-blocking
// (MPI_Iallreduce, ...) and polled with MPI_Test against the context, so a
// slow, hung or dead peer ends a call with an error by its deadline, never
// a hang; since a started collective cannot be taken back, the group is
// unusable after that, and says so. Before its data moves, every
// collective checks with every rank that they all made the same call on
// tensors of the same dtype and shape, so a mismatch or a bad tensor on
// one rank is an error on every rank, and the group goes on.
//
// dist sits on the root package and nn (DESIGN.md); the files: env.go
// (the launcher's variables), group.go (Init, Group), collectives.go and
// p2p.go (the calls and their checks), hostdata.go (tensors to host
// bytes and back), engine.go (the transport contract, and the group of
// one), mpi.go with mpi_shim.c and cdecl.h (the Open MPI binding),
// nccl.go (the NCCL binding) and nccl_group.go (a group of cuda tensors
// over it), tcp.go (the TCP engine) and tcp_rendezvous.go (how its ranks
// meet at MASTER_ADDR:MASTER_PORT), ddp.go (DataParallel,
// Sampler) and ddp_sync.go (the buckets of gradients, all-reduced while
// the backward pass runs).
package dist
