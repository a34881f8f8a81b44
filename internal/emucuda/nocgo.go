//go:build !cgo

package emucuda

const cgoEnabled = false
