//go:build cgo

package cuda

const cgoEnabled = true
