// Command testsummary prints, at the end of `make test`, what each device
// ran: the conformance suites' cases run and skipped per device, and the
// tests skipped because a device could not be opened, with the reason. It
// reads the lines that internal/testenv appended to the summary file
// (LATHE_TEST_SUMMARY) and exits 1 where a required device
// (LATHE_REQUIRE_DEVICES) was skipped or ran no conformance case, so that a
// green run means every required device was tested.
//
//	go run ./build/testsummary summary.tsv
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lathe-ml/lathe/internal/testenv"
)

type counts struct{ run, skipped, failed int }

type device struct {
	suites      map[string]*counts
	unavailable []string // the tests skipped (or failed) for want of the device
	reason      string   // the first of them's reason
	required    bool
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: testsummary summary.tsv")
		os.Exit(2)
	}
	devs, suites, err := read(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if bad := report(os.Stdout, devs, suites, os.Getenv(testenv.RequireEnv)); len(bad) > 0 {
		for _, b := range bad {
			fmt.Println("FAIL:", b)
		}
		os.Exit(1)
	}
}

// report writes the table and the notes on unavailable devices to out, and
// returns what fails the run: a required device skipped or never run.
func report(out io.Writer, devs map[string]*device, suites []string, require string) (bad []string) {
	for _, d := range strings.Split(require, ",") {
		if d = strings.TrimSpace(d); d != "" {
			get(devs, d).required = true
		}
	}
	names := make([]string, 0, len(devs))
	for n := range devs {
		names = append(names, n)
	}
	slices.Sort(names)
	slices.Sort(suites)

	fmt.Fprintf(out, "test summary (%s=%s): cases run/skipped on each device\n", testenv.RequireEnv, require)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprint(w, "device\trequired")
	for _, s := range suites {
		fmt.Fprintf(w, "\t%s", s)
	}
	fmt.Fprint(w, "\ttests that could not open it\n")
	var notes []string
	for _, n := range names {
		d := devs[n]
		req := "no"
		if d.required {
			req = "yes"
		}
		fmt.Fprintf(w, "%s\t%s", n, req)
		ran := false
		for _, s := range suites {
			c := d.suites[s]
			switch {
			case c == nil:
				fmt.Fprint(w, "\t-")
			case c.failed > 0:
				fmt.Fprintf(w, "\t%d/%d (%d failed)", c.run, c.skipped, c.failed)
			default:
				fmt.Fprintf(w, "\t%d/%d", c.run, c.skipped)
			}
			if c != nil && c.run > 0 {
				ran = true
			}
		}
		fmt.Fprintf(w, "\t%d\n", len(d.unavailable))
		if len(d.unavailable) > 0 {
			what := "skipped, as it is not required"
			if d.required {
				what = "failed, as it is required"
			}
			notes = append(notes, fmt.Sprintf("%s: %d tests %s (%s): %s", n, len(d.unavailable), what,
				strings.Join(first(d.unavailable, 3), ", "), clip(d.reason, 160)))
		}
		switch {
		case d.required && len(d.unavailable) > 0:
			bad = append(bad, fmt.Sprintf("%s is required but %d tests could not open it", n, len(d.unavailable)))
		case d.required && !ran:
			bad = append(bad, fmt.Sprintf("%s is required but no conformance case ran on it", n))
		}
	}
	w.Flush()
	for _, n := range notes {
		fmt.Fprintln(out, n)
	}
	return bad
}

// clip shortens s to about n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// read parses the summary's lines: "cases suite device run skipped failed"
// and "unavailable test device state reason". Suites keep their first
// appearance's order.
func read(path string) (map[string]*device, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("no summary (did the tests run with %s set?): %w", testenv.SummaryEnv, err)
	}
	defer f.Close()
	devs := map[string]*device{}
	var suites []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		fs := strings.Split(sc.Text(), "\t")
		switch {
		case fs[0] == "cases" && len(fs) == 6:
			suite, d := fs[1], get(devs, fs[2])
			var v [3]int
			for i := range v {
				if v[i], err = strconv.Atoi(fs[3+i]); err != nil {
					return nil, nil, fmt.Errorf("%s:%d: %v", path, n, err)
				}
			}
			if !slices.Contains(suites, suite) {
				suites = append(suites, suite)
			}
			c := d.suites[suite]
			if c == nil {
				c = &counts{}
				d.suites[suite] = c
			}
			c.run, c.skipped, c.failed = c.run+v[0], c.skipped+v[1], c.failed+v[2]
		case fs[0] == "unavailable" && len(fs) == 5:
			d := get(devs, fs[2])
			d.unavailable = append(d.unavailable, fs[1])
			if d.reason == "" {
				d.reason = fs[4]
			}
		default:
			return nil, nil, fmt.Errorf("%s:%d: a line testenv does not write: %q", path, n, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(devs) == 0 {
		return nil, nil, fmt.Errorf("%s is empty: no suite recorded a device", path)
	}
	return devs, suites, nil
}

func get(devs map[string]*device, name string) *device {
	d := devs[name]
	if d == nil {
		d = &device{suites: map[string]*counts{}}
		devs[name] = d
	}
	return d
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "...")
	}
	return s
}
