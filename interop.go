package lathe

import "github.com/lathe-ml/lathe/dispatch"

// Handing a tensor's device memory to another library, as PyTorch's
// Tensor.data_ptr and torch.cuda.current_stream().cuda_stream do: dist's
// NCCL engine runs its collectives this way, on the stream lathe's own ops
// run on, so that neither waits for the other.

// streamSharer returns dev's backend as a dispatch.StreamSharer.
func streamSharer(dev Device, op string) (dispatch.StreamSharer, error) {
	b, err := dispatch.Open(dev)
	if err != nil {
		return nil, located(err, op)
	}
	s, ok := b.(dispatch.StreamSharer)
	if !ok {
		return nil, errorf(op, ErrUnsupported, "", dev.String()+" has no stream that other libraries can share (cuda devices do)", "")
	}
	return s, nil
}

// WithStream runs f with dev's native stream (a CUstream, which is CUDA's
// cudaStream_t too) and dev's context current on the calling thread, which
// stays locked to the goroutine until f returns. What f queues on the
// stream runs after every op queued on dev before, and before every op
// queued after: a library call made in f reads and writes tensors (their
// DataPtr) in the order lathe's own ops would. f's error is returned as
// it is. A device whose backend has no such stream (cpu, wgpu) is
// ErrUnsupported.
func WithStream(dev Device, f func(stream uintptr) error) error {
	s, err := streamSharer(dev, "with_stream")
	if err != nil {
		return err
	}
	if f == nil {
		return errorf("with_stream", ErrValue, "f", "is nil", "pass the function to run")
	}
	return s.WithStream(dev, f)
}

// DataPtr is the device address of x's first element, for a library that
// works on device memory (NCCL): x must be contiguous (x.Contiguous()
// makes it so) and on a device with a shared stream (cuda; else
// ErrUnsupported). The address is valid while x is alive. lathe's tensors
// never change, so a library may write only to a tensor that nothing else
// has seen yet (one just made with Zeros, say), and only through work
// queued in WithStream. A tensor made from values that a device's check
// has refused (an index out of range) is that check's error, as its Err
// is: the library would read the failed op's garbage. A check the device
// has not reported yet cannot be seen here.
func (x *Tensor) DataPtr() (uint64, error) {
	const op = "data_ptr"
	if err := x.CheckArg(op, "x"); err != nil {
		return 0, err
	}
	if !x.t.IsContiguous() {
		return 0, errorf(op, ErrValue, "x", "is a strided view "+dispatch.FormatShape(x.t.Shape)+" whose elements are not contiguous",
			"call x.Contiguous() first")
	}
	s, err := streamSharer(x.t.Device, op)
	if err != nil {
		return 0, err
	}
	p, err := s.DeviceAddress(x.t)
	if err != nil {
		return 0, located(err, op)
	}
	return p, nil
}
