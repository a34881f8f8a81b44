package main

import (
	"bufio"
	"cmp"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/lathe-ml/lathe"
)

// machine describes where the figures were taken, for the JSON report.
type machine struct {
	Time       time.Time `json:"time"`
	CPU        string    `json:"cpu"`   // model name from /proc/cpuinfo
	Flags      string    `json:"flags"` // the vector extensions among its flags
	Cores      int       `json:"cores"` // runtime.NumCPU
	GOMAXPROCS int       `json:"gomaxprocs"`
	// GC is the collector's setting, GOGC and any GOMEMLIMIT: the per-op
	// rows move with it (README, Memory).
	GC        string       `json:"gc"`
	Go        string       `json:"go"`
	OS        string       `json:"os"`
	Devices   []deviceDesc `json:"devices"`
	GPUDriver string       `json:"gpu_driver,omitempty"` // /proc/driver/nvidia/version
	Torch     *torchInfo   `json:"torch,omitempty"`
	NoTorch   string       `json:"no_torch,omitempty"` // why --vs-torch ran without it
}

// deviceDesc is one device lathe knows of: what serves it (which BLAS for
// cpu, the adapter and driver for a GPU) or why it cannot be opened.
type deviceDesc struct {
	Device    string `json:"device"`
	Available bool   `json:"available"`
	Used      bool   `json:"used"`
	Detail    string `json:"detail"`
}

// describeMachine reads what the machine and lathe say of themselves;
// status is lathe.DeviceStatus(), used the devices the run measures.
func describeMachine(status []lathe.DeviceInfo, used []lathe.Device) machine {
	m := machine{
		Time:       time.Now().UTC(),
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GC:         collectorSetting(),
		Go:         runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
	}
	m.CPU, m.Flags = cpuInfo()
	for _, st := range status {
		d := deviceDesc{Device: st.Device.String(), Available: st.Available, Detail: st.Detail}
		for _, u := range used {
			d.Used = d.Used || u == st.Device
		}
		m.Devices = append(m.Devices, d)
	}
	if b, err := os.ReadFile("/proc/driver/nvidia/version"); err == nil {
		m.GPUDriver = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	}
	return m
}

// collectorSetting is the collector's pacing as the run has it: GOGC
// ("100" where unset) and the memory limit where one is set.
func collectorSetting() string {
	gc := "GOGC " + cmp.Or(os.Getenv("GOGC"), "100")
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		gc += ", GOMEMLIMIT " + strconv.FormatInt(limit, 10)
	}
	return gc
}

// cpuInfo returns the first processor's model name and which of the flags
// that matter to kernels it has.
func cpuInfo() (model, flags string) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH, ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "model name":
			if model == "" {
				model = strings.TrimSpace(val)
			}
		case "flags":
			if flags == "" {
				have := strings.Fields(val)
				var keep []string
				for _, want := range []string{"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile"} {
					for _, h := range have {
						if h == want {
							keep = append(keep, want)
						}
					}
				}
				flags = strings.Join(keep, " ")
			}
		}
	}
	if model == "" {
		model = runtime.GOARCH
	}
	return model, flags
}
