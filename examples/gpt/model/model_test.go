package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

func TestNewRefusesBadConfig(t *testing.T) {
	ok := Config{Vocab: 5, Context: 4, Layers: 1, Heads: 2, Dim: 4}
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
		kind  error
	}{
		{"vocab0", func(c *Config) { c.Vocab = 0 }, "Vocab", lathe.ErrValue},
		{"context0", func(c *Config) { c.Context = 0 }, "Context", lathe.ErrValue},
		{"layers-1", func(c *Config) { c.Layers = -1 }, "Layers", lathe.ErrValue},
		{"heads0", func(c *Config) { c.Heads = 0 }, "Heads", lathe.ErrValue},
		{"dim-not-multiple", func(c *Config) { c.Dim = 5 }, "Dim", lathe.ErrValue},
		{"rotary-odd-head", func(c *Config) { c.Dim, c.Heads, c.Rotary = 6, 2, true }, "Dim", lathe.ErrValue},
		{"int-dtype", func(c *Config) { c.DType = lathe.Int32 }, "DType", lathe.ErrDType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			g, err := New(c)
			var le *lathe.Error
			if g != nil || !errors.As(err, &le) || !errors.Is(err, tc.kind) || le.Arg != tc.field {
				t.Fatalf("New(%+v) = %v, %v; want a %v naming %s", c, g, err, tc.kind, tc.field)
			}
		})
	}
}

func TestForwardRefusesBadTokens(t *testing.T) {
	for _, rotary := range []bool{false, true} {
		g, err := New(Config{Vocab: 5, Context: 4, Layers: 1, Heads: 2, Dim: 4, Rotary: rotary})
		if err != nil {
			t.Fatal(err)
		}
		for name, x := range map[string]*lathe.Tensor{
			"nil":          nil,
			"too long":     lathe.Zeros(lathe.CPU, lathe.Int64, 1, 5),
			"empty":        lathe.Zeros(lathe.CPU, lathe.Int64, 1, 0),
			"1-D":          lathe.Zeros(lathe.CPU, lathe.Int64, 3),
			"out of vocab": lathe.Full(lathe.CPU, lathe.Int64, 5, 1, 3),
			"float":        lathe.Zeros(lathe.CPU, lathe.Float32, 1, 3),
		} {
			logits := g.Forward(x)
			err := Loss(logits, lathe.Zeros(lathe.CPU, lathe.Int64, 1, 3)).Err()
			if err == nil || !strings.HasPrefix(err.Error(), "lathe: ") {
				t.Errorf("rotary=%v %s: loss error %v, want a lathe error", rotary, name, err)
			}
		}
	}
}
