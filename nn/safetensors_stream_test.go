package nn

import (
	"bytes"
	"runtime"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// countingWriter counts what is written to it and keeps nothing.
type countingWriter struct{ n int }

func (w *countingWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

// heapDuring is the Go heap that f allocates.
func heapDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestSaveLoadStream: Save writes a tensor's data a chunk at a time from
// the tensor's own memory, and Load reads it a chunk at a time into the
// new tensor's, so neither holds a copy of the data on the Go heap: for a
// 64 MB parameter, the copies that Save and Load made were 64 MB and
// 192 MB (the file's bytes, the decoded values, FromSlice's copy); a
// bfloat16 one went through two copies of its bits.
func TestSaveLoadStream(t *testing.T) {
	testenv.HostOnly(t)
	const rows, cols = 4096, 4096
	src := lathe.Arange(lathe.CPU, lathe.Float32, 0, rows*cols, 1).Reshape(rows, cols)
	half := src.Cast(lathe.BFloat16)
	m := tensors{{"w", src}, {"h", half}, {"b", lathe.FromSlice(lathe.CPU, []int64{-3, 4})}}
	var w countingWriter
	var err error
	if saved := heapDuring(func() { err = Save(&w, m) }); err != nil || saved > 1<<20 {
		t.Fatalf("Save: %v; it took %d KB of Go heap for a 64 MB tensor", err, saved>>10)
	}
	var file bytes.Buffer
	file.Grow(w.n)
	if err := Save(&file, m); err != nil || file.Len() != w.n {
		t.Fatalf("Save: %v; %d bytes, then %d", err, w.n, file.Len())
	}
	into := tensors{{"w", lathe.Zeros(lathe.CPU, lathe.Float32, rows, cols)}, {"h", lathe.Zeros(lathe.CPU, lathe.BFloat16, rows, cols)},
		{"b", lathe.Zeros(lathe.CPU, lathe.Int64, 2)}}
	if loaded := heapDuring(func() { err = Load(&file, into) }); err != nil || loaded > 3*(4+2)*rows*cols/2 {
		t.Fatalf("Load: %v; it took %d MB of Go heap for tensors of 96 MB", err, loaded>>20)
	}
	wantBits, _ := half.HalfBits()
	if gotBits, _ := into[1].T.HalfBits(); !slices.Equal(gotBits, wantBits) {
		t.Error("the bfloat16 tensor's bits differ after the round trip")
	}
	got, _ := into[0].T.Float32s()
	if len(got) != rows*cols || got[0] != 0 || got[12345] != 12345 || got[len(got)-1] != rows*cols-1 {
		t.Errorf("loaded w: %d elements, w[12345] = %v, last %v", len(got), got[12345], got[len(got)-1])
	}
	if b, _ := into[2].T.Int64s(); !slices.Equal(b, []int64{-3, 4}) {
		t.Errorf("loaded b: %v", b)
	}
}
