package nn

import (
	"strconv"

	"github.com/lathe-ml/lathe"
)

// The padding modules of torch.nn: lathe's Pad in one mode over the last
// one, two or three dims. Padding holds (left, right) pairs, the last dim
// first, as torch's padding tuple: (left, right) for 1d, (left, right,
// top, bottom) for 2d, then (front, back) for 3d; a constructor given one
// value pads every side by it. A constructor given another number of
// values fails the layer (Err reports it, Forward returns it). Forward
// takes inputs of torch 1.13's ranks: the padded dims plus one or two
// (a batch and a channel dim) for the reflection and replication pads,
// at least the padded dims for the constant pads; another rank is
// ErrShape. Negative pads crop, where the mode allows (lathe's Pad
// checks).

// padModule is the state of every padding module.
type padModule struct {
	parameterless
	Padding []int
	Value   float64 // the constant pads' fill
	op      string
	dims    int
	mode    string
}

func newPad(op, mode string, dims int, value float64, padding []int) padModule {
	m := padModule{op: op, dims: dims, mode: mode, Value: value}
	switch len(padding) {
	case 1:
		for range 2 * dims {
			m.Padding = append(m.Padding, padding[0])
		}
	case 2 * dims:
		m.Padding = append([]int(nil), padding...)
	default:
		m.parameterless = refused(nnError(op, lathe.ErrValue, "padding", "has "+strconv.Itoa(len(padding))+" values",
			"give one value for every side, or "+strconv.Itoa(2*dims)+" (left, right first, for the last dim)"))
	}
	return m
}

// Forward pads x.
func (m *padModule) Forward(x *lathe.Tensor) *lathe.Tensor {
	if m.failed != nil {
		return m.fail()
	}
	if err := x.CheckArg(m.op, "x"); err != nil {
		return lathe.Failed(err)
	}
	r := x.Rank()
	if m.mode == "constant" {
		if r < m.dims {
			return lathe.Failed(nnError(m.op, lathe.ErrShape, "x", "has shape "+shapeString(x.Shape())+", with fewer dims than the "+
				strconv.Itoa(m.dims)+" padded", "give an input of at least "+strconv.Itoa(m.dims)+" dims"))
		}
	} else if r != m.dims+1 && r != m.dims+2 {
		return lathe.Failed(nnError(m.op, lathe.ErrShape, "x", "has shape "+shapeString(x.Shape())+", but "+m.op+" takes "+
			strconv.Itoa(m.dims+1)+"-d or "+strconv.Itoa(m.dims+2)+"-d inputs", "give an input with a channel dim and, optionally, a batch dim"))
	}
	if m.mode == "constant" {
		return x.Pad(m.Padding, m.Value)
	}
	return x.Pad(m.Padding, 0, lathe.PadMode(m.mode))
}

// ZeroPad2d pads the last two dims with zeros (torch.nn.ZeroPad2d).
type ZeroPad2d struct{ padModule }

// NewZeroPad2d makes a ZeroPad2d of padding: one value, or (left, right,
// top, bottom).
func NewZeroPad2d(padding ...int) *ZeroPad2d {
	return &ZeroPad2d{newPad("zero_pad2d", "constant", 2, 0, padding)}
}

// ConstantPad1d pads the last dim with Value (torch.nn.ConstantPad1d).
type ConstantPad1d struct{ padModule }

// NewConstantPad1d makes a ConstantPad1d of value and padding: one value,
// or (left, right).
func NewConstantPad1d(value float64, padding ...int) *ConstantPad1d {
	return &ConstantPad1d{newPad("constant_pad1d", "constant", 1, value, padding)}
}

// ConstantPad2d pads the last two dims with Value (torch.nn.ConstantPad2d).
type ConstantPad2d struct{ padModule }

// NewConstantPad2d makes a ConstantPad2d of value and padding: one value,
// or (left, right, top, bottom).
func NewConstantPad2d(value float64, padding ...int) *ConstantPad2d {
	return &ConstantPad2d{newPad("constant_pad2d", "constant", 2, value, padding)}
}

// ConstantPad3d pads the last three dims with Value
// (torch.nn.ConstantPad3d).
type ConstantPad3d struct{ padModule }

// NewConstantPad3d makes a ConstantPad3d of value and padding: one value,
// or (left, right, top, bottom, front, back).
func NewConstantPad3d(value float64, padding ...int) *ConstantPad3d {
	return &ConstantPad3d{newPad("constant_pad3d", "constant", 3, value, padding)}
}

// ReflectionPad1d pads the last dim with its reflection at each edge, the
// edge not repeated (torch.nn.ReflectionPad1d); each pad below the dim's
// size.
type ReflectionPad1d struct{ padModule }

// NewReflectionPad1d makes a ReflectionPad1d of padding: one value, or
// (left, right).
func NewReflectionPad1d(padding ...int) *ReflectionPad1d {
	return &ReflectionPad1d{newPad("reflection_pad1d", "reflect", 1, 0, padding)}
}

// ReflectionPad2d pads the last two dims by reflection
// (torch.nn.ReflectionPad2d).
type ReflectionPad2d struct{ padModule }

// NewReflectionPad2d makes a ReflectionPad2d of padding: one value, or
// (left, right, top, bottom).
func NewReflectionPad2d(padding ...int) *ReflectionPad2d {
	return &ReflectionPad2d{newPad("reflection_pad2d", "reflect", 2, 0, padding)}
}

// ReflectionPad3d pads the last three dims by reflection
// (torch.nn.ReflectionPad3d).
type ReflectionPad3d struct{ padModule }

// NewReflectionPad3d makes a ReflectionPad3d of padding: one value, or
// (left, right, top, bottom, front, back).
func NewReflectionPad3d(padding ...int) *ReflectionPad3d {
	return &ReflectionPad3d{newPad("reflection_pad3d", "reflect", 3, 0, padding)}
}

// ReplicationPad1d pads the last dim by repeating its edge elements
// (torch.nn.ReplicationPad1d).
type ReplicationPad1d struct{ padModule }

// NewReplicationPad1d makes a ReplicationPad1d of padding: one value, or
// (left, right).
func NewReplicationPad1d(padding ...int) *ReplicationPad1d {
	return &ReplicationPad1d{newPad("replication_pad1d", "replicate", 1, 0, padding)}
}

// ReplicationPad2d pads the last two dims by replication
// (torch.nn.ReplicationPad2d).
type ReplicationPad2d struct{ padModule }

// NewReplicationPad2d makes a ReplicationPad2d of padding: one value, or
// (left, right, top, bottom).
func NewReplicationPad2d(padding ...int) *ReplicationPad2d {
	return &ReplicationPad2d{newPad("replication_pad2d", "replicate", 2, 0, padding)}
}

// ReplicationPad3d pads the last three dims by replication
// (torch.nn.ReplicationPad3d).
type ReplicationPad3d struct{ padModule }

// NewReplicationPad3d makes a ReplicationPad3d of padding: one value, or
// (left, right, top, bottom, front, back).
func NewReplicationPad3d(padding ...int) *ReplicationPad3d {
	return &ReplicationPad3d{newPad("replication_pad3d", "replicate", 3, 0, padding)}
}
