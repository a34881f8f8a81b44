package conformance

// The scan family's differentiable op keys: each must have gradient cases
// (grad_scan.json).
func init() {
	differentiable = append(differentiable, "cumprod", "logcumsumexp", "cummax_values", "cummin_values", "diff",
		"cartesian_prod", "cartesian_prod_sq", "meshgrid_sum")
}
