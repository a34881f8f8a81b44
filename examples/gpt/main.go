// Command gpt trains a small GPT (examples/gpt/model: token and learned
// position embeddings, or rotary positions with -rotary; pre-norm blocks of
// causal self-attention and a GELU MLP; a head tied to the embeddings) at
// character level on lathe's own Go source, then samples text from it.
//
// The text is read at run time from the module root (the nearest folder
// above the working directory with a go.mod, or -data): every .go file
// outside hidden folders and testdata, in path order, joined. The
// vocabulary is fixed at 98 tokens (newline, tab, printable ASCII, and one
// token for every other byte), so it does not change as files are added.
// The last 10% of the text is held out for validation.
//
// Training is AdamW with a linear warmup, printing the loss every -log
// steps and the validation loss every -eval steps; sampling draws -sample
// characters at -temperature among the -topk most likely (lathe's TopK, then lathe.Multinomial).
// The default run (1000 steps of 16 windows of 64 characters; 4 layers,
// 4 heads, d_model 64, 210k parameters) takes the validation loss from 4.56,
// about ln 98 (a uniform guess), to about 1.9 in two to four minutes on two
// cpu cores, and its samples look like Go. The text grows with the
// repository, so these figures move a little from commit to commit.
//
//	go run ./examples/gpt                   # the default run, a few minutes on the cpu
//	go run ./examples/gpt -rotary -device wgpu:0
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/examples/gpt/model"
	"github.com/lathe-ml/lathe/examples/internal/check"
	"github.com/lathe-ml/lathe/nn"
)

// Config is one run.
type Config struct {
	Model       model.Config
	Batch       int     // windows per step
	Steps       int     // optimizer steps
	LR          float64 // AdamW's peak learning rate
	Warmup      int     // steps of linear warmup to LR
	WeightDecay float64 // AdamW's decoupled weight decay
	LogEvery    int     // steps between progress lines
	EvalEvery   int     // steps between validation losses (and after the last)
	EvalBatches int     // batches that one validation loss averages
	Sample      int     // characters to sample at the end (0: none)
	Prompt      string  // the sample's first characters
	Sampling    model.Sampling
	Seed        uint64
	Data        string // the folder whose .go files are the text; "": the module root
	Device      lathe.Device
	Log         io.Writer // progress lines and the sample go here (nil: nowhere)
}

// DefaultConfig is the run the doc comment describes.
func DefaultConfig() Config {
	return Config{
		Model:       model.Config{Vocab: vocabSize, Context: 64, Layers: 4, Heads: 4, Dim: 64},
		Batch:       16,
		Steps:       1000,
		LR:          3e-3,
		Warmup:      50,
		WeightDecay: 0.1,
		LogEvery:    50,
		EvalEvery:   250,
		EvalBatches: 8,
		Sample:      300,
		Prompt:      "func (x *Tensor) ",
		Sampling:    model.Sampling{Temperature: 0.8, TopK: 20},
		Seed:        1,
		Device:      lathe.CPU,
	}
}

// Result is how a run ended.
type Result struct {
	Untrained, Val float64 // validation loss before training and after the last step
	Train          float64 // the last step's training loss
	Sample         string
	Tokens         int // tokens in the text
	Elapsed        time.Duration
}

// Check refuses settings that cannot make a run, before the text is read:
// the model's (model.Config.Check), each count at least one (Sample and
// Warmup at least zero), and the sampling and the prompt when there is a
// sample to draw.
func (c Config) Check() error {
	err := cmp.Or(
		asFlag(c.Model.Check()),
		check.AtLeast("gpt", "-batch", c.Batch, 1),
		check.AtLeast("gpt", "-steps", c.Steps, 1),
		check.NonNegative("gpt", "-lr", c.LR),
		check.AtLeast("gpt", "Warmup", c.Warmup, 0),
		check.AtLeast("gpt", "-log", c.LogEvery, 1),
		check.AtLeast("gpt", "-eval", c.EvalEvery, 1),
		check.AtLeast("gpt", "EvalBatches", c.EvalBatches, 1),
		check.AtLeast("gpt", "-sample", c.Sample, 0))
	if err == nil && c.Sample > 0 {
		err = asFlag(c.Sampling.Check())
		if err == nil && c.Prompt == "" {
			err = lathe.NewError("gpt", lathe.ErrValue, "-prompt", "is empty, but the sample starts from it",
				"give -prompt at least one character, or -sample 0 for no sample")
		}
	}
	return err
}

// fieldFlags are the flags that set model.Config's and model.Sampling's
// fields, whose errors name the fields.
var fieldFlags = strings.NewReplacer("Context", "-context", "Layers", "-layers", "Heads", "-heads", "Dim", "-dim",
	"Temperature", "-temperature", "TopK", "-topk")

// asFlag is err with the fields it names (as its argument and in its fix)
// named as the flags that set them, which is what a user of this command
// typed.
func asFlag(err error) error {
	var e *lathe.Error
	if !errors.As(err, &e) {
		return err
	}
	named := *e
	named.Arg, named.Fix = fieldFlags.Replace(e.Arg), fieldFlags.Replace(e.Fix)
	return &named
}

// Train reads the text, trains the model and samples from it.
func Train(cfg Config) (Result, error) {
	start := time.Now()
	if err := cfg.Check(); err != nil {
		return Result{}, err
	}
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format, a...)
		}
	}
	var res Result
	root := cfg.Data
	if root == "" {
		var err error
		if root, err = moduleRoot("."); err != nil {
			return res, err
		}
	}
	text, files, err := readCorpus(root)
	if err != nil {
		return res, err
	}
	data := split(encode(text), 0.1)
	res.Tokens = len(text)
	if l := cfg.Model.Context; len(data.val) <= l {
		return res, lathe.NewError("gpt", lathe.ErrValue, "-data", fmt.Sprintf("has %d .go files under %s, whose last 10%% gives %d validation tokens, fewer than a window of %d", files, root, len(data.val), l+1),
			"use a folder with more source, or a smaller -context")
	}
	logf("text: %d .go files under %s, %d characters (%d train, %d validation), vocabulary %d\n",
		files, root, len(text), len(data.train), len(data.val), vocabSize)

	lathe.Seed(cfg.Seed)
	g, err := model.New(cfg.Model)
	if err != nil {
		return res, err
	}
	if err := g.To(cfg.Device); err != nil {
		return res, err
	}
	opt, err := nn.NewAdamW(g.Parameters(), cfg.LR, nn.Betas(0.9, 0.95), nn.WeightDecay(cfg.WeightDecay))
	if err != nil {
		return res, err
	}
	params := 0
	for _, p := range g.Parameters() {
		params += p.T.Numel()
	}
	logf("model: %d layers, %d heads, d_model %d, context %d, %s positions, %d parameters, on %v\n",
		cfg.Model.Layers, cfg.Model.Heads, cfg.Model.Dim, cfg.Model.Context, positions(cfg.Model.Rotary), params, cfg.Device)

	// The validation windows are fixed, so that the losses are comparable.
	valRng := rand.New(rand.NewPCG(cfg.Seed, 0x76616c))
	var valX, valY []*lathe.Tensor
	for range cfg.EvalBatches {
		x, y := batch(valRng, data.val, cfg.Batch, cfg.Model.Context, cfg.Device)
		valX, valY = append(valX, x), append(valY, y)
	}
	if res.Untrained, err = validate(g, valX, valY); err != nil {
		return res, err
	}
	logf("untrained: validation loss %.4f (uniform over the vocabulary: ln %d = %.4f)\n", res.Untrained, vocabSize, math.Log(vocabSize))

	rng := rand.New(rand.NewPCG(cfg.Seed, 0x747261))
	tick := time.Now()
	for step := 1; step <= cfg.Steps; step++ {
		opt.SetLearningRate(cfg.LR * min(1, float64(step)/float64(max(cfg.Warmup, 1))))
		x, y := batch(rng, data.train, cfg.Batch, cfg.Model.Context, cfg.Device)
		loss := model.Loss(g.Forward(x), y)
		opt.ZeroGrad()
		if err := loss.Backward(); err != nil {
			return res, err
		}
		if err := opt.Step(); err != nil {
			return res, err
		}
		if step%cfg.LogEvery == 0 || step == cfg.Steps {
			if res.Train, err = loss.Item(); err != nil {
				return res, err
			}
			logf("step %4d/%d  loss %.4f  %.0f ms/step\n", step, cfg.Steps, res.Train,
				float64(time.Since(tick).Milliseconds())/float64(min(cfg.LogEvery, step)))
			tick = time.Now()
		}
		if step%cfg.EvalEvery == 0 || step == cfg.Steps {
			if res.Val, err = validate(g, valX, valY); err != nil {
				return res, err
			}
			logf("step %4d/%d  validation loss %.4f\n", step, cfg.Steps, res.Val)
		}
	}
	if cfg.Steps == 0 {
		res.Val = res.Untrained
	}

	if cfg.Sample > 0 {
		s := cfg.Sampling
		lathe.Seed(cfg.Seed) // Generate draws from lathe's stream: the same sample for the same model
		out, err := g.Generate(encode([]byte(cfg.Prompt)), cfg.Sample, s)
		if err != nil {
			return res, err
		}
		res.Sample = decode(out)
		logf("sample (temperature %g, top-k %d):\n%s\n", s.Temperature, s.TopK, res.Sample)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// validate is the mean loss over the validation batches, without a graph.
func validate(g *model.GPT, xs, ys []*lathe.Tensor) (float64, error) {
	total := 0.0
	var err error
	lathe.NoGrad(func() {
		for i := range xs {
			var l float64
			if l, err = model.Loss(g.Forward(xs[i]), ys[i]).Item(); err != nil {
				return
			}
			total += l
		}
	})
	return total / float64(max(len(xs), 1)), err
}

func positions(rotary bool) string {
	if rotary {
		return "rotary"
	}
	return "learned"
}

func main() {
	cfg := DefaultConfig()
	flag.IntVar(&cfg.Steps, "steps", cfg.Steps, "optimizer steps")
	flag.IntVar(&cfg.Batch, "batch", cfg.Batch, "windows per step")
	flag.IntVar(&cfg.Model.Context, "context", cfg.Model.Context, "context length in characters")
	flag.IntVar(&cfg.Model.Layers, "layers", cfg.Model.Layers, "transformer blocks")
	flag.IntVar(&cfg.Model.Heads, "heads", cfg.Model.Heads, "attention heads")
	flag.IntVar(&cfg.Model.Dim, "dim", cfg.Model.Dim, "d_model")
	flag.BoolVar(&cfg.Model.Rotary, "rotary", false, "rotary positions instead of a learned position table")
	flag.Float64Var(&cfg.LR, "lr", cfg.LR, "AdamW's peak learning rate")
	flag.IntVar(&cfg.LogEvery, "log", cfg.LogEvery, "steps between progress lines")
	flag.IntVar(&cfg.EvalEvery, "eval", cfg.EvalEvery, "steps between validation losses")
	flag.IntVar(&cfg.Sample, "sample", cfg.Sample, "characters to sample after training")
	flag.StringVar(&cfg.Prompt, "prompt", cfg.Prompt, "the sample's first characters")
	flag.Float64Var(&cfg.Sampling.Temperature, "temperature", cfg.Sampling.Temperature, "sampling temperature (> 0)")
	flag.IntVar(&cfg.Sampling.TopK, "topk", cfg.Sampling.TopK, "sample among the k most likely characters (0: all)")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	flag.StringVar(&cfg.Data, "data", "", "folder whose .go files are the text (default: the module root)")
	dev := flag.String("device", "", "device to train on: cpu, cuda:0, wgpu:0 (default: lathe.DefaultDevice, which LATHE_DEVICE sets)")
	flag.Parse()
	if err := check.NoArgs("gpt", flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "gpt:", err)
		os.Exit(2)
	}
	d, err := lathe.DefaultDevice()
	if *dev != "" {
		d, err = lathe.ParseDevice(*dev)
	}
	if err == nil {
		err = cfg.Check()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpt:", err)
		os.Exit(2)
	}
	cfg.Device, cfg.Log = d, os.Stdout
	res, err := Train(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpt:", err)
		os.Exit(1)
	}
	fmt.Printf("validation loss %.4f → %.4f in %d steps, %v on %v\n", res.Untrained, res.Val, cfg.Steps, res.Elapsed.Round(time.Second), cfg.Device)
}
