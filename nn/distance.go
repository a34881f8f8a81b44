package nn

import "github.com/lathe-ml/lathe"

// CosineSimilarity is the cosine of the angle between x1 and x2 along Dim,
// Σ x1·x2 / (max(‖x1‖, Eps)·max(‖x2‖, Eps)), as torch.nn.CosineSimilarity
// (lathe.CosineSimilarity; torch's defaults dim 1, eps 1e-8).
type CosineSimilarity struct {
	activation
	Dim int
	Eps float64
}

// NewCosineSimilarity makes a CosineSimilarity with torch's defaults.
func NewCosineSimilarity() *CosineSimilarity { return &CosineSimilarity{Dim: 1, Eps: 1e-8} }

// Forward fails: the similarity takes two inputs (ForwardPair).
func (m *CosineSimilarity) Forward(*lathe.Tensor) *lathe.Tensor {
	return lathe.Failed(nnError("cosine_similarity", lathe.ErrValue, "x2", "is missing: Forward takes one tensor", "call ForwardPair(x1, x2)"))
}

// ForwardPair is the similarity of x1 and x2, broadcast.
func (m *CosineSimilarity) ForwardPair(x1, x2 *lathe.Tensor) *lathe.Tensor {
	return lathe.CosineSimilarity(x1, x2, m.Dim, m.Eps)
}

// PairwiseDistance is the P-norm of x1 - x2 + Eps over the last dim, as
// torch.nn.PairwiseDistance (lathe.PairwiseDistance; torch's defaults p
// 2, eps 1e-6, keepdim false).
type PairwiseDistance struct {
	activation
	P, Eps  float64
	KeepDim bool
}

// NewPairwiseDistance makes a PairwiseDistance with torch's defaults.
func NewPairwiseDistance() *PairwiseDistance { return &PairwiseDistance{P: 2, Eps: 1e-6} }

// Forward fails: the distance takes two inputs (ForwardPair).
func (m *PairwiseDistance) Forward(*lathe.Tensor) *lathe.Tensor {
	return lathe.Failed(nnError("pairwise_distance", lathe.ErrValue, "x2", "is missing: Forward takes one tensor", "call ForwardPair(x1, x2)"))
}

// ForwardPair is the distance of x1 and x2, broadcast.
func (m *PairwiseDistance) ForwardPair(x1, x2 *lathe.Tensor) *lathe.Tensor {
	return lathe.PairwiseDistance(x1, x2, m.P, m.Eps, m.KeepDim)
}
