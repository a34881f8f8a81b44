package nn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// Reference values from PyTorch 1.13, by build/torchref/nn_norm_ref.py.
var (
	bnTrain2Y     = []float64{-0.40134536367697576, -0.8661232458317031, -0.8807675228656775, -0.43839076246668013, -0.8233947972537081, -0.8536827766517867, -0.8659748274625676, -0.8544898061211484, -1.5883134697026684, -0.16275405850222574, 0.7729391968740154, 0.7786951378121885, -0.42352107219248497, 0.26997704908172204, 0.8792830547221032, 1.1178308096070266, -0.8539447296165267, -0.8237921177071362, -0.7897016211665466, -0.7677065331964997, 0.7663941610374702, -0.17901622332202843, -1.6066444132876394, -2.8450545638127283}
	bnRunningMean = []float64{0.18526608478952714, -0.02125043763025391, 0.22380143410594028}
	bnRunningVar  = []float64{1.1928254945640853, 1.1461963653875333, 1.119410190257684}
	bnWeight      = []float64{-3.4155320265045512, -0.21857614931972408, 2.9757678462385364}
	bnBias        = []float64{-0.18576426340566732, -1.65817180229398, -1.0159385582259044}
	bnEvalY       = []float64{0.3936164161384137, -2.3934469930855795, -2.134785889043886, 0.8869328672940469, 3.3695515790799644, 2.6000452600313433, -1.7261146868117714, -1.8642550531211826, -1.781927186824037, -1.5690996188393684, -1.4583519663959457, -1.5707101231699658, 0.019850393711804033, 1.1299652108365497, -0.792854603455766, -3.6473366405069907, -4.314080787585518, -2.0644638687303316}

	gnY          = []float64{0.006717070237226425, 0.5801951095486881, 0.7196764018778674, 0.43920857192918145, -0.8345092738444952, -1.6178764614122505, 2.016378417437795, 0.140963888401411, -1.7042274591604247, 2.8637221335286314, 1.0972900498397196, -1.6568590544633093, -0.6186814741361364, -0.46982175661448433, 0.07108871171626316, 0.9893993446146105, 1.2095055783497926, 0.4359241151043123, 0.6242249524226133, 1.6560100559348867, 1.1859828099789056, 0.6068660485646123, 2.659106991472277, 3.0556507177449848}
	gnWeightGrad = []float64{-0.7764533861321713, 3.8355539898229574, 1.3424629620660578, -3.667837491549116}
	gnBiasGrad   = []float64{4.175449644551986, 1.171177265573063, -3.3266793164576134, -3.582073359524216}
)

// seq is sin(scale·i + shift) over i = 0, 1, ... in the given shape, as the
// reference script makes its inputs.
func seq(scale, shift float64, shape ...int) *lathe.Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return lathe.Arange(lathe.CPU, lathe.Float64, 0, float64(n), 1).MulScalar(scale).AddScalar(shift).Sin().Reshape(shape...)
}

func checkClose(t *testing.T, what string, x *lathe.Tensor, want []float64) {
	t.Helper()
	got := values(t, x)
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-10*max(1, math.Abs(want[i])) {
			t.Fatalf("%s: [%d] is %v, want %v (all: %v)", what, i, got[i], want[i], got)
		}
	}
}

// Two SGD steps in training mode, then evaluation: the outputs, the running
// statistics and the parameters match PyTorch's.
func TestBatchNorm2dTrainThenEval(t *testing.T) {
	bn := NewBatchNorm2d(3, WithDType(lathe.Float64))
	opt, err := NewSGD(bn.Parameters(), 0.5)
	if err != nil {
		t.Fatal(err)
	}
	u := seq(0.3, 1, 2, 3, 2, 2)
	var y *lathe.Tensor
	for _, shift := range []float64{0, 0.5} {
		x := seq(0.7, shift, 2, 3, 2, 2).MulScalar(2).AddScalar(0.5)
		opt.ZeroGrad()
		y = bn.Forward(x)
		if err := y.Mul(u).Sum().Backward(); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	checkClose(t, "second training output", y, bnTrain2Y)
	checkClose(t, "running mean", bn.RunningMean, bnRunningMean)
	checkClose(t, "running var", bn.RunningVar, bnRunningVar)
	checkClose(t, "weight", bn.Weight, bnWeight)
	checkClose(t, "bias", bn.Bias, bnBias)
	checkCount(t, bn, 2) // nn_norm_ref.py: num_batches_tracked = 2, int64
	if bn.RunningMean.RequiresGrad() {
		t.Error("the running mean requires a gradient")
	}

	m := Sequential(bn)
	m.Train(false)
	checkClose(t, "eval output", m.Forward(seq(1.1, 0, 1, 3, 2, 3)), bnEvalY)
	checkClose(t, "running mean after eval", bn.RunningMean, bnRunningMean)
	checkCount(t, bn, 2)
	m.Train(true)
	if bn.Eval {
		t.Error("Train(true) left the layer in evaluation mode")
	}
}

func TestGroupNormModule(t *testing.T) {
	g := NewGroupNorm(2, 4, WithDType(lathe.Float64))
	g.Weight = lathe.FromSlice(lathe.CPU, []float64{0.5, 1, -1.5, 2}, 4).RequireGrad()
	g.Bias = lathe.FromSlice(lathe.CPU, []float64{0.1, 0, -0.2, 0.3}, 4).RequireGrad()
	y := g.Forward(seq(0.9, 0, 2, 4, 3).MulScalar(3))
	checkClose(t, "output", y, gnY)
	if err := y.Mul(seq(0.4, 2, 2, 4, 3)).Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	checkClose(t, "weight gradient", g.Weight.Grad(), gnWeightGrad)
	checkClose(t, "bias gradient", g.Bias.Grad(), gnBiasGrad)
}

func TestNormModuleErrors(t *testing.T) {
	z := func(shape ...int) *lathe.Tensor { return lathe.Zeros(lathe.CPU, lathe.Float32, shape...) }
	cases := []struct {
		name string
		got  *lathe.Tensor
		kind error
		arg  string
	}{
		{"batch_norm2d/rank3", NewBatchNorm2d(3).Forward(z(2, 3, 4)), lathe.ErrShape, "x"},
		{"batch_norm2d/channels", NewBatchNorm2d(3).Forward(z(2, 4, 2, 2)), lathe.ErrShape, "x"},
		{"batch_norm2d/channels/bare", NewBatchNorm2d(3, NoAffine(), NoRunningStats()).Forward(z(2, 4, 2, 2)), lathe.ErrShape, "x"},
		{"batch_norm2d/channels/eval", func() *lathe.Tensor {
			b := NewBatchNorm2d(3, NoAffine())
			b.Train(false)
			return b.Forward(z(2, 4, 2, 2))
		}(), lathe.ErrShape, "x"},
		{"batch_norm2d/one_value/nostats_eval", func() *lathe.Tensor {
			b := NewBatchNorm2d(3, NoRunningStats())
			b.Train(false) // the batch's statistics still: one value per channel has no variance
			return b.Forward(z(1, 3, 1, 1))
		}(), lathe.ErrShape, "x"},
		{"batch_norm2d/cumulative_without_count", func() *lathe.Tensor {
			b := NewBatchNorm2d(3, CumulativeAverage())
			b.NumBatchesTracked = nil
			return b.Forward(z(2, 3, 2, 2))
		}(), lathe.ErrValue, "num_batches_tracked"},
		{"batch_norm2d/zero_channels", NewBatchNorm2d(0).Forward(z(2, 0, 2, 2)), lathe.ErrShape, "channels"},
		{"batch_norm1d/rank1", NewBatchNorm1d(3).Forward(z(3)), lathe.ErrShape, "x"},
		{"batch_norm1d/rank4", NewBatchNorm1d(3).Forward(z(2, 3, 4, 4)), lathe.ErrShape, "x"},
		{"batch_norm1d/channels", NewBatchNorm1d(3).Forward(z(2, 4)), lathe.ErrShape, "x"},
		{"batch_norm3d/rank4", NewBatchNorm3d(3).Forward(z(3, 2, 2, 2)), lathe.ErrShape, "x"},
		{"batch_norm3d/channels", NewBatchNorm3d(3).Forward(z(2, 2, 2, 2, 2)), lathe.ErrShape, "x"},
		{"instance_norm1d/rank4", NewInstanceNorm1d(3).Forward(z(2, 3, 4, 4)), lathe.ErrShape, "x"},
		{"instance_norm2d/rank2", NewInstanceNorm2d(3).Forward(z(3, 4)), lathe.ErrShape, "x"},
		{"instance_norm3d/rank6", NewInstanceNorm3d(3).Forward(z(1, 3, 2, 2, 2, 2)), lathe.ErrShape, "x"},
		{"instance_norm2d/channels", NewInstanceNorm2d(3).Forward(z(2, 4, 2, 2)), lathe.ErrShape, "x"},
		{"instance_norm2d/channels/unbatched", NewInstanceNorm2d(3, Affine()).Forward(z(4, 2, 2)), lathe.ErrShape, "x"},
		{"instance_norm1d/one_position", NewInstanceNorm1d(3).Forward(z(2, 3, 1)), lathe.ErrShape, "x"},
		{"instance_norm1d/zero_channels", NewInstanceNorm1d(0).Forward(z(2, 0, 3)), lathe.ErrShape, "channels"},
		{"group_norm/indivisible", NewGroupNorm(4, 6).Forward(z(2, 6, 2)), lathe.ErrValue, "groups"},
		{"group_norm/channels", NewGroupNorm(2, 4).Forward(z(2, 6, 2)), lathe.ErrShape, "x"},
		{"group_norm/channels/noaffine", NewGroupNorm(2, 4, NoAffine()).Forward(z(2, 6, 2)), lathe.ErrShape, "x"},
		{"layer_norm/shape/noaffine", NewLayerNorm([]int{3}, NoAffine()).Forward(z(2, 4)), lathe.ErrShape, "x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.got.Err()
			var le *lathe.Error
			if !errors.Is(err, c.kind) || !errors.As(err, &le) || le.Arg != c.arg {
				t.Fatalf("error %v, want kind %v naming %q", err, c.kind, c.arg)
			}
		})
	}
}

// The running statistics are saved and loaded with the parameters, and a
// Seq moves them with its children's parameters.
func TestBatchNorm2dSaveLoad(t *testing.T) {
	bn := NewBatchNorm2d(3, WithDType(lathe.Float64))
	m := Sequential(bn)
	m.Forward(seq(0.7, 0, 2, 3, 2, 2))
	if err := m.To(lathe.CPU); err != nil {
		t.Fatal(err)
	}
	if names := []string{Buffers(m)[0].Name, Buffers(m)[1].Name}; names[0] != "0.running_mean" || names[1] != "0.running_var" {
		t.Fatalf("buffers are named %v", names)
	}
	var buf bytes.Buffer
	if err := Save(&buf, m); err != nil {
		t.Fatal(err)
	}
	fresh := NewBatchNorm2d(3, WithDType(lathe.Float64))
	if err := Load(&buf, Sequential(fresh)); err != nil {
		t.Fatal(err)
	}
	checkClose(t, "loaded running mean", fresh.RunningMean, values(t, bn.RunningMean))
	checkClose(t, "loaded running var", fresh.RunningVar, values(t, bn.RunningVar))
	if fresh.RunningMean.RequiresGrad() {
		t.Error("a loaded running mean requires a gradient")
	}
}

// checkCount checks BatchNorm2d's num_batches_tracked: an int64 0-d tensor
// holding want.
func checkCount(t *testing.T, bn *BatchNorm2d, want int64) {
	t.Helper()
	c := bn.NumBatchesTracked
	if c.DType() != lathe.Int64 || c.Rank() != 0 {
		t.Fatalf("num_batches_tracked is %v of shape %v, want a 0-d int64", c.DType(), c.Shape())
	}
	got, err := c.Int64s()
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != want {
		t.Fatalf("num_batches_tracked = %d, want %d", got[0], want)
	}
}

// TestBatchNorm2dStateDict: a file laid out as PyTorch's state_dict of a
// BatchNorm2d (its five names, num_batches_tracked an I64 scalar) loads
// strictly, count included; a failed step leaves the count where it was.
func TestBatchNorm2dStateDict(t *testing.T) {
	header := `{"0.bias":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"0.num_batches_tracked":{"dtype":"I64","shape":[],"data_offsets":[8,16]},` +
		`"0.running_mean":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},` +
		`"0.running_var":{"dtype":"F32","shape":[2],"data_offsets":[24,32]},` +
		`"0.weight":{"dtype":"F32","shape":[2],"data_offsets":[32,40]}}`
	var data []byte
	data = appendF32(appendF32(data, 0.5), -0.5)
	data = binary.LittleEndian.AppendUint64(data, 7)
	data = appendF32(appendF32(data, 0.25), 0.75)
	data = appendF32(appendF32(data, 2), 3)
	data = appendF32(appendF32(data, 1.5), 2.5)
	bn := NewBatchNorm2d(2)
	if err := Load(bytes.NewReader(stFile(header, data)), Sequential(bn)); err != nil {
		t.Fatal(err)
	}
	checkCount(t, bn, 7)
	checkClose(t, "loaded running var", bn.RunningVar, []float64{2, 3})
	bn.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 2, 1, 2))
	checkCount(t, bn, 8)
	if err := bn.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3, 1, 2)).Err(); !errors.Is(err, lathe.ErrShape) {
		t.Fatalf("a step on 3 channels: %v, want ErrShape", err)
	}
	checkCount(t, bn, 8)
}

// TestBatchNorm2dStateDictWithoutCount: a state dict without
// num_batches_tracked (a checkpoint converted from another framework)
// loads strictly, setting the count to 0, as torch 1.13's BatchNorm2d
// loads one without version metadata (every safetensors file's); NonStrict
// does not call the count missing. The other tensors stay required.
func TestBatchNorm2dStateDictWithoutCount(t *testing.T) {
	header := `{"0.bias":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"0.running_mean":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},` +
		`"0.running_var":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},` +
		`"0.weight":{"dtype":"F32","shape":[2],"data_offsets":[24,32]}}`
	var data []byte
	data = appendF32(appendF32(data, 0.5), -0.5)
	data = appendF32(appendF32(data, 0.25), 0.75)
	data = appendF32(appendF32(data, 2), 3)
	data = appendF32(appendF32(data, 1.5), 2.5)
	for _, strict := range []bool{true, false} {
		bn := NewBatchNorm2d(2)
		bn.Forward(lathe.Ones(lathe.CPU, lathe.Float32, 2, 2, 1, 2))
		checkCount(t, bn, 1)
		var opts []LoadOption
		var keys Keys
		if !strict {
			opts = append(opts, NonStrict(&keys))
		}
		if err := Load(bytes.NewReader(stFile(header, data)), Sequential(bn), opts...); err != nil {
			t.Fatalf("strict %v: %v", strict, err)
		}
		checkCount(t, bn, 0)
		checkClose(t, "loaded running var", bn.RunningVar, []float64{2, 3})
		if len(keys.Missing)+len(keys.Unexpected) != 0 {
			t.Errorf("keys %+v, want none", keys)
		}
	}
	if err := Load(bytes.NewReader(stFile(`{}`, nil)), Sequential(NewLinear(1, 1), NewBatchNorm2d(1))); err == nil ||
		!strings.Contains(err.Error(), "missing") {
		t.Fatalf("a file without the weights: %v, want them missing", err)
	}
}

// TestStateDictScalarAs1d: a 0-d tensor (BatchNorm2d's count) reads one of
// shape [1], as torch 1.13's load_state_dict(strict=True) takes it (from
// converters without 0-d tensors); one of [2], which torch would read its
// first element of, is refused and changes nothing.
func TestStateDictScalarAs1d(t *testing.T) {
	file := func(n int) []byte {
		header := `{"bias":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},` +
			`"num_batches_tracked":{"dtype":"I64","shape":[` + strconv.Itoa(n) + `],"data_offsets":[4,` + strconv.Itoa(4+8*n) + `]},` +
			`"running_mean":{"dtype":"F32","shape":[1],"data_offsets":[` + strconv.Itoa(4+8*n) + `,` + strconv.Itoa(8+8*n) + `]},` +
			`"running_var":{"dtype":"F32","shape":[1],"data_offsets":[` + strconv.Itoa(8+8*n) + `,` + strconv.Itoa(12+8*n) + `]},` +
			`"weight":{"dtype":"F32","shape":[1],"data_offsets":[` + strconv.Itoa(12+8*n) + `,` + strconv.Itoa(16+8*n) + `]}}`
		data := appendF32(nil, 0.5)
		for range n {
			data = binary.LittleEndian.AppendUint64(data, 7)
		}
		data = appendF32(appendF32(appendF32(data, 0.25), 2), 1.5)
		return stFile(header, data)
	}
	bn := NewBatchNorm2d(1)
	if err := Load(bytes.NewReader(file(1)), bn); err != nil {
		t.Fatal(err)
	}
	checkCount(t, bn, 7)
	checkClose(t, "loaded running var", bn.RunningVar, []float64{2})
	bn = NewBatchNorm2d(1)
	if err := Load(bytes.NewReader(file(2)), bn); !errors.Is(err, lathe.ErrShape) {
		t.Fatalf("a count of shape [2]: %v, want ErrShape", err)
	}
	checkCount(t, bn, 0)
	checkClose(t, "running var", bn.RunningVar, []float64{1})
}

// A layer without an affine map or running statistics lists only what it
// has, as torch's state dict: Err, Save, Load and To take it, and a
// failed one reports its error from Err even where only buffers are left.
func TestNormLayersWithoutState(t *testing.T) {
	cases := []struct {
		name    string
		m       Module
		names   []string // Parameters, then Buffers
		nParams int
	}{
		{"bn2d/noaffine", NewBatchNorm2d(3, NoAffine()), []string{"running_mean", "running_var", "num_batches_tracked"}, 0},
		{"bn1d/nostats", NewBatchNorm1d(3, NoRunningStats()), []string{"weight", "bias"}, 2},
		{"bn3d/bare", NewBatchNorm3d(3, NoAffine(), NoRunningStats()), nil, 0},
		{"groupnorm/noaffine", NewGroupNorm(1, 3, NoAffine()), nil, 0},
		{"in1d", NewInstanceNorm1d(3), nil, 0},
		{"in2d/affine", NewInstanceNorm2d(3, Affine()), []string{"weight", "bias"}, 2},
		{"in3d/stats", NewInstanceNorm3d(3, TrackRunningStats()), []string{"running_mean", "running_var", "num_batches_tracked"}, 0},
		{"layernorm/noaffine", NewLayerNorm([]int{3}, NoAffine()), nil, 0},
		{"seq", Sequential(NewBatchNorm2d(3, NoAffine()), NewBatchNorm2d(3, NoRunningStats())),
			[]string{"1.weight", "1.bias", "0.running_mean", "0.running_var", "0.num_batches_tracked"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var names []string
			for _, p := range state(c.m) {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, c.names) || len(c.m.Parameters()) != c.nParams {
				t.Fatalf("state %v (%d parameters), want %v (%d)", names, len(c.m.Parameters()), c.names, c.nParams)
			}
			if err := Err(c.m); err != nil {
				t.Fatal(err)
			}
			if err := c.m.To(lathe.CPU); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Save(&buf, c.m); err != nil {
				t.Fatal(err)
			}
			if err := Load(bytes.NewReader(buf.Bytes()), c.m); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A failed layer with no parameters left: Err finds its buffers' error.
	if err := Err(NewBatchNorm2d(0, NoAffine())); !errors.Is(err, lathe.ErrShape) {
		t.Fatalf("Err of BatchNorm2d(0, NoAffine()) = %v, want ErrShape", err)
	}
}

// NoRunningStats normalises by the batch's statistics in both modes, and
// CumulativeAverage weighs step n's batch by 1/n.
func TestBatchNormOptionsSemantics(t *testing.T) {
	x := seq(0.7, 0.1, 4, 3, 2, 2)
	b := NewBatchNorm2d(3, NoRunningStats(), WithDType(lathe.Float64))
	train := b.Forward(x)
	b.Train(false)
	ev := b.Forward(x)
	checkClose(t, "eval without running statistics", ev, values(t, train))

	c := NewBatchNorm2d(3, CumulativeAverage(), WithDType(lathe.Float64))
	c.Momentum = 0.5 // not used
	var sum []float64
	for i := range 3 {
		xi := seq(0.3+0.2*float64(i), float64(i), 4, 3, 2, 2)
		if err := c.Forward(xi).Err(); err != nil {
			t.Fatal(err)
		}
		m := values(t, xi.Mean(0, 2, 3))
		if sum == nil {
			sum = make([]float64, len(m))
		}
		for j := range m {
			sum[j] += m[j]
		}
	}
	want := []float64{sum[0] / 3, sum[1] / 3, sum[2] / 3}
	checkClose(t, "cumulative running mean", c.RunningMean, want)
}

// An instance norm normalises each sample's channels on their own, the
// same batched or not; with running statistics, evaluation mode uses them.
func TestInstanceNormSemantics(t *testing.T) {
	x := seq(0.9, 0.2, 2, 3, 4, 5)
	m := NewInstanceNorm2d(3, WithDType(lathe.Float64))
	y := m.Forward(x)
	// Each (sample, channel) has mean 0 and biased variance 1/(1+eps/var).
	checkClose(t, "means", y.Mean(2, 3), make([]float64, 6))
	one := m.Forward(x.Narrow(0, 1, 1).Squeeze(0))
	checkClose(t, "unbatched", one, values(t, y.Narrow(0, 1, 1).Squeeze(0)))

	s := NewInstanceNorm1d(3, TrackRunningStats(), WithDType(lathe.Float64))
	s.Momentum = 1 // the running statistics become the batch's
	xs := seq(0.5, 0.3, 2, 3, 6)
	if err := s.Forward(xs).Err(); err != nil {
		t.Fatal(err)
	}
	checkClose(t, "running mean", s.RunningMean, values(t, xs.Mean(2).Mean(0)))
	checkClose(t, "running var", s.RunningVar, values(t, xs.Var(true, 2).Mean(0)))
	if n, _ := s.NumBatchesTracked.Int64s(); n[0] != 0 {
		t.Fatalf("num_batches_tracked %d, want 0: torch's instance norms do not count", n[0])
	}
	s.Train(false)
	want := xs.Sub(s.RunningMean.Reshape(1, 3, 1)).Div(s.RunningVar.AddScalar(s.Eps).Sqrt().Reshape(1, 3, 1))
	checkClose(t, "eval", s.Forward(xs), values(t, want))
}

// An instance norm with running statistics in evaluation mode normalises
// by the repeated running statistics, which batch_norm's graph holds: they
// were released at once, so Backward through it failed ("mean of
// batch_norm_apply was released") on the cpu. The gradient of x is
// g·weight/√(running_var+eps), batched and unbatched.
func TestInstanceNormEvalBackward(t *testing.T) {
	for _, dev := range []lathe.Device{lathe.CPU, lathe.WGPU(0)} {
		t.Run(dev.String(), func(t *testing.T) {
			if dev != lathe.CPU {
				dev = wgpuOrSkip(t)
			}
			m := NewInstanceNorm1d(2, TrackRunningStats(), Affine(), OnDevice(dev))
			m.RunningMean = lathe.FromSlice(lathe.CPU, []float32{0.5, -1}, 2).To(dev)
			m.RunningVar = lathe.FromSlice(lathe.CPU, []float32{4, 0.25}, 2).To(dev)
			m.Weight = lathe.FromSlice(lathe.CPU, []float32{2, 3}, 2).To(dev).RequireGrad()
			m.Train(false)
			for _, shape := range [][]int{{2, 2, 3}, {2, 3}} {
				x := seq(0.1, 0.2, shape...).Cast(lathe.Float32).To(dev).RequireGrad()
				y := m.Forward(x)
				if err := y.Sum().Backward(); err != nil {
					t.Fatalf("%v: %v", shape, err)
				}
				want := make([]float64, x.Numel())
				for i := range want {
					c := (i / shape[len(shape)-1]) % 2
					want[i] = []float64{2 / math.Sqrt(4+1e-5), 3 / math.Sqrt(0.25+1e-5)}[c]
				}
				assertClose(t, "x.grad", values(t, x.Grad().To(lathe.CPU)), want, 1e-5)
			}
		})
	}
}

// State set by hand is checked against x, naming the field's state-dict
// name: an instance norm's weight or running mean of the wrong size was
// batch_norm's error about the repeated tensor and x viewed as [1, N·C,
// ...], shapes the caller never made; a step count released, of a float
// dtype, of several values or negative under the cumulative average was
// add's error naming "lhs", item's, or a momentum the caller never gave.
// A step that fails moves nothing.
func TestNormStateEdited(t *testing.T) {
	x := seq(0.3, 0.1, 3, 2, 4).Cast(lathe.Float32)
	in := func(edit func(m *InstanceNorm1d)) error {
		m := NewInstanceNorm1d(2, Affine(), TrackRunningStats())
		edit(m)
		return m.Forward(x).Err()
	}
	err := in(func(m *InstanceNorm1d) { m.Weight = lathe.Ones(lathe.CPU, lathe.Float32, 3) })
	wantArgErr(t, err, lathe.ErrShape, "weight")
	if err != nil && (strings.Contains(err.Error(), "[9]") || strings.Contains(err.Error(), "[1, 6, 4]")) {
		t.Errorf("weight: %v names the repeated shapes", err)
	}
	wantArgErr(t, in(func(m *InstanceNorm1d) { m.Bias = lathe.Ones(lathe.CPU, lathe.Float32, 2, 1) }), lathe.ErrShape, "bias")
	wantArgErr(t, in(func(m *InstanceNorm1d) { m.RunningMean = lathe.Zeros(lathe.CPU, lathe.Float32, 3) }), lathe.ErrShape, "running_mean")
	wantArgErr(t, in(func(m *InstanceNorm1d) { m.Train(false); m.RunningVar = lathe.Ones(lathe.CPU, lathe.Float32, 1) }), lathe.ErrShape, "running_var")
	bn := func(edit func(m *BatchNorm1d)) error {
		m := NewBatchNorm1d(2, CumulativeAverage())
		edit(m)
		before := values(t, m.RunningMean)
		err := m.Forward(x).Err()
		if err != nil && !slices.Equal(values(t, m.RunningMean), before) {
			t.Errorf("a failed step moved the running mean")
		}
		return err
	}
	var e *lathe.Error
	if err := bn(func(m *BatchNorm1d) { m.NumBatchesTracked.Release() }); !errors.As(err, &e) || e.Arg != "num_batches_tracked" {
		t.Errorf("released count: %v", err)
	}
	wantArgErr(t, bn(func(m *BatchNorm1d) { m.NumBatchesTracked = lathe.Scalar(lathe.CPU, float32(2)) }), lathe.ErrValue, "num_batches_tracked")
	wantArgErr(t, bn(func(m *BatchNorm1d) { m.NumBatchesTracked = lathe.Zeros(lathe.CPU, lathe.Int64, 3) }), lathe.ErrValue, "num_batches_tracked")
	wantArgErr(t, bn(func(m *BatchNorm1d) { m.NumBatchesTracked = lathe.Scalar(lathe.CPU, int64(-1)) }), lathe.ErrValue, "num_batches_tracked")
	// A count of one value, 0-d or [1] (as a checkpoint may hold it), is taken.
	if err := bn(func(m *BatchNorm1d) { m.NumBatchesTracked = lathe.Zeros(lathe.CPU, lathe.Int64, 1) }); err != nil {
		t.Errorf("[1] count: %v", err)
	}
}

// An instance norm takes no cumulative average (torch's instance_norm
// refuses momentum=None): Cumulative set by hand was ignored, and a step
// moved the running statistics by Momentum instead; it is an ErrValue
// naming momentum, and the statistics stay.
func TestInstanceNormCumulativeRefused(t *testing.T) {
	m := NewInstanceNorm1d(2, TrackRunningStats())
	m.Cumulative = true
	wantArgErr(t, m.Forward(seq(0.3, 0.1, 3, 2, 4).Cast(lathe.Float32)).Err(), lathe.ErrValue, "momentum")
	checkClose(t, "running mean", m.RunningMean, []float64{0, 0})
}
