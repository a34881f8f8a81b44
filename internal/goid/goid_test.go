package goid

import (
	"sync"
	"testing"
)

// TestCurrent checks the fast read against the stack header's id on many
// goroutines at once, and that the fast read is in use on the
// architectures that have its assembly.
func TestCurrent(t *testing.T) {
	if getg() != nil && offset() < 0 {
		t.Fatal("the id's place in the goroutine record was not found; Current reads the stack header")
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if got, want := Current(), fromStack(); got != want {
					errs <- "Current " + itoa(got) + ", stack header " + itoa(want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

func itoa(v uint64) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + v%10)}, b...)
		if v /= 10; v == 0 {
			return string(b)
		}
	}
}

func BenchmarkCurrent(b *testing.B) {
	for b.Loop() {
		Current()
	}
}

func BenchmarkFromStack(b *testing.B) {
	for b.Loop() {
		fromStack()
	}
}
