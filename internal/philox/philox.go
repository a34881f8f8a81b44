// Package philox is the counter-based generator Philox4x32-10 (Salmon,
// Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011), the one that cuRAND and PyTorch's CUDA generator use. A block
// of four 32-bit words is a pure function of a 64-bit key and a 64-bit
// counter, so any device can make element i of a random tensor by itself,
// in any order and in parallel, and every device makes the same bits:
// the kernels in kernels/cuda/philox.cuh and kernels/wgsl/philox.wgsl are
// this function in their languages, held to it by tests.
package philox

// The round's multipliers and the key schedule's increments (the golden
// ratio and sqrt(3) - 1, in 32 bits), from the paper.
const (
	m0 = 0xD2511F53
	m1 = 0xCD9E8D57
	w0 = 0x9E3779B9
	w1 = 0xBB67AE85
)

// Block is Philox4x32-10 of the counter words ctr under the key words key.
func Block(ctr [4]uint32, key [2]uint32) [4]uint32 {
	c0, c1, c2, c3 := ctr[0], ctr[1], ctr[2], ctr[3]
	k0, k1 := key[0], key[1]
	for r := 0; r < 10; r++ {
		if r > 0 {
			k0 += w0
			k1 += w1
		}
		p0 := uint64(m0) * uint64(c0)
		p1 := uint64(m1) * uint64(c2)
		c0, c1, c2, c3 = uint32(p1>>32)^c1^k0, uint32(p1), uint32(p0>>32)^c3^k1, uint32(p0)
	}
	return [4]uint32{c0, c1, c2, c3}
}

// Words is the block that holds element i of a stream under key: lathe
// numbers a tensor's elements row-major and takes element i from word
// i mod 4 of the block at counter i/4 (low word first), under the key's
// low and high words.
func Words(key uint64, i uint64) [4]uint32 {
	b := i / 4
	return Block([4]uint32{uint32(b), uint32(b >> 32), 0, 0}, [2]uint32{uint32(key), uint32(key >> 32)})
}
