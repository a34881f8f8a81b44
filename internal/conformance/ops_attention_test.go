package conformance

func init() { differentiable = append(differentiable, "sdpa") }
