package main

import (
	"fmt"
	"strings"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// spec is what both sides build: a kind of step, its dtype and its sizes.
// It travels to the PyTorch child as JSON, so bench_torch.py has a builder
// for every kind here, keyed by the same name.
type spec struct {
	Kind  string `json:"kind"`
	DType string `json:"dtype"` // "f32", "f64", "bf16" or "f16"
	Dims  []int  `json:"dims"`
	// AMP is "bf16" or "f16" for a training step whose forward and loss
	// run under lathe.Autocast (torch.autocast) in that dtype; "" for none.
	AMP string `json:"amp,omitempty"`
	// Ranks is how many processes a data-parallel row runs in (0: one,
	// this one); each rank has its share of the machine's threads.
	Ranks int `json:"ranks,omitempty"`
	// Launcher starts the ranks on lathe's side: "" for mpirun (the MPI
	// engine), "torchrun" for torchrun's variables (the TCP engine).
	// PyTorch's side is gloo either way.
	Launcher string `json:"launcher,omitempty"`
}

// unit says how a workload's rate follows from its time per step.
type unit int

const (
	flops    unit = iota // Work is floating-point operations per step: GFLOP/s
	memBytes             // Work is bytes read and written per step: GB/s
	perStep              // the work is the step itself: steps/s (ops/s for dispatch rows)
	tokens               // Work is tokens per step: tokens/s
)

// workload is one row of the benchmark: a spec, the chart it belongs to, and
// the work one step does.
type workload struct {
	Name   string // unique; --filter matches it
	Family string // one chart per family
	spec
	Unit unit
	Work float64 // flops, bytes or tokens per step (perStep: unused, the work is the step)
	// MaxSamples caps --samples for a row whose one step takes seconds
	// (attention at long sequences, where PyTorch's composite alone takes
	// most of a minute), so that make bench stays minutes long; 0: none.
	MaxSamples int
}

// samples is how many samples the row takes when --samples asks for n.
func (w workload) samples(n int) int {
	if w.MaxSamples > 0 {
		return min(n, w.MaxSamples)
	}
	return n
}

// families are the charts, in order, with what their rows are (the plot
// adds the unit; the rows' names carry their shapes).
var families = []struct {
	Name, Title string
}{
	{"matmul", "matmul and batched matmul"},
	{"memory", "memory-bound ops"},
	{"mlp", "MLP training step"},
	{"conv", "ResNet block training step"},
	{"dispatch", "dispatch overhead: a 1-element add"},
	{"sampling", "sampling from a decoder's vocabulary"},
	{"attention", "scaled-dot-product attention forward+backward (torch: the unfused composite)"},
	{"transformer", "nn.TransformerEncoderLayer training step (torch: its nn.TransformerEncoderLayer)"},
	{"gpt", "GPT training step, examples/gpt's model"},
	{"gpt-generate", "GPT generation: a full context window per token, and with a KV cache within the context"},
	{"dist", "data-parallel: all-reduce (rate: bus bandwidth) and a DDP training step on 2 ranks against 1 process (torch: gloo)"},
}

// table lists the workloads. Adding one is a line here (and, for a new
// kind, a builder below and in build/bench_torch.py). quick keeps to small
// sizes, a few seconds in all.
func table(quick bool) []workload {
	if quick {
		return []workload{
			matmul("f32", 256, 256, 256),
			matmul("f64", 256, 256, 256),
			matmul("bf16", 256, 256, 256),
			matmul("f16", 256, 256, 256),
			matmul("f32", 128, 784, 256),
			matmul("f32", 128, 256, 10),
			bmm("f32", 8, 64, 64, 64),
			elementwise("add", "a+b", 3, 1<<20),
			elementwise("chain", "(a*b+c).relu", 4, 1<<20),
			elementwise("sum", "sum", 1, 1<<20),
			elementwise("sigmoid", "sigmoid", 2, 1<<20),
			elementwise("dropout", "dropout p=0.1", 2, 1<<20),
			softmax(256, 1024),
			softmaxDim0(256, 1024),
			layerNorm(256, 1024),
			batchNorm(4, 8, 16, 16),
			mlpStep(128, 784, 256, 10),
			amp("bf16", mlpStep(128, 784, 256, 10)),
			resBlockStep(4, 3, 16, 8, 10),
			amp("bf16", resBlockStep(4, 3, 16, 8, 10)),
			dispatchAdd(false),
			dispatchAdd(true),
			multinomial(8, 50000, 1, false),
			topK(8, 50000, 20),
			attention(2, 256, 64, attnCausal),
			encoderStep(4, 16, 32, 4, 64),
			gptStep(4, 32, 2, 32),
			gptGenerate(32, 2, 32),
			gptGenerateCached(32, 2, 32),
			allReduce(1<<10, 2),
			allReduce(1<<20, 2),
			overTCP(allReduce(1<<10, 2)),
			oneProcess(mlpStep(256, 784, 256, 10)),
			ddpStep(256, 784, 256, 10, 2, false),
		}
	}
	return []workload{
		matmul("f32", 256, 256, 256),
		matmul("f32", 512, 512, 512),
		matmul("f32", 1024, 1024, 1024),
		matmul("f32", 2048, 2048, 2048),
		matmul("f32", 4096, 4096, 4096),
		matmul("f64", 256, 256, 256),
		matmul("f64", 512, 512, 512),
		matmul("f64", 1024, 1024, 1024),
		matmul("f64", 2048, 2048, 2048),
		matmul("bf16", 256, 256, 256),
		matmul("f16", 256, 256, 256),
		matmul("f32", 128, 784, 256), // the MLP's first layer
		matmul("f32", 128, 256, 10),  // and its second
		bmm("f32", 32, 128, 128, 128),
		elementwise("add", "a+b", 3, 1<<24),
		elementwise("add_out", "a+b (torch: out=)", 3, 1<<24),
		elementwise("chain", "(a*b+c).relu", 4, 1<<22),
		elementwise("sum", "sum", 1, 1<<24),
		// 1M values, so that torch's 4 MB results stay in its allocator's
		// heap: from 16 MB it gives them back to the system and faults
		// them in again, each step (sigmoid 4M: 64 ms, IQR 130%).
		elementwise("sigmoid", "sigmoid", 2, 1<<20),
		elementwise("tanh", "tanh", 2, 1<<20),
		elementwise("max", "max", 1, 1<<24),
		elementwise("cast_f64", "cast to f64", 3, 1<<20),
		// The mask made where the tensor is, from a key (torch: its
		// bernoulli draw on the cpu, its fused Philox kernel on a GPU).
		elementwise("dropout", "dropout p=0.1", 2, 1<<22),
		softmax(4096, 1024),
		softmaxDim0(1024, 1024),
		layerNorm(8192, 1024),
		batchNorm(32, 64, 56, 56),
		mlpStep(128, 784, 256, 10),
		amp("bf16", mlpStep(128, 784, 256, 10)),
		resBlockStep(32, 3, 32, 16, 10),
		amp("bf16", resBlockStep(32, 3, 32, 16, 10)),
		dispatchAdd(false),
		dispatchAdd(true),
		multinomial(8, 50000, 1, false),
		multinomial(8, 50000, 64, true),
		topK(8, 50000, 20),
		attention(8, 512, 64, attnNone),
		attention(8, 1024, 64, attnNone),
		attention(8, 2048, 64, attnNone),
		attention(8, 4096, 64, attnNone),
		attention(8, 512, 64, attnCausal),
		attention(8, 1024, 64, attnCausal),
		attention(8, 2048, 64, attnCausal),
		attention(8, 4096, 64, attnCausal),
		attention(8, 1024, 64, attnKeyPadding),
		attention(8, 1024, 64, attnDropout),
		encoderStep(16, 64, 128, 4, 512),
		gptStep(8, 64, 4, 64),
		gptGenerate(64, 4, 64),
		gptGenerateCached(64, 4, 64),
		allReduce(1<<10, 2),
		allReduce(1<<12, 2),
		allReduce(1<<14, 2),
		allReduce(1<<16, 2),
		allReduce(1<<18, 2),
		allReduce(1<<20, 2),
		allReduce(1<<22, 2),
		allReduce(1<<24, 2),
		allReduce(1<<26, 2),
		overTCP(allReduce(1<<10, 2)),
		overTCP(allReduce(1<<20, 2)),
		overTCP(allReduce(1<<26, 2)),
		oneProcess(mlpStep(256, 784, 256, 10)),
		ddpStep(256, 784, 256, 10, 2, false),
		ddpStep(256, 784, 256, 10, 2, true),
		overTCP(ddpStep(256, 784, 256, 10, 2, false)),
	}
}

// dtypes are the spec's dtype names, as bench_torch.py's dtype_of has them.
var dtypes = map[string]lathe.DType{"f32": lathe.Float32, "f64": lathe.Float64, "bf16": lathe.BFloat16, "f16": lathe.Float16}

// matmul is [m,k]·[k,n]: 2mkn flops.
func matmul(dt string, m, k, n int) workload {
	name := fmt.Sprintf("matmul %s %d", dt, m)
	if m != k || k != n {
		name = fmt.Sprintf("matmul %s %dx%d·%dx%d", dt, m, k, k, n)
	}
	return workload{Name: name, Family: "matmul", spec: spec{Kind: "matmul", DType: dt, Dims: []int{m, k, n}},
		Unit: flops, Work: 2 * float64(m) * float64(k) * float64(n)}
}

// bmm is b products [m,k]·[k,n].
func bmm(dt string, b, m, k, n int) workload {
	return workload{Name: fmt.Sprintf("bmm %s %dx%dx%d·%dx%d", dt, b, m, k, k, n), Family: "matmul",
		spec: spec{Kind: "bmm", DType: dt, Dims: []int{b, m, k, n}},
		Unit: flops, Work: 2 * float64(b) * float64(m) * float64(k) * float64(n)}
}

// elementwise is a float32 op over n elements whose inputs and output are
// tensors tensors of n elements, each counted once as a fused kernel would
// move it (the unfused chain moves more, which is what it measures).
func elementwise(kind, label string, tensors, n int) workload {
	return workload{Name: fmt.Sprintf("%s f32 %s", label, count(n)), Family: "memory",
		spec: spec{Kind: kind, DType: "f32", Dims: []int{n}}, Unit: memBytes, Work: float64(tensors * 4 * n)}
}

// softmax is over the last dim of [rows, cols]: one read and one write.
func softmax(rows, cols int) workload {
	return workload{Name: fmt.Sprintf("softmax f32 %dx%d", rows, cols), Family: "memory",
		spec: spec{Kind: "softmax", DType: "f32", Dims: []int{rows, cols}}, Unit: memBytes, Work: float64(2 * 4 * rows * cols)}
}

// softmaxDim0 is over the first dim of [rows, cols] (a softmax over a
// dim that is not the last, as over NCHW's channels): one read and one
// write.
func softmaxDim0(rows, cols int) workload {
	return workload{Name: fmt.Sprintf("softmax f32 %dx%d over dim 0", rows, cols), Family: "memory",
		spec: spec{Kind: "softmax_dim0", DType: "f32", Dims: []int{rows, cols}}, Unit: memBytes, Work: float64(2 * 4 * rows * cols)}
}

// layerNorm is the layer norm (with weight and bias) over the last dim of
// [rows, cols]: one read and one write, as a fused kernel moves them.
func layerNorm(rows, cols int) workload {
	return workload{Name: fmt.Sprintf("layer_norm f32 %dx%d", rows, cols), Family: "memory",
		spec: spec{Kind: "layer_norm", DType: "f32", Dims: []int{rows, cols}}, Unit: memBytes, Work: float64(2 * 4 * rows * cols)}
}

// batchNorm is the batch norm in training of [n, c, h, w] (the batch's
// statistics, the normalisation with weight and bias, the running
// statistics' update): x counted read once and y written once.
func batchNorm(n, c, h, w int) workload {
	return workload{Name: fmt.Sprintf("batch_norm train f32 %dx%dx%dx%d", n, c, h, w), Family: "memory",
		spec: spec{Kind: "batch_norm", DType: "f32", Dims: []int{n, c, h, w}}, Unit: memBytes, Work: float64(2 * 4 * n * c * h * w)}
}

// mlpStep is one training step of in-hidden-out with ReLU at batch rows:
// forward, cross-entropy, backward and SGD, on package nn.
func mlpStep(batch, in, hidden, out int) workload {
	return workload{Name: fmt.Sprintf("mlp step %d-%d-%d b%d", in, hidden, out, batch), Family: "mlp",
		spec: spec{Kind: "mlp_step", DType: "f32", Dims: []int{batch, in, hidden, out}}, Unit: perStep}
}

// resBlockStep is a training step of a stem convolution and one ResNet
// basic block (3×3 convolutions with batch norm, a skip connection), global
// average pooling and a linear classifier: forward, cross-entropy, backward
// and SGD, at batch images of channels×size×size, width channels inside.
func resBlockStep(batch, channels, size, width, classes int) workload {
	return workload{Name: fmt.Sprintf("resnet block b%d %dx%dx%d w%d", batch, channels, size, size, width), Family: "conv",
		spec: spec{Kind: "resblock_step", DType: "f32", Dims: []int{batch, channels, size, width, classes}}, Unit: perStep}
}

// amp is w, a training step on float32 parameters, with its forward and
// loss under lathe.Autocast to dt (torch.autocast on PyTorch's side).
func amp(dt string, w workload) workload {
	w.Name += " amp " + dt
	w.AMP = dt
	return w
}

// dispatchAdd is a 1-element add, the cost of an op that does no work;
// grad makes an input require a gradient so that each add records a node.
func dispatchAdd(grad bool) workload {
	w := workload{Name: "add 1 element", Family: "dispatch", spec: spec{Kind: "add1", DType: "f32", Dims: []int{1}}, Unit: perStep}
	if grad {
		w.Name, w.Kind = "add 1 element, recording", "add1_grad"
	}
	return w
}

// topK is the k largest of each of rows rows of logits over a vocabulary
// of categories, values and indices (torch.topk), as top-k sampling takes
// them.
func topK(rows, categories, k int) workload {
	return workload{Name: fmt.Sprintf("topk %dx%d k%d", rows, categories, k), Family: "sampling",
		spec: spec{Kind: "topk", DType: "f32", Dims: []int{rows, categories, k}}, Unit: perStep}
}

// multinomial draws samples token ids from each of rows rows of softmax
// probabilities over a vocabulary of categories (torch.multinomial), the
// indices read back to the host as a decoder reads them.
func multinomial(rows, categories, samples int, replacement bool) workload {
	w := workload{Name: fmt.Sprintf("multinomial %dx%d k%d", rows, categories, samples), Family: "sampling",
		spec: spec{Kind: "multinomial", DType: "f32", Dims: []int{rows, categories, samples, 0}}, Unit: perStep}
	if replacement {
		w.Name += " with replacement"
		w.Dims[3] = 1
	}
	return w
}

// attention is a training step of ScaledDotProductAttention on float32
// q, k, v of [1, heads, l, e]: the forward and the gradients of q, k and v
// of the output's sum, without a mask, causal, with a key padding mask
// (Bool [1, 1, 1, l], the last quarter of the keys hidden; torch's side
// adds its -Inf form), or with dropout of the weights (p = 0.1; torch's
// side is F.dropout of the softmax). PyTorch 1.13 has no public
// scaled_dot_product_attention, so its side is the composite
// softmax(q·kᵀ·scale + mask)·v, which holds heads·l² scores (as torch's
// private aten::_scaled_dot_product_attention does on the cpu, where it is
// the same math); the row's name says so. The flops are the seven l×l×e
// products (two forward, five backward, as the fused kernel recomputes the
// probabilities), half of them under causal masking, which needs only the
// lower triangle.
func attention(heads, l, e int, mask attnMask) workload {
	name := fmt.Sprintf("sdpa f32 h%d L%d E%d fwd+bwd", heads, l, e)
	work := 7 * 2 * float64(heads) * float64(l) * float64(l) * float64(e)
	switch mask {
	case attnCausal:
		name += " causal"
		work /= 2
	case attnKeyPadding:
		name += " key-padding"
	case attnDropout:
		name += " dropout 0.1"
	}
	w := workload{Name: name + " (torch: composite)", Family: "attention",
		spec: spec{Kind: "sdpa", DType: "f32", Dims: []int{1, heads, l, e, int(mask)}}, Unit: flops, Work: work}
	if l >= 2048 {
		w.MaxSamples = 3
	}
	return w
}

// attnMask is the masking of an attention row, its spec's last dim.
type attnMask int

const (
	attnNone attnMask = iota
	attnCausal
	attnKeyPadding
	attnDropout // no mask; the weights dropped with p = 0.1
)

// count writes n as 4M or 16M when it is a power-of-two number of Mi.
func count(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}

// prepared is a workload made ready on a device: step runs it once and
// releases what it made, release frees the inputs.
type prepared struct {
	step    func() error
	release func()
}

// builders make a spec's inputs on a device, one per kind. amp is the
// Autocast dtype of a training step (zero for none); the other kinds do
// not take one.
var builders = map[string]func(dev lathe.Device, dt, amp lathe.DType, dims []int) (*prepared, error){
	"matmul": noAMP(buildMatMul),
	"bmm":    noAMP(buildMatMul),
	"add":    noAMP(buildBinary(func(a, b *lathe.Tensor) *lathe.Tensor { return a.Add(b) })),
	// add_out is add measured against torch.add(a, b, out=c): lathe's
	// result comes from its pool, a block the last step released, as
	// torch's out= writes into a block it holds; torch's allocating add
	// (the add row) also pays its allocator, which returns large blocks to
	// the system and takes page faults on the next, or not, by history.
	"add_out":             noAMP(buildBinary(func(a, b *lathe.Tensor) *lathe.Tensor { return a.Add(b) })),
	"chain":               noAMP(buildChain),
	"sum":                 noAMP(buildSum),
	"sigmoid":             noAMP(buildUnary((*lathe.Tensor).Sigmoid)),
	"tanh":                noAMP(buildUnary((*lathe.Tensor).Tanh)),
	"max":                 noAMP(buildUnary(func(a *lathe.Tensor) *lathe.Tensor { return a.Max() })),
	"cast_f64":            noAMP(buildUnary(func(a *lathe.Tensor) *lathe.Tensor { return a.Cast(lathe.Float64) })),
	"dropout":             noAMP(buildUnary(func(a *lathe.Tensor) *lathe.Tensor { return a.Dropout(0.1, true) })),
	"softmax":             noAMP(buildUnary(func(a *lathe.Tensor) *lathe.Tensor { return a.Softmax(-1) })),
	"softmax_dim0":        noAMP(buildUnary(func(a *lathe.Tensor) *lathe.Tensor { return a.Softmax(0) })),
	"topk":                noAMP(buildTopK),
	"layer_norm":          noAMP(buildLayerNorm),
	"batch_norm":          noAMP(buildBatchNorm),
	"mlp_step":            buildMLPStep,
	"resblock_step":       buildResBlockStep,
	"add1":                noAMP(buildAdd1(false)),
	"add1_grad":           noAMP(buildAdd1(true)),
	"multinomial":         noAMP(buildMultinomial),
	"sdpa":                noAMP(buildAttention),
	"encoder_step":        noAMP(buildEncoderStep),
	"gpt_step":            noAMP(buildGPTStep),
	"gpt_generate":        noAMP(buildGPTGenerate),
	"gpt_generate_cached": noAMP(buildGPTGenerateCached),
}

// prepare builds w on dev.
func prepare(w workload, dev lathe.Device) (*prepared, error) {
	build, ok := builders[w.Kind]
	if !ok {
		return nil, fmt.Errorf("no lathe builder for workload kind %q", w.Kind)
	}
	dt, ok := dtypes[w.DType]
	if !ok {
		return nil, fmt.Errorf("workload %s: no dtype %q", w.Name, w.DType)
	}
	var amp lathe.DType
	if w.AMP != "" {
		if amp, ok = dtypes[w.AMP]; !ok {
			return nil, fmt.Errorf("workload %s: no autocast dtype %q", w.Name, w.AMP)
		}
	}
	return build(dev, dt, amp, w.Dims)
}

// noAMP is a builder for a kind that takes no autocast dtype.
func noAMP(build func(lathe.Device, lathe.DType, []int) (*prepared, error)) func(lathe.Device, lathe.DType, lathe.DType, []int) (*prepared, error) {
	return func(dev lathe.Device, dt, amp lathe.DType, dims []int) (*prepared, error) {
		if amp != 0 {
			return nil, fmt.Errorf("a workload of this kind does not run under autocast (%v)", amp)
		}
		return build(dev, dt, dims)
	}
}

// consume ends a step: it reports t's error and gives t's memory back, so
// that memory stays flat however many steps run.
func consume(t *lathe.Tensor) error {
	err := t.Err()
	t.Release()
	return err
}

// inputs checks freshly made tensors and returns a release for them all.
func inputs(ts ...*lathe.Tensor) (func(), error) {
	release := func() {
		for _, t := range ts {
			t.Release()
		}
	}
	for _, t := range ts {
		if err := t.Err(); err != nil {
			release()
			return nil, err
		}
	}
	return release, nil
}

// buildMatMul is [m,k]·[k,n], or with dims [b,m,k,n] b such products.
func buildMatMul(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
	batch, d := dims[:len(dims)-3], dims[len(dims)-3:]
	a := lathe.RandN(dev, dt, append(append([]int(nil), batch...), d[0], d[1])...)
	b := lathe.RandN(dev, dt, append(append([]int(nil), batch...), d[1], d[2])...)
	release, err := inputs(a, b)
	if err != nil {
		return nil, err
	}
	return &prepared{step: func() error { return consume(a.MatMul(b)) }, release: release}, nil
}

func buildBinary(op func(a, b *lathe.Tensor) *lathe.Tensor) func(lathe.Device, lathe.DType, []int) (*prepared, error) {
	return func(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
		a, b := lathe.Rand(dev, dt, dims...), lathe.Rand(dev, dt, dims...)
		release, err := inputs(a, b)
		if err != nil {
			return nil, err
		}
		return &prepared{step: func() error { return consume(op(a, b)) }, release: release}, nil
	}
}

// buildChain is (a*b+c).ReLU(): three ops, two intermediates released.
func buildChain(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
	a, b, c := lathe.RandN(dev, dt, dims...), lathe.RandN(dev, dt, dims...), lathe.RandN(dev, dt, dims...)
	release, err := inputs(a, b, c)
	if err != nil {
		return nil, err
	}
	return &prepared{step: func() error {
		ab := a.Mul(b)
		abc := ab.Add(c)
		ab.Release()
		y := abc.ReLU()
		abc.Release()
		return consume(y)
	}, release: release}, nil
}

func buildSum(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
	a := lathe.Rand(dev, dt, dims...)
	release, err := inputs(a)
	if err != nil {
		return nil, err
	}
	return &prepared{step: func() error { return consume(a.Sum()) }, release: release}, nil
}

// buildUnary is op of one tensor of normal values.
func buildUnary(op func(a *lathe.Tensor) *lathe.Tensor) func(lathe.Device, lathe.DType, []int) (*prepared, error) {
	return func(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
		a := lathe.RandN(dev, dt, dims...)
		release, err := inputs(a)
		if err != nil {
			return nil, err
		}
		return &prepared{step: func() error { return consume(op(a)) }, release: release}, nil
	}
}

func buildLayerNorm(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
	d := dims[len(dims)-1]
	x, w, b := lathe.RandN(dev, dt, dims...), lathe.RandN(dev, dt, d), lathe.RandN(dev, dt, d)
	release, err := inputs(x, w, b)
	if err != nil {
		return nil, err
	}
	return &prepared{step: func() error { return consume(x.LayerNorm([]int{d}, w, b, 1e-5)) }, release: release}, nil
}

// buildBatchNorm runs BatchNorm in training, which rebinds the running
// statistics to new tensors each step, as nn.BatchNorm2d's training does
// (torch updates its in place).
func buildBatchNorm(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
	c := dims[1]
	x, w, b := lathe.RandN(dev, dt, dims...), lathe.RandN(dev, dt, c), lathe.RandN(dev, dt, c)
	mean, variance := lathe.Zeros(dev, dt, c), lathe.Ones(dev, dt, c)
	release, err := inputs(x, w, b, mean, variance)
	if err != nil {
		return nil, err
	}
	return &prepared{step: func() error { return consume(x.BatchNorm(mean, variance, w, b, true, 0.1, 1e-5)) }, release: release}, nil
}

// buildMLPStep is a training step as examples/mlp writes one: nn.Linear,
// ReLU, nn.Linear, cross-entropy, backward, SGD at lr 0.01. dims is
// [batch, in, hidden, out].
func buildMLPStep(dev lathe.Device, dt, amp lathe.DType, dims []int) (*prepared, error) {
	batch, in, hidden, out := dims[0], dims[1], dims[2], dims[3]
	lathe.Seed(1)
	model := nn.Sequential(nn.NewLinear(in, hidden, nn.WithDType(dt)), nn.ReLU{}, nn.NewLinear(hidden, out, nn.WithDType(dt)))
	if err := model.To(dev); err != nil {
		return nil, err
	}
	opt, err := nn.NewSGD(model.Parameters(), 0.01)
	if err != nil {
		return nil, err
	}
	classes := make([]int32, batch) // int32, as the benchmark has always measured
	for i := range classes {
		classes[i] = int32(i % out)
	}
	x, y := lathe.RandN(dev, dt, batch, in), lathe.FromSlice(dev, classes, batch)
	release, err := inputs(x, y)
	if err != nil {
		return nil, err
	}
	return &prepared{step: trainingStep(model.Forward, opt, x, y, amp), release: release}, nil
}

// resBlockNet is the model of resBlockStep, as build/bench_torch.py's
// ResBlockNet has it.
type resBlockNet struct {
	stem, body, head *nn.Seq
}

func newResBlockNet(channels, width, classes int, dt lathe.DType) *resBlockNet {
	conv := func(in int) nn.Module {
		return nn.NewConv2d(in, width, 3, nn.WithDType(dt), nn.Padding(1))
	}
	bn := func() nn.Module { return nn.NewBatchNorm2d(width, nn.WithDType(dt)) }
	return &resBlockNet{
		stem: nn.Sequential(conv(channels), bn(), nn.ReLU{}),
		body: nn.Sequential(conv(width), bn(), nn.ReLU{}, conv(width), bn()),
		head: nn.Sequential(nn.NewAdaptiveAvgPool2d(1), nn.Flatten{}, nn.NewLinear(width, classes, nn.WithDType(dt))),
	}
}

func (m *resBlockNet) Forward(x *lathe.Tensor) *lathe.Tensor {
	h := m.stem.Forward(x)
	b := m.body.Forward(h)
	sum := h.Add(b)
	r := sum.ReLU()
	out := m.head.Forward(r)
	// The block's activations go with the graph, as a lathe model hands
	// them over (examples/gpt does too); PyTorch frees them by reference
	// counting. Left to the garbage collector, each step took 2 MiB
	// buffers anew and faulted their pages in.
	lathe.ReleaseWithGraph(out, h, b, sum, r)
	return out
}

func (m *resBlockNet) all() *nn.Seq { return nn.Sequential(m.stem, m.body, m.head) }

// buildResBlockStep is resBlockStep's step; dims is [batch, channels,
// size, width, classes].
func buildResBlockStep(dev lathe.Device, dt, amp lathe.DType, dims []int) (*prepared, error) {
	batch, channels, size, width, classes := dims[0], dims[1], dims[2], dims[3], dims[4]
	lathe.Seed(1)
	model := newResBlockNet(channels, width, classes, dt)
	if err := model.all().To(dev); err != nil {
		return nil, err
	}
	opt, err := nn.NewSGD(model.all().Parameters(), 0.01)
	if err != nil {
		return nil, err
	}
	labels := make([]int32, batch) // int32: every device has it
	for i := range labels {
		labels[i] = int32(i % classes)
	}
	x, y := lathe.RandN(dev, dt, batch, channels, size, size), lathe.FromSlice(dev, labels, batch)
	release, err := inputs(x, y)
	if err != nil {
		return nil, err
	}
	return &prepared{step: trainingStep(model.Forward, opt, x, y, amp), release: release}, nil
}

// trainingStep is one step of classifier training as examples/mlp writes
// it: cross-entropy of forward(x) against y, backward, an optimizer step.
// With amp (Float16 or BFloat16) the forward and the loss run under
// lathe.Autocast, as torch.autocast's recipe has them; the scaling that
// float16 wants is not measured.
func trainingStep(forward func(*lathe.Tensor) *lathe.Tensor, opt *nn.SGD, x, y *lathe.Tensor, amp lathe.DType) func() error {
	return func() error {
		var loss *lathe.Tensor
		fwd := func() { loss = nn.CrossEntropy(forward(x), y) }
		if amp == 0 {
			fwd()
		} else if err := lathe.Autocast(amp, fwd); err != nil {
			return err
		}
		opt.ZeroGrad()
		err := loss.Backward()
		loss.Release()
		if err != nil {
			return err
		}
		return opt.Step()
	}
}

// buildAdd1 adds two 1-element tensors; with grad the first requires a
// gradient, so each add also records a tape node (dropped with its output).
func buildAdd1(grad bool) func(lathe.Device, lathe.DType, []int) (*prepared, error) {
	return func(dev lathe.Device, dt lathe.DType, _ []int) (*prepared, error) {
		a, b := lathe.Full(dev, dt, 1, 1), lathe.Full(dev, dt, 2, 1)
		if grad {
			a = a.RequireGrad()
		}
		release, err := inputs(a, b)
		if err != nil {
			return nil, err
		}
		return &prepared{step: func() error { return consume(a.Add(b)) }, release: release}, nil
	}
}

// buildAttention is attention's step; dims is [batch, heads, l, e,
// causal (0 or 1)].
func buildAttention(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
	batch, heads, l, e := dims[0], dims[1], dims[2], dims[3]
	var opts []lathe.AttentionOption
	switch attnMask(dims[4]) {
	case attnCausal:
		opts = append(opts, lathe.IsCausal())
	case attnKeyPadding:
		keep := make([]bool, l)
		for j := range 3 * l / 4 {
			keep[j] = true
		}
		mask := lathe.FromSlice(dev, keep, 1, 1, 1, l)
		if err := mask.Err(); err != nil {
			return nil, err
		}
		opts = append(opts, lathe.AttentionMask(mask))
	case attnDropout:
		opts = append(opts, lathe.AttentionDropout(0.1))
	}
	lathe.Seed(1)
	q := lathe.RandN(dev, dt, batch, heads, l, e).RequireGrad()
	k := lathe.RandN(dev, dt, batch, heads, l, e).RequireGrad()
	v := lathe.RandN(dev, dt, batch, heads, l, e).RequireGrad()
	release, err := inputs(q, k, v)
	if err != nil {
		return nil, err
	}
	return &prepared{step: func() error {
		out := lathe.ScaledDotProductAttention(q, k, v, opts...)
		loss := out.Sum()
		grads, err := lathe.Grad(loss, []*lathe.Tensor{q, k, v})
		for _, g := range grads {
			g.Release()
		}
		loss.Release()
		out.Release()
		return err
	}, release: release}, nil
}

// rateUnit names a unit for the table and charts.
func (u unit) String() string {
	switch u {
	case flops:
		return "GFLOP/s"
	case memBytes:
		return "GB/s"
	case tokens:
		return "tokens/s"
	}
	return "steps/s"
}

// rate is the workload's work over a time per step: GFLOP/s, GB/s,
// tokens/s or steps/s.
func (w workload) rate(secondsPerStep float64) float64 {
	switch w.Unit {
	case flops, memBytes:
		return w.Work / secondsPerStep / 1e9
	case tokens:
		return w.Work / secondsPerStep
	}
	return 1 / secondsPerStep
}

// unitName is the unit of w's rate as the table shows it: ops for
// dispatch rows, steps otherwise.
func (w workload) unitName() string {
	if w.Unit == perStep && strings.HasPrefix(w.Kind, "add1") {
		return "ops/s"
	}
	return w.Unit.String()
}

// buildTopK is dims [rows, categories, k]: the k largest logits of each
// row and their indices, as top-k sampling takes them.
func buildTopK(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
	logits := lathe.RandN(dev, dt, dims[0], dims[1])
	release, err := inputs(logits)
	if err != nil {
		return nil, err
	}
	return &prepared{step: func() error {
		v, idx := logits.TopK(dims[2], -1, true)
		idx.Release()
		return consume(v)
	}, release: release}, nil
}

// buildMultinomial is dims [rows, categories, samples, replacement (0 or
// 1)]: Multinomial of softmax probabilities, its indices read back.
func buildMultinomial(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
	probs := lathe.RandN(dev, dt, dims[0], dims[1]).Softmax(-1)
	release, err := inputs(probs)
	if err != nil {
		return nil, err
	}
	return &prepared{step: func() error {
		idx := lathe.Multinomial(probs, dims[2], dims[3] == 1)
		_, err := idx.Int64s()
		idx.Release()
		return err
	}, release: release}, nil
}
