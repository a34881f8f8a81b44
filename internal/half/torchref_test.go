package half

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// testdata/torch.txt (build/torchref/half.py) holds numpy's float16 and
// PyTorch's bfloat16 rounding of boundary and random float32s, and hashes
// of their widening of all 65536 patterns. lathe must agree bit for bit,
// except that for a NaN it keeps the sign and payload where numpy keeps a
// signalling NaN signalling and torch writes a canonical NaN: there the
// test asks only for a NaN of the input's sign.
func TestAgainstTorch(t *testing.T) {
	file, err := os.Open("testdata/torch.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	f16, bf16 := formats[0], formats[1]
	cases, nans := 0, 0
	widened := map[string]bool{}
	sc := bufio.NewScanner(file)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0 || strings.HasPrefix(fields[0], "#"):
			continue
		case fields[0] == "widen" && len(fields) == 3:
			f := map[string]*format{"f16": f16, "bf16": bf16}[fields[1]]
			if f == nil {
				t.Fatalf("line %d: unknown format %q", line, fields[1])
			}
			if got := widenHash(f); got != fields[2] {
				t.Errorf("%s: widening all 65536 patterns hashes to %s, the reference's to %s", f.name, got, fields[2])
			}
			widened[f.name] = true
			continue
		case len(fields) != 3:
			t.Fatalf("line %d: %q is not three fields", line, sc.Text())
		}
		var v [3]uint64
		for i, s := range fields {
			if v[i], err = strconv.ParseUint(s, 16, 32); err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
		}
		in := uint32(v[0])
		x := math.Float32frombits(in)
		cases++
		if x != x {
			nans++
		}
		for _, c := range []struct {
			f    *format
			want uint16
		}{{f16, uint16(v[1])}, {bf16, uint16(v[2])}} {
			got := c.f.from(x)
			switch {
			case x == x && got != c.want:
				t.Errorf("%s(%08x = %g) = %04x, torch: %04x", c.f.name, in, x, got, c.want)
			case x != x && (!c.f.isNaN(got) || !c.f.isNaN(c.want) || uint32(got>>15) != in>>31):
				t.Errorf("%s(NaN %08x) = %04x, torch: %04x; want a NaN of the input's sign", c.f.name, in, got, c.want)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases < 1000 || !widened["f16"] || !widened["bf16"] {
		t.Fatalf("testdata/torch.txt has %d cases and widening hashes for %v; run build/torchref/half.py", cases, widened)
	}
	t.Logf("%d float32 cases (%d NaNs) in both formats, and 2×65536 widenings", cases, nans)
}

// widenHash is the SHA-256 of f.to of every pattern in order as
// little-endian float32 bytes, each NaN written as its sign and 0x7fc00000,
// as half.py writes it.
func widenHash(f *format) string {
	h := sha256.New()
	var b [4]byte
	for i := range 1 << 16 {
		x := math.Float32bits(f.to(uint16(i)))
		if x&^(1<<31) > 0x7f800000 {
			x = x&(1<<31) | 0x7fc00000
		}
		binary.LittleEndian.PutUint32(b[:], x)
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}
