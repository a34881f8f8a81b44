package alloc

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
)

// HostMemory is the machine's memory as Linux reports it in /proc/meminfo:
// MemAvailable (what a program can still get without swapping) and
// MemTotal, in bytes; 0 and 0 where there is no /proc/meminfo. The cpu's
// buffers are host memory, and so are a software adapter's (lavapipe's).
func HostMemory() (available, total int64) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0
	}
	return parseMeminfo(data)
}

func parseMeminfo(data []byte) (available, total int64) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "MemTotal":
			total = kb << 10
		case "MemAvailable":
			available = kb << 10
		}
		if total > 0 && available > 0 {
			break // the first lines; the rest take longer to scan than to read
		}
	}
	return available, total
}

// hostTotal is MemTotal, read once: it does not change while a program runs.
var hostTotal = sync.OnceValue(func() int64 { _, t := HostMemory(); return t })

// HostTotal is the machine's total memory (MemTotal), read once; 0 where
// there is no /proc/meminfo.
func HostTotal() int64 { return hostTotal() }

// ParseBytes reads a byte count as people write it, for the variables that
// set a device's memory: "17179869184", "16GiB", "16 GiB", "512MiB",
// "1.5G" (K, M, G, T and their KiB forms are powers of 1024; KB, MB, GB,
// TB powers of 1000). Its errors say what is wrong; the caller, who knows
// where the text came from, says how to fix it (ByteCountFix).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != 'e' && r != 'E' && r != '+' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), strings.TrimSpace(t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a byte count", s)
	}
	scale := map[string]float64{
		"": 1, "B": 1,
		"K": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TIB": 1 << 40,
		"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	}[strings.ToUpper(unit)]
	if scale == 0 {
		return 0, fmt.Errorf("%q is not a byte count: %q is no unit", s, unit)
	}
	if v*scale >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is more bytes than an int64 holds", s)
	}
	return int64(v * scale), nil
}

// ByteCountFix is how to write what ParseBytes reads.
const ByteCountFix = "write it as 16GiB, 512MiB or a number of bytes (the units: B, KiB, MiB, GiB, TiB, and KB, MB, GB, TB in powers of 1000)"
