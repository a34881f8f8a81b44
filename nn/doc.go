// Package nn holds neural-network building blocks on top of lathe: layers
// (Linear, Embedding, the convolutions Conv1d, Conv2d and Conv3d and the
// transposed ConvTranspose1d, 2d and 3d, LayerNorm, RMSNorm, the channel
// norms BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d and GroupNorm,
// LocalResponseNorm, Dropout, the channel dropouts Dropout1d/2d/3d and the
// alpha dropouts, the activations of torch.nn (activation.go) and PReLU,
// the poolings (max, average and adaptive, 1d to 3d, and MaxUnpool2d), the
// padding modules (ZeroPad2d, ConstantPad, ReflectionPad and
// ReplicationPad 1d to 3d), PixelShuffle, PixelUnshuffle, ChannelShuffle,
// Fold, Unfold, CosineSimilarity and PairwiseDistance, Sequential,
// the recurrent RNN, LSTM and GRU (over padded or packed sequences:
// PackedSequence, PadSequence, PackPaddedSequence, PackSequence,
// PadPackedSequence) and their cells, MultiheadAttention with
// rotary embeddings and a KVCache, the transformer encoder and decoder
// layers, their stacks and Transformer), losses, optimizers (SGD, Adam,
// AdamW, RMSprop, Adagrad, Adamax, NAdam, RAdam, Adadelta, Rprop, ASGD, LBFGS) and
// learning-rate schedulers (StepLR, MultiStepLR, ExponentialLR,
// CosineAnnealingLR, CosineAnnealingWarmRestarts, LinearLR, ConstantLR,
// PolynomialLR, LambdaLR, MultiplicativeLR, CyclicLR, OneCycleLR,
// SequentialLR, ChainedScheduler, ReduceLROnPlateau), gradient clipping
// (ClipGradNorm, ClipGradValue), torch.nn.init's initialisations as
// functions of a parameter (XavierUniform, KaimingNormal, Orthogonal and
// the rest, init.go), ParametersToVector and
// VectorToParameters, and saving and loading parameters, and an
// optimizer's and its schedulers' state (SaveOptimizer, LoadOptimizer), in
// the safetensors format. It uses only lathe's public API,
// so it is an example of what the engine offers any caller.
//
// # Parameters and updates
//
// A lathe tensor never changes; an optimizer step makes new values. A
// parameter is therefore a stable handle, a *lathe.Tensor held in a Param,
// and an update rebinds what the handle points to: the optimizer computes
// the new values under lathe.NoGrad (so nothing is recorded), marks them as
// a fresh leaf with RequireGrad, carries the gradient over with SetGrad, and
// assigns the new tensor's value to the handle (*p.T = *next). Layers,
// optimizers and user code all hold the same pointer, so all of them see the
// update at once; tensors already computed from the old values (and graphs
// recorded on them) keep the old data, as PyTorch's would keep a clone.
// Module.To and Load rebind the same way. One consequence: OnGrad hooks live
// on a leaf, so a hook set on a parameter does not survive its first update;
// set hooks again after each step, or clip with ClipGradNorm instead.
// BatchNorm2d's running statistics are handles of the same kind, rebound by
// each training step (outside the tape); they are state, not parameters, so
// optimizers leave them out. Buffers lists them, and Save, Load and To
// include them; a non-persistent buffer (Base.RegisterNonPersistentBuffer,
// torch's persistent=False) only To moves.
//
// # Constructors
//
// Every layer constructor takes the sizes PyTorch requires positionally,
// and everything else as Option values named for PyTorch's keyword
// arguments:
//
//	nn.NewLinear(in, out, nn.NoBias())
//	nn.NewConv2d(in, out, 3, nn.Stride(2), nn.Padding(1), nn.Groups(2))
//	nn.NewConv2d(in, out, 0, nn.KernelSize(3, 5)) // a (3, 5) kernel
//	nn.NewConv1d(in, out, 5, nn.PaddingSame(), nn.PaddingMode("reflect"))
//	nn.NewConvTranspose2d(in, out, 4, nn.Stride(2), nn.Padding(1), nn.OutputPadding(1))
//	nn.NewMaxPool2d(3, nn.Stride(2), nn.CeilMode())
//	nn.NewUpsample(nn.ScaleFactor(2), nn.Mode("bilinear"))
//	nn.NewLSTM(in, hidden, nn.NumLayers(2), nn.BatchFirst())
//	nn.NewMultiheadAttention(e, heads, nn.KDim(k), nn.AddBiasKV(), nn.SeqFirst())
//
// WithDType and OnDevice apply to every layer with parameters, NoBias to
// every one with a bias. A constructor refuses an option it does not take
// (Mode to NewConv2d): the layer comes back failed with an ErrValue that
// names the option, as PyTorch refuses an unknown keyword. The window and
// interpolation options hand their values to lathe's options of the same
// names, which the op checks when Forward runs. Numeric constants
// that only Forward reads (Eps of the norm layers, 1e-5, and BatchNorm2d's
// Momentum, 0.1) are exported fields with PyTorch's defaults: set them on
// the result.
//
// A custom module embeds Base and registers its parameters, buffers and
// children by name; Base provides Parameters, Buffers, To and Train, so the
// module only writes Forward.
//
// Layout: the recurrent layers are seq-first by default, as in PyTorch
// (BatchFirst changes it); MultiheadAttention, the transformer layers,
// their stacks and Transformer are batch-first, [batch, seq, feature], the
// layout lathe's attention ops take (SeqFirst gives PyTorch's default).
//
// Layers are built without returning errors, so that they compose in
// Sequential; a bad size leaves the parameter a failed tensor, and that
// error comes back (stickily, as every lathe error does) from Forward, from
// the optimizer's constructor, from Save, and from Err.
package nn
