package nn

import "github.com/lathe-ml/lathe"

// A module and its children must form a tree (or a graph without cycles:
// one child may be shared). Parameters, Buffers, Train and a Seq's
// Forward recurse into the children, and a module inside itself, a Seq
// appended to its own Modules or a parent registered under its child,
// would recurse until the stack ran out, which ends the process (PyTorch
// raises a RecursionError). nn walks the children of the modules it knows
// the children of, those that embed Base and Seqs: RegisterModule refuses
// a child that holds its parent, and since a Seq's Modules can change in
// place, the walks and a Seq's Forward check first (holdsItself).

// maxLayers is the most layers a recurrent net or a transformer stack is
// built with: a count past it is a mistake (a wrapped size), which would
// take the process's memory in bookkeeping before any weight failed.
const maxLayers = 1 << 16

// parent is a module whose children nn can walk; key is its identity.
type parent interface {
	childModules() (key any, children []Module)
}

func (b *Base) childModules() (any, []Module) {
	var kids []Module
	for _, e := range b.entries {
		if e.m != nil {
			kids = append(kids, e.m)
		}
	}
	return b, kids
}

func (s *Seq) childModules() (any, []Module) { return s, s.Modules }

func (c *checkpointed) childModules() (any, []Module) { return c, []Module{c.Module} }

// reaches reports whether target's key is m's (a module, or a Base) or a
// descendant's, and
// whether some module under m holds itself (a cycle: then m reaches
// anything).
func reaches(m any, target any) (found, cyclic bool) {
	onPath, done := map[any]bool{}, map[any]bool{}
	var visit func(m any) bool
	visit = func(m any) bool {
		p, ok := m.(parent)
		if !ok || isNil(m) {
			return false
		}
		key, kids := p.childModules()
		switch {
		case key == target:
			found = true
			return true
		case onPath[key]:
			cyclic = true
			return true
		case done[key]:
			return false
		}
		onPath[key] = true
		for _, k := range kids {
			if visit(k) {
				return true
			}
		}
		onPath[key], done[key] = false, true
		return false
	}
	visit(m)
	return found, cyclic
}

// holdsItself is the error of a module m under which some module holds
// itself, or nil. A module without children costs no allocation.
func holdsItself(op string, m any) *lathe.Error {
	if p, ok := m.(parent); !ok || isNil(m) {
		return nil
	} else if _, kids := p.childModules(); len(kids) == 0 {
		return nil
	}
	if _, cyclic := reaches(m, nil); cyclic {
		return cycleError(op)
	}
	return nil
}

func cycleError(op string) *lathe.Error {
	return nnError(op, lathe.ErrValue, "", "holds a module inside itself (a Seq in its own Modules, or a parent registered under its child)",
		"make the modules a tree: a module may be shared, but not contain itself")
}

// cycleParams is what Parameters and Buffers list for a module that holds
// itself: one failed parameter, which Err, Save and the optimizers report.
func cycleParams(err *lathe.Error) []Param {
	return []Param{{Name: "modules", T: lathe.Failed(err)}}
}
