//go:build cgo

package wgpu

import "github.com/lathe-ml/lathe/dispatch"

// Value checks on the device (dispatch's ValueChecker): index_check walks
// the values and records the row-major position of the first bad one in
// the check's slot of a log buffer, and check_fetch copies that value
// beside it, as an int64 (two words), whatever the values' dtype: int32
// and int64 values (int8 and uint8 widened to int32) compare with the
// bounds as int64s (index.wgsl), so an int64 past 2³² is out of range,
// never wrapped into it. Nothing waits: the log is read back with the
// next read-back or Synchronize, which settles each check (dispatch's
// Pending, which the op's result carries) and, for Synchronize, returns
// the error of the first check that failed since the last one.
// The indexing kernels bound every access whatever the values.

// checkSlots is how many checks wgpu:0 queues between read-backs; one more
// reads the log first, which waits for the device.
const checkSlots = 4096

// CheckValues queues c over t on the device.
func (backend) CheckValues(t *dispatch.Tensor, c *dispatch.ValueCheck) error {
	d, err := open()
	if err != nil {
		return err
	}
	d.checkMu.Lock()
	defer d.checkMu.Unlock()
	if err := d.checkLog(); err != nil {
		return err
	}
	if d.checks.Len() == checkSlots {
		if err := d.drainChecksLocked(); err != nil {
			return err
		}
	}
	if dispatch.Narrow(t.DType) {
		// The kernels read 32-bit values: check t widened, exactly
		// (narrow.go). Released once the check is queued, which the
		// pool's ordering allows (buffer.go's Free).
		w, err := dispatch.Widened(registered, convert, t)
		if err != nil {
			return err
		}
		defer w.Release()
		t = w
	}
	slot := d.checks.Add(c)
	params, err := walkParams(t.Shape, []view{viewOf(t)})
	if err != nil {
		return err
	}
	for _, v := range []int64{c.Min, c.Max, c.Ignore} {
		params = append(params, uint32(v), uint32(uint64(v)>>32))
	}
	params = append(params, uint32(c.Flags()), uint32(slot))
	data := struct{ I string }{wgslType(t.DType)}
	for _, k := range []struct {
		name  string
		items int
	}{{"index_check", t.Numel()}, {"check_fetch", 1}} {
		sh, err := shaderFor(k.name+"/"+data.I, k.name, data)
		if err != nil {
			return err
		}
		if err := launch(c.Op, sh, grid(k.items), params, d.checkSlots, t); err != nil {
			return err
		}
	}
	return nil
}

// logWords is the words of a check's slot: the position of the first bad
// value (all ones for none), then the value's low and high words.
const logWords = 3

// checkLog makes the log buffer the first time, every slot empty (all
// ones). Called with checkMu held.
func (d *device) checkLog() error {
	if d.checkSlots != nil {
		return nil
	}
	dev := dispatch.Device{Kind: kind}
	none := make([]int32, logWords*checkSlots)
	for i := range none {
		none[i] = -1
	}
	t, err := dispatch.Upload(dev, none, dispatch.Int32, []int{logWords * checkSlots})
	if err != nil {
		return err
	}
	d.checkSlots = t
	return nil
}

// SettleChecks reads back the outcome of the checks queued so far
// (dispatch.CheckSettler), leaving a failure for the next Sync to report.
func (backend) SettleChecks(dispatch.Device) error {
	d, err := open()
	if err != nil {
		return err
	}
	return d.drainChecks()
}

// drainChecks reads the outcome of the checks queued so far.
func (d *device) drainChecks() error {
	d.checkMu.Lock()
	defer d.checkMu.Unlock()
	return d.drainChecksLocked()
}

// drainChecksLocked reads back the slots of the queued checks, empties
// them and settles each check; its error is the device's, never a check's.
// checkMu is held, so every queued check has its kernels recorded.
func (d *device) drainChecksLocked() error {
	n := d.checks.Len()
	if n == 0 {
		return nil
	}
	words := make([]uint32, logWords*n)
	b := d.checkSlots.Storage.Buffer.(*buffer)
	if err := d.read(b, 0, words); err != nil {
		return err
	}
	pos, val := make([]int64, n), make([]int64, n)
	for i := range n {
		w := words[logWords*i:]
		pos[i], val[i] = int64(int32(w[0])), int64(uint64(w[1])|uint64(w[2])<<32)
	}
	empty := make([]uint32, logWords*n)
	for i := range empty {
		empty[i] = 0xffffffff
	}
	d.mu.Lock()
	d.c.write(b.buf, 0, empty)
	d.mu.Unlock()
	d.checks.Outcome(n, pos, val)
	return nil
}
