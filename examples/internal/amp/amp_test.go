package amp

import (
	"testing"

	"github.com/lathe-ml/lathe"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want lathe.DType
		ok   bool
	}{{"", 0, true}, {"off", 0, true}, {"bf16", lathe.BFloat16, true}, {"f16", lathe.Float16, true}, {"f32", 0, false},
		{"BF16", lathe.BFloat16, true}, {"Off", 0, true}} {
		got, err := Parse(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("Parse(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestNote(t *testing.T) {
	if got := Note(0); got != "" {
		t.Errorf("Note(float32) = %q, want nothing", got)
	}
	if got := Note(lathe.BFloat16); got != " with autocast to bfloat16" {
		t.Errorf("Note(bfloat16) = %q", got)
	}
}

func TestCheckOnCPU(t *testing.T) {
	for _, dt := range []lathe.DType{0, lathe.BFloat16, lathe.Float16} {
		if err := Check(lathe.CPU, dt); err != nil {
			t.Errorf("Check(cpu, %v) = %v, want nil: the cpu computes in every dtype", dt, err)
		}
	}
}
