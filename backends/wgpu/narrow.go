package wgpu

import (
	"github.com/lathe-ml/lathe/dispatch"
)

// The narrow dtypes (float16, bfloat16, int8, uint8) are stored packed in
// u32 words (elemBytes, Upload, Read) and computed wide through
// dispatch.ViaCompute, whose comment gives the rules, or moved as their
// bits through dispatch.ViaBits (registerMove); wgpu brings its storage
// and convert, one kernel family (convert.wgsl). The elementwise
// kernels take them in their words instead, with convert.wgsl's
// conversions in the shader (ops_elementwise.go). The conversions
// are integer code on the bits, not WGSL's f16 type: lavapipe's adapter
// reports shader-f16 (feature 0x0b of this Dawn), but an adapter need not,
// and WGSL leaves to the implementation which neighbour an inexact
// conversion to f16 gives and what a NaN becomes.

// packed is how a narrow dtype sits in a u32 word: its width in bits and
// the prefix of its conversion functions in convert.wgsl (zero for a
// dtype that is not narrow).
type packed struct {
	bits int
	name string
}

var packings = map[dispatch.DType]packed{
	dispatch.Float16:  {16, "f16"},
	dispatch.BFloat16: {16, "bf16"},
	dispatch.Int8:     {8, "i8"},
	dispatch.Uint8:    {8, "u8"},
}

// convert is wgpu's dispatch.Converter: one launch of convert.wgsl,
// widening when from is narrow and narrowing into to otherwise. Both
// buffers are wgpu's, as dispatch checked for the op that asks.
func convert(dev dispatch.Device, dst dispatch.Buffer, to dispatch.DType, dstOff int, src dispatch.Buffer, from dispatch.DType, srcOff, n int) error {
	return convertAs(packings, dev, dst, to, dstOff, src, from, srcOff, n)
}

// convertBits is the Converter of dispatch.ViaBits, for the kernels that
// move elements: a 16-bit float to and from the int32 of its bits (raw16's
// conversions keep every bit), the 8-bit integers as convert does.
func convertBits(dev dispatch.Device, dst dispatch.Buffer, to dispatch.DType, dstOff int, src dispatch.Buffer, from dispatch.DType, srcOff, n int) error {
	return convertAs(bitPackings, dev, dst, to, dstOff, src, from, srcOff, n)
}

var bitPackings = map[dispatch.DType]packed{
	dispatch.Float16:  {16, "raw16"},
	dispatch.BFloat16: {16, "raw16"},
	dispatch.Int8:     packings[dispatch.Int8],
	dispatch.Uint8:    packings[dispatch.Uint8],
}

// convertAs is convert with the conversions of the narrow dtypes' packings
// pks.
func convertAs(pks map[dispatch.DType]packed, dev dispatch.Device, dst dispatch.Buffer, to dispatch.DType, dstOff int, src dispatch.Buffer,
	from dispatch.DType, srcOff, n int) error {
	if n == 0 {
		return nil
	}
	widen := dispatch.Narrow(from)
	narrow := to
	if widen {
		narrow = from
	}
	pk := pks[narrow]
	dir := "narrow"
	if widen {
		dir = "widen"
	}
	sh, err := shaderFor("convert/"+pk.name+"/"+dir, "convert",
		struct {
			Name  string
			Bits  int
			Widen bool
		}{pk.name, pk.bits, widen})
	if err != nil {
		return err
	}
	items := n
	if !widen {
		per := 32 / pk.bits
		items = (dstOff+n-1)/per - dstOff/per + 1
	}
	out := &dispatch.Tensor{Device: dev, DType: to, Storage: &dispatch.Storage{Buffer: dst}}
	in := &dispatch.Tensor{Device: dev, DType: from, Storage: &dispatch.Storage{Buffer: src}}
	return launch("convert", sh, gridPer(items), []uint32{uint32(items), uint32(dstOff), uint32(srcOff), uint32(n)}, out, in)
}
