package lathe_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
)

// Run one at a time under the race detector:
// go test -race -count=1 -run 'TestRaceAudit<Name>' .

func raceDevices(t *testing.T) []lathe.Device {
	devs := []lathe.Device{lathe.CPU}
	for _, info := range lathe.DeviceStatus() {
		if info.Device == lathe.WGPU(0) && info.Available {
			devs = append(devs, info.Device)
		}
	}
	return devs
}

func raceWithin(t *testing.T, d time.Duration, f func()) {
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

// TestRaceAuditReadWhileRelease: promised (README, Goroutines): a tensor
// released while another goroutine reads it back gives that goroutine the
// right result or an ErrReleased, never another tensor's elements. After
// the races, fresh tensors of the same size must each hold their own
// values (a buffer freed twice would be handed to two of them).
func TestRaceAuditReadWhileRelease(t *testing.T) {
	for _, dev := range raceDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			raceWithin(t, 3*time.Minute, func() {
				const n = 600 // under String's summary threshold: printed whole
				iters := 400
				if dev != lathe.CPU {
					iters = 60
				}
				for i := range iters {
					x := lathe.Full(dev, lathe.Float32, 3, n).AddScalar(0) // a pooled buffer
					var wg sync.WaitGroup
					errs := make(chan error, 8)
					for g := range 3 {
						wg.Go(func() {
							switch g {
							case 0:
								s := x.String()
								if strings.Contains(s, "failed") {
									if !strings.Contains(s, "released") {
										errs <- fmt.Errorf("String: %s", s)
									}
									return
								}
								if strings.Contains(s, "7.") {
									errs <- fmt.Errorf("String printed another tensor's elements")
								}
							case 1:
								v, err := x.Float32s()
								if err != nil {
									if !errors.Is(err, lathe.ErrReleased) {
										errs <- err
									}
									return
								}
								for _, e := range v {
									if e != 3 {
										errs <- fmt.Errorf("Float32s read %v", e)
										return
									}
								}
							case 2:
								v, err := x.Narrow(0, 5, 1).Item()
								if err != nil {
									if !errors.Is(err, lathe.ErrReleased) {
										errs <- err
									}
									return
								}
								if v != 3 {
									errs <- fmt.Errorf("Item read %v", v)
								}
							}
						})
					}
					// Other goroutines' tensors made meanwhile, of the same size.
					y := lathe.Full(dev, lathe.Float32, 7, n).AddScalar(0)
					x.Release()
					wg.Wait()
					close(errs)
					for err := range errs {
						t.Fatalf("iteration %d: %v", i, err)
					}
					y.Release()
					// No buffer may be handed to two tensors.
					a := lathe.Full(dev, lathe.Float32, 1, n).AddScalar(0)
					b := lathe.Full(dev, lathe.Float32, 2, n).AddScalar(0)
					c := lathe.Full(dev, lathe.Float32, 4, n).AddScalar(0)
					for k, z := range []*lathe.Tensor{a, b, c} {
						want := float32([]float64{1, 2, 4}[k])
						v, err := z.Float32s()
						if err != nil {
							t.Fatal(err)
						}
						if v[0] != want || v[n-1] != want {
							t.Fatalf("iteration %d: a fresh tensor of %v holds %v: two tensors share a buffer", i, want, v[0])
						}
					}
					a.Release()
					b.Release()
					c.Release()
				}
			})
		})
	}
}

// TestRaceAuditRandom: lathe.Seed and draws from many goroutines: no race,
// every draw in range, Dropout's values 0 or x/(1-p), Multinomial's indices
// where the probabilities are not 0; and after the goroutines, Seed gives
// the same stream as before.
func TestRaceAuditRandom(t *testing.T) {
	for _, dev := range raceDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			lathe.Seed(42)
			wantA, err := lathe.Rand(dev, lathe.Float32, 64).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			probs := lathe.FromSlice(lathe.CPU, []float32{0, 1, 0, 3, 0, 2}).To(dev)
			ones := lathe.Ones(dev, lathe.Float32, 256)
			raceWithin(t, 2*time.Minute, func() {
				var wg sync.WaitGroup
				errs := make(chan error, 64)
				for g := range 8 {
					wg.Go(func() {
						for i := range 10 {
							switch (g + i) % 5 {
							case 0:
								lathe.Seed(uint64(g))
							case 1:
								v, err := lathe.Rand(dev, lathe.Float32, 100).Float32s()
								if err != nil {
									errs <- err
									return
								}
								for _, e := range v {
									if e < 0 || e >= 1 {
										errs <- fmt.Errorf("Rand gave %v", e)
										return
									}
								}
							case 2:
								v, err := ones.Dropout(0.5, true).Float32s()
								if err != nil {
									errs <- err
									return
								}
								for _, e := range v {
									if e != 0 && e != 2 {
										errs <- fmt.Errorf("Dropout gave %v", e)
										return
									}
								}
							case 3:
								v, err := lathe.Multinomial(probs, 20, true).Int64s()
								if err != nil {
									errs <- err
									return
								}
								for _, e := range v {
									if e != 1 && e != 3 && e != 5 {
										errs <- fmt.Errorf("Multinomial drew index %d of probability 0", e)
										return
									}
								}
							case 4:
								v, err := lathe.RandN(dev, lathe.Float32, 1000).Float32s()
								if err != nil {
									errs <- err
									return
								}
								for _, e := range v {
									if math.IsNaN(float64(e)) || math.IsInf(float64(e), 0) {
										errs <- fmt.Errorf("RandN gave %v", e)
										return
									}
								}
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			})
			lathe.Seed(42)
			gotA, err := lathe.Rand(dev, lathe.Float32, 64).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i := range gotA {
				if gotA[i] != wantA[i] {
					t.Fatalf("after the goroutines, Seed(42) gives another stream")
				}
			}
		})
	}
}

// TestRaceAuditModesPerGoroutine: Autocast and NoGrad apply to the calling
// goroutine only: while some goroutines run inside them, the others'
// matmuls stay float32 and are recorded.
func TestRaceAuditModesPerGoroutine(t *testing.T) {
	for _, dev := range raceDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			w := lathe.RandN(dev, lathe.Float32, 8, 8).RequireGrad()
			x := lathe.RandN(dev, lathe.Float32, 4, 8)
			raceWithin(t, 2*time.Minute, func() {
				var wg sync.WaitGroup
				errs := make(chan error, 64)
				for g := range 9 {
					wg.Go(func() {
						for range 20 {
							switch g % 3 {
							case 0:
								err := lathe.Autocast(lathe.BFloat16, func() {
									y := x.MatMul(w)
									if y.DType() != lathe.BFloat16 {
										errs <- fmt.Errorf("inside Autocast: matmul gave %v", y.DType())
									}
									if lathe.AutocastDType() != lathe.BFloat16 {
										errs <- fmt.Errorf("inside Autocast: AutocastDType %v", lathe.AutocastDType())
									}
								})
								if err != nil {
									errs <- err
								}
							case 1:
								lathe.NoGrad(func() {
									y := x.MatMul(w)
									if y.RequiresGrad() {
										errs <- fmt.Errorf("inside NoGrad: the matmul was recorded")
									}
								})
							case 2:
								y := x.MatMul(w)
								if y.DType() != lathe.Float32 {
									errs <- fmt.Errorf("outside Autocast: matmul gave %v (another goroutine's Autocast leaked)", y.DType())
								}
								if !y.RequiresGrad() {
									errs <- fmt.Errorf("outside NoGrad: the matmul was not recorded (another goroutine's NoGrad leaked)")
								}
								if dt := lathe.AutocastDType(); dt == lathe.BFloat16 || dt == lathe.Float16 {
									errs <- fmt.Errorf("outside Autocast: AutocastDType %v", dt)
								}
								if err := y.Sum().Backward(); err != nil {
									errs <- err
								}
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			})
		})
	}
}

// TestRaceAuditMemoryCalls: Synchronize, DeviceStatus, MemoryStats and
// EmptyCache from one goroutine while others run ops: no race, no hang, and
// the ops' values are right.
func TestRaceAuditMemoryCalls(t *testing.T) {
	for _, dev := range raceDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			raceWithin(t, 2*time.Minute, func() {
				var wg sync.WaitGroup
				stop := make(chan struct{})
				errs := make(chan error, 64)
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := lathe.Synchronize(dev); err != nil {
							errs <- err
							return
						}
						_ = lathe.DeviceStatus()
						if _, err := lathe.MemoryStats(dev); err != nil {
							errs <- err
							return
						}
						if err := lathe.EmptyCache(dev); err != nil {
							errs <- err
							return
						}
					}
				})
				var ops sync.WaitGroup
				for g := range 4 {
					ops.Go(func() {
						for i := range 30 {
							n := 1000 + 100*g + i
							a := lathe.Full(dev, lathe.Float32, 2, n)
							b := a.Mul(a).Sum()
							v, err := b.Item()
							if err != nil {
								errs <- err
								return
							}
							if v != float64(4*n) {
								errs <- fmt.Errorf("sum of %d fours is %v", n, v)
								return
							}
							a.Release()
							b.Release()
						}
					})
				}
				ops.Wait()
				close(stop)
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			})
		})
	}
}

// TestRaceAuditBackward: Backward on independent graphs and on graphs that
// share leaves, at once; the shared leaf's gradient is the sum.
func TestRaceAuditBackward(t *testing.T) {
	for _, dev := range raceDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			shared := lathe.Ones(dev, lathe.Float32, 16).RequireGrad()
			raceWithin(t, 2*time.Minute, func() {
				var wg sync.WaitGroup
				errs := make(chan error, 64)
				const g = 8
				for k := range g {
					wg.Go(func() {
						own := lathe.Full(dev, lathe.Float32, float64(k), 16).RequireGrad()
						y := own.Mul(own).Add(shared.MulScalar(2)).Sum()
						if err := y.Backward(); err != nil {
							errs <- err
							return
						}
						v, err := own.Grad().Float32s()
						if err != nil {
							errs <- err
							return
						}
						if v[0] != float32(2*k) {
							errs <- fmt.Errorf("goroutine %d: own gradient %v, want %v", k, v[0], 2*k)
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			})
			v, err := shared.Grad().Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if v[0] != 16 {
				t.Errorf("shared gradient %v, want 16", v[0])
			}
		})
	}
}

// TestRaceAuditBigOps: ops large enough to be split over the cpu's crew
// (2^18 elements' work and more), from several goroutines at once, with
// releases: every result right.
func TestRaceAuditBigOps(t *testing.T) {
	for _, dev := range raceDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			raceWithin(t, 3*time.Minute, func() {
				var wg sync.WaitGroup
				errs := make(chan error, 64)
				for g := range 4 {
					wg.Go(func() {
						for i := range 4 {
							n := 1<<19 + g*64 + i
							a := lathe.Full(dev, lathe.Float32, float64(g+1), n)
							s := a.Exp().Log().Mul(a).Sum()
							v, err := s.Item()
							if err != nil {
								errs <- err
								return
							}
							want := float64(n) * float64((g+1)*(g+1))
							if math.Abs(v-want) > 1e-3*want {
								errs <- fmt.Errorf("goroutine %d: sum %v, want %v", g, v, want)
							}
							m := lathe.Full(dev, lathe.Float32, 1, 192, 192)
							p := m.MatMul(m).Softmax(1).Sum()
							pv, err := p.Item()
							if err != nil {
								errs <- err
								return
							}
							if math.Abs(pv-192) > 1e-2 {
								errs <- fmt.Errorf("goroutine %d: softmax rows sum to %v, want 192", g, pv)
							}
							for _, x := range []*lathe.Tensor{a, s, m, p} {
								x.Release()
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			})
		})
	}
}

// TestRaceAuditViewsRelease: views of one base, released in any order from
// several goroutines while others compute from them: each op's result is
// right or an ErrReleased, and afterwards fresh tensors hold their own
// values.
func TestRaceAuditViewsRelease(t *testing.T) {
	for _, dev := range raceDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			raceWithin(t, 2*time.Minute, func() {
				for i := range 100 {
					base := lathe.Arange(dev, lathe.Float32, 0, 1024, 1)
					views := []*lathe.Tensor{base.Narrow(0, 0, 512), base.Reshape(32, 32).MT(), base.Narrow(0, 512, 512).Reshape(16, 32), base.Detach()}
					wants := []float64{511 * 512 / 2, 1023 * 1024 / 2, (512 + 1023) * 512 / 2, 1023 * 1024 / 2}
					var wg sync.WaitGroup
					errs := make(chan error, 16)
					for k, v := range views {
						wg.Go(func() {
							s, err := v.Sum().Item()
							if err != nil {
								if !errors.Is(err, lathe.ErrReleased) {
									errs <- err
								}
								return
							}
							if s != wants[k] {
								errs <- fmt.Errorf("view %d: sum %v, want %v", k, s, wants[k])
							}
						})
						wg.Go(func() { _ = spinRace(i + k); v.Release() })
					}
					wg.Go(func() { base.Release() })
					wg.Wait()
					close(errs)
					for err := range errs {
						t.Fatalf("round %d: %v", i, err)
					}
					a := lathe.Full(dev, lathe.Float32, 1, 1024).AddScalar(0)
					b := lathe.Full(dev, lathe.Float32, 2, 1024).AddScalar(0)
					av, _ := a.Float32s()
					bv, _ := b.Float32s()
					if av[0] != 1 || bv[0] != 2 {
						t.Fatalf("round %d: fresh tensors hold %v and %v", i, av[0], bv[0])
					}
					a.Release()
					b.Release()
				}
			})
		})
	}
}

func spinRace(k int) int {
	s := 0
	for j := range (k % 32) * 100 {
		s += j
	}
	return s
}

// TestRaceAuditHooks: OnGrad hooks set from several goroutines on a shared
// leaf while passes run into it: no race, and each pass's hooks see its
// gradient.
func TestRaceAuditHooks(t *testing.T) {
	for _, dev := range raceDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			w := lathe.Ones(dev, lathe.Float32, 8).RequireGrad()
			raceWithin(t, time.Minute, func() {
				var wg sync.WaitGroup
				var mu sync.Mutex
				seen := 0
				for g := range 6 {
					wg.Go(func() {
						if err := w.OnGrad(func(g *lathe.Tensor) *lathe.Tensor {
							mu.Lock()
							seen++
							mu.Unlock()
							return g
						}); err != nil {
							t.Error(err)
						}
						if err := w.MulScalar(float64(g)).Sum().Backward(); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
			})
			v, err := w.Grad().Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if v[0] != 15 {
				t.Errorf("gradient %v, want 0+1+...+5 = 15", v[0])
			}
		})
	}
}

// TestRaceAuditFirstOpen: the first use of wgpu:0 from many goroutines at
// once (run this test alone, in a fresh process): every call agrees on
// whether it opens, and the ops' values are right.
func TestRaceAuditFirstOpen(t *testing.T) {
	dev := lathe.WGPU(0)
	raceWithin(t, 2*time.Minute, func() {
		var wg sync.WaitGroup
		errs := make([]error, 12)
		for g := range 12 {
			wg.Go(func() {
				switch g % 6 {
				case 0:
					v, err := lathe.Full(dev, lathe.Float32, float64(g), 4).Sum().Item()
					if err == nil && v != float64(4*g) {
						err = fmt.Errorf("sum %v, want %v", v, 4*g)
					}
					errs[g] = err
				case 1:
					_ = lathe.DeviceStatus()
				case 2:
					_, errs[g] = lathe.MemoryStats(dev)
				case 3:
					errs[g] = lathe.EmptyCache(dev)
				case 4:
					errs[g] = lathe.Synchronize(dev)
				case 5:
					_ = lathe.Devices()
				}
			})
		}
		wg.Wait()
		var first error
		for g, err := range errs {
			if err != nil && !errors.Is(err, lathe.ErrUnavailable) {
				t.Errorf("goroutine %d: %v", g, err)
			}
			if g == 0 {
				first = err
			}
		}
		if first == nil {
			for g, err := range errs {
				if errors.Is(err, lathe.ErrUnavailable) {
					t.Errorf("goroutine %d: unavailable while goroutine 0's op ran: %v", g, err)
				}
			}
		}
	})
}
