package autodiff

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Options shape a backward pass.
type Options struct {
	// Seed is the gradient of the result; nil means 1 for a one-element result.
	Seed *dispatch.Tensor
	// Err is an option's own error (a gradient given as a failed tensor,
	// say): the pass returns it before it starts.
	Err error
	// RetainGraph keeps the graph for another backward pass.
	RetainGraph bool
	// CreateGraph records the backward pass, so its gradients can be
	// differentiated again. It implies RetainGraph.
	CreateGraph bool
	// AllowUnused makes Grad give nil, not an error, for an input the
	// result does not depend on.
	AllowUnused bool
	// Ready, in a Backward pass, is called as soon as a leaf's gradient
	// for the pass is final (no rule left to run adds to it), after the
	// leaf's hooks and before the pass stores any gradient: g is what the
	// pass will add to the leaf's. It lets a caller start work on g while
	// the pass goes on (DDP's all-reduce); g is the pass's, so a caller
	// that keeps it takes a view of its own (Detach). An error fails the
	// pass, which then stores nothing. For a leaf of Watch that the pass
	// gives no gradient, Ready is called with a nil g as soon as the pass
	// knows: at its start for a leaf that it does not reach.
	Ready func(leaf, g *dispatch.Tensor) error
	Watch []*dispatch.Tensor
}

// frees reports whether a pass with these options frees the graph.
func (o Options) frees() bool { return !o.RetainGraph && !o.CreateGraph }

func gradError(op, detail, fix string) *dispatch.Error {
	return &dispatch.Error{Kind: dispatch.ErrGrad, Op: op, Detail: detail, Fix: fix}
}

// Backward accumulates d root / d leaf into every leaf that requires a
// gradient and that root depends on. It does so for all of them or, when
// it fails, for none: a failed pass leaves every leaf's gradient and the
// graph as they were, so that it can run again.
func Backward(root *dispatch.Tensor, o Options) error {
	p, err := run("backward", root, nil, o)
	if err != nil {
		return err
	}
	err = accumulate(p.leaves.final, root, o)
	p.end(err == nil)
	p.grads.finish(nil)
	return err
}

// GradOf returns d root / d x for each x in inputs, leaving every leaf's
// accumulated gradient as it was.
func GradOf(root *dispatch.Tensor, inputs []*dispatch.Tensor, o Options) ([]*dispatch.Tensor, error) {
	p, err := run("grad", root, inputs, o)
	if err != nil {
		return nil, err
	}
	out := make([]*dispatch.Tensor, len(inputs))
	keep := map[*T]bool{}
	for i, x := range inputs {
		out[i] = p.grads.of[x]
		if out[i] != nil {
			dispatch.CarryChecks(out[i], root)
		}
		keep[x] = true
		if out[i] == nil && !o.AllowUnused {
			p.end(false)
			p.grads.finish(nil)
			// Named as lathe.Grad's parameter is, which the error reaches.
			return nil, &dispatch.Error{Kind: dispatch.ErrGrad, Op: "grad", Arg: "xs[" + itoa(i) + "]",
				Detail: "is not used in computing the result, so it has no gradient", Fix: "drop it, or pass lathe.AllowUnused()"}
		}
	}
	p.end(true)
	p.grads.finish(keep) // the gradients asked for are the caller's now
	return out, nil
}

// leafGrad is one leaf's part of a pass: its meta, the gradient the pass
// gives it (after the hooks), and what its accumulated gradient becomes.
type leafGrad struct {
	m          *meta
	g, next    *T
	nextIsMade bool // next is a tensor made for it (not g itself)
}

// accumulate adds each leaf's final gradient (after its hooks, which ran
// as the pass made it final: leafPass) to the leaf, all or none. The pass
// locks its leaves, in the order of their ids so that two passes sharing
// leaves cannot deadlock, computes every new gradient, and only when all
// of them are made puts them in place. A pass in another goroutine that
// shares a leaf adds its gradient before or after, never in between.
func accumulate(leaves []leafGrad, root *T, o Options) error {
	if len(leaves) > 1 {
		slices.SortFunc(leaves, func(a, b leafGrad) int { return cmp.Compare(a.m.id, b.m.id) })
	}
	for _, l := range leaves {
		l.m.mu.Lock()
	}
	defer func() {
		for _, l := range leaves {
			l.m.mu.Unlock()
		}
	}()
	own := !o.CreateGraph // a recorded gradient is part of a graph: never release it
	for i := range leaves {
		if err := leaves[i].make(o.CreateGraph); err != nil {
			for _, l := range leaves[:i] {
				if l.nextIsMade {
					l.next.Release()
				}
			}
			return err
		}
	}
	for _, l := range leaves {
		dispatch.CarryChecks(l.next, root) // a device's failed check under root fails the gradients too
		l.m.setGrad(l.next, own)
	}
	return nil
}

// make computes what l's leaf's gradient becomes, recording the op if the
// pass is recorded; the caller holds l.m.mu.
func (l *leafGrad) make(record bool) error {
	g := l.g
	var err error
	switch {
	case l.m.grad != nil && l.m.grad.Released():
		// The caller released the handle Grad gave: adding to it would
		// fail as an add of a released "lhs", naming neither the pass nor
		// the gradient.
		return &dispatch.Error{Kind: dispatch.ErrReleased, Op: "backward", Arg: "accumulated gradient",
			Detail: "of a leaf of shape " + dispatch.FormatShape(g.Shape) + " was released, so the pass cannot add to it",
			Fix:    "do not Release the tensor that Grad returns (it is lathe's; Clone it to keep it), or call ZeroGrad on the leaf to start anew"}
	case l.m.grad != nil:
		withMode(record, func() { l.next, err = dispatch.Call(ops.Add, dispatch.None{}, l.m.grad, g) })
	case !g.IsContiguous():
		// Rules such as sum's and expand's give stride-0 views; a stored
		// gradient is read by optimizers over and over, so give it a layout
		// of its own, as PyTorch does.
		withMode(record, func() { l.next, err = dispatch.Call(ops.Contiguous, dispatch.None{}, g) })
	case !record:
		// A handle of its own, which ZeroGrad may release; the pass
		// releases g's.
		l.next = g.View(g.Shape, g.Strides, g.Offset)
	default:
		l.next = g
		return nil
	}
	l.nextIsMade = err == nil
	return err
}

// pass is a backward walk that has run: its gradients, the nodes it
// claimed, which it hands back with end, and, in a Backward pass, its
// leaves' final gradients.
type pass struct {
	grads  *gradSet
	nodes  []*Node
	frees  bool
	leaves *leafPass
}

// end hands back the pass's nodes: freed if it frees the graph and
// succeeded, as they were otherwise. The root's node, claimed first, goes
// last, so that passes from one root meet at it and one of them succeeds.
func (p *pass) end(ok bool) {
	for _, n := range slices.Backward(p.nodes) {
		n.release(p.frees, ok)
	}
}

// run is the backward walk: gradients flow from root through every node it
// depends on, in reverse creation order, which is a topological order.
func run(op string, root *dispatch.Tensor, targets []*dispatch.Tensor, o Options) (pass, error) {
	if o.Err != nil {
		return pass{}, o.Err
	}
	if missing(root) {
		return pass{}, gradError(op, "has no result to differentiate", "")
	}
	if root.Released() {
		return pass{}, &dispatch.Error{Kind: dispatch.ErrReleased, Op: op, Detail: "the result was released", Fix: "call Backward before Release"}
	}
	if err := root.FailedCheck(); err != nil {
		return pass{}, err // a device's check refused what root was made from: nothing to differentiate
	}
	if !root.RequiresGrad.Load() {
		return pass{}, gradError(op, "the result does not require a gradient: no leaf it was computed from asked for one",
			"call RequireGrad on the parameters before the forward pass, and run it outside NoGrad")
	}
	seed, err := seedFor(op, root, o.Seed)
	if err != nil {
		return pass{}, err
	}
	grads := newGradSet(!o.CreateGraph)
	grads.record = o.CreateGraph && GradEnabled()
	if seed != o.Seed {
		grads.made[seed] = true
	}
	grads.set(root, seed)
	nodes, err := collect(op, root, o.frees())
	if err != nil {
		grads.finish(nil)
		return pass{}, err
	}
	p := pass{grads: grads, nodes: nodes, frees: o.frees()}
	keep := map[*dispatch.Tensor]bool{}
	for _, t := range targets {
		keep[t] = true
	}
	if op == "backward" {
		p.leaves = newLeafPass(o)
	}
	// propagate calls the caller's code (hooks, Ready, a checkpointed
	// function), which may panic. The panic goes on to the caller, but
	// first the nodes go back as they were, as for an error: left claimed,
	// every later pass through the graph was refused as one racing "another
	// backward pass, running now".
	unwinding := true
	defer func() {
		if unwinding {
			p.end(false)
			grads.finish(nil)
		}
	}()
	withMode(o.CreateGraph, func() { err = propagate(nodes, grads, keep, p.leaves) })
	unwinding = false
	if err != nil {
		p.end(false)
		grads.finish(nil)
		return pass{}, err
	}
	return p, nil
}

// withMode runs f recording (record) or not, for this goroutine.
func withMode(record bool, f func()) {
	if record {
		f()
		return
	}
	NoGrad(f)
}

func seedFor(op string, root, seed *dispatch.Tensor) (*dispatch.Tensor, error) {
	if seed == nil {
		if root.Numel() != 1 {
			shape := dispatch.FormatShape(root.Shape)
			return nil, gradError(op, "the result has shape "+shape+", not one element, and no gradient of it was given",
				"pass its gradient with lathe.WithGradient(g), g of shape "+shape+", or reduce the result to one element (e.g. .Sum())")
		}
		return fullLike(root, 1)
	}
	if err := matches(op, "gradient", "the result", seed, root); err != nil {
		return nil, err
	}
	return seed, nil
}

// matches checks that a gradient g given for t (by the caller, as arg, or
// by a hook) is live and has t's device, dtype and shape; whose names t in
// the message.
func matches(op, arg, whose string, g, t *dispatch.Tensor) error {
	switch {
	case g.Released():
		return &dispatch.Error{Kind: dispatch.ErrReleased, Op: op, Arg: arg, Detail: "was released"}
	case g.Device != t.Device:
		return &dispatch.Error{Kind: dispatch.ErrDevice, Op: op, Arg: arg,
			Detail: "is on " + g.Device.String() + " but " + whose + " is on " + t.Device.String(), Fix: "move it with .To(" + t.Device.GoString() + ")"}
	case g.DType != t.DType:
		return &dispatch.Error{Kind: dispatch.ErrDType, Op: op, Arg: arg,
			Detail: "is " + g.DType.String() + " but " + whose + " is " + t.DType.String(), Fix: "cast it with .Cast(" + t.DType.GoString() + ")"}
	case !slices.Equal(g.Shape, t.Shape):
		return &dispatch.Error{Kind: dispatch.ErrShape, Op: op, Arg: arg,
			Detail: "has shape " + dispatch.FormatShape(g.Shape) + " but " + whose + " has " + dispatch.FormatShape(t.Shape)}
	}
	return nil
}

// collect lists the nodes root depends on, newest first, claiming each for
// the pass (see Node.state) before it reads the node's inputs. A pass that
// frees the graph claims its nodes alone; passes that retain it share them.
// So a pass that would free a graph that another pass is running through,
// or run through one that another pass is freeing, fails with ErrGrad, as
// a pass through a graph that an earlier one freed does, and never races
// with it.
func collect(op string, root *dispatch.Tensor, frees bool) (nodes []*Node, err error) {
	defer func() {
		if err != nil {
			for _, n := range slices.Backward(nodes) {
				n.release(frees, false)
			}
			nodes = nil
		}
	}()
	seen := map[*Node]bool{}
	stack := []*dispatch.Tensor{root}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		m := metaOf(t)
		if m == nil || m.node == nil || seen[m.node] {
			continue
		}
		n := m.node
		if err := n.claim(op, frees); err != nil {
			return nodes, err
		}
		seen[n] = true
		nodes = append(nodes, n)
		for i, in := range n.Inputs {
			if m := metaOf(in); in.Released() && m != nil && m.freed.Load() {
				return nodes, gradError(op, "runs backward through a graph that an earlier backward pass freed (at "+n.Op.Name+", whose "+
					n.Op.ArgName(i)+" went with it)", "pass lathe.RetainGraph() to the earlier Backward, or recompute the forward pass")
			}
			if in.Released() {
				return nodes, &dispatch.Error{Kind: dispatch.ErrReleased, Op: op, Arg: n.Op.ArgName(i),
					Detail: "of " + n.Op.Name + " was released before the backward pass that needs it",
					Fix:    "release tensors of a graph only after Backward"}
			}
		}
		for _, in := range n.Inputs {
			if in.RequiresGrad.Load() {
				stack = append(stack, in)
			}
		}
	}
	slices.SortFunc(nodes, func(a, b *Node) int { return cmp.Compare(b.seq, a.seq) })
	return nodes, nil
}

// claim enters n for a pass that frees the graph (alone) or retains it
// (with other such passes).
func (n *Node) claim(op string, frees bool) error {
	for {
		s := n.state.Load()
		switch {
		case s == nodeFreed:
			return gradError(op, "runs backward through a graph that an earlier backward pass freed (at "+n.Op.Name+")",
				"pass lathe.RetainGraph() to the earlier Backward, or recompute the forward pass")
		case s == nodeClaimed:
			return gradError(op, "runs backward through a graph (at "+n.Op.Name+") that another backward pass, running now, frees",
				"pass lathe.RetainGraph() to every backward pass that runs through a graph at the same time as another")
		case s > 0 && frees:
			return gradError(op, "would free a graph (at "+n.Op.Name+") that another backward pass is running through now",
				"pass lathe.RetainGraph() to every backward pass that runs through a graph at the same time as another")
		}
		next := s + 1
		if frees {
			next = nodeClaimed
		}
		if n.state.CompareAndSwap(s, next) {
			return nil
		}
	}
}

// release leaves n after claim: freed, if the pass frees the graph and
// succeeded; as it was before the claim otherwise.
func (n *Node) release(frees, ok bool) {
	switch {
	case !frees:
		n.state.Add(-1)
	case ok:
		n.Inputs = nil // Attrs stay: values, no tensors
		n.inline = [len(n.inline)]*dispatch.Tensor{}
		n.ownedMu.Lock()
		owned := n.owned
		n.owned = nil
		n.state.Store(nodeFreed) // under ownedMu: a later ReleaseWith sees it and releases at once
		n.ownedMu.Unlock()
		for _, t := range owned {
			if m := metaOf(t); m != nil {
				m.freed.Store(true)
			}
			t.Release()
		}
	default:
		n.state.Store(0)
	}
}

// propagate runs every node's rule, in order. In a Backward pass (leaves
// not nil) it makes each leaf's gradient final right after the last node
// that adds to it, and the rest (a root that is itself a leaf) at the end.
func propagate(nodes []*Node, grads *gradSet, keep map[*dispatch.Tensor]bool, leaves *leafPass) error {
	if leaves != nil {
		leaves.lastUses(nodes)
		if err := leaves.unreached(grads); err != nil {
			return err
		}
	}
	for i, n := range nodes {
		if err := step(n, grads, keep); err != nil {
			return err
		}
		if leaves == nil {
			continue
		}
		for _, in := range n.Inputs {
			if j, ok := leaves.last[in]; ok && j == i {
				if err := leaves.finish(in, grads.of[in]); err != nil {
					return err
				}
			}
		}
	}
	if leaves == nil {
		return nil
	}
	for t, g := range grads.of {
		if err := leaves.finish(t, g); err != nil {
			return err
		}
	}
	return leaves.unreached(grads)
}

// step runs one node's rule on its output's gradient and adds what it gives
// to its inputs' gradients.
func step(n *Node, grads *gradSet, keep map[*dispatch.Tensor]bool) error {
	g := grads.of[n.Out]
	if g == nil {
		return nil
	}
	// The hooks of a tensor that an op made see its gradient, now final,
	// before the op's rule passes it on, as torch's hooks on a non-leaf.
	if m := metaOf(n.Out); m != nil {
		if hooks := m.hooksOf(); len(hooks) > 0 {
			ng, err := runHooks(hooks, n.Out, g)
			if err != nil {
				return err
			}
			if ng != g {
				grads.set(n.Out, ng)
				g = ng
			}
		}
	}
	grads.hold(g) // for the rule, until the end of this step
	defer grads.drop(g)
	if !keep[n.Out] {
		grads.drop(grads.take(n.Out))
	}
	r := rules[n.Op]
	if r == nil {
		return gradError(n.Op.Name, "has no gradient rule", "file an issue; until then, compute it under lathe.NoGrad")
	}
	b := &builder{record: grads.record}
	gin := r(b, n, g)
	grads.releaseMade(b.made, gin)
	if b.err != nil {
		e := dispatch.AsError(b.err, n.Op.Name, dispatch.ErrGrad)
		c := *e
		c.Detail = "in the backward of " + n.Op.Name + ": " + e.Detail
		c.Op = n.Op.Name
		return &c
	}
	for i, in := range n.Inputs {
		if i >= len(gin) || gin[i] == nil || !in.RequiresGrad.Load() {
			continue
		}
		gi := gin[i]
		if !slices.Equal(gi.Shape, in.Shape) {
			return gradError(n.Op.Name, "the gradient rule gave shape "+dispatch.FormatShape(gi.Shape)+" for argument "+
				n.Op.ArgName(i)+" of shape "+dispatch.FormatShape(in.Shape), "this is a bug in lathe; please report it")
		}
		if anomaly.Load() {
			if err := checkFinite(gi, "backward", n); err != nil {
				return err
			}
		}
		if prev := grads.of[in]; prev != nil {
			sum, err := dispatch.Call(ops.Add, dispatch.None{}, prev, gi)
			if err != nil {
				return err
			}
			grads.made[sum] = true
			grads.hold(gi) // gi is dropped as this entry's part, below
			grads.set(in, sum)
			grads.drop(gi)
			continue
		}
		grads.set(in, gi)
	}
	grads.sweep(gin)
	return nil
}

func itoa(i int) string { return strconv.Itoa(i) }
