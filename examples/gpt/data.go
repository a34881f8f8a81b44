package main

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lathe-ml/lathe"
)

// The vocabulary is fixed, so that a model's token ids do not change when
// files are added to the corpus: newline, tab, the 95 printable ASCII
// characters (space to ~), and one token that stands for every other byte
// (the bytes of the UTF-8 in comments, say).
const (
	vocabSize  = 98
	otherToken = vocabSize - 1
)

// encode maps text to token ids.
func encode(text []byte) []int64 {
	ids := make([]int64, len(text))
	for i, c := range text {
		switch {
		case c == '\n':
			ids[i] = 0
		case c == '\t':
			ids[i] = 1
		case c >= ' ' && c <= '~':
			ids[i] = int64(c-' ') + 2
		default:
			ids[i] = otherToken
		}
	}
	return ids
}

// decode maps token ids back to text; the "other" token prints as '?'.
func decode(ids []int64) string {
	var b strings.Builder
	for _, id := range ids {
		switch {
		case id == 0:
			b.WriteByte('\n')
		case id == 1:
			b.WriteByte('\t')
		case id >= 2 && id < otherToken:
			b.WriteByte(byte(id-2) + ' ')
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}

// moduleRoot is the nearest folder at or above dir that holds go.mod.
func moduleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory: run from inside the lathe module, or pass -data")
		}
		dir = parent
	}
}

// readCorpus reads the .go files under root (hidden folders and testdata
// skipped), in path order so that the corpus is the same on every run, and
// joins them.
func readCorpus(root string) ([]byte, int, error) {
	var paths []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, 0, lathe.NewError("gpt", lathe.ErrValue, "-data", "cannot be read: "+err.Error(),
			"give a folder of .go files, or leave -data out for the module's own")
	}
	slices.Sort(paths)
	var text []byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, 0, err
		}
		text = append(text, b...)
	}
	return text, len(paths), nil
}

// corpus is the encoded text, split into a training part and the
// validation part that follows it.
type corpus struct {
	train, val []int64
}

// split keeps the last valShare of ids for validation: whole files the
// model never trains on, rather than windows interleaved with training ones.
func split(ids []int64, valShare float64) corpus {
	n := len(ids) - int(float64(len(ids))*valShare)
	return corpus{train: ids[:n], val: ids[n:]}
}

// batch cuts b windows of l+1 tokens at random offsets of ids: the inputs
// are each window's first l tokens and the targets its last l, the next
// token at each position.
func batch(rng *rand.Rand, ids []int64, b, l int, dev lathe.Device) (x, y *lathe.Tensor) {
	xs := make([]int64, 0, b*l)
	ys := make([]int64, 0, b*l)
	for range b {
		o := rng.IntN(len(ids) - l)
		xs = append(xs, ids[o:o+l]...)
		ys = append(ys, ids[o+1:o+l+1]...)
	}
	return lathe.FromSlice(dev, xs, b, l), lathe.FromSlice(dev, ys, b, l)
}
