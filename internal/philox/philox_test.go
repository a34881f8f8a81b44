package philox

import "testing"

// TestKnownAnswers holds Block to Random123's known-answer vectors for
// Philox4x32-10 (its kat_vectors file: counter, key, result).
func TestKnownAnswers(t *testing.T) {
	for _, c := range []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{}, [2]uint32{}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}, [2]uint32{^uint32(0), ^uint32(0)},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	} {
		if got := Block(c.ctr, c.key); got != c.want {
			t.Errorf("Block(%08x, %08x) = %08x, want %08x", c.ctr, c.key, got, c.want)
		}
	}
}

// TestWords checks the numbering: elements 4b..4b+3 share counter b, whose
// high word is the counter's bits past 32.
func TestWords(t *testing.T) {
	const key = 0x299f31d0a4093822
	want := Block([4]uint32{0x243f6a88 >> 2, 0, 0, 0}, [2]uint32{0xa4093822, 0x299f31d0})
	for j := uint64(0); j < 4; j++ {
		if got := Words(key, 0x243f6a88&^3+j); got != want {
			t.Fatalf("Words(%d) = %08x, want %08x", j, got, want)
		}
	}
	high := Block([4]uint32{1, 2, 0, 0}, [2]uint32{0xa4093822, 0x299f31d0})
	if got := Words(key, (2<<32|1)*4+3); got != high {
		t.Errorf("Words past 2^34 = %08x, want %08x", got, high)
	}
}

func BenchmarkBlock(b *testing.B) {
	var s uint32
	for i := uint32(0); b.Loop(); i++ {
		s += Block([4]uint32{i, 0, 0, 0}, [2]uint32{1, 2})[0]
	}
	_ = s
}
