// Command lathe-bench measures lathe's workloads (matmul, batched matmul,
// elementwise ops, reductions, softmax, an MLP training step and dispatch
// overhead) on every device that opens, and with --vs-torch the same
// workloads in PyTorch in the same run, their samples taken in turn so that
// drift of the machine falls on both alike, each side in a process of its
// own that is stopped while the other samples (side.go).
//
// Each row is warmed up, calibrated so that a sample lasts about
// --min-sample, and sampled --samples times with a device sync at both ends
// of each sample. The table shows the median time per step, the spread (the
// interquartile range over the median), the rate (the work over the median
// time: GFLOP/s for matmul, GB/s for memory-bound ops, tokens/s, steps/s or
// ops/s otherwise) and the ratio of lathe's median time to PyTorch's (below
// 1: lathe is faster).
//
//	lathe-bench [--devices all|cpu,wgpu:0,cuda:0] [--samples 10] [--quick]
//	            [--filter REGEXP] [--vs-torch] [--json FILE] [--plot FILE.svg|png]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/lathe-ml/lathe"
)

// config is one run, as the flags set it.
type config struct {
	Devices     []string      `json:"devices"` // empty: every device that opens
	Samples     int           `json:"samples"`
	Warmup      int           `json:"warmup_steps"`
	MinSample   time.Duration `json:"min_sample_ns"`
	Quick       bool          `json:"quick"`
	Filter      string        `json:"filter,omitempty"`
	VsTorch     bool          `json:"vs_torch"`
	Python      string        `json:"python,omitempty"`
	TorchScript string        `json:"torch_script,omitempty"`
	JSON        string        `json:"-"`
	Plot        string        `json:"-"`
	CPUProfile  string        `json:"-"`
}

// report is everything a run measured; --json writes it.
type report struct {
	Machine machine `json:"machine"`
	Config  config  `json:"config"`
	Rows    []row   `json:"rows"`
}

// row is one workload on one device: lathe's figures and, with --vs-torch,
// PyTorch's on the same device.
type row struct {
	Workload string       `json:"workload"`
	Family   string       `json:"family"`
	Device   string       `json:"device"`
	Spec     spec         `json:"spec"`
	Unit     string       `json:"unit"`
	Work     float64      `json:"work,omitempty"` // flops or bytes per step
	Lathe    *measurement `json:"lathe"`
	Torch    *measurement `json:"torch,omitempty"`
	// Skipped says why the row was not measured on this device (a dtype it
	// lacks, a size a software adapter would take minutes over).
	Skipped string `json:"skipped,omitempty"`
	// NoTorch says why the row has no PyTorch figures under --vs-torch.
	NoTorch string `json:"no_torch,omitempty"`
	// TimeRatio is lathe's median time over PyTorch's: below 1, lathe is
	// faster. 0 when either side is missing.
	TimeRatio float64 `json:"time_ratio_lathe_over_torch,omitempty"`
}

// description is the paragraph that -h prints before the flags.
const description = `lathe-bench times lathe's workloads on each device, beside PyTorch's.

It measures matmul, elementwise ops, reductions, softmax, training steps
(an MLP, a ResNet block, a transformer encoder layer), dispatch overhead,
sampling, attention and a GPT on the devices asked for, and prints a table: for each workload on each device the median time per step, its
interquartile range, and the rate (the work over that time: GFLOP/s, GB/s,
tokens/s or steps/s). With --vs-torch it measures the same workloads in
PyTorch in the same run, samples alternating (each side in a process of its
own, stopped while the other samples), and prints lathe's time over
torch's. --json keeps every sample; --plot draws one bar chart per family.`

// newFlags defines lathe-bench's flags on a new flag set that fills cfg
// and devices, and whose -h prints the description first.
func newFlags(cfg *config, devices *string, onError flag.ErrorHandling) *flag.FlagSet {
	fs := flag.NewFlagSet("lathe-bench", onError)
	fs.StringVar(devices, "devices", "", `comma-separated devices, e.g. cpu,wgpu:0,cuda:0, or "all" for every device that opens (default: lathe.DefaultDevice, which LATHE_DEVICE sets)`)
	fs.IntVar(&cfg.Samples, "samples", 0, "timed samples per row (default 10, 3 with --quick)")
	fs.IntVar(&cfg.Warmup, "warmup", 2, "warm-up steps before calibrating")
	fs.DurationVar(&cfg.MinSample, "min-sample", 0, "steps per sample are chosen so a sample lasts about this long (default 25ms, 5ms with --quick)")
	fs.BoolVar(&cfg.Quick, "quick", false, "small sizes and few samples: a few seconds in all")
	fs.StringVar(&cfg.Filter, "filter", "", "only the workloads whose name matches this regular expression")
	fs.BoolVar(&cfg.VsTorch, "vs-torch", false, "run the same workloads in PyTorch, alternating samples, and print lathe/torch")
	fs.StringVar(&cfg.Python, "python", "/usr/bin/python3", "the python that has torch, for --vs-torch")
	fs.StringVar(&cfg.TorchScript, "torch-script", "", "path of build/bench_torch.py (default: found above the working directory)")
	fs.StringVar(&cfg.JSON, "json", "", "write every sample, median and the machine's description to this file")
	fs.StringVar(&cfg.Plot, "plot", "", "draw one chart per workload family, lathe beside PyTorch, to this .svg or .png")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of lathe's side (not PyTorch's) to this file, for go tool pprof")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "%s\n\nusage: lathe-bench [flags]\n\n", description)
		fs.PrintDefaults()
	}
	return fs
}

func main() {
	if code, ok := asChild(); ok {
		os.Exit(code)
	}
	cfg := config{}
	devices := new(string)
	fs := newFlags(&cfg, devices, flag.ExitOnError)
	fs.Parse(os.Args[1:])
	if *devices != "" {
		cfg.Devices = strings.Split(*devices, ",")
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "lathe-bench: unexpected arguments %q\n", fs.Args())
		os.Exit(2)
	}
	if _, err := run(cfg, os.Stdout, newProgress(os.Stderr)); err != nil {
		fmt.Fprintln(os.Stderr, "lathe-bench:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// startCPUProfile starts runtime/pprof's CPU profile into path (nothing
// where path is empty) and returns what stops it and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error { pprof.StopCPUProfile(); return f.Close() }, nil
}

// errUsage marks errors in the flags.
var errUsage = errors.New("usage")

// run measures what cfg asks, prints the table to out and notes (skipped
// devices, a missing PyTorch) and progress to p, and writes the JSON and
// the plot. It returns an error if any lathe row failed, after writing
// everything else.
func run(cfg config, out io.Writer, p *progress) (_ *report, err error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	if cfg.Samples == 0 {
		cfg.Samples = 10
		if cfg.Quick {
			cfg.Samples = 3
		}
	}
	if cfg.MinSample == 0 {
		cfg.MinSample = 25 * time.Millisecond
		if cfg.Quick {
			cfg.MinSample = 5 * time.Millisecond
		}
	}
	works, err := selectWorkloads(table(cfg.Quick), cfg.Filter)
	if err != nil {
		return nil, err
	}
	status := lathe.DeviceStatus()
	devs, err := selectDevices(status, cfg.Devices, p)
	if err != nil {
		return nil, err
	}
	rep := &report{Machine: describeMachine(status, devs), Config: cfg}

	var torch *torchChild
	if cfg.VsTorch {
		torch, err = startTorch(cfg.Python, cfg.TorchScript, runtime.GOMAXPROCS(0))
		if err != nil {
			rep.Machine.NoTorch = err.Error()
			p.note("PyTorch skipped: %v", err)
		} else {
			defer torch.close(time.Second)
			rep.Machine.Torch = &torch.info
		}
	}
	// Beside PyTorch, lathe's side runs in a child of its own (side.go),
	// which profiles itself; alone, in this process.
	var side *child
	if torch != nil {
		if side, err = startSide(cfg.CPUProfile); err != nil {
			return nil, fmt.Errorf("cannot start lathe's side: %w", err)
		}
		defer side.close(10 * time.Second) // it writes its profile as it ends
	} else {
		stop, perr := startCPUProfile(cfg.CPUProfile)
		if perr != nil {
			return nil, perr
		}
		defer func() { err = errors.Join(err, stop()) }()
	}

	var failed []string
	total := len(works) * len(devs)
	for i, w := range works {
		for j, dev := range devs {
			if why := unsuited(w, dev); why != "" {
				rep.Rows = append(rep.Rows, row{Workload: w.Name, Family: w.Family, Device: dev.String(), Spec: w.spec, Unit: w.unitName(), Work: w.Work, Skipped: why})
				continue
			}
			r := measureRow(cfg, w, dev, torch, side, func(round int) {
				step := "warming up"
				if round >= 0 {
					step = fmt.Sprintf("sample %d/%d", round+1, w.samples(cfg.Samples))
				}
				p.update(fmt.Sprintf("[%d/%d] %s on %v", i*len(devs)+j+1, total, w.Name, dev), step)
			})
			if r.Lathe.Err != "" {
				failed = append(failed, fmt.Sprintf("%s on %s: %s", r.Workload, r.Device, r.Lathe.Err))
			}
			rep.Rows = append(rep.Rows, r)
			if side == nil {
				settle(dev) // the side settles itself as it releases the row
			}
		}
	}
	p.done()
	printTable(out, rep)

	var errs []error
	if cfg.JSON != "" {
		errs = append(errs, writeJSON(cfg.JSON, rep))
	}
	if cfg.Plot != "" {
		errs = append(errs, writePlot(cfg.Plot, rep))
	}
	if len(failed) > 0 {
		errs = append(errs, fmt.Errorf("%d rows failed:\n  %s", len(failed), strings.Join(failed, "\n  ")))
	}
	return rep, errors.Join(errs...)
}

// checkConfig refuses, before anything is measured, what the flags get
// wrong: a negative count or duration, a plot that is neither .svg nor
// .png, and an output file that cannot be written (found after a whole
// run, that would lose it).
func checkConfig(cfg config) error {
	switch {
	case cfg.Samples < 0:
		return fmt.Errorf("%w: --samples %d: give a positive count (0 for the default)", errUsage, cfg.Samples)
	case cfg.Warmup < 0:
		return fmt.Errorf("%w: --warmup %d: give a count of 0 or more", errUsage, cfg.Warmup)
	case cfg.MinSample < 0:
		return fmt.Errorf("%w: --min-sample %v: give a positive duration (0 for the default)", errUsage, cfg.MinSample)
	case cfg.Plot != "" && plotFormat(cfg.Plot) == "":
		return fmt.Errorf("%w: --plot %s: the file must end in .svg or .png", errUsage, cfg.Plot)
	}
	for _, o := range []struct{ flag, path string }{{"json", cfg.JSON}, {"plot", cfg.Plot}, {"cpuprofile", cfg.CPUProfile}} {
		if o.path == "" {
			continue
		}
		if err := writable(o.path); err != nil {
			return fmt.Errorf("%w: --%s %s: %v", errUsage, o.flag, o.path, err)
		}
	}
	return nil
}

// writable says why path cannot be written as a file, or nil: it tries a
// file of its own in path's directory, and leaves path as it was.
func writable(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return errors.New("is a directory")
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".lathe-bench-*")
	if err != nil {
		// The probe's own name means nothing to the caller: name the folder.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot create a file in %s: %v", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// softwareWork is the most work (flops or bytes per step) a row may have
// on a software adapter: lavapipe's rate says nothing about a GPU, and a
// 4096³ matmul would take it minutes a sample.
const softwareWork = 2e8

// unsuited says why w is not measured on dev, or "".
func unsuited(w workload, dev lathe.Device) string {
	if w.Ranks > 1 {
		if dev != lathe.CPU {
			return "a job of several ranks runs on cpu over MPI or TCP here (NCCL's rows need a GPU for each rank)"
		}
		if w.Launcher == "torchrun" {
			return ""
		}
		return mpiMissing()
	}
	if dev.Kind == lathe.WGPU(0).Kind {
		if w.spec.DType == "f64" {
			return "wgpu:0 has no float64 (WGSL has no 64-bit types)"
		}
		if lathe.IsSoftware(dev) && w.Work > softwareWork {
			return "wgpu:0 is a software adapter (lavapipe: Vulkan on the CPU), where speed is a correctness check: only the small rows run"
		}
	}
	return ""
}

// measureRow prepares w on dev (and in PyTorch, when torch is running),
// warms both up, alternates their samples and summarises them. Beside
// PyTorch, lathe's side is side, a child of its own (side.go); alone, it
// runs here. A row of several ranks (w.Ranks) runs in a job of that many
// lathe-bench processes under mpirun or torchrun's variables (ranks.go),
// and in PyTorch's gloo group of as many.
func measureRow(cfg config, w workload, dev lathe.Device, torch *torchChild, side *child, progress func(int)) row {
	r := row{Workload: w.Name, Family: w.Family, Device: dev.String(), Spec: w.spec, Unit: w.unitName(), Work: w.Work}
	fail := func(err error) row {
		r.Lathe = &measurement{Err: err.Error()}
		return r
	}
	progress(-1)
	var ls sampler
	var reps int
	if w.Ranks > 1 {
		job, err := startRanks(w.Ranks, w.Launcher)
		if err != nil {
			return fail(err)
		}
		defer job.close(rankGrace)
		s, err := job.prepare(w, "cpu", cfg.Warmup, cfg.MinSample)
		if err != nil {
			return fail(err)
		}
		defer job.release()
		ls, reps = s, s.reps
	} else if side != nil {
		s, err := side.prepare(w, dev.String(), cfg.Warmup, cfg.MinSample)
		if err != nil {
			return fail(err)
		}
		defer side.release()
		ls, reps = s, s.reps
	} else {
		s, err := prepareSampler(w, dev, cfg.Warmup, cfg.MinSample)
		if err != nil {
			return fail(err)
		}
		defer s.p.release()
		ls, reps = s, s.reps
	}
	samplers := []sampler{ls}
	var ts *childSampler
	switch {
	case torch == nil && cfg.VsTorch:
		r.NoTorch = "PyTorch is not running"
	case torch != nil:
		name, err := torchDevice(dev)
		if err == nil {
			ts, err = torch.prepare(w, name, cfg.Warmup, cfg.MinSample)
		}
		if err != nil {
			r.NoTorch = err.Error()
			break
		}
		defer torch.release()
		samplers = append(samplers, ts)
	}
	samples, errs := alternate(samplers, w.samples(cfg.Samples), progress)
	r.Lathe = summarise(w, reps, samples[0])
	if errs[0] != nil {
		r.Lathe.Err = errs[0].Error()
	}
	if ts != nil {
		r.Torch = summarise(w, ts.reps, samples[1])
		if errs[1] != nil {
			r.Torch.Err = errs[1].Error()
		}
		if r.Lathe.Median > 0 && r.Torch.Median > 0 {
			r.TimeRatio = r.Lathe.Median / r.Torch.Median
		}
	}
	return r
}

// selectWorkloads keeps the workloads whose name matches filter.
func selectWorkloads(all []workload, filter string) ([]workload, error) {
	if filter == "" {
		return all, nil
	}
	re, err := regexp.Compile(filter)
	if err != nil {
		return nil, fmt.Errorf("%w: --filter: %v", errUsage, err)
	}
	var out []workload
	for _, w := range all {
		if re.MatchString(w.Name) {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: --filter %q matches no workload", errUsage, filter)
	}
	return out, nil
}

// selectDevices returns the devices named ("all": every one that opens;
// none: the default device), noting each one that cannot be opened with
// lathe's reason.
func selectDevices(status []lathe.DeviceInfo, names []string, p *progress) ([]lathe.Device, error) {
	var want []lathe.Device
	switch {
	case len(names) == 0:
		dev, err := lathe.DefaultDevice()
		if err != nil {
			return nil, err
		}
		want = append(want, dev)
	case len(names) == 1 && strings.TrimSpace(names[0]) == "all":
		names = nil
	}
	for _, s := range names {
		d, err := lathe.ParseDevice(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%w: --devices: %v", errUsage, err)
		}
		want = append(want, d)
	}
	var out []lathe.Device
	for _, st := range status {
		if len(want) > 0 && !slices.Contains(want, st.Device) {
			continue
		}
		if !st.Available {
			p.note("%v skipped: %s", st.Device, st.Detail)
			continue
		}
		out = append(out, st.Device)
	}
	for _, d := range want {
		known := slices.ContainsFunc(status, func(st lathe.DeviceInfo) bool { return st.Device == d })
		if !known {
			p.note("%v skipped: this machine has no such device", d)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no device to measure")
	}
	return out, nil
}
