package nn

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe"
)

// Module is a layer or a model: a function of one tensor with parameters.
type Module interface {
	// Forward computes the module's output for x. Errors are sticky: a
	// failed x or parameter gives a failed result.
	Forward(x *lathe.Tensor) *lathe.Tensor
	// Parameters lists the module's parameters with their state-dict names
	// ("weight", "0.bias"), in a fixed order. The handles are the module's
	// own: rebinding one (an optimizer step) changes the module.
	Parameters() []Param
	// To moves every parameter (and its gradient) to dev, keeping
	// RequireGrad. An optimizer's state does not move: make the optimizer
	// after moving the model.
	To(dev lathe.Device) error
	// Train switches training mode (Dropout is active only in it). Modules
	// start in training mode, as PyTorch's do.
	Train(on bool)
}

// Param is a named parameter. T is a stable handle that optimizers and Load
// rebind in place; read the parameter through it every time.
type Param struct {
	Name string
	T    *lathe.Tensor
}

// Err returns the first error among m's parameters and buffers (a layer
// made with a bad size, say), or that m (or a child of a Seq) is nil, or
// nil.
func Err(m Module) error {
	if isNil(m) {
		return nilModule("err", "m")
	}
	for _, p := range held(m) {
		if p.T == nil {
			return nnError("parameters", lathe.ErrValue, p.Name, "is nil", "build layers with the nn constructors")
		}
		if err := p.T.CheckArg("parameters", p.Name); err != nil {
			return err
		}
	}
	return nil
}

// Option sets an option of a layer constructor. Each option carries
// torch's keyword for it, and layerSpecs says which keywords each layer
// takes; passing an option to a layer that does not take it (Mode to
// NewConv2d) is an ErrValue that names it, as PyTorch's constructors refuse
// an unknown keyword.
type Option struct {
	name string
	set  func(*options)
}

type options struct {
	dtype  lathe.DType
	device lathe.Device
	noBias bool
	// windowed layers and Upsample (nn/options.go)
	window     []lathe.WindowOption
	windowArgs []string // the keyword of each window option
	interp     []lathe.InterpOption
	kernel     []int // KernelSize: one size per dim
	groups     int
	groupsSet  bool // Groups was given (Groups(0) is an error, not the default)
	// what the convolutions read of the window options themselves
	stride, padding, dilation []int
	paddingSame               bool
	paddingMode               string

	// PReLU
	init    float64
	initSet bool

	// recurrent layers (nn/rnn.go)
	numLayers                 int // 0 means 1
	batchFirst, bidirectional bool
	dropout                   float64
	nonlinearity              string // RNN: "tanh" (or "") or "relu"
	dropoutSet                bool   // dropout was given (the transformer layers' default is 0.1)
	projSize                  int    // LSTM: proj_size, 0 for none

	// EmbeddingBag (nn/embeddingbag.go)
	bagMode           string // Mode's value
	includeLastOffset bool

	// transformer layers (nn/transformer.go)
	dimFeedforward    int
	dimFeedforwardSet bool
	activation        string // "" (relu), "relu" or "gelu"
	layerNormEps      float64
	layerNormEpsSet   bool
	normFirst         bool
	seqFirst          bool // SeqFirst: [L, B, E] (torch's batch_first=False); BatchFirst clears it

	// MultiheadAttention (nn/attention_options.go)
	kdim, vdim             int // 0: embed_dim
	addBiasKV, addZeroAttn bool

	// the normalisation layers (nn/options.go): affine and
	// track_running_stats where set, else the layer's default
	affine, affineSet             bool
	runningStats, runningStatsSet bool
	cumulative                    bool // momentum=None

	// Embedding (nn/options.go)
	paddingIdx              int
	paddingIdxSet           bool
	maxNorm, normType       float64
	maxNormSet, normTypeSet bool
	scaleGradByFreq         bool

	// the transformer stacks (nn/transformer_model.go)
	numEncoderLayers, numDecoderLayers       int
	numEncoderLayersSet, numDecoderLayersSet bool
}

// WithDType makes the layer's parameters of dtype dt (lathe.Float32 by
// default; lathe.Float64 is the other choice).
func WithDType(dt lathe.DType) Option {
	return Option{"dtype", func(o *options) { o.dtype = dt }}
}

// OnDevice makes the layer's parameters on dev (lathe.CPU by default).
func OnDevice(dev lathe.Device) Option {
	return Option{"device", func(o *options) { o.device = dev }}
}

// NoBias leaves out the layer's additive bias (torch's bias=False).
func NoBias() Option { return Option{"bias", func(o *options) { o.noBias = true }} }

// A layerSpec names a layer constructor's op (the prefix of its errors)
// and the options it takes, by torch's keyword.
type layerSpec struct {
	layer, op string
	takes     []string
}

// layerSpecs is the one list of which layer takes which option.
var layerSpecs = func() []layerSpec {
	params := []string{"dtype", "device"}
	withBias := append([]string{"bias"}, params...)
	recurrent := append([]string{"num_layers", "batch_first", "bidirectional", "dropout"}, withBias...)
	conv := append([]string{"kernel_size", "stride", "padding", "dilation", "groups", "padding_mode"}, withBias...)
	convT := append([]string{"kernel_size", "stride", "padding", "output_padding", "dilation", "groups", "padding_mode"}, withBias...)
	transformer := append([]string{"dim_feedforward", "dropout", "activation", "layer_norm_eps", "batch_first", "norm_first"}, params...)
	batchNorm := append([]string{"affine", "track_running_stats", "momentum"}, params...)
	return []layerSpec{
		{"Linear", "linear", withBias},
		{"Bilinear", "bilinear", withBias},
		{"Embedding", "embedding", append([]string{"padding_idx", "max_norm", "norm_type", "scale_grad_by_freq"}, params...)},
		{"EmbeddingBag", "embedding_bag", append([]string{"mode", "include_last_offset", "padding_idx", "max_norm", "norm_type",
			"scale_grad_by_freq"}, params...)},
		{"LayerNorm", "layer_norm", append([]string{"affine"}, params...)},
		{"BatchNorm1d", "batch_norm1d", batchNorm},
		{"BatchNorm2d", "batch_norm2d", batchNorm},
		{"BatchNorm3d", "batch_norm3d", batchNorm},
		{"InstanceNorm1d", "instance_norm1d", append([]string{"affine", "track_running_stats"}, params...)},
		{"InstanceNorm2d", "instance_norm2d", append([]string{"affine", "track_running_stats"}, params...)},
		{"InstanceNorm3d", "instance_norm3d", append([]string{"affine", "track_running_stats"}, params...)},
		{"GroupNorm", "group_norm", append([]string{"affine"}, params...)},
		{"Conv1d", "conv1d", conv},
		{"Conv2d", "conv2d", conv},
		{"Conv3d", "conv3d", conv},
		{"ConvTranspose1d", "conv_transpose1d", convT},
		{"ConvTranspose2d", "conv_transpose2d", convT},
		{"ConvTranspose3d", "conv_transpose3d", convT},
		{"PReLU", "prelu", append([]string{"init"}, params...)},
		{"MaxPool2d", "max_pool2d", []string{"kernel_size", "stride", "padding", "dilation", "ceil_mode"}},
		{"AvgPool2d", "avg_pool2d", []string{"kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"}},
		{"MaxPool1d", "max_pool1d", []string{"kernel_size", "stride", "padding", "dilation", "ceil_mode"}},
		{"MaxPool3d", "max_pool3d", []string{"kernel_size", "stride", "padding", "dilation", "ceil_mode"}},
		{"AvgPool1d", "avg_pool1d", []string{"kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"}},
		{"AvgPool3d", "avg_pool3d", []string{"kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"}},
		{"MaxUnpool2d", "max_unpool2d", []string{"kernel_size", "stride", "padding"}},
		{"Unfold", "unfold", []string{"kernel_size", "dilation", "padding", "stride"}},
		{"Fold", "fold", []string{"kernel_size", "dilation", "padding", "stride"}},
		{"Upsample", "upsample", []string{"size", "scale_factor", "mode", "align_corners", "recompute_scale_factor"}},
		{"RNN", "rnn", append([]string{"nonlinearity"}, recurrent...)},
		{"LSTM", "lstm", append([]string{"proj_size"}, recurrent...)},
		{"GRU", "gru", recurrent},
		{"RNNCell", "rnn_cell", append([]string{"nonlinearity"}, withBias...)},
		{"LSTMCell", "lstm_cell", withBias},
		{"GRUCell", "gru_cell", withBias},
		{"RMSNorm", "rms_norm", params},
		{"MultiheadAttention", "multihead_attention", append([]string{"dropout", "add_bias_kv", "add_zero_attn", "kdim", "vdim", "batch_first"}, withBias...)},
		{"TransformerEncoderLayer", "transformer_encoder_layer", transformer},
		{"TransformerDecoderLayer", "transformer_decoder_layer", transformer},
		{"Transformer", "transformer", append([]string{"num_encoder_layers", "num_decoder_layers"}, transformer...)},
	}
}()

// layerOptions applies opts for the named layer (a name in layerSpecs),
// PyTorch's defaults first; an option the layer does not take, or a zero
// Option, is an ErrValue for the constructor to fail the layer with.
func layerOptions(layer string, opts []Option) (options, *lathe.Error) {
	o := options{dtype: lathe.Float32, device: lathe.CPU}
	i := slices.IndexFunc(layerSpecs, func(s layerSpec) bool { return s.layer == layer })
	spec := layerSpecs[i]
	for _, opt := range opts {
		if opt.set == nil {
			return o, nnError(spec.op, lathe.ErrValue, "opts", "holds a zero Option", "make options with nn.Stride, nn.NoBias, ...")
		}
		if !slices.Contains(spec.takes, opt.name) {
			var owners []string
			for _, s := range layerSpecs {
				if slices.Contains(s.takes, opt.name) {
					owners = append(owners, s.layer+"'s")
				}
			}
			fix := spec.layer + " takes " + strings.Join(spec.takes, ", ")
			if len(owners) > 0 && len(owners) <= 3 { // more (dtype's) would drown the fix
				fix = "it is " + strings.Join(owners, ", ") + "; " + fix
			}
			return o, nnError(spec.op, lathe.ErrValue, opt.name, "is not an option of "+spec.layer, fix)
		}
		opt.set(&o)
	}
	if slices.Contains(spec.takes, "dtype") {
		return o, checkPlace(spec.op, o)
	}
	return o, nil
}

// checkPlace refuses, before a layer draws its parameters, a dtype that
// is not float and a device that cannot hold it. The parameters are drawn
// on the cpu and then moved: a move that failed left the random stream
// past the draws of a layer that was never made, where a failed call
// changes nothing (and torch's constructors fail at the allocation,
// before drawing).
func checkPlace(op string, o options) *lathe.Error {
	if !o.dtype.IsFloat() {
		return nnError(op, lathe.ErrDType, "dtype", "is "+o.dtype.String()+" but parameters are float",
			"use nn.WithDType(lathe.Float32) or another float dtype")
	}
	if o.device == lathe.CPU {
		return nil
	}
	z := lathe.Zeros(o.device, o.dtype, 1)
	defer z.Release()
	var e *lathe.Error
	if err := z.Err(); errors.As(err, &e) {
		c := *e
		c.Op, c.Arg = op, "device" // the layers that fail register it under its argument
		return &c
	} else if err != nil {
		return nnError(op, lathe.ErrUnavailable, "device", err.Error(), "use lathe.CPU")
	}
	return nil
}

// newParam uploads an initial value made on the cpu to the layer's device
// and marks it as a leaf that wants a gradient.
func newParam(v *lathe.Tensor, o options) *lathe.Tensor {
	if v.Err() == nil && !v.DType().IsFloat() {
		return lathe.Failed(nnError("parameter", lathe.ErrDType, "dtype", "is "+v.DType().String()+" but parameters are float",
			"use nn.WithDType(lathe.Float32) or lathe.Float64"))
	}
	return v.To(o.device).RequireGrad()
}

// rebind points handle p at next's data, as a fresh leaf that keeps p's
// RequireGrad and, when grad is not nil, has that gradient. The caller has
// checked next; an error here leaves p unchanged.
func rebind(p, next, grad *lathe.Tensor) error {
	return rebindAll([]*lathe.Tensor{p}, []*lathe.Tensor{next}, []*lathe.Tensor{grad})
}

// rebindAll is rebind for many handles, all or none: every new leaf is
// made (and its gradient set) before any handle changes, so that an error
// leaves every p as it was, and gives back what was made. A nil next
// leaves its p alone.
func rebindAll(ps, nexts, grads []*lathe.Tensor) error {
	leaves := make([]*lathe.Tensor, len(ps))
	for i, next := range nexts {
		if next == nil {
			continue
		}
		leaf, err := newLeaf(ps[i], next, grads[i])
		if err != nil {
			for _, t := range append(leaves[:i], nexts[i+1:]...) {
				if t != nil { // a failed tensor holds nothing; one a device's check refused does
					t.Release()
				}
			}
			return err
		}
		leaves[i] = leaf
	}
	for i, leaf := range leaves {
		if leaf != nil {
			// The old value goes back to its device's pool: p is the only
			// handle on it (views keep their data), and a graph that still
			// needs it is one PyTorch, too, would refuse after an in-place
			// update.
			ps[i].Release()
			*ps[i] = *leaf
		}
	}
	return nil
}

// newLeaf is next as p's new value: a fresh leaf where p requires a
// gradient, with grad as its gradient when grad is not nil. It takes next
// (released, or returned); on an error it has released what it made.
func newLeaf(p, next, grad *lathe.Tensor) (*lathe.Tensor, error) {
	if err := next.Err(); err != nil {
		return nil, err
	}
	if !p.RequiresGrad() {
		return next, nil
	}
	leaf := next.Detach().RequireGrad()
	next.Release() // the detached view keeps the data
	if grad != nil {
		if err := leaf.SetGrad(grad); err != nil {
			leaf.Release()
			return nil, err
		}
	}
	if err := leaf.Err(); err != nil {
		return nil, err
	}
	return leaf, nil
}

// moveParams is To for any list of parameters: every move is made before
// any handle is rebound, so a failure leaves the model where it was.
func moveParams(ps []Param, dev lathe.Device) error {
	next := make([]*lathe.Tensor, len(ps))
	grads := make([]*lathe.Tensor, len(ps))
	// fail gives back the copies made so far (on a device, memory that the
	// collector would free only later) and names the parameter at fault.
	fail := func(name string, err error) error {
		for i := range next {
			for _, t := range []*lathe.Tensor{next[i], grads[i]} {
				if t != nil { // a failed tensor holds nothing; one a device's check refused does
					t.Release()
				}
			}
		}
		if e, ok := err.(*lathe.Error); ok && (e.Arg == "" || e.Arg == "x") {
			c := *e
			c.Arg = name
			return &c
		}
		return err
	}
	for i, p := range ps {
		if p.T.Device() == dev && p.T.Err() == nil {
			continue
		}
		next[i] = p.T.Detach().To(dev)
		if err := next[i].Err(); err != nil {
			return fail(p.Name, err)
		}
		if g := p.T.Grad(); g != nil {
			grads[i] = g.To(dev)
			if err := grads[i].Err(); err != nil {
				return fail(p.Name+".grad", err)
			}
		}
	}
	handles := make([]*lathe.Tensor, len(ps))
	for i, p := range ps {
		handles[i] = p.T
	}
	return rebindAll(handles, next, grads)
}

// Seq is a chain of modules, each fed the output of the one before
// (torch.nn.Sequential). Its parameters are named by position: "0.weight".
type Seq struct {
	Modules []Module
}

// Sequential chains modules in order.
func Sequential(mods ...Module) *Seq { return &Seq{Modules: mods} }

// Forward runs the modules in order; a nil one fails the result.
//
// The output that one of this package's layers hands another is the
// chain's alone: it goes with the graph (lathe.ReleaseWithGraph), as
// PyTorch frees a Sequential's activations with its graph, rather than
// wait for the garbage collector, which left a ResNet block's training
// step taking megabytes of new memory each time. One that a module of
// another package makes or takes is left alone, since that module may
// keep it.
func (s *Seq) Forward(x *lathe.Tensor) *lathe.Tensor {
	// A Seq inside itself through a module that calls it from its own
	// Forward (a Checkpoint, a module of another package) would come back
	// here without end: the walk finds it first.
	if err := holdsItself("sequential", s); err != nil {
		return lathe.Failed(err)
	}
	return s.forward(x)
}

// forward is Forward once the walk has found no cycle: a Seq inside it
// runs its forward too, not the walk again.
func (s *Seq) forward(x *lathe.Tensor) *lathe.Tensor {
	if s == nil {
		return lathe.Failed(nilModule("sequential", "s"))
	}
	in := x
	var inner []*lathe.Tensor
	for i, m := range s.Modules {
		if isNil(m) {
			lathe.ReleaseWithGraph(nil, inner...)
			return lathe.Failed(nilModule("sequential", "modules["+strconv.Itoa(i)+"]"))
		}
		var y *lathe.Tensor
		if c, ok := m.(*Seq); ok {
			y = c.forward(x)
		} else {
			y = m.Forward(x)
		}
		if i > 0 && x != in && ownLayer(s.Modules[i-1]) && ownLayer(m) {
			inner = append(inner, x)
		}
		x = y
	}
	lathe.ReleaseWithGraph(x, inner...)
	return x
}

// ownLayer reports whether m is one of this package's layers, which keep
// neither their input nor their output: not a container (Seq, a
// checkpoint), whose modules may be anyone's.
func ownLayer(m Module) bool {
	t := reflect.TypeOf(m)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == ownPackage && t != reflect.TypeFor[Seq]() && t != reflect.TypeFor[checkpointed]()
}

var ownPackage = reflect.TypeFor[Seq]().PkgPath()

// Parameters lists each child's parameters under "<index>.<name>". A nil
// child is listed as a parameter "<index>" with a nil T, which Err, Save,
// Load and the optimizers report.
func (s *Seq) Parameters() []Param {
	if s == nil {
		return nil
	}
	if err := holdsItself("parameters", s); err != nil {
		return cycleParams(err)
	}
	var out []Param
	for i, m := range s.Modules {
		if isNil(m) {
			out = append(out, Param{Name: strconv.Itoa(i)})
			continue
		}
		for _, p := range m.Parameters() {
			out = append(out, Param{Name: strconv.Itoa(i) + "." + p.Name, T: p.T})
		}
	}
	return out
}

// To moves every child's parameters and buffers, non-persistent ones
// included, to dev.
func (s *Seq) To(dev lathe.Device) error { return moveParams(held(s), dev) }

// Train sets every child's mode (a nil child has none); a Seq that
// holds itself is left as it is (Err reports it).
func (s *Seq) Train(on bool) {
	if s == nil || holdsItself("train", s) != nil {
		return
	}
	for _, m := range s.Modules {
		if !isNil(m) {
			m.Train(on)
		}
	}
}

// isNil reports whether v is nil or holds a nil pointer (a nil *Linear
// passed as a Module, a nil *bytes.Buffer as an io.Writer): calling its
// methods would crash rather than fail.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return r.IsNil()
	}
	return false
}

// nilModule is the error of a nil module, reader or writer arg.
func nilModule(op, arg string) *lathe.Error {
	fix := "build modules with the nn constructors"
	if arg == "r" || arg == "w" {
		fix = "pass a reader or writer that exists"
	}
	return nnError(op, lathe.ErrValue, arg, "is nil", fix)
}

// nnError is a located *lathe.Error about nn's own checks.
func nnError(op string, kind error, arg, detail, fix string) *lathe.Error {
	return lathe.NewError(op, kind, arg, detail, fix)
}

// wrapErr gives an error from lathe the nn op's name when it has none.
func wrapErr(op string, err error) error {
	var e *lathe.Error
	if errors.As(err, &e) {
		return err
	}
	e = lathe.NewError(op, lathe.ErrValue, "", "failed", "")
	e.Err = err
	return e
}
