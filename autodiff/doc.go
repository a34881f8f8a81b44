// Package autodiff is lathe's reverse-mode automatic differentiation.
//
// It installs a recorder in dispatch: every op whose inputs want gradients,
// while gradients are not switched off for the calling goroutine, becomes a
// Node that points back to its inputs. The graph is held by the tensors
// themselves, so two goroutines building two models never share a tape.
// Backward walks the nodes from a result in reverse creation order and
// applies each op's gradient rule (its vector-Jacobian product).
//
// Rules are written as dispatch calls, so they run on the tensors' own
// device and, when the backward pass is itself recorded (CreateGraph), give
// gradients of gradients. Composite ops (the losses, layer_norm)
// need no rule: the ops they are built from were recorded one by one.
//
// Backward passes may run in several goroutines at once, as PyTorch's may
// in several threads. A pass adds to its leaves all or nothing: it runs a
// leaf's hooks (and Options.Ready) as soon as the leaf's gradient is final,
// and makes every leaf's new gradient before it stores any, so a failed
// pass changes no leaf and leaves the graph for a retry. Each leaf's
// gradient is behind a mutex of its own, which a pass takes (for all its
// leaves, in one order) around that last step, so passes that share a
// leaf (a parameter) add to it one after the other and none is lost; Grad,
// SetGrad, ZeroGrad and OnGrad take the same mutex. Passes that share
// graph nodes claim them: any number that retain the graph, or one that
// frees it; a pass that finds its claim taken fails with ErrGrad instead of
// racing with the one that frees the graph. A tensor may be marked with
// RequireGrad at any time, also while other goroutines run ops on it;
// marking it again writes nothing.
package autodiff
