package conformance

// The interpolation op keys must have gradient cases too.
func init() {
	differentiable = append(differentiable, "interpolate", "interpolate_sq", "interpolate_vjp")
}
