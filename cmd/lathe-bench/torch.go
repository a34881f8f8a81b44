package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lathe-ml/lathe"
)

// torchScript is where bench_torch.py lives, relative to the module root.
const torchScript = "build/bench_torch.py"

// torchInfo is what the PyTorch child says of itself.
type torchInfo struct {
	Python         string `json:"python"`
	Version        string `json:"version"`
	BLAS           string `json:"blas"`     // BLAS_INFO of torch's build, and MKL/OpenMP availability
	Threads        int    `json:"threads"`  // torch.get_num_threads() after set_num_threads
	Parallel       string `json:"parallel"` // torch.__config__.parallel_info()
	InteropThreads int    `json:"interop_threads"`
}

// torchChild is the PyTorch side of a run: build/bench_torch.py as a
// child, and what it said of itself.
type torchChild struct {
	*child
	info torchInfo
}

// findTorchScript looks for build/bench_torch.py above the working
// directory (go run from anywhere in the module) and then beside this
// source file (a binary built from this checkout).
func findTorchScript() (string, error) {
	var tried []string
	if dir, err := os.Getwd(); err == nil {
		for {
			p := filepath.Join(dir, torchScript)
			tried = append(tried, p)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			up := filepath.Dir(dir)
			if up == dir {
				break
			}
			dir = up
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		p := filepath.Join(filepath.Dir(file), "..", "..", torchScript)
		tried = append(tried, p)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found (tried %s); pass --torch-script", torchScript, strings.Join(tried, ", "))
}

// startTorch starts the child with python and script and sets its thread
// count to threads, lathe's GOMAXPROCS, so that both sides use the same
// cores. An error says why PyTorch cannot be used (no python, no torch).
func startTorch(python, script string, threads int) (*torchChild, error) {
	if script == "" {
		var err error
		if script, err = findTorchScript(); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(python, "-u", script)
	// OpenMP reads its thread count at start-up, before set_num_threads.
	// Its idle threads wait passively, PyTorch's faster setting here:
	// spinning, they take the cores from OpenBLAS's threads in the same
	// process (PyTorch's MLP step alone, medians of 40 samples: 5.6–7.0 ms
	// spinning, 2.5–3.1 passive).
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS="+strconv.Itoa(threads), "MKL_NUM_THREADS="+strconv.Itoa(threads),
		"OMP_WAIT_POLICY=PASSIVE")
	ch, err := startChild("bench_torch.py", cmd)
	if err != nil {
		return nil, err
	}
	c := &torchChild{child: ch}
	var r reply
	if err := c.call(request{Op: "hello", Threads: threads}, &r); err != nil {
		c.close(time.Second)
		return nil, err
	}
	if r.Info == nil {
		c.close(time.Second)
		return nil, errors.New("bench_torch.py: hello reply has no info")
	}
	c.info = *r.Info
	c.info.Python = python
	return c, nil
}

// torchDevice is PyTorch's name for a lathe device, or why it has none.
func torchDevice(dev lathe.Device) (string, error) {
	switch dev.Kind {
	case lathe.CPU.Kind:
		return "cpu", nil
	case lathe.CUDA(0).Kind:
		return dev.String(), nil
	}
	return "", fmt.Errorf("PyTorch has no %v device", dev.Kind)
}
