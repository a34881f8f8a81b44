// Package model is the GPT of examples/gpt: a small decoder-only
// transformer built from lathe's ops and nn's layers (Embedding, LayerNorm,
// Linear, GELU, ScaledDotProductAttention with IsCausal), with learned or
// rotary positions and an output head tied to the token embeddings.
// build/torchref/gpt.py is the same model in PyTorch, under the same
// parameter names; the tests check that the two agree on logits, loss,
// every gradient and 20 AdamW steps. Generate samples with a KV cache
// (nn.KVCache, one per block) while the sequence fits the context, and
// draws the tokens a full forward per token would. The example's training
// program and lathe-bench's GPT rows both build this model.
package model
