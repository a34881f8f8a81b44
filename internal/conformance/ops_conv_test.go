package conformance

func init() {
	differentiable = append(differentiable, "conv1d", "conv2d", "conv3d",
		"conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "unfold", "fold")
}
