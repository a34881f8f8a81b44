package conformance

import (
	"bytes"
	"encoding/base64"
	binenc "encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// Case is one op call with its inputs and the result PyTorch gave, or the
// kind of error lathe must return.
type Case struct {
	Name   string    `json:"name"`   // "add/f32/bcast[3,1]x[1,4]"
	Op     string    `json:"op"`     // key into the op table: "add"
	Attrs  Attrs     `json:"attrs"`  // the op's non-tensor arguments
	Inputs []*Tensor `json:"inputs"` // a nil entry is a nil *lathe.Tensor (an absent weight)
	// Output is the single result; Outputs the pieces of an op that returns
	// several (split, chunk). Neither is set for an error case.
	Output  *Tensor   `json:"output"`
	Outputs []*Tensor `json:"outputs"`
	// Error is the kind lathe must return: "shape", "dtype", "index" or
	// "value". TorchRaises says torch refuses the call too; when false the
	// case is lathe's own rule (an integer scalar past the dtype's range,
	// which torch wraps; a concat of mixed dtypes).
	Error       string `json:"error"`
	TorchRaises bool   `json:"torch_raises"`
	File        string `json:"-"` // the JSON file it came from
	// Narrowed marks a float64 case run in float32 on a device without
	// float64 (Narrow), checked against the float64 reference with
	// NarrowedTolerance.
	Narrowed bool `json:"-"`
}

// Tensor is a tensor as the JSON holds it.
type Tensor struct {
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
	// Data is the row-major storage: numbers, "nan"/"inf"/"-inf", or bools.
	// For a layout other than contiguous it is the storage the view is
	// taken from, not the tensor's own elements (see Layout).
	Data []any `json:"data"`
	// Layout is "" or "contiguous"; "transposed" (Data is the tensor with
	// its last two dims swapped, and the case takes .MT() of it); or
	// "strided" (Data has the last dim doubled, and the case takes
	// .Slice(-1, 0, 2n, 2) of it).
	Layout string `json:"layout"`
	// Gen, where set, stands for Data: the storage is made by a formula
	// that build/torchref computes too (Gen.Values), so that a long input
	// costs no bytes in the JSON.
	Gen *Gen `json:"gen"`
	// B64, where set, stands for Data: the storage as little-endian
	// elements of the dtype (float64 and int64 ones where the case was
	// narrowed), base64-encoded, which keeps a long output compact.
	B64 string `json:"b64"`
	// rounded marks a float64 tensor narrowed to float32 (Case.Narrow):
	// its values are rounded to float32, past its range to ±inf, as a
	// float32 computation rounds them; other float32 data must fit.
	rounded bool
}

// Attrs are a case's attributes. Reading one that is missing or of the
// wrong JSON type records an error (Err) and returns the zero value, so
// that a table entry reads its attributes in one line each.
type Attrs struct {
	m   map[string]any
	err error
}

// UnmarshalJSON keeps numbers as json.Number so that integers stay exact.
func (a *Attrs) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(&a.m)
}

// Err is the first error met reading an attribute.
func (a *Attrs) Err() error { return a.err }

// Has reports whether the attribute is present.
func (a *Attrs) Has(k string) bool { _, ok := a.m[k]; return ok }

func (a *Attrs) fail(k, want string) {
	if a.err == nil {
		a.err = fmt.Errorf("attribute %q: want %s, have %v", k, want, a.m[k])
	}
}

// Int reads an integer attribute.
func (a *Attrs) Int(k string) int {
	n, ok := a.m[k].(json.Number)
	v, err := strconv.Atoi(string(n))
	if !ok || err != nil {
		a.fail(k, "an integer")
	}
	return v
}

// Ints reads a list of integers; a missing one is nil (no dims).
func (a *Attrs) Ints(k string) []int {
	if !a.Has(k) {
		return nil
	}
	l, ok := a.m[k].([]any)
	if !ok {
		a.fail(k, "a list of integers")
		return nil
	}
	out := make([]int, 0, len(l))
	for _, e := range l {
		n, _ := e.(json.Number)
		v, err := strconv.Atoi(string(n))
		if err != nil {
			a.fail(k, "a list of integers")
		}
		out = append(out, v)
	}
	return out
}

// Floats reads a list of numbers (or "nan", "inf", "-inf").
func (a *Attrs) Floats(k string) []float64 {
	l, ok := a.m[k].([]any)
	if !ok {
		a.fail(k, "a list of numbers")
		return nil
	}
	out := make([]float64, 0, len(l))
	for _, e := range l {
		v, err := parseFloat(e, 64)
		if err != nil {
			a.fail(k, "a list of numbers")
		}
		out = append(out, v)
	}
	return out
}

// Float reads a number, or "nan", "inf", "-inf".
func (a *Attrs) Float(k string) float64 {
	v, err := parseFloat(a.m[k], 64)
	if err != nil {
		a.fail(k, "a number")
	}
	return v
}

// Bool reads a boolean attribute; a missing one is false.
func (a *Attrs) Bool(k string) bool {
	if !a.Has(k) {
		return false
	}
	b, ok := a.m[k].(bool)
	if !ok {
		a.fail(k, "a boolean")
	}
	return b
}

// Str reads a string attribute.
func (a *Attrs) Str(k string) string {
	s, ok := a.m[k].(string)
	if !ok {
		a.fail(k, "a string")
	}
	return s
}

// DType reads a dtype name ("float32").
func (a *Attrs) DType(k string) lathe.DType {
	dt, err := parseDType(a.Str(k))
	if err != nil {
		a.fail(k, "a dtype name")
	}
	return dt
}

// Load reads every *.json file in dir but the gradient cases (isGradFile),
// in name order.
func Load(dir string) ([]*Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var all []*Case
	for _, f := range files {
		if isGradFile(f) {
			continue
		}
		var doc struct{ Cases []*Case }
		if err := decodeFile(f, &doc); err != nil {
			return nil, err
		}
		for _, c := range doc.Cases {
			c.File = filepath.Base(f)
		}
		all = append(all, doc.Cases...)
	}
	return all, nil
}

// decodeFile reads a JSON file into doc, keeping numbers exact.
func decodeFile(f string, doc any) error {
	b, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(doc); err != nil {
		return fmt.Errorf("%s: %w", f, err)
	}
	return nil
}

func parseDType(s string) (lathe.DType, error) {
	switch s {
	case "float32":
		return lathe.Float32, nil
	case "float64":
		return lathe.Float64, nil
	case "int32":
		return lathe.Int32, nil
	case "int64":
		return lathe.Int64, nil
	case "bool":
		return lathe.Bool, nil
	case "float16":
		return lathe.Float16, nil
	case "bfloat16":
		return lathe.BFloat16, nil
	case "int8":
		return lathe.Int8, nil
	case "uint8":
		return lathe.Uint8, nil
	}
	return lathe.DType(0), fmt.Errorf("unknown dtype %q", s)
}

// parseFloat reads a JSON number at the given precision (32: straight to the
// nearest float32, never through float64, so no double rounding) or one of
// the strings that stand for NaN and the infinities.
func parseFloat(v any, bits int) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		return strconv.ParseFloat(string(x), bits)
	case string:
		switch x {
		case "nan":
			return math.NaN(), nil
		case "inf":
			return math.Inf(1), nil
		case "-inf":
			return math.Inf(-1), nil
		}
	}
	return 0, fmt.Errorf("%v is not a float", v)
}

// StorageShape is the shape of the stored data: the tensor's shape, with
// the last two sizes swapped for "transposed" and the last doubled for
// "strided".
func (t *Tensor) StorageShape() ([]int, error) {
	s := append([]int(nil), t.Shape...)
	switch t.Layout {
	case "", "contiguous":
	case "transposed":
		if len(s) < 2 {
			return nil, fmt.Errorf("layout transposed needs 2 dims, shape is %v", t.Shape)
		}
		s[len(s)-1], s[len(s)-2] = s[len(s)-2], s[len(s)-1]
	case "strided":
		if len(s) < 1 {
			return nil, fmt.Errorf("layout strided needs a dim, shape is 0-d")
		}
		s[len(s)-1] *= 2
	default:
		return nil, fmt.Errorf("unknown layout %q", t.Layout)
	}
	return s, nil
}

// Values decodes Data (or Gen, or B64) into a Go slice of the dtype's
// element type ([]float32, []float64, []int32, []int64, []bool, []int8 or
// []uint8); a float16 or bfloat16 tensor's values come as []float32,
// which holds them exactly (makeInput casts them to the dtype).
func (t *Tensor) Values() (any, error) {
	dt, err := parseDType(t.DType)
	if err != nil {
		return nil, err
	}
	if narrowDType(dt) {
		return t.narrowValues(dt)
	}
	switch {
	case t.Gen != nil:
		return t.generated(dt)
	case t.B64 != "":
		return t.decoded(dt)
	}
	n := len(t.Data)
	bad := func(i int) error { return fmt.Errorf("element %d (%v) is not a %s", i, t.Data[i], t.DType) }
	switch dt {
	case lathe.Float32, lathe.Float64:
		bits := 64
		if dt == lathe.Float32 && !t.rounded {
			bits = 32
		}
		f := make([]float64, n)
		for i, v := range t.Data {
			if f[i], err = parseFloat(v, bits); err != nil {
				return nil, bad(i)
			}
		}
		if dt == lathe.Float64 {
			return f, nil
		}
		out := make([]float32, n)
		for i, v := range f {
			out[i] = float32(v) // exact where v was read at float32 precision; rounded once where narrowed
		}
		return out, nil
	case lathe.Int32, lathe.Int64:
		out := make([]int64, n)
		for i, v := range t.Data {
			num, ok := v.(json.Number)
			if out[i], err = strconv.ParseInt(string(num), 10, 64); !ok || err != nil {
				return nil, bad(i)
			}
		}
		if dt == lathe.Int64 {
			return out, nil
		}
		o32 := make([]int32, n)
		for i, v := range out {
			if v != int64(int32(v)) {
				return nil, bad(i)
			}
			o32[i] = int32(v)
		}
		return o32, nil
	default:
		out := make([]bool, n)
		for i, v := range t.Data {
			b, ok := v.(bool)
			if !ok {
				return nil, bad(i)
			}
			out[i] = b
		}
		return out, nil
	}
}

// Numel is the number of elements of the tensor's shape.
func (t *Tensor) Numel() int {
	n := 1
	for _, s := range t.Shape {
		n *= s
	}
	return n
}

// narrowing turns a case's float64 tensors into float32 ones (each value
// rounded once), for a device without float64 (wgpu, which has every
// other dtype, int64 included). It records whether anything was float64.
type narrowing struct {
	wide bool
}

func (n *narrowing) tensor(t *Tensor) *Tensor {
	if t == nil {
		return nil
	}
	u := *t
	if t.DType == "float64" {
		u.DType, u.rounded, n.wide = "float32", true, true
	}
	return &u
}

func (n *narrowing) list(ts []*Tensor) []*Tensor {
	if ts == nil {
		return nil // no data stays none (a case without second-order data)
	}
	out := make([]*Tensor, len(ts))
	for i, t := range ts {
		out[i] = n.tensor(t)
	}
	return out
}

// done reports whether the narrowed case means what c means: it had a
// float64 tensor; it does not mix float32 with float64 or cast to float64
// or int64 (whose integers a float64 input rounded to float32 would
// change), which narrowing would turn into another case; and it is not
// marked float64_only (its result is float64's largest value, say).
func (n *narrowing) done(c *Case) bool {
	f32, f64 := false, false
	for _, t := range c.Inputs {
		if t != nil {
			f32, f64 = f32 || t.DType == "float32", f64 || t.DType == "float64"
		}
	}
	dt, _ := c.Attrs.m["dtype"].(string)
	return n.wide && !(f32 && f64) && dt != "float64" && dt != "int64" && c.Error != "dtype" && !c.Attrs.Has("float64_only")
}

// Narrow returns c in float32 for a device without float64, marked
// Narrowed, or nil where c has no float64 tensor or would mean another
// case narrowed (see narrowing.done).
func (c *Case) Narrow() *Case {
	var nw narrowing
	n := *c
	n.Inputs, n.Output = nw.list(c.Inputs), nw.tensor(c.Output)
	n.Outputs = nw.list(c.Outputs)
	if !nw.done(c) {
		return nil
	}
	n.Narrowed = true
	return &n
}

// Gen describes generated storage: element i is Choices[h(i) mod
// len(Choices)], or without choices (h(i) mod Levels - Levels/2)·Step +
// Offset, where h is a 32-bit integer hash of Seed and i. With a step that
// is a power of two the values are exact in float32, so both sides make the
// same tensor and PyTorch's result is the reference for it.
type Gen struct {
	Seed    uint32    `json:"seed"`
	Levels  uint32    `json:"levels"`
	Step    float64   `json:"step"`
	Offset  float64   `json:"offset"`
	Choices []float64 `json:"choices"`
}

// hash is refcase.py's hash32: a multiply-xorshift mix of seed and i.
func hash(seed uint32, i int) uint32 {
	h := uint32(i)*0x9E3779B1 + seed*0x85EBCA77 + 0x165667B1
	h ^= h >> 15
	h *= 0x2C1B3C6D
	h ^= h >> 12
	h *= 0x297A2D39
	h ^= h >> 15
	return h
}

// Values makes n elements.
func (g *Gen) Values(n int) ([]float64, error) {
	if len(g.Choices) == 0 && (g.Levels == 0 || g.Step == 0) {
		return nil, fmt.Errorf("gen %+v: want choices, or levels and a step", *g)
	}
	out := make([]float64, n)
	for i := range out {
		h := hash(g.Seed, i)
		if len(g.Choices) > 0 {
			out[i] = g.Choices[h%uint32(len(g.Choices))]
		} else {
			out[i] = float64(int64(h%g.Levels)-int64(g.Levels/2))*g.Step + g.Offset
		}
	}
	return out, nil
}

// storageLen is the number of stored elements (the storage shape's product).
func (t *Tensor) storageLen() (int, error) {
	s, err := t.StorageShape()
	if err != nil {
		return 0, err
	}
	n := 1
	for _, d := range s {
		n *= d
	}
	return n, nil
}

// generated is Values for a Gen tensor: float32 values rounded once from
// the formula's float64 (exact for a power-of-two step), integers exact.
func (t *Tensor) generated(dt lathe.DType) (any, error) {
	n, err := t.storageLen()
	if err != nil {
		return nil, err
	}
	v, err := t.Gen.Values(n)
	if err != nil {
		return nil, err
	}
	switch dt {
	case lathe.Float32:
		out := make([]float32, n)
		for i, x := range v {
			if out[i] = float32(x); float64(out[i]) != x && !t.rounded {
				return nil, fmt.Errorf("generated element %d (%v) is not a float32", i, x)
			}
		}
		return out, nil
	case lathe.Float64:
		return v, nil
	case lathe.Int32, lathe.Int64:
		out := make([]int64, n)
		for i, x := range v {
			if out[i] = int64(x); float64(out[i]) != x || (dt == lathe.Int32 && out[i] != int64(int32(out[i]))) {
				return nil, fmt.Errorf("generated element %d (%v) is not a %s", i, x, dt)
			}
		}
		if dt == lathe.Int64 {
			return out, nil
		}
		return narrowInts(out), nil
	}
	return nil, fmt.Errorf("gen: no generated %s", dt)
}

// decoded is Values for a B64 tensor. The element width follows from the
// byte count: 8 where a float64 or int64 reference was narrowed.
func (t *Tensor) decoded(dt lathe.DType) (any, error) {
	n, err := t.storageLen()
	if err != nil {
		return nil, err
	}
	raw, err := base64.StdEncoding.DecodeString(t.B64)
	if err != nil {
		return nil, err
	}
	if n == 0 || len(raw)%n != 0 || (len(raw)/n != 4 && len(raw)/n != 8) {
		return nil, fmt.Errorf("b64: %d bytes for %d elements of %s", len(raw), n, dt)
	}
	wide := len(raw)/n == 8
	at := func(i int) uint64 {
		if wide {
			return binenc.LittleEndian.Uint64(raw[8*i:])
		}
		return uint64(binenc.LittleEndian.Uint32(raw[4*i:]))
	}
	switch dt {
	case lathe.Float32:
		if wide && !t.rounded {
			return nil, fmt.Errorf("b64: float64 data for a float32 tensor")
		}
		out := make([]float32, n)
		for i := range out {
			if wide {
				out[i] = float32(math.Float64frombits(at(i)))
			} else {
				out[i] = math.Float32frombits(uint32(at(i)))
			}
		}
		return out, nil
	case lathe.Float64:
		if !wide {
			return nil, fmt.Errorf("b64: float32 data for a float64 tensor")
		}
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(at(i))
		}
		return out, nil
	case lathe.Int32, lathe.Int64:
		out := make([]int64, n)
		for i := range out {
			if wide {
				out[i] = int64(at(i))
			} else {
				out[i] = int64(int32(uint32(at(i))))
			}
		}
		if dt == lathe.Int64 {
			return out, nil
		}
		for i, v := range out {
			if v != int64(int32(v)) {
				return nil, fmt.Errorf("b64: element %d (%d) is not an int32", i, v)
			}
		}
		return narrowInts(out), nil
	}
	return nil, fmt.Errorf("b64: no encoded %s", dt)
}

func narrowInts(v []int64) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

// narrowDType reports whether dt is one of the narrow dtypes, which the
// cases give as data only (no gen, no b64).
func narrowDType(dt lathe.DType) bool {
	return dt == lathe.Float16 || dt == lathe.BFloat16 || dt == lathe.Int8 || dt == lathe.Uint8
}

// narrowValues decodes the data of a float16 or bfloat16 tensor into
// float32s (each exact: the JSON holds the 16-bit value's own decimal) and
// of an int8 or uint8 one into its Go type, refusing a value the dtype does
// not hold.
func (t *Tensor) narrowValues(dt lathe.DType) (any, error) {
	if t.Gen != nil || t.B64 != "" {
		return nil, fmt.Errorf("%s data must be listed, not generated or b64", t.DType)
	}
	bad := func(i int) error { return fmt.Errorf("element %d (%v) is not a %s", i, t.Data[i], t.DType) }
	switch dt {
	case lathe.Float16, lathe.BFloat16:
		out := make([]float32, len(t.Data))
		for i, v := range t.Data {
			f, err := parseFloat(v, 64)
			if err != nil || (float64(float32(f)) != f && !math.IsNaN(f)) {
				return nil, bad(i)
			}
			out[i] = float32(f)
		}
		return out, nil
	}
	lo, hi := int64(math.MinInt8), int64(math.MaxInt8)
	if dt == lathe.Uint8 {
		lo, hi = 0, math.MaxUint8
	}
	i8, u8 := make([]int8, len(t.Data)), make([]uint8, len(t.Data))
	for i, v := range t.Data {
		num, ok := v.(json.Number)
		x, err := strconv.ParseInt(string(num), 10, 64)
		if !ok || err != nil || x < lo || x > hi {
			return nil, bad(i)
		}
		i8[i], u8[i] = int8(x), uint8(x)
	}
	if dt == lathe.Int8 {
		return i8, nil
	}
	return u8, nil
}
