package lathe_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
)

// samplingCase is one argument set of testdata/sampling.json (written by
// build/torchref/sampling.py): what torch 1.13 did with it.
type samplingCase struct {
	Op          string          `json:"op"`
	Low         int64           `json:"low"`
	High        int64           `json:"high"`
	N           int             `json:"n"`
	InDType     string          `json:"in_dtype"`
	InShape     []int           `json:"in_shape"`
	Probs       json.RawMessage `json:"probs"`
	NumSamples  int             `json:"num_samples"`
	Replacement bool            `json:"replacement"`
	Outcome     string          `json:"outcome"` // ok, warn (accepted with a warning) or error
	Message     string          `json:"message"`
	DType       string          `json:"dtype"`
	Shape       []int           `json:"shape"`
}

func (c samplingCase) String() string {
	switch c.Op {
	case "randperm":
		return fmt.Sprintf("randperm(%d, %s)", c.N, c.InDType)
	case "multinomial":
		return fmt.Sprintf("multinomial(%s %s, %d, %v)", c.Probs, c.InDType, c.NumSamples, c.Replacement)
	}
	return fmt.Sprintf("%s(%d, %d, %s %v)", c.Op, c.Low, c.High, c.InDType, c.InShape)
}

// samplingDeviations are the argument sets on which lathe knowingly parts
// from torch, and why. Every case torch accepts with a warning (a range
// past what a float dtype holds exactly, which torch rounds) lathe
// refuses, without being listed here.
var samplingDeviations = map[string]string{
	"randperm(258, bfloat16)": "torch rounds 257 to 256 and repeats it, which is no permutation: lathe refuses",
	`multinomial([1, 1] float16, 1, false)`: "torch 1.13 lacks the float16 kernel on the cpu only (cuda has it); " +
		"lathe draws on the host for every dtype",
}

// TestSamplingAgreesWithTorch runs each argument set of sampling.json on
// the cpu: lathe accepts what torch accepts, with torch's dtype and
// shape, and refuses what torch refuses with a *lathe.Error that names
// the op.
func TestSamplingAgreesWithTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/sampling.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Torch string         `json:"torch"`
		Cases []samplingCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	dtypes := map[string]lathe.DType{}
	for _, dt := range allDTypes {
		dtypes[dt.String()] = dt
	}
	counts := map[string]int{}
	for _, c := range ref.Cases {
		t.Run(c.String(), func(t *testing.T) {
			out := runSamplingCase(t, c, dtypes[c.InDType])
			counts[c.Outcome]++
			if why, ok := samplingDeviations[c.String()]; ok {
				t.Logf("torch: %s %q; lathe: %v (a known deviation: %s)", c.Outcome, c.Message, out.Err(), why)
				return
			}
			err := out.Err()
			if c.Outcome == "ok" {
				if err != nil {
					t.Fatalf("torch accepts it, lathe: %v", err)
				}
				if out.DType().String() != c.DType || !slices.Equal(out.Shape(), c.Shape) {
					t.Errorf("lathe gives %s %v, torch %s %v", out.DType(), out.Shape(), c.DType, c.Shape)
				}
				return
			}
			var e *lathe.Error
			if !errors.As(err, &e) || e.Op != c.Op {
				t.Errorf("torch: %s %q; lathe: %v, want a *lathe.Error of op %s", c.Outcome, c.Message, err, c.Op)
			}
		})
	}
	t.Logf("%d argument sets of torch %s: %v", len(ref.Cases), ref.Torch, counts)
}

// runSamplingCase makes the call that case c describes.
func runSamplingCase(t *testing.T, c samplingCase, dt lathe.DType) *lathe.Tensor {
	switch c.Op {
	case "randint":
		return lathe.RandInt(lathe.CPU, dt, c.Low, c.High, c.InShape...)
	case "randint_like":
		return lathe.RandIntLike(lathe.Zeros(lathe.CPU, dt, c.InShape...), c.Low, c.High)
	case "randperm":
		return lathe.RandPerm(lathe.CPU, dt, c.N)
	case "multinomial":
		return lathe.Multinomial(samplingProbs(t, c.Probs, dt), c.NumSamples, c.Replacement)
	}
	t.Fatalf("unknown op %q", c.Op)
	return nil
}

// samplingProbs decodes sampling.py's weights: a number (a 0-d tensor), a
// list or a list of lists whose elements may be "nan", "inf" or "-inf",
// or {"fill": v, "shape": s}; in dtype dt.
func samplingProbs(t *testing.T, raw json.RawMessage, dt lathe.DType) *lathe.Tensor {
	var fill struct {
		Fill  *float64 `json:"fill"`
		Shape []int    `json:"shape"`
	}
	if json.Unmarshal(raw, &fill) == nil && fill.Fill != nil {
		return lathe.Full(lathe.CPU, dt, *fill.Fill, fill.Shape...)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var vals []float64
	var shape []int
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		switch v := v.(type) {
		case []any:
			if depth == len(shape) {
				shape = append(shape, len(v))
			}
			for _, e := range v {
				walk(e, depth+1)
			}
		case float64:
			vals = append(vals, v)
		case string:
			vals = append(vals, map[string]float64{"nan": math.NaN(), "inf": math.Inf(1), "-inf": math.Inf(-1)}[v])
		}
	}
	walk(v, 0)
	if len(shape) == 0 {
		return lathe.Scalar(lathe.CPU, vals[0]).Cast(dt)
	}
	return lathe.FromSlice(lathe.CPU, vals, shape...).Cast(dt)
}
