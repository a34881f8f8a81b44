package autodiff

import "github.com/lathe-ml/lathe/dispatch"

// moveOp names the nodes that Moved records: a tensor copied onto another
// device (lathe's To). It is not a dispatch op, which runs on one device:
// the copy goes through the host. Its rule copies the gradient back.
var moveOp = &dispatch.Schema{Name: "to", Args: []string{"x"}}

func init() { rules[moveOp] = moveRule }

// Move copies a gradient onto the device of the tensor that was moved,
// recording the copy where the pass records (CreateGraph), so that
// gradients of gradients cross it too.
type Move func(g *T) (*T, error)

// Moved records out as in copied onto another device, so that the
// gradient flows back across the copy, as through torch's .to(device).
// Nothing is recorded when recording is off, in requires no gradient, or
// in, out or move is nil.
func Moved(in, out *T, move Move) {
	if in == nil || out == nil || move == nil || !in.RequiresGrad.Load() || !out.DType.IsFloat() || !GradEnabled() {
		return
	}
	r := newRecorded(moveOp, []*T{in}, out, move)
	if anomaly.Load() {
		r.node.site = dispatch.CallSite()
	}
	out.RequiresGrad.Store(true)
	out.Autograd = &r.meta
}

// moveRule is the output's gradient, copied onto the input's device.
func moveRule(b *builder, n *Node, g *T) []*T {
	back, err := n.Attrs.(Move)(g)
	if err != nil {
		b.err = err
		return nil
	}
	b.made = append(b.made, back)
	return []*T{back}
}
