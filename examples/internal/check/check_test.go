package check

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

func TestChecks(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		bad  bool
	}{
		{"at least, equal", AtLeast("x", "-n", 1, 1), false},
		{"at least, below", AtLeast("x", "-n", 0, 1), true},
		{"at least, negative", AtLeast("x", "-n", -3, 0), true},
		{"non-negative, zero", NonNegative("x", "-f", 0), false},
		{"non-negative, below", NonNegative("x", "-f", -1e-300), true},
		{"non-negative, NaN", NonNegative("x", "-f", math.NaN()), true},
		{"non-negative, +Inf", NonNegative("x", "-f", math.Inf(1)), true},
		{"no args", NoArgs("x", nil), false},
		{"an arg", NoArgs("x", []string{"extra"}), true},
	} {
		var e *lathe.Error
		switch {
		case !c.bad && c.err != nil:
			t.Errorf("%s: %v, want nil", c.name, c.err)
		case c.bad && (!errors.Is(c.err, lathe.ErrValue) || !errors.As(c.err, &e) || (e.Arg == "" && !strings.Contains(e.Error(), `given "extra"`)) || e.Op != "x"):
			t.Errorf("%s: %v, want an ErrValue of x naming the flag", c.name, c.err)
		}
	}
}
