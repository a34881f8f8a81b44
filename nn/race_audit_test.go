package nn_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// Run these under the race detector one at a time:
// go test -race -count=1 -run 'TestRaceAudit' ./nn

// within runs f and fails the test (with every goroutine's stack) when it
// takes longer than d: a deadlock must not hang the suite.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		t.Fatalf("did not finish within %v: deadlock?", d)
	}
}

// squareSteps trains m for n steps on the sum of squares of its output
// for x, reporting a failed step on t.
func squareSteps(t *testing.T, m nn.Module, opt nn.Optimizer, x *lathe.Tensor, n int) {
	t.Helper()
	for range n {
		opt.ZeroGrad()
		if err := m.Forward(x).Square().Sum().Backward(); err != nil {
			t.Error(err)
			return
		}
		if err := opt.Step(); err != nil {
			t.Error(err)
			return
		}
	}
}

// stepsBesideReader runs n of squareSteps while another goroutine calls
// read until they end or read fails, whose error fails t.
func stepsBesideReader(t *testing.T, m nn.Module, opt nn.Optimizer, x *lathe.Tensor, n int, read func() error) {
	t.Helper()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readErr error
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if readErr = read(); readErr != nil {
				return
			}
		}
	})
	squareSteps(t, m, opt, x, n)
	close(stop)
	wg.Wait()
	if readErr != nil {
		t.Error(readErr)
	}
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return 1e30
	}
	m := 0.0
	for i := range a {
		d := float64(a[i] - b[i])
		if d < 0 {
			d = -d
		}
		if d != d {
			return 1e30
		}
		m = max(m, d)
	}
	return m
}

// TestRaceAuditEvalForward: promised (README, Goroutines): tensors never
// change once made, so any number of goroutines may run ops on the same
// tensors; an eval-mode Forward only reads the parameters, so 8 goroutines
// calling Forward of one model, while another lists its parameters and
// buffers and prints them, must all get the single-threaded result.
func TestRaceAuditEvalForward(t *testing.T) {
	eachDevice(t, func(t *testing.T, dev lathe.Device) {
		lathe.Seed(11)
		type tc struct {
			name string
			m    nn.Module
			x    *lathe.Tensor
		}
		cases := []tc{
			{"linear", nn.NewLinear(16, 8, nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 4, 16)},
			{"conv2d", nn.NewConv2d(3, 4, 3, nn.Padding(1), nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 2, 3, 8, 8)},
			{"lstm", nn.NewLSTM(6, 5, nn.NumLayers(2), nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 7, 2, 6)},
			{"mha", nn.NewMultiheadAttention(8, 2, nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 2, 5, 8)},
			{"encoder", nn.NewTransformerEncoderLayer(8, 2, nn.DimFeedforward(16), nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 2, 5, 8)},
			{"batchnorm", nn.NewBatchNorm2d(3, nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 2, 3, 4, 4)},
			// The layers on ConvNd and ChannelNorm, a padding mode, PReLU and
			// Embedding's padding row.
			{"conv1d_reflect", nn.NewConv1d(3, 4, 3, nn.Padding(2), nn.PaddingMode("reflect"), nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 2, 3, 7)},
			{"conv3d_circular", nn.NewConv3d(2, 2, 2, nn.Padding(1), nn.PaddingMode("circular"), nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 1, 2, 3, 3, 3)},
			{"convtranspose1d", nn.NewConvTranspose1d(3, 2, 3, nn.Stride(2), nn.OutputPadding(1), nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 2, 3, 5)},
			{"prelu", nn.NewPReLU(3, nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 2, 3, 5)},
			{"batchnorm1d", nn.NewBatchNorm1d(3, nn.CumulativeAverage(), nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 4, 3)},
			{"batchnorm3d_noaffine", nn.NewBatchNorm3d(2, nn.NoAffine(), nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 2, 2, 2, 2, 2)},
			{"instancenorm2d_stats", nn.NewInstanceNorm2d(3, nn.Affine(), nn.TrackRunningStats(), nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 2, 3, 4, 4)},
			{"instancenorm1d", nn.NewInstanceNorm1d(3, nn.OnDevice(dev)), lathe.RandN(dev, lathe.Float32, 3, 6)},
			{"embedding_pad", nn.NewEmbedding(5, 4, nn.PaddingIdx(1), nn.OnDevice(dev)), lathe.FromSlice(lathe.CPU, []int64{0, 1, 4, 1}, 2, 2).To(dev)},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				c.m.Train(false)
				want, err := c.m.Forward(c.x).Float32s()
				if err != nil {
					t.Fatal(err)
				}
				within(t, 2*time.Minute, func() {
					var wg sync.WaitGroup
					stop := make(chan struct{})
					var readerErr error
					var rwg sync.WaitGroup
					rwg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							for _, p := range append(c.m.Parameters(), nn.Buffers(c.m)...) {
								_ = p.T.String()
								_ = fmt.Sprint(p.T)
							}
							if err := nn.Err(c.m); err != nil {
								readerErr = err
								return
							}
						}
					})
					errs := make([]error, 8)
					for g := range 8 {
						wg.Go(func() {
							for i := range 5 {
								var y *lathe.Tensor
								if g%2 == 0 {
									lathe.NoGrad(func() { y = c.m.Forward(c.x) })
								} else {
									y = c.m.Forward(c.x)
								}
								got, err := y.Float32s()
								if err != nil {
									errs[g] = err
									return
								}
								if d := maxDiff(got, want); d > 1e-5 {
									errs[g] = fmt.Errorf("goroutine %d call %d: differs from the single-threaded result by %g", g, i, d)
									return
								}
								if i%2 == 0 {
									y.Release()
								}
							}
						})
					}
					wg.Wait()
					close(stop)
					rwg.Wait()
					for _, err := range errs {
						if err != nil {
							t.Error(err)
						}
					}
					if readerErr != nil {
						t.Error(readerErr)
					}
				})
			})
		}
	})
}

// TestRaceAuditSaveLoad: Save only reads the parameters, so two goroutines
// may Save one model at once and get the same bytes; Load rebinds the
// handles (a step of the model, one goroutine's), so two Loads into one
// model at once are the caller's race, but two Loads into two models from
// the same bytes must each give the saved values.
func TestRaceAuditSaveLoad(t *testing.T) {
	eachDevice(t, func(t *testing.T, dev lathe.Device) {
		lathe.Seed(5)
		m := nn.Sequential(nn.NewLinear(6, 4, nn.OnDevice(dev)), nn.ReLU{}, nn.NewLinear(4, 2, nn.OnDevice(dev)))
		var ref bytes.Buffer
		if err := nn.Save(&ref, m); err != nil {
			t.Fatal(err)
		}
		within(t, time.Minute, func() {
			var wg sync.WaitGroup
			outs := make([]bytes.Buffer, 4)
			errs := make([]error, 8)
			for g := range 4 {
				wg.Go(func() { errs[g] = nn.Save(&outs[g], m) })
			}
			for g := 4; g < 8; g++ {
				wg.Go(func() {
					lathe.Seed(uint64(g))
					other := nn.Sequential(nn.NewLinear(6, 4, nn.OnDevice(dev)), nn.ReLU{}, nn.NewLinear(4, 2, nn.OnDevice(dev)))
					if err := nn.Load(bytes.NewReader(ref.Bytes()), other); err != nil {
						errs[g] = err
						return
					}
					var back bytes.Buffer
					if err := nn.Save(&back, other); err != nil {
						errs[g] = err
						return
					}
					if !bytes.Equal(back.Bytes(), ref.Bytes()) {
						errs[g] = fmt.Errorf("goroutine %d: the loaded model saves other bytes", g)
					}
				})
			}
			wg.Wait()
			for g, err := range errs {
				if err != nil {
					t.Error(err)
				} else if g < 4 && !bytes.Equal(outs[g].Bytes(), ref.Bytes()) {
					t.Errorf("goroutine %d: Save gave other bytes than alone", g)
				}
			}
		})
	})
}

// TestRaceAuditStepWhileReading: the optimizer's Step rebinds the
// parameter handles (*p.T = *next), so reading the handle itself during a
// step is the caller's race (TestRaceAuditReadDuringStep); a tensor
// computed from the parameters before the step is another tensor, and
// must keep its values while steps run on another goroutine.
func TestRaceAuditStepWhileReading(t *testing.T) {
	eachDevice(t, func(t *testing.T, dev lathe.Device) {
		lathe.Seed(9)
		m := nn.NewLinear(8, 8, nn.OnDevice(dev))
		opt, err := nn.NewAdam(m.Parameters(), 0.1)
		if err != nil {
			t.Fatal(err)
		}
		x := lathe.RandN(dev, lathe.Float32, 4, 8)
		var snap *lathe.Tensor
		lathe.NoGrad(func() { snap = m.Weight.Add(lathe.Scalar(dev, float32(0))) })
		want, err := snap.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		within(t, time.Minute, func() {
			stepsBesideReader(t, m, opt, x, 10, func() error {
				got, err := snap.Float32s()
				if err != nil || maxDiff(got, want) != 0 {
					return fmt.Errorf("snapshot changed during steps: %v", err)
				}
				return nil
			})
		})
	})
}

// TestRaceAuditTrainSchedulers: separate models with their own optimizers
// and schedulers, trained in parallel, end where one trained alone ends
// (README: goroutines that train models of their own do not meet).
func TestRaceAuditTrainSchedulers(t *testing.T) {
	eachDevice(t, func(t *testing.T, dev lathe.Device) {
		type job struct {
			m     nn.Module
			opt   *nn.Adam
			sched *nn.SequentialLR
		}
		build := func() job {
			lathe.Seed(1)
			m := nn.Sequential(nn.NewConv2d(2, 3, 3, nn.OnDevice(dev)), nn.ReLU{}, nn.Flatten{}, nn.NewLinear(12, 2, nn.OnDevice(dev)))
			opt, err := nn.NewAdamW(m.Parameters(), 0.01, nn.WeightDecay(0.1))
			if err != nil {
				t.Fatal(err)
			}
			sched, err := nn.NewWarmupCosine(opt, 2, 10, 0.1, 0)
			if err != nil {
				t.Fatal(err)
			}
			return job{m, opt, sched}
		}
		x := lathe.Arange(dev, lathe.Float32, 0, 2*2*4*4, 1).Reshape(2, 2, 4, 4).DivScalar(64)
		y := lathe.FromSlice(lathe.CPU, []int64{0, 1}).To(dev)
		run := func(j job) ([]float32, error) {
			for range 10 {
				j.opt.ZeroGrad()
				loss := nn.CrossEntropy(j.m.Forward(x), y)
				if err := loss.Backward(); err != nil {
					return nil, err
				}
				if err := j.opt.Step(); err != nil {
					return nil, err
				}
				j.sched.Step()
			}
			var out []float32
			for _, p := range j.m.Parameters() {
				v, err := p.T.Float32s()
				if err != nil {
					return nil, err
				}
				out = append(out, v...)
			}
			return out, nil
		}
		want, err := run(build())
		if err != nil {
			t.Fatal(err)
		}
		jobs := make([]job, 6)
		for i := range jobs {
			jobs[i] = build()
		}
		within(t, 2*time.Minute, func() {
			var wg sync.WaitGroup
			res := make([][]float32, len(jobs))
			errs := make([]error, len(jobs))
			for g := range jobs {
				wg.Go(func() { res[g], errs[g] = run(jobs[g]) })
			}
			wg.Wait()
			for g := range jobs {
				if errs[g] != nil {
					t.Error(errs[g])
				} else if d := maxDiff(res[g], want); d != 0 {
					t.Errorf("goroutine %d: weights differ from training alone by %g", g, d)
				}
			}
		})
	})
}

// TestRaceAuditCheckpointDropout: checkpointed blocks with dropout, trained
// by several goroutines at once (separate models), each while the others
// draw: a checkpoint's gradient must equal the gradient of the mask its
// forward drew. Checked as: the gradient of sum(dropout(x·W)) with respect
// to W is x^T·(mask/(1-p)), and the forward output tells the mask.
func TestRaceAuditCheckpointDropout(t *testing.T) {
	eachDevice(t, func(t *testing.T, dev lathe.Device) {
		within(t, 2*time.Minute, func() {
			var wg sync.WaitGroup
			errs := make([]error, ckptGoroutines)
			for g := range ckptGoroutines {
				wg.Go(func() {
					lin := nn.NewLinear(8, 8, nn.NoBias(), nn.OnDevice(dev))
					m := nn.Checkpoint(nn.Sequential(lin, nn.NewDropout(0.5)))
					x := lathe.Ones(dev, lathe.Float32, 4, 8)
					for range 5 {
						lin.Weight.ZeroGrad()
						y := m.Forward(x)
						if err := y.Sum().Backward(); err != nil {
							errs[g] = err
							return
						}
						// dy/dW[o][i] = sum over rows of (y[r][o] != 0)·2·x[r][i]
						yv, err := y.Float32s()
						if err != nil {
							errs[g] = err
							return
						}
						gv, err := lin.Weight.Grad().Float32s()
						if err != nil {
							errs[g] = err
							return
						}
						for o := range 8 {
							want := float32(0)
							for r := range 4 {
								if yv[r*8+o] != 0 {
									want += 2
								}
							}
							if gv[o*8] != want {
								errs[g] = fmt.Errorf("goroutine %d: the gradient is not that of the mask the forward drew: %v, want %v", g, gv[o*8], want)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
		})
	})
}

// TestRaceAuditReadDuringStep: reading a parameter while another goroutine
// steps the optimizer is the caller's race (README: a module stepped from
// two goroutines); it must still never crash, nor give garbage: the
// reader gets the old values, the new ones, or an ErrReleased. Run without
// -race (the race detector rightly reports the handle's rebinding).
func TestRaceAuditReadDuringStep(t *testing.T) {
	if raceEnabled {
		t.Skip("a documented caller's race: run without -race")
	}
	eachDevice(t, func(t *testing.T, dev lathe.Device) {
		m := nn.NewLinear(8, 8, nn.OnDevice(dev))
		opt, err := nn.NewSGD(m.Parameters(), 0.1)
		if err != nil {
			t.Fatal(err)
		}
		x := lathe.RandN(dev, lathe.Float32, 4, 8)
		within(t, time.Minute, func() {
			stepsBesideReader(t, m, opt, x, 50, func() error {
				var y *lathe.Tensor
				lathe.NoGrad(func() { y = m.Forward(x) })
				if _, err := y.Float32s(); err != nil && !errors.Is(err, lathe.ErrReleased) {
					return err
				}
				if _, err := m.Weight.Float32s(); err != nil && !errors.Is(err, lathe.ErrReleased) {
					return err
				}
				return nil
			})
		})
	})
}

const ckptGoroutines = 6
