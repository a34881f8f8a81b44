package nn

import "github.com/lathe-ml/lathe"

// Checkpoint wraps m so that its forward pass keeps none of m's
// intermediate results for the backward pass (lathe.Checkpoint over the
// input and m's parameters): Backward runs m's forward again, trading a
// second forward pass for the memory of m's activations, as
// torch.utils.checkpoint does. The wrapper's parameters, buffers and
// their names are m's, so a state dict loads as it does into m. A layer
// with running statistics (BatchNorm2d) inside updates them in both runs,
// as under PyTorch's checkpoint; m should read no tensor that needs a
// gradient other than its parameters.
func Checkpoint(m Module) Module { return &checkpointed{m} }

type checkpointed struct{ Module }

// Forward runs the wrapped module through lathe.Checkpoint.
func (c *checkpointed) Forward(x *lathe.Tensor) *lathe.Tensor {
	if isNil(c.Module) {
		return lathe.Failed(nilModule("checkpoint", "m"))
	}
	ps := c.Parameters()
	args := make([]*lathe.Tensor, 0, 1+len(ps))
	args = append(args, x)
	for _, p := range ps {
		args = append(args, p.T)
	}
	return lathe.Checkpoint(func(xs ...*lathe.Tensor) *lathe.Tensor { return c.Module.Forward(xs[0]) }, args...)
}

// Parameters lists the wrapped module's parameters under their own names.
func (c *checkpointed) Parameters() []Param {
	if isNil(c.Module) {
		return nil
	}
	return c.Module.Parameters()
}

// Buffers lists the wrapped module's buffers under their own names.
func (c *checkpointed) Buffers() []Param {
	if isNil(c.Module) {
		return nil
	}
	return Buffers(c.Module)
}

// NonPersistentBuffers lists the wrapped module's non-persistent buffers.
func (c *checkpointed) NonPersistentBuffers() []Param {
	if isNil(c.Module) {
		return nil
	}
	return NonPersistentBuffers(c.Module)
}

// To moves the wrapped module.
func (c *checkpointed) To(dev lathe.Device) error {
	if isNil(c.Module) {
		return nilModule("to", "m")
	}
	return c.Module.To(dev)
}

// Train switches the wrapped module's training mode.
func (c *checkpointed) Train(on bool) {
	if !isNil(c.Module) {
		c.Module.Train(on)
	}
}
