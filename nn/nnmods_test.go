package nn

import (
	"bytes"
	"math"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestNNModsErrors: the new modules refuse what torch's refuse with
// errors naming the argument, never a panic: options a layer does not
// take and padding of the wrong length fail the layer (Err reports it,
// Forward returns it), and bad inputs or fields fail Forward's result.
func TestNNModsErrors(t *testing.T) {
	x3 := lathe.Ones(lathe.CPU, lathe.Float32, 2, 3, 4)
	x4 := lathe.Ones(lathe.CPU, lathe.Float32, 1, 2, 3, 4)
	for _, c := range []struct {
		name string
		m    Module
	}{
		{"maxpool1d mode", NewMaxPool1d(2, Mode("bilinear"))},
		{"avgpool1d divisor", NewAvgPool1d(2, Divisor(3))},
		{"maxunpool2d dilation", NewMaxUnpool2d(2, Dilation(2))},
		{"unfold groups", NewUnfold(2, Groups(2))},
		{"zeropad2d 3 values", NewZeroPad2d(1, 2, 3)},
		{"reflectionpad1d 4 values", NewReflectionPad1d(1, 1, 1, 1)},
		{"constantpad3d none", NewConstantPad3d(0)},
	} {
		var e *lathe.Error
		if err := Err(c.m); err == nil || !asLatheErr(err, &e) {
			t.Errorf("%s: Err = %v, want the refusal", c.name, err)
		}
		if c.m.Forward(x4).Err() == nil {
			t.Errorf("%s: Forward succeeded", c.name)
		}
	}
	for _, c := range []struct {
		name string
		y    *lathe.Tensor
		kind error
		arg  string
	}{
		{"reflectionpad2d 2-d", NewReflectionPad2d(1).Forward(lathe.Ones(lathe.CPU, lathe.Float32, 3, 4)), lathe.ErrShape, "x"},
		{"replicationpad3d 3-d", NewReplicationPad3d(1).Forward(x3), lathe.ErrShape, "x"},
		{"constantpad2d 1-d", NewConstantPad2d(0, 1).Forward(lathe.Ones(lathe.CPU, lathe.Float32, 4)), lathe.ErrShape, "x"},
		{"zeropad2d nil", NewZeroPad2d(1).Forward(nil), lathe.ErrValue, "x"},
		{"channelshuffle groups", NewChannelShuffle(0).Forward(x4), lathe.ErrValue, "groups"},
		{"channelshuffle indivisible", NewChannelShuffle(3).Forward(x4), lathe.ErrShape, "x"},
		{"channelshuffle 2-d", NewChannelShuffle(1).Forward(lathe.Ones(lathe.CPU, lathe.Float32, 2, 4)), lathe.ErrShape, "x"},
		{"lrn 2-d", NewLocalResponseNorm(2).Forward(lathe.Ones(lathe.CPU, lathe.Float32, 2, 4)), lathe.ErrShape, "x"},
		{"lrn size", NewLocalResponseNorm(0).Forward(x3), lathe.ErrValue, "size"},
		{"lrn beta", (&LocalResponseNorm{Size: 2, Beta: math.NaN()}).Forward(x3), lathe.ErrValue, "beta"},
		{"cosine forward", NewCosineSimilarity().Forward(x3), lathe.ErrValue, "x2"},
		{"pairwise forward", NewPairwiseDistance().Forward(x3), lathe.ErrValue, "x2"},
		{"maxunpool forward", NewMaxUnpool2d(2).Forward(x4), lathe.ErrValue, "indices"},
	} {
		wantArgErr(t, c.y.Err(), c.kind, c.arg)
	}
	// The ops' own checks, through the modules.
	for _, c := range []struct {
		name string
		y    *lathe.Tensor
	}{
		{"hardtanh min > max", (&Hardtanh{Min: 1, Max: -1}).Forward(x3)},
		{"celu alpha 0", (&CELU{}).Forward(x3)},
		{"softshrink negative", (&Softshrink{Lambda: -1}).Forward(x3)},
		{"softmax dim", NewSoftmax(3).Forward(x3)},
		{"glu odd", (&GLU{Dim: 1}).Forward(x3)},
		{"pixelshuffle 0", NewPixelShuffle(0).Forward(x4)},
		{"maxpool3d 4-d small", NewMaxPool3d(3).Forward(x4)},
		{"adaptiveavgpool1d 0", NewAdaptiveAvgPool1d(-1).Forward(x3)},
		{"fold size", NewFold([]int{1, 2, 3}, 2).Forward(x3)},
		{"elu int", NewELU().Forward(lathe.Zeros(lathe.CPU, lathe.Int64, 2))},
	} {
		if c.y.Err() == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

func asLatheErr(err error, e **lathe.Error) bool {
	le, ok := err.(*lathe.Error)
	*e = le
	return ok
}

// TestNNModsSaveLoad: a model with the new modules saves and loads its
// parameters as before: they add none.
func TestNNModsSaveLoad(t *testing.T) {
	lathe.Seed(1)
	build := func() *Seq {
		return Sequential(NewConv2d(2, 4, 3), NewELU(), NewReflectionPad2d(1), NewMaxPool2d(2), NewDropout2d(0.2),
			NewChannelShuffle(2), NewLocalResponseNorm(2), NewFlatten(1, -1), NewLinear(36, 3), NewSoftmax(-1))
	}
	m := build()
	var buf bytes.Buffer
	if err := Save(&buf, m); err != nil {
		t.Fatal(err)
	}
	m2 := build()
	if err := Load(&buf, m2); err != nil {
		t.Fatal(err)
	}
	if got := len(m2.Parameters()); got != 4 {
		t.Errorf("%d parameters, want the conv's and the linear's 4", got)
	}
	m.Train(false)
	m2.Train(false)
	x := lathe.RandN(lathe.CPU, lathe.Float32, 2, 2, 6, 6)
	if eq, err := m.Forward(x).Equal(m2.Forward(x)); err != nil || !eq {
		t.Errorf("the loaded model computes another function: %v, %v", m.Forward(x), m2.Forward(x))
	}
}
