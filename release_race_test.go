package lathe_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestViewWhileReleased: the calls that take a view of their receiver
// outside an op (String, Detach, and Einsum of an operand it leaves as it
// is) while another goroutine releases it. README (Goroutines): the reader
// gets the right result or an ErrReleased, never another tensor's
// elements. Taking the view used to add a reference to the storage
// without checking that one was left, so a view made just after the last
// Release brought a freed buffer back: it read what the pool's next
// tensor wrote there and, released in its turn, freed the buffer a second
// time, after which the pool handed it to two tensors at once. Each
// round checks the reader's result and then that three fresh tensors of
// the buffer's size hold their own values. Run it with -race too.
func TestViewWhileReleased(t *testing.T) {
	const n = 600 // under String's summary threshold: printed from a view of x
	readers := []struct {
		name string
		read func(x *lathe.Tensor) ([]float32, error)
	}{
		{"string", func(x *lathe.Tensor) ([]float32, error) {
			s := x.String()
			switch {
			case strings.HasPrefix(s, "tensor(<failed"):
				return nil, errors.New(s)
			case strings.Contains(s, "7."):
				return nil, fmt.Errorf("printed another tensor's elements: %.40s", s)
			}
			return nil, nil
		}},
		{"detach", func(x *lathe.Tensor) ([]float32, error) {
			d := x.Detach()
			defer d.Release()
			return d.Float32s()
		}},
		{"einsum", func(x *lathe.Tensor) ([]float32, error) {
			e := lathe.Einsum("i->i", x)
			defer e.Release()
			return e.Float32s()
		}},
	}
	for _, dev := range randomDevices(t) {
		for _, r := range readers {
			t.Run(dev.String()+"/"+r.name, func(t *testing.T) {
				rounds := 3000
				if dev != lathe.CPU {
					rounds = 100
				}
				for i := range rounds {
					x := lathe.Full(dev, lathe.Float32, 3, n).AddScalar(0) // a pooled buffer
					var got []float32
					var err error
					var wg sync.WaitGroup
					wg.Go(func() { got, err = r.read(x) })
					spin(i % 64) // Release at varying points of the read
					x.Release()
					y := lathe.Full(dev, lathe.Float32, 7, n).AddScalar(0) // the pool's next tensor
					wg.Wait()
					switch {
					case err != nil && !strings.Contains(err.Error(), "released"):
						t.Fatalf("round %d: %v", i, err)
					case err == nil:
						for _, v := range got {
							if v != 3 {
								t.Fatalf("round %d: read %v of a tensor of 3s", i, v)
							}
						}
					}
					y.Release()
					fresh := make([]*lathe.Tensor, 3)
					for k := range fresh {
						fresh[k] = lathe.Full(dev, lathe.Float32, float64(k+1), n).AddScalar(0)
					}
					for k, f := range fresh {
						v, err := f.Float32s()
						if err != nil {
							t.Fatal(err)
						}
						if v[0] != float32(k+1) {
							t.Fatalf("round %d: a fresh tensor of %ds holds %v: the pool gave one buffer to two tensors", i, k+1, v[0])
						}
					}
					for _, f := range fresh {
						f.Release()
					}
				}
			})
		}
	}
}

var spinSink int

// spin busies the goroutine for about k microseconds' worth of loop.
func spin(k int) {
	for j := range k * 200 {
		spinSink += j
	}
}
