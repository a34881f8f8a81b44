// Command cnn trains a small convolutional network on Shapes, a synthetic
// image task it generates: 16×16 grey images of a square outline, a disk, a
// diagonal cross or a triangle, at random places, sizes and brightness, with
// pixel noise. The network is two blocks of conv 3×3, batch norm, ReLU and
// 2×2 max pooling (1 → 8 → 16 channels), global average pooling and a
// linear layer to the 4 classes, trained with Adam on minibatches. With the
// defaults (1024 training and 512 test images, 8 epochs, batch 32, lr 0.01,
// seed 1) it reaches 99% or more on the held-out images (100% with seed 1)
// in about 2.5 seconds on two cpu cores.
//
// With -amp bf16 or -amp f16 the forward pass and the loss run under
// lathe.Autocast in that dtype (the convolutions and the linear layer
// compute in 16 bits, batch norm and the loss in float32, as
// torch.autocast) while the parameters and Adam's state stay float32; with
// f16 a nn.GradScaler scales the loss and steps the optimizer, torch's
// recipe for float16.
//
//	go run ./examples/cnn -epochs 8 -device cpu
//	go run ./examples/cnn -amp bf16
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/examples/internal/amp"
	"github.com/lathe-ml/lathe/examples/internal/check"
	"github.com/lathe-ml/lathe/nn"
)

// Config is one training run.
type Config struct {
	Train, Test int          // images in the training and the held-out set
	Size        int          // image side in pixels
	Noise       float64      // standard deviation of the pixel noise
	Epochs      int          // passes over the training set
	Batch       int          // minibatch size
	LR          float64      // Adam's learning rate
	Seed        uint64       // seeds the data, the initialisation and the shuffles
	Device      lathe.Device // where the model and data live
	AMP         lathe.DType  // Float16 or BFloat16: run the forward under Autocast; zero: float32
	Log         io.Writer    // progress lines go here (nil: nowhere)
}

// DefaultConfig is the run that the doc comment describes.
func DefaultConfig() Config {
	return Config{Train: 1024, Test: 512, Size: 16, Noise: 0.15, Epochs: 8, Batch: 32, LR: 0.01, Seed: 1, Device: lathe.CPU}
}

// Result is how a run ended.
type Result struct {
	Loss         float64 // the last epoch's mean training loss
	TestAccuracy float64 // accuracy on the held-out images, in [0, 1]
	Elapsed      time.Duration
}

// Check refuses settings that cannot make a run: each count at least one,
// images of at least 4 pixels a side (two poolings halve them), a noise
// of 0 or more.
func (c Config) Check() error {
	return cmp.Or(
		check.AtLeast("cnn", "-train", c.Train, 1),
		check.AtLeast("cnn", "Test", c.Test, 1),
		check.AtLeast("cnn", "Size", c.Size, 4),
		check.NonNegative("cnn", "-noise", c.Noise),
		check.AtLeast("cnn", "-epochs", c.Epochs, 1),
		check.NonNegative("cnn", "-lr", c.LR),
		check.AtLeast("cnn", "Batch", c.Batch, 1))
}

// Model is the network of the doc comment for images of one channel.
func Model(classes int) *nn.Seq {
	block := func(in, out int) []nn.Module {
		return []nn.Module{
			nn.NewConv2d(in, out, 3, nn.Padding(1)),
			nn.NewBatchNorm2d(out),
			nn.ReLU{},
			nn.NewMaxPool2d(2),
		}
	}
	mods := append(block(1, 8), block(8, 16)...)
	mods = append(mods, nn.NewAdaptiveAvgPool2d(1), nn.Flatten{}, nn.NewLinear(16, classes))
	return nn.Sequential(mods...)
}

// Train runs cfg and reports the final loss and the held-out accuracy.
func Train(cfg Config) (Result, error) {
	start := time.Now()
	if err := cmp.Or(cfg.Check(), amp.Check(cfg.Device, cfg.AMP)); err != nil {
		return Result{}, err
	}
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format, a...)
		}
	}
	images := func(n int, seed uint64) (*lathe.Tensor, *lathe.Tensor) {
		pix, labels := Shapes(n, cfg.Size, cfg.Noise, seed)
		return lathe.FromSlice(cfg.Device, pix, n, 1, cfg.Size, cfg.Size), lathe.FromSlice(cfg.Device, labels, n)
	}
	x, y := images(cfg.Train, cfg.Seed)
	testX, testY := images(cfg.Test, cfg.Seed+1)
	for _, t := range []*lathe.Tensor{x, y, testX, testY} {
		if err := t.Err(); err != nil {
			return Result{}, err
		}
	}

	lathe.Seed(cfg.Seed)
	model := Model(len(classes))
	if err := nn.Err(model); err != nil {
		return Result{}, err
	}
	if err := model.To(cfg.Device); err != nil {
		return Result{}, err
	}
	opt, err := nn.NewAdam(model.Parameters(), cfg.LR)
	if err != nil {
		return Result{}, err
	}

	var scaler *nn.GradScaler
	if cfg.AMP == lathe.Float16 {
		scaler = nn.NewGradScaler()
	}

	rng := rand.New(rand.NewPCG(cfg.Seed, 0x434e4e))
	var res Result
	for epoch := 1; epoch <= cfg.Epochs; epoch++ {
		model.Train(true)
		perm := rng.Perm(cfg.Train)
		total := 0.0
		for b := 0; b < cfg.Train; b += cfg.Batch {
			idx := make([]int64, 0, cfg.Batch)
			for _, i := range perm[b:min(b+cfg.Batch, cfg.Train)] {
				idx = append(idx, int64(i))
			}
			it := lathe.FromSlice(cfg.Device, idx, len(idx))
			var loss *lathe.Tensor
			if err := amp.Run(cfg.AMP, func() {
				loss = nn.CrossEntropy(model.Forward(x.IndexSelect(0, it)), y.IndexSelect(0, it))
			}); err != nil {
				return res, err
			}
			opt.ZeroGrad()
			if err := amp.Step(loss, opt, scaler); err != nil {
				return res, err
			}
			l, err := loss.Item()
			if err != nil {
				return res, err
			}
			total += l * float64(len(idx))
		}
		res.Loss = total / float64(cfg.Train)
		if res.TestAccuracy, err = accuracy(model, testX, testY, cfg.AMP); err != nil {
			return res, err
		}
		logf("epoch %2d/%d  loss %.4f  test accuracy %5.1f%%\n", epoch, cfg.Epochs, res.Loss, 100*res.TestAccuracy)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// accuracy is the share of images whose largest logit is their class, in
// evaluation mode (batch norm on its running statistics), recording
// nothing, under Autocast as training is.
func accuracy(m nn.Module, x, y *lathe.Tensor, dt lathe.DType) (float64, error) {
	m.Train(false)
	defer m.Train(true)
	var acc float64
	var err, aerr error
	lathe.NoGrad(func() {
		aerr = amp.Run(dt, func() {
			acc, err = m.Forward(x).ArgMax(1).Eq(y).Cast(lathe.Float32).Mean().Item()
		})
	})
	return acc, errors.Join(aerr, err)
}

func main() {
	cfg := DefaultConfig()
	flag.IntVar(&cfg.Epochs, "epochs", cfg.Epochs, "passes over the training set")
	dev := flag.String("device", "", "device to train on: cpu, cuda:0, wgpu:0 (default: lathe.DefaultDevice, which LATHE_DEVICE sets)")
	flag.IntVar(&cfg.Train, "train", cfg.Train, "training images")
	flag.Float64Var(&cfg.Noise, "noise", cfg.Noise, "pixel noise (standard deviation)")
	flag.Float64Var(&cfg.LR, "lr", cfg.LR, "Adam's learning rate")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	ampFlag := flag.String("amp", "", "mixed precision: bf16 or f16 (default: off, float32)")
	flag.Parse()
	if err := check.NoArgs("cnn", flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "cnn:", err)
		os.Exit(2)
	}
	d, err := lathe.DefaultDevice()
	if *dev != "" {
		d, err = lathe.ParseDevice(*dev)
	}
	if err == nil {
		cfg.AMP, err = amp.Parse(*ampFlag)
	}
	if err == nil {
		// Before any training, so that a device without the dtype fails now.
		err = cmp.Or(cfg.Check(), amp.Check(d, cfg.AMP))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cnn:", err)
		os.Exit(2)
	}
	cfg.Device, cfg.Log = d, os.Stdout
	res, err := Train(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cnn:", err)
		os.Exit(1)
	}
	fmt.Printf("final loss %.4f, test accuracy %.1f%% in %v on %v%s\n", res.Loss, 100*res.TestAccuracy, res.Elapsed.Round(time.Millisecond), cfg.Device, amp.Note(cfg.AMP))
}
