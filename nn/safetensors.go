package nn

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe"
)

// The safetensors format (https://github.com/huggingface/safetensors): an
// 8-byte little-endian header length n, n bytes of JSON mapping each tensor
// name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the
// data that follows, which the tensors must cover exactly, without gaps or
// overlaps) plus an optional "__metadata__" map of strings, then the raw
// little-endian data in row-major order.

// maxHeader is the largest header Load reads: the reference implementation's
// limit, so that a damaged length cannot make Load allocate without bound.
const maxHeader = 100_000_000

var (
	stNames = map[lathe.DType]string{lathe.Float32: "F32", lathe.Float64: "F64", lathe.Int32: "I32", lathe.Int64: "I64", lathe.Bool: "BOOL",
		lathe.Float16: "F16", lathe.BFloat16: "BF16", lathe.Int8: "I8", lathe.Uint8: "U8"}
	stSizes = map[lathe.DType]int{lathe.Float32: 4, lathe.Float64: 8, lathe.Int32: 4, lathe.Int64: 8, lathe.Bool: 1,
		lathe.Float16: 2, lathe.BFloat16: 2, lathe.Int8: 1, lathe.Uint8: 1}
)

// stOthers are the dtypes of the safetensors format (its reference
// implementation's Dtype enum) that lathe has no dtype for yet: a file
// holding one is well formed, and Load says which tensor and dtype it cannot
// hold rather than calling the file damaged.
var stOthers = []string{"I16", "U16", "U32", "U64", "C64",
	"F4", "F6_E2M3", "F6_E3M2", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ"}

func stDType(name string) (lathe.DType, bool) {
	for dt, n := range stNames {
		if n == name {
			return dt, true
		}
	}
	return lathe.DType(0), false
}

type stEntry struct {
	DType   string   `json:"dtype"`
	Shape   []int64  `json:"shape"`
	Offsets []uint64 `json:"data_offsets"`
}

// Save writes m's parameters, and its buffers if it has any (Buffered), to
// w in the safetensors format, named as Parameters and Buffers name them,
// in name order.
func Save(w io.Writer, m Module) error {
	switch {
	case isNil(w):
		return nilModule("save", "w")
	case isNil(m):
		return nilModule("save", "m")
	}
	return writeSafetensors("save", w, state(m), nil)
}

// writeSafetensors writes the tensors ps, in name order, and meta (when not
// empty) as the header's __metadata__.
func writeSafetensors(op string, w io.Writer, ps []Param, meta map[string]string) error {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b Param) int { return cmp.Compare(a.Name, b.Name) })
	header := map[string]any{}
	if len(meta) > 0 {
		header["__metadata__"] = meta
	}
	var size uint64 // the data's, so far
	for i, p := range ps {
		if p.Name == "" || p.Name == "__metadata__" || (i > 0 && ps[i-1].Name == p.Name) {
			return nnError(op, lathe.ErrValue, p.Name, "is not a usable or unique tensor name", "")
		}
		if err := p.T.CheckArg(op, p.Name); err != nil {
			return err
		}
		shape := make([]int64, 0, p.T.Rank())
		for _, s := range p.T.Shape() {
			shape = append(shape, int64(s))
		}
		n := uint64(p.T.Numel()) * uint64(stSizes[p.T.DType()])
		header[p.Name] = stEntry{DType: stNames[p.T.DType()], Shape: shape, Offsets: []uint64{size, size + n}}
		size += n
	}
	js, err := json.Marshal(header) // a map marshals in key order
	if err != nil {
		return wrapErr(op, err)
	}
	// Pad the header with spaces to a multiple of 8, as the reference writer
	// does, so the data that follows is aligned.
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(js)))
	for _, b := range [][]byte{n[:], js} {
		if _, err := w.Write(b); err != nil {
			return wrapErr(op, err)
		}
	}
	chunk := make([]byte, chunkBytes)
	for _, p := range ps {
		if err := encode(w, p.T, chunk); err != nil {
			return wrapErr(op, err)
		}
	}
	return nil
}

// chunkBytes is how much of a tensor's data Save and Load convert at a
// time: a file is written and read a chunk at a time, never held whole.
const chunkBytes = 64 << 10

// encode writes t's elements to w as little-endian bytes, read in place
// (lathe.WithData) and converted a chunk at a time.
func encode(w io.Writer, t *lathe.Tensor, chunk []byte) error {
	le := binary.LittleEndian
	switch t.DType() {
	case lathe.Float32:
		return encodeAs(w, t, chunk, 4, func(b []byte, v float32) { le.PutUint32(b, math.Float32bits(v)) })
	case lathe.Float64:
		return encodeAs(w, t, chunk, 8, func(b []byte, v float64) { le.PutUint64(b, math.Float64bits(v)) })
	case lathe.Int32:
		return encodeAs(w, t, chunk, 4, func(b []byte, v int32) { le.PutUint32(b, uint32(v)) })
	case lathe.Int64:
		return encodeAs(w, t, chunk, 8, func(b []byte, v int64) { le.PutUint64(b, uint64(v)) })
	case lathe.Int8:
		return encodeAs(w, t, chunk, 1, func(b []byte, v int8) { b[0] = byte(v) })
	case lathe.Uint8:
		return encodeAs(w, t, chunk, 1, func(b []byte, v uint8) { b[0] = v })
	case lathe.Bool:
		return encodeAs(w, t, chunk, 1, func(b []byte, v bool) {
			b[0] = 0
			if v {
				b[0] = 1
			}
		})
	case lathe.Float16, lathe.BFloat16:
		// The bits as stored, not widened and rounded back, so a NaN's
		// payload and signalling bit reach the file as they are.
		return lathe.WithHalfBits(t, func(d []uint16) error {
			return writeChunks(w, d, chunk, 2, func(b []byte, v uint16) { le.PutUint16(b, v) })
		})
	}
	return t.Err()
}

func encodeAs[T lathe.Element](w io.Writer, t *lathe.Tensor, chunk []byte, size int, put func([]byte, T)) error {
	return lathe.WithData(t, func(d []T) error { return writeChunks(w, d, chunk, size, put) })
}

// writeChunks writes d's elements, size bytes each as put lays them out,
// through chunk.
func writeChunks[T any](w io.Writer, d []T, chunk []byte, size int, put func([]byte, T)) error {
	for len(d) > 0 {
		n := min(len(d), len(chunk)/size)
		for i, v := range d[:n] {
			put(chunk[i*size:], v)
		}
		if _, err := w.Write(chunk[:n*size]); err != nil {
			return err
		}
		d = d[n:]
	}
	return nil
}

// A LoadOption changes how Load matches a file to a model.
type LoadOption func(*loadOptions)

type loadOptions struct {
	nonStrict bool
	keys      *Keys
	cast      bool
}

// Keys lists the names that a non-strict Load passed over, as PyTorch's
// load_state_dict(strict=False) returns them, each sorted.
type Keys struct {
	Missing    []string // in the model but not in the file: left as they were
	Unexpected []string // in the file but not in the model: not read
}

// NonStrict lets Load read a file that lacks some of the model's tensors or
// holds others, as PyTorch's load_state_dict(strict=False) does: it loads
// the tensors that both have and, when keys is not nil, sets *keys to the
// names it passed over. A tensor that both have must still match in shape,
// and in dtype unless CastDType is given too; the file must still be whole.
func NonStrict(keys *Keys) LoadOption {
	return func(o *loadOptions) { o.nonStrict, o.keys = true, keys }
}

// CastDType lets Load read a tensor whose dtype in the file differs from the
// model's, converting it to the model's dtype as Cast does (PyTorch's
// load_state_dict copies into the parameter's dtype the same way): F16 or
// BF16 weights into a float32 model exactly, F32 into a float16 or
// bfloat16 model rounded to nearest even. A NaN that goes through float32
// comes out quiet; without a cast, Load and Save keep every bit.
func CastDType() LoadOption { return func(o *loadOptions) { o.cast = true } }

// Load reads a safetensors file written for m (by Save, or by PyTorch's
// safetensors with the same state-dict names) into m's parameters and
// buffers. It checks everything first: the header's size and JSON, that the
// file has exactly m's tensors (unless NonStrict) with their dtypes (unless
// CastDType) and shapes (a 0-d tensor reads one of shape [1] too, as
// torch's load_state_dict does), that the offsets tile the data exactly and that
// nothing follows it; only then does it rebind the tensors, each on its own
// device. A BatchNorm2d's num_batches_tracked that the file lacks is set to
// 0, strict or not, as torch's load_state_dict does with a safetensors
// file's state dict. On any error m is unchanged. Errors name the tensor at fault. A
// model whose values a device's check refused (a bad index's gradient
// reached a step: lathe.IsCheckError) loads, which is how such a run
// recovers (with ResetOptimizer or LoadOptimizer for its optimizer).
func Load(r io.Reader, m Module, opts ...LoadOption) error {
	switch {
	case isNil(r):
		return nilModule("load", "r")
	case isNil(m):
		return nilModule("load", "m")
	}
	var o loadOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	ps := state(m)
	for _, p := range ps {
		if p.T == nil {
			return nnError("load", lathe.ErrValue, p.Name, "is nil", "build layers with the nn constructors")
		}
		// A value a device's check refused (lathe.IsCheckError) keeps its
		// shape, dtype and device, and loading over it is how a run
		// recovers; any other failure leaves nothing to load into.
		if err := p.T.CheckArg("load", p.Name); err != nil && !lathe.IsCheckError(err) {
			return err
		}
	}
	entries, err := readHeader(r)
	if err != nil {
		return err
	}
	var keys Keys
	var load []Param   // the model's tensors that the file holds
	var counts []Param // BatchNorm step counts that it lacks: set to 0
	inModel := map[string]bool{}
	for _, p := range ps {
		if inModel[p.Name] {
			return loadError(lathe.ErrValue, p.Name, "names two of the model's tensors", "give each parameter and buffer a name of its own, as Save requires")
		}
		inModel[p.Name] = true
		e, ok := entries[p.Name]
		if !ok && isBatchCount(p) {
			counts = append(counts, p)
			continue
		}
		if !ok {
			if !o.nonStrict {
				return loadError(lathe.ErrValue, p.Name, "is missing from the file", "save the same model, or build the model the file was saved from (or load with nn.NonStrict)")
			}
			keys.Missing = append(keys.Missing, p.Name)
			continue
		}
		if err := checkEntry(p, e, o.cast); err != nil {
			return err
		}
		load = append(load, p)
	}
	for name := range entries {
		if !inModel[name] {
			if !o.nonStrict {
				return loadError(lathe.ErrValue, name, "is in the file but not in the model", "build the model the file was saved from (or load with nn.NonStrict)")
			}
			keys.Unexpected = append(keys.Unexpected, name)
		}
	}
	byName := map[string]Param{}
	for _, p := range load {
		byName[p.Name] = p
	}
	next := map[string]*lathe.Tensor{}
	err = readData(r, entries, inModel, func(name string, r io.Reader) error {
		p := byName[name]
		dt, _ := stDType(entries[name].DType)
		next[name] = decodeLike(r, dt, p.T)
		return next[name].Err()
	})
	for _, p := range counts {
		if err == nil {
			next[p.Name] = lathe.Scalar(lathe.CPU, int64(0)).To(p.T.Device())
			err = next[p.Name].Err()
		}
	}
	load = append(load, counts...)
	if err != nil {
		for _, t := range next {
			t.Release()
		}
		return err
	}
	// A parameter keeps its gradient, as torch's load_state_dict copies
	// into the parameter and leaves .grad alone: the loaded value has the
	// parameter's shape, dtype and device.
	handles, values, grads := make([]*lathe.Tensor, len(load)), make([]*lathe.Tensor, len(load)), make([]*lathe.Tensor, len(load))
	for i, p := range load {
		handles[i], values[i] = p.T, next[p.Name]
		if g := p.T.Grad(); g != nil && g.CheckArg("load", p.Name+".grad") == nil {
			grads[i] = g // a released or failed gradient is left behind, as torch ignores .grad
		}
	}
	if err := rebindAll(handles, values, grads); err != nil {
		return err
	}
	if o.keys != nil {
		slices.Sort(keys.Missing)
		slices.Sort(keys.Unexpected)
		*o.keys = keys
	}
	return nil
}

// isBatchCount reports whether p is a BatchNorm's step count, an int64
// 0-d buffer named num_batches_tracked. Torch's BatchNorm loads a state
// dict without one, setting the count to 0, where the state dict carries
// no version metadata (_BatchNorm._load_from_state_dict, version None):
// so every safetensors file, which has none, loads strictly in torch
// without it, as files converted from other frameworks or from torch
// before 0.4.1 come.
func isBatchCount(p Param) bool {
	base := p.Name[strings.LastIndexByte(p.Name, '.')+1:]
	return base == "num_batches_tracked" && p.T.DType() == lathe.Int64 && p.T.Rank() == 0
}

// checkEntry checks a file's entry for the model's tensor p: a dtype lathe
// holds (p's own unless cast), p's shape, and data_offsets that span the
// bytes that dtype and shape need.
func checkEntry(p Param, e stEntry, cast bool) error {
	dt, ok := stDType(e.DType)
	if !ok { // parseEntry let it through: a safetensors dtype lathe lacks
		err := loadError(lathe.ErrDType, p.Name, "is "+e.DType+", which lathe cannot hold yet",
			"save the tensors as F32, F64, F16, BF16, I64, I32, I8, U8 or BOOL, e.g. after PyTorch's .float()")
		err.Expected, err.Found = stNames[p.T.DType()], e.DType
		return err
	}
	if dt != p.T.DType() && !cast {
		err := loadError(lathe.ErrDType, p.Name, "is "+e.DType+" in the file but "+stNames[p.T.DType()]+" in the model",
			"build the model with the file's dtype, or load with nn.CastDType()")
		err.Expected, err.Found = stNames[p.T.DType()], e.DType
		return err
	}
	// A 0-d tensor reads one of shape [1] too, as torch's load_state_dict
	// takes it (its backward compatibility with torch 0.3, where scalars
	// were 1-d, and what converters without 0-d tensors write).
	scalar := p.T.Rank() == 0 && sameShape(e.Shape, []int{1})
	if !sameShape(e.Shape, p.T.Shape()) && !scalar {
		err := loadError(lathe.ErrShape, p.Name, "has shape "+shape64String(e.Shape)+" in the file but "+shapeString(p.T.Shape())+" in the model",
			"build the model with the file's sizes")
		err.Expected, err.Found = shapeString(p.T.Shape()), shape64String(e.Shape)
		return err
	}
	size := uint64(p.T.Numel() * stSizes[dt])
	if e.Offsets[1]-e.Offsets[0] != size {
		return loadError(lathe.ErrValue, p.Name, "has data_offsets ["+strconv.FormatUint(e.Offsets[0], 10)+", "+
			strconv.FormatUint(e.Offsets[1], 10)+"] but its dtype and shape need "+strconv.FormatUint(size, 10)+" bytes", "")
	}
	return nil
}

// readData reads the data that follows the header in the file's order,
// handing take a reader of each wanted entry's bytes (take reads them
// all: decode makes the entry's tensor from them) and skipping the others
// without holding them. The entries must tile the data exactly, sorted by
// offset each beginning where the one before ends, and nothing may follow
// the last. What is held is bounded by the wanted entries, which
// checkEntry sized by the model.
func readData(r io.Reader, entries map[string]stEntry, wanted map[string]bool, take func(name string, r io.Reader) error) error {
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		ea, eb := entries[a].Offsets, entries[b].Offsets
		if c := cmp.Compare(ea[0], eb[0]); c != 0 {
			return c
		}
		if c := cmp.Compare(ea[1], eb[1]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	var at uint64
	for i, name := range names {
		begin, end := entries[name].Offsets[0], entries[name].Offsets[1]
		switch {
		case begin < at:
			return loadError(lathe.ErrValue, name, "overlaps "+strconv.Quote(names[i-1])+" in the data", "the file is damaged")
		case begin > at:
			return loadError(lathe.ErrValue, name, "begins at byte "+strconv.FormatUint(begin, 10)+", leaving a gap after byte "+
				strconv.FormatUint(at, 10), "the file is damaged")
		}
		var err error
		n := end - begin
		if wanted[name] {
			part := &counted{r: io.LimitReader(r, int64(min(n, math.MaxInt64)))}
			err = take(name, part)
			var le *lathe.Error
			switch {
			case errors.As(err, &le):
				return err // the tensor's own (the device's memory, say)
			case err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF):
				e := loadError(lathe.ErrValue, name, "could not be read: the reader failed after byte "+strconv.FormatUint(at+part.n, 10), "")
				e.Err = err
				return e
			case err == nil && part.n < n:
				err = io.ErrUnexpectedEOF // take read less than the entry holds
			}
			n = part.n
		} else {
			var got int64
			got, err = io.CopyN(io.Discard, r, int64(min(n, math.MaxInt64)))
			n = uint64(got)
		}
		if err != nil {
			return loadError(lathe.ErrValue, name, "is truncated: the data ends at byte "+strconv.FormatUint(at+n, 10)+
				" but the header needs "+strconv.FormatUint(end, 10), "the file is damaged")
		}
		at = end
	}
	var one [1]byte
	if n, _ := io.ReadFull(r, one[:]); n != 0 {
		return loadError(lathe.ErrValue, "", "has bytes after the last tensor's data", "the file is damaged")
	}
	return nil
}

// counted is a reader that counts the bytes read through it.
type counted struct {
	r io.Reader
	n uint64
}

func (c *counted) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += uint64(n)
	return n, err
}

func loadError(kind error, name, detail, fix string) *lathe.Error {
	return nnError("load", kind, name, detail, fix)
}

func sameShape(a []int64, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != int64(b[i]) {
			return false
		}
	}
	return true
}

func shape64String(s []int64) string {
	b := []byte{'['}
	for i, n := range s {
		if i > 0 {
			b = append(b, ',', ' ')
		}
		b = strconv.AppendInt(b, n, 10)
	}
	return string(append(b, ']'))
}

// readHeader reads and checks the header: its length, its JSON (an object
// without duplicate names), and each entry's own fields.
func readHeader(r io.Reader) (map[string]stEntry, error) {
	entries, _, err := readHeaderMeta(r)
	return entries, err
}

// readHeaderMeta is readHeader that also returns the __metadata__ map.
func readHeaderMeta(r io.Reader) (map[string]stEntry, map[string]string, error) {
	var nb [8]byte
	if _, err := io.ReadFull(r, nb[:]); err != nil {
		return nil, nil, loadError(lathe.ErrValue, "", "is too short to hold a header length", "the file is damaged or not safetensors")
	}
	n := binary.LittleEndian.Uint64(nb[:])
	if n < 2 || n > maxHeader {
		return nil, nil, loadError(lathe.ErrValue, "", "has a header length of "+strconv.FormatUint(n, 10)+" bytes", "the file is damaged or not safetensors")
	}
	js := make([]byte, n)
	if _, err := io.ReadFull(r, js); err != nil {
		return nil, nil, loadError(lathe.ErrValue, "", "is truncated inside its "+strconv.FormatUint(n, 10)+"-byte header", "the file is damaged")
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, loadError(lathe.ErrValue, "", "has a header that is not a JSON object", "the file is damaged or not safetensors")
	}
	entries := map[string]stEntry{}
	var meta map[string]string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, headerError("", err)
		}
		name := tok.(string) // object keys are always strings
		if seen[name] {
			return nil, nil, loadError(lathe.ErrValue, name, "appears twice in the header", "the file is damaged")
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, headerError(name, err)
		}
		if name == "__metadata__" {
			if err := json.Unmarshal(raw, &meta); err != nil {
				return nil, nil, headerError(name, err)
			}
			continue
		}
		e, err := parseEntry(raw)
		if err != nil {
			return nil, nil, headerError(name, err)
		}
		entries[name] = e
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, headerError("", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, loadError(lathe.ErrValue, "", "has more than one JSON value in its header", "the file is damaged")
	}
	return entries, meta, nil
}

func headerError(name string, err error) *lathe.Error {
	e := loadError(lathe.ErrValue, name, "has a bad header entry", "the file is damaged or not safetensors")
	if name == "" {
		e.Detail = "has a header that is not valid JSON"
	}
	e.Err = err
	return e
}

// parseEntry decodes one tensor's entry strictly: every field present, no
// unknown field, a dtype of the format (lathe's or not), sizes ≥ 0 and
// begin ≤ end.
func parseEntry(raw json.RawMessage) (stEntry, error) {
	var e struct {
		DType   *string   `json:"dtype"`
		Shape   *[]int64  `json:"shape"`
		Offsets *[]uint64 `json:"data_offsets"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return stEntry{}, err
	}
	switch {
	case e.DType == nil || e.Shape == nil || e.Offsets == nil:
		return stEntry{}, errors.New("needs dtype, shape and data_offsets")
	case len(*e.Offsets) != 2 || (*e.Offsets)[0] > (*e.Offsets)[1]:
		return stEntry{}, errors.New("data_offsets must be [begin, end] with begin ≤ end")
	}
	if _, ok := stDType(*e.DType); !ok && !slices.Contains(stOthers, *e.DType) {
		return stEntry{}, errors.New("dtype " + strconv.Quote(*e.DType) + " is not a safetensors dtype")
	}
	for _, s := range *e.Shape {
		if s < 0 {
			return stEntry{}, errors.New("shape has a negative size")
		}
	}
	return stEntry{DType: *e.DType, Shape: *e.Shape, Offsets: *e.Offsets}, nil
}

// decode makes a cpu tensor of dtype dt and shape from the little-endian
// bytes that r holds, which the caller has sized, converted a chunk at a
// time into the tensor's own memory (lathe.FromFunc). A read that fails
// is the tensor's error.
func decode(r io.Reader, dt lathe.DType, shape []int) *lathe.Tensor {
	le := binary.LittleEndian
	switch dt {
	case lathe.Float32:
		return decodeAs(r, shape, 4, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) })
	case lathe.Float64:
		return decodeAs(r, shape, 8, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) })
	case lathe.Int32:
		return decodeAs(r, shape, 4, func(b []byte) int32 { return int32(le.Uint32(b)) })
	case lathe.Int64:
		return decodeAs(r, shape, 8, func(b []byte) int64 { return int64(le.Uint64(b)) })
	case lathe.Int8:
		return decodeAs(r, shape, 1, func(b []byte) int8 { return int8(b[0]) })
	case lathe.Uint8:
		return decodeAs(r, shape, 1, func(b []byte) uint8 { return b[0] })
	case lathe.Float16, lathe.BFloat16:
		chunk := make([]byte, chunkBytes)
		return lathe.FromHalfBitsFunc(lathe.CPU, dt, func(d []uint16) error { return readChunks(r, d, chunk, 2, le.Uint16) }, shape...)
	}
	return decodeAs(r, shape, 1, func(b []byte) bool { return b[0] != 0 })
}

// decodeLike is decode's tensor in like's dtype and on its device.
func decodeLike(r io.Reader, dt lathe.DType, like *lathe.Tensor) *lathe.Tensor {
	t := decode(r, dt, like.Shape())
	if dt != like.DType() {
		c := t.Cast(like.DType())
		t.Release()
		t = c
	}
	if dev := like.Device(); dev != lathe.CPU {
		moved := t.To(dev)
		t.Release()
		t = moved
	}
	return t
}

func decodeAs[T lathe.Element](r io.Reader, shape []int, size int, get func([]byte) T) *lathe.Tensor {
	chunk := make([]byte, chunkBytes)
	return lathe.FromFunc(lathe.CPU, func(d []T) error { return readChunks(r, d, chunk, size, get) }, shape...)
}

// readChunks fills d from r, size bytes an element as get reads them,
// through chunk.
func readChunks[T any](r io.Reader, d []T, chunk []byte, size int, get func([]byte) T) error {
	for len(d) > 0 {
		n := min(len(d), len(chunk)/size)
		if _, err := io.ReadFull(r, chunk[:n*size]); err != nil {
			return err
		}
		for i := range d[:n] {
			d[i] = get(chunk[i*size:])
		}
		d = d[n:]
	}
	return nil
}
