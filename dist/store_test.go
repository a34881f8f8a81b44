package dist

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback TCP here")
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// The rendezvous gives every rank rank 0's id, whoever starts first.
func TestShareBlob(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := bytes.Repeat([]byte{7, 1}, 64)
	const size = 4
	got := make([][]byte, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := size - 1; r >= 0; r-- { // the others dial before rank 0 listens
		wg.Add(1)
		go func() {
			defer wg.Done()
			blob := []byte(nil)
			if r == 0 {
				blob = id
			}
			got[r], errs[r] = shareBlob(ctx, "127.0.0.1", port, r, size, blob)
		}()
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	for r := range size {
		if errs[r] != nil || !bytes.Equal(got[r], id) {
			t.Errorf("rank %d: %v, %v", r, got[r], errs[r])
		}
	}
}

// A rank whose rank 0 never answers ends by its deadline; so does a rank 0
// whose peers never come. Rank 1 dials a listener of the test's own that
// never answers: a port merely left free could be taken meanwhile by
// another test process, whose reset made this test fail now and then.
func TestShareBlobDeadline(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	ports := map[int]int{0: freePort(t), 1: silent.Addr().(*net.TCPAddr).Port}
	for _, rank := range []int{0, 1} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		start := time.Now()
		_, err := shareBlob(ctx, "127.0.0.1", ports[rank], rank, 2, []byte("id"))
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
			t.Errorf("rank %d alone: %v after %v, want a deadline error by it", rank, err, time.Since(start))
		}
	}
}
