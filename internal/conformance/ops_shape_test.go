package conformance

func init() {
	differentiable = append(differentiable, "tril", "triu", "repeat", "tile", "repeat_interleave", "repeat_interleave_counts", "einsum")
}
