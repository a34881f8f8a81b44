package main

import (
	"testing"

	"github.com/lathe-ml/lathe/internal/emucuda"
)

// TestEmulatedCUDA trains on cuda:0 as the host emulation plays it
// (internal/emucuda), in float32 and under autocast, as make gpu-check
// trains on a GPU.
func TestEmulatedCUDA(t *testing.T) {
	emucuda.Run(t, "../..", "(TestTrainDevices|TestTrainAMPDevices)$/^cuda:0", emucuda.Kernels)
}
