// Command lathe-bench measures lathe's ops on every device that opens and
// prints one row per workload and device: the median time of repeated runs,
// their spread, and the rate (GFLOP/s for matmul, GB/s for memory-bound ops,
// µs per op for dispatch overhead).
//
// This is the first version: a handful of workloads, no PyTorch comparison
// yet (that is lathe-bench --vs-torch, its own issue).
//
//	lathe-bench [-devices cpu,wgpu:0] [-reps 15]
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lathe-ml/lathe"
)

// workload is one benchmark: setup makes the inputs on a device and returns
// the step to time and the work one step does (flops or bytes).
type workload struct {
	name  string
	unit  string // "GFLOP/s", "GB/s" or "µs/op"
	setup func(dev lathe.Device) (step func() error, work float64)
	// inner is how many ops one step runs, for the per-op unit.
	inner int
}

func workloads() []workload {
	matmul := func(n int) workload {
		return workload{name: fmt.Sprintf("matmul f32 %d", n), unit: "GFLOP/s", setup: func(dev lathe.Device) (func() error, float64) {
			a, b := lathe.RandN(dev, lathe.Float32, n, n), lathe.RandN(dev, lathe.Float32, n, n)
			return func() error { return sync(a.MatMul(b)) }, 2 * float64(n*n*n)
		}}
	}
	const big = 1 << 22
	return []workload{
		{name: "add 1 element", unit: "µs/op", inner: 1000, setup: func(dev lathe.Device) (func() error, float64) {
			a, b := lathe.Full(dev, lathe.Float32, 1, 1), lathe.Full(dev, lathe.Float32, 2, 1)
			return func() error {
				var c *lathe.Tensor
				for range 1000 {
					c = a.Add(b)
				}
				return sync(c)
			}, 0
		}},
		{name: "add f32 4M", unit: "GB/s", setup: func(dev lathe.Device) (func() error, float64) {
			a, b := lathe.Rand(dev, lathe.Float32, big), lathe.Rand(dev, lathe.Float32, big)
			return func() error { return sync(a.Add(b)) }, 3 * 4 * big
		}},
		{name: "sum f32 4M", unit: "GB/s", setup: func(dev lathe.Device) (func() error, float64) {
			a := lathe.Rand(dev, lathe.Float32, big)
			return func() error { return sync(a.Sum()) }, 4 * big
		}},
		{name: "softmax f32 4096x1024", unit: "GB/s", setup: func(dev lathe.Device) (func() error, float64) {
			a := lathe.RandN(dev, lathe.Float32, 4096, 1024)
			return func() error { return sync(a.Softmax(1)) }, 2 * 4 * 4096 * 1024
		}},
		matmul(256),
		matmul(512),
	}
}

// sync waits for t's device and returns t's error, releasing t: a timed step
// ends only when the device has finished.
func sync(t *lathe.Tensor) error {
	defer t.Release()
	if err := t.Err(); err != nil {
		return err
	}
	return lathe.Synchronize(t.Device())
}

func main() {
	devices := flag.String("devices", "", "comma-separated devices (default: every device that opens)")
	reps := flag.Int("reps", 15, "timed repetitions per workload")
	flag.Parse()

	var devs []lathe.Device
	if *devices == "" {
		for _, st := range lathe.DeviceStatus() {
			if st.Available {
				devs = append(devs, st.Device)
			} else {
				fmt.Fprintf(os.Stderr, "lathe-bench: %v skipped: %s\n", st.Device, st.Detail)
			}
		}
	} else {
		for _, s := range strings.Split(*devices, ",") {
			d, err := lathe.ParseDevice(s)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			devs = append(devs, d)
		}
	}
	for _, st := range lathe.DeviceStatus() {
		if st.Available && slices.Contains(devs, st.Device) {
			fmt.Printf("%v: %s\n", st.Device, st.Detail)
		}
	}

	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tdevice\tmedian\tspread\trate\t")
	failed := false
	for _, w := range workloads() {
		for _, dev := range devs {
			fmt.Fprintf(os.Stderr, "\r%-40s", "running "+w.name+" on "+dev.String())
			med, spread, work, err := measure(w, dev, *reps)
			if err != nil {
				fmt.Fprintf(tw, "%s\t%v\terror: %v\t\t\t\n", w.name, dev, err)
				failed = true
				continue
			}
			fmt.Fprintf(tw, "%s\t%v\t%s\t±%.0f%%\t%s\t\n", w.name, dev, med, 100*spread, rate(w, med, work))
		}
	}
	fmt.Fprintf(os.Stderr, "\r%-40s\r", "")
	tw.Flush()
	if failed {
		os.Exit(1)
	}
}

// measure runs a workload's step twice to warm up, then reps times, and
// returns the median, the spread (interquartile range over median) and the
// work of one step.
func measure(w workload, dev lathe.Device, reps int) (time.Duration, float64, float64, error) {
	step, work := w.setup(dev)
	for range 2 {
		if err := step(); err != nil {
			return 0, 0, 0, err
		}
	}
	times := make([]time.Duration, max(reps, 1))
	for i := range times {
		start := time.Now()
		if err := step(); err != nil {
			return 0, 0, 0, err
		}
		times[i] = time.Since(start)
	}
	slices.Sort(times)
	med := times[len(times)/2]
	iqr := times[len(times)*3/4] - times[len(times)/4]
	return med, float64(iqr) / float64(med), work, nil
}

func rate(w workload, med time.Duration, work float64) string {
	s := med.Seconds()
	switch w.unit {
	case "GFLOP/s":
		return fmt.Sprintf("%.1f GFLOP/s", work/s/1e9)
	case "GB/s":
		return fmt.Sprintf("%.2f GB/s", work/s/1e9)
	}
	return fmt.Sprintf("%.3f µs/op", s*1e6/float64(w.inner))
}
