package conformance

func init() {
	differentiable = append(differentiable, "batch_norm", "group_norm", "pixel_shuffle", "pixel_unshuffle", "vector_norm")
}
