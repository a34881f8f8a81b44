package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
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
