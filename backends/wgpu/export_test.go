//go:build cgo

package wgpu

// SetCacheLimit sets the cap on wgpu:0's cached tensor buffers and returns
// what puts the old one back.
func SetCacheLimit(n int64) (restore func()) {
	d, _ := open()
	old := d.cache.Limit()
	d.cache.SetLimit(n)
	return func() { d.cache.SetLimit(old) }
}

// SetPressure sets the pressure threshold of wgpu:0's pool and returns
// what puts the default back.
func SetPressure(n int64) (restore func()) {
	d, _ := open()
	d.pool.SetPressure(n)
	return func() { d.pool.SetPressure(0) }
}

// ForceTiledMatmul makes a CPU adapter run the GPU's matmul kernel and
// returns what puts the choice back.
func ForceTiledMatmul() (restore func()) {
	forceTiledMatmul = true
	return func() { forceTiledMatmul = false }
}
