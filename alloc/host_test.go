package alloc

import "testing"

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"17179869184", 16 << 30}, {"16GiB", 16 << 30}, {"16 GiB", 16 << 30}, {"16g", 16 << 30},
		{"512MiB", 512 << 20}, {"1.5G", 3 << 29}, {"2KB", 2000}, {"1e9", 1e9}, {"3TB", 3e12}, {"0", 0},
	} {
		if got, err := ParseBytes(c.in); err != nil || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "lots", "-1GiB", "16 parsecs", "1e30", "NaN"} {
		if got, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", bad, got)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	avail, total := parseMeminfo([]byte("MemTotal:       24683756 kB\nMemFree:        23114476 kB\nMemAvailable:   24263984 kB\n"))
	if total != 24683756<<10 || avail != 24263984<<10 {
		t.Fatalf("parseMeminfo: %d of %d", avail, total)
	}
	if avail, total := HostMemory(); total != 0 && (avail <= 0 || avail > total || HostTotal() != total) {
		t.Fatalf("HostMemory: %d of %d (HostTotal %d)", avail, total, HostTotal())
	}
}
