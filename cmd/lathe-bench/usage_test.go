package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUsage checks that -h says what the tool does before the flags.
func TestUsage(t *testing.T) {
	var cfg config
	var devices string
	fs := newFlags(&cfg, &devices, flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(first, "lathe-bench times lathe's workloads") {
		t.Errorf("-h starts with %q, want what the tool does", first)
	}
	for _, f := range []string{"-devices", "-quick", "-vs-torch", "-plot"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("-h does not list %s:\n%s", f, out.String())
		}
	}
}

// TestBadFlags: what the flags get wrong is a usage error before anything
// is measured (a bad output path was once found after the whole run), and
// a path whose folder takes no file names that folder.
func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		cfg  config
		want string
	}{
		{"samples", config{Samples: -1}, "--samples -1"},
		{"warmup", config{Warmup: -5}, "--warmup -5"},
		{"min-sample", config{MinSample: -time.Millisecond}, "--min-sample -1ms"},
		{"plot format", config{Plot: filepath.Join(dir, "x.bmp")}, "must end in .svg or .png"},
		{"json dir", config{JSON: filepath.Join(dir, "missing", "x.json")}, "--json " + filepath.Join(dir, "missing", "x.json") + ": cannot create a file in " + filepath.Join(dir, "missing")},
		{"json is a dir", config{JSON: dir}, "is a directory"},
		{"plot dir", config{Plot: filepath.Join(dir, "missing", "x.svg")}, "--plot"},
		{"profile dir", config{CPUProfile: filepath.Join(dir, "missing", "cpu.out")}, "--cpuprofile"},
	} {
		start := time.Now()
		_, err := run(c.cfg, io.Discard, newProgress(io.Discard))
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a usage error naming %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), ".lathe-bench-") {
			t.Errorf("%s: %v names the file that the check tried, not the folder at fault", c.name, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v: it measured before refusing", c.name, d)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the checks left files behind: %v", entries)
	}
}
