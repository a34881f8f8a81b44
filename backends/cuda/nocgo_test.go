//go:build !cgo

package cuda

const cgoEnabled = false
