package dist

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe"
)

// Launcher names what started the process, as Env finds it.
type Launcher string

// The launchers Env knows.
const (
	// Alone is a process that no launcher started: a group of one.
	Alone Launcher = "none"
	// MPIRun is Open MPI's mpirun (or mpiexec), which sets OMPI_COMM_WORLD_*.
	MPIRun Launcher = "mpirun"
	// TorchRun is torchrun or any launcher that sets its variables: RANK,
	// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT.
	TorchRun Launcher = "torchrun"
)

// Environment is what the launcher told this process.
type Environment struct {
	Launcher   Launcher
	Rank, Size int    // this process's place in the job, and the job's size
	LocalRank  int    // its place among the job's processes on this machine: the GPU to use
	MasterAddr string // torchrun's rendezvous host ("" under mpirun)
	MasterPort int    // and port
}

// Env reads the launcher's variables: Open MPI's OMPI_COMM_WORLD_RANK,
// OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_LOCAL_RANK when mpirun started
// the process, else torchrun's RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR
// and MASTER_PORT, else a job of one. A variable that is set but does not
// parse, or a rank outside the size, is an ErrValue that names it.
func Env() (Environment, error) {
	if _, ok := os.LookupEnv("OMPI_COMM_WORLD_RANK"); ok {
		e := Environment{Launcher: MPIRun}
		err := firstErr(
			intVar("OMPI_COMM_WORLD_RANK", &e.Rank, 0, true),
			intVar("OMPI_COMM_WORLD_SIZE", &e.Size, 1, true),
			intVar("OMPI_COMM_WORLD_LOCAL_RANK", &e.LocalRank, e.Rank, false))
		return e, firstErr(err, e.check("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"))
	}
	if _, ok := os.LookupEnv("RANK"); ok {
		e := Environment{Launcher: TorchRun, MasterAddr: os.Getenv("MASTER_ADDR")}
		err := firstErr(
			intVar("RANK", &e.Rank, 0, true),
			intVar("WORLD_SIZE", &e.Size, 1, true),
			intVar("LOCAL_RANK", &e.LocalRank, e.Rank, false),
			intVar("MASTER_PORT", &e.MasterPort, 29500, false))
		if err == nil && e.Size > 1 && e.MasterAddr == "" {
			err = envError("MASTER_ADDR", "is not set, and a job of "+strconv.Itoa(e.Size)+" needs it for the rendezvous",
				"set MASTER_ADDR to rank 0's host name or address, as torchrun does")
		}
		if err == nil && (e.MasterPort <= 0 || e.MasterPort > 65535) {
			err = envError("MASTER_PORT", "is "+strconv.Itoa(e.MasterPort)+", not a port", "set a port between 1 and 65535")
		}
		return e, firstErr(err, e.check("RANK", "WORLD_SIZE", "LOCAL_RANK"))
	}
	return Environment{Launcher: Alone, Size: 1}, nil
}

// check checks the numbers the launcher's variables gave, naming the
// variable at fault.
func (e Environment) check(rankVar, sizeVar, localVar string) error {
	if e.Size < 1 {
		return envError(sizeVar, "is "+strconv.Itoa(e.Size)+", but a job has at least one process", "set it to the number of processes")
	}
	if e.Rank < 0 || e.Rank >= e.Size {
		return envError(rankVar, "is "+strconv.Itoa(e.Rank)+", outside the job of "+strconv.Itoa(e.Size),
			"a rank is at least 0 and below the job size")
	}
	if e.LocalRank < 0 {
		return envError(localVar, "is "+strconv.Itoa(e.LocalRank), "a local rank is at least 0")
	}
	return nil
}

// intVar reads variable name into *dst; a missing one is def, or an error
// when required.
func intVar(name string, dst *int, def int, required bool) error {
	s, ok := os.LookupEnv(name)
	if !ok {
		if required {
			return envError(name, "is not set", "launch with mpirun or torchrun, which set it, or set it by hand")
		}
		*dst = def
		return nil
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return envError(name, "is "+strconv.Quote(s)+", not a whole number", "set it to a whole number, or let mpirun or torchrun set it")
	}
	*dst = v
	return nil
}

func envError(name, detail, fix string) error {
	return lathe.NewError("init", lathe.ErrValue, "$"+name, detail, fix)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// newPerm is a permutation of 0..n-1 that depends on seed and stream only.
func newPerm(seed, stream uint64, n int) []int {
	return rand.New(rand.NewPCG(seed, stream)).Perm(n)
}
