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
package autodiff
