//go:build cgo

package emucuda

// cgoEnabled: the cuda backend opens a driver only with cgo.
const cgoEnabled = true
