// Package checktest tests the examples' check of their settings.
package checktest

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// Refusals is the examples' test of their Check: for each case, the
// example's default config with that change must make train fail with an
// ErrValue that names the case's key (a flag or field) and is located in
// the example, not here.
func Refusals[C any](t *testing.T, defaults func() C, train func(C) error, cases map[string]func(*C)) {
	t.Helper()
	for arg, change := range cases {
		cfg := defaults()
		change(&cfg)
		err := train(cfg)
		var e *lathe.Error
		switch {
		case !errors.Is(err, lathe.ErrValue) || !errors.As(err, &e) || e.Arg != arg:
			t.Errorf("%s: %v, want an ErrValue naming it", arg, err)
		case e.Site == "" || strings.HasPrefix(e.Site, "check.go:"):
			t.Errorf("%s: %v is not located in the example", arg, err)
		}
	}
}
