package dist

import (
	"context"
	"sync"

	"github.com/lathe-ml/lathe"
)

// Engine names a transport.
type Engine string

// The engines.
const (
	// Auto picks NCCL for cuda tensors; for cpu tensors MPI under mpirun,
	// TCP under torchrun, and no transport for a job of one.
	Auto Engine = ""
	// MPI is Open MPI (libmpi.so.40), for cpu tensors.
	MPI Engine = "mpi"
	// TCP is lathe's own transport between the processes that torchrun
	// started (or any launcher that sets RANK, WORLD_SIZE, MASTER_ADDR and
	// MASTER_PORT), as PyTorch's gloo: connections between every pair of
	// ranks, met at MASTER_ADDR:MASTER_PORT, and ring collectives. For cpu
	// tensors.
	TCP Engine = "tcp"
	// NCCL is NVIDIA's collectives library (libnccl.so.2), for cuda tensors.
	NCCL Engine = "nccl"
)

// Config says how to build a group. The zero Config is a group of cpu
// tensors over whatever the launcher set up.
type Config struct {
	// Device is where the group's tensors live: lathe.CPU (the zero
	// value), or lathe.CUDA(i) for NCCL, where i is usually the launcher's
	// local rank (Env().LocalRank).
	Device lathe.Device
	// Engine forces a transport; Auto chooses by device and launcher.
	Engine Engine
}

// Group is a set of processes that run collectives together, as
// torch.distributed's process group. Every process of the job makes one
// with Init, and calls the group's collectives in the same order with
// tensors of matching shapes: a collective is a meeting of all ranks.
//
// A Group is safe for use by several goroutines, but collectives from
// several goroutines must still be issued in the same order on every rank,
// which in practice means one goroutine per group. Every call takes a
// context: a call that a slow, hung or dead peer holds up ends by the
// context's deadline with an error (wrapping context.DeadlineExceeded)
// instead of hanging. A collective cannot be taken back once started, so
// after such an error the group is unusable, and every later call returns
// an error saying so; Recv alone stays usable after its deadline. A call
// whose context has already ended starts nothing and returns an error
// wrapping the context's cause, on one rank as on many.
type Group struct {
	rank, size, localRank int
	dev                   lathe.Device
	engine                Engine
	host                  hostEngine   // cpu tensors, and every group's headers
	comm                  deviceEngine // cuda tensors (NCCL); nil in a cpu group
	env                   Environment
	copies                hostPool // memory for the copies of MPI's calls

	mu     sync.Mutex
	p2p    map[[2]int]*sync.Mutex // Send's and Recv's locks by direction and peer (p2pLock)
	closed bool
	broken bool // a device collective passed its deadline and was aborted
}

// Init makes this process's group from the launcher's environment (Env):
// under mpirun, over MPI; under torchrun, over TCP; as a lone process, a
// group of one that needs no transport. A cuda group's collectives go over
// NCCL, and their headers over MPI or TCP, as the launcher's. It waits, by
// ctx's deadline, for every process of the job to start. A launcher
// variable that does not parse is an ErrValue; an engine that does not
// open here (no Open MPI, no NCCL, a build without cgo) is an
// ErrUnavailable with the reason; a device the engine does not serve is an
// ErrDevice.
func Init(ctx context.Context, cfg Config) (*Group, error) {
	env, err := Env()
	if err != nil {
		return nil, err
	}
	g := &Group{rank: env.Rank, size: env.Size, localRank: env.LocalRank, dev: cfg.Device, env: env}
	if ctx == nil {
		return nil, lathe.NewError("init", lathe.ErrValue, "ctx", "is nil", "pass context.Background() or a context with a deadline")
	}
	engine := cfg.Engine
	if engine == Auto {
		switch {
		case cfg.Device.Kind == lathe.CUDA(0).Kind:
			engine = NCCL
		case env.Launcher == MPIRun:
			engine = MPI
		case env.Launcher == TorchRun && env.Size > 1:
			engine = TCP
		}
	}
	g.engine = engine
	switch engine {
	case Auto:
		if cfg.Device != lathe.CPU {
			return nil, deviceError("init", "cfg.Device", cfg.Device, "the group's engines serve cpu (MPI, TCP) and cuda (NCCL) tensors",
				"use lathe.CPU or a cuda device")
		}
		g.host = selfEngine{}
	case MPI:
		if cfg.Device != lathe.CPU {
			return nil, deviceError("init", "cfg.Device", cfg.Device, "the MPI engine moves cpu tensors", "use lathe.CPU, or the NCCL engine for cuda tensors")
		}
		e, err := newMPIEngine(ctx)
		if err != nil {
			return nil, err
		}
		g.host = e
		g.rank, g.size = e.place()
	case TCP:
		if cfg.Device != lathe.CPU {
			return nil, deviceError("init", "cfg.Device", cfg.Device, "the TCP engine moves cpu tensors", "use lathe.CPU, or the NCCL engine for cuda tensors")
		}
		e, err := newTCPEngine(ctx, env)
		if err != nil {
			return nil, err
		}
		g.host = e
	case NCCL:
		if err := newNCCLGroup(ctx, g); err != nil {
			return nil, err
		}
	default:
		return nil, lathe.NewError("init", lathe.ErrValue, "cfg.Engine", "is "+string(engine)+", not an engine lathe has", "use dist.Auto, dist.MPI, dist.TCP or dist.NCCL")
	}
	return g, nil
}

// Rank is this process's place in the group, from 0 to Size()-1.
func (g *Group) Rank() int { return g.rank }

// Size is how many processes the group has.
func (g *Group) Size() int { return g.size }

// LocalRank is this process's place among the group's processes on its
// machine, as the launcher said: the index of the GPU it should use.
func (g *Group) LocalRank() int { return g.localRank }

// Device is where the group's tensors live.
func (g *Group) Device() lathe.Device { return g.dev }

// String describes the group: rank, size, engine and library.
func (g *Group) String() string {
	if g == nil {
		return "dist.Group(nil)"
	}
	return "rank " + itoa(g.rank) + " of " + itoa(g.size) + " on " + g.dev.String() + " over " + g.host.describe()
}

// Barrier returns once every process of the group has called it (or
// ctx's deadline passes, with an error).
func (g *Group) Barrier(ctx context.Context) error {
	const op = "barrier"
	if err := g.usable(op, ctx); err != nil {
		return err
	}
	// The header exchange that opens every collective is a barrier, and
	// checks that every rank called Barrier.
	_, err := g.agree(ctx, &call{op: op, kind: kindBarrier}, true)
	return err
}

// Close ends the group. When it is the last group of a process that
// lathe's MPI engine initialised, it finalizes MPI, which waits for the
// other processes to finalize too (mpirun counts a process that exits
// without it as failed); after a collective broke the group, for 5 s at
// most (a peer that broke it may be dead), then Close returns an
// ErrUnavailable and the process should exit. Using a closed group is an
// ErrValue; closing it again does nothing.
func (g *Group) Close() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	var err error
	if g.comm != nil {
		err = lathe.WithStream(g.dev, func(uintptr) error { return g.comm.destroy() })
	}
	if herr := g.host.close(); err == nil {
		err = herr
	}
	if err != nil {
		return opError("close", err)
	}
	return nil
}

// usable checks the group and the context before a call.
func (g *Group) usable(op string, ctx context.Context) error {
	if g == nil || g.host == nil {
		return lathe.NewError(op, lathe.ErrValue, "g", "is a nil or zero group", "make groups with dist.Init")
	}
	if ctx == nil {
		return lathe.NewError(op, lathe.ErrValue, "ctx", "is nil", "pass context.Background() or a context with a deadline")
	}
	if ctx.Err() != nil {
		// Checked here, not left to the engine's first wait, which a group
		// of one rank never makes.
		e := lathe.NewError(op, lathe.ErrUnavailable, "ctx", "had ended before the call", "give the call a context that has not ended")
		e.Err = context.Cause(ctx)
		return e
	}
	g.mu.Lock()
	closed, broken := g.closed, g.broken
	g.mu.Unlock()
	if closed {
		return lathe.NewError(op, lathe.ErrValue, "g", "is closed", "use the group before Close")
	}
	if broken {
		return lathe.NewError(op, lathe.ErrUnavailable, "g", "is unusable: a collective passed its deadline and NCCL's communicator was aborted",
			"close the group and end the job (every process must start again)")
	}
	return nil
}

func deviceError(op, arg string, dev lathe.Device, detail, fix string) error {
	e := lathe.NewError(op, lathe.ErrDevice, arg, "is "+dev.String()+", but "+detail, fix)
	e.Found = dev.String()
	return e
}
