package fsm

import (
	"encoding/binary"
	"math"
)

// decoder reads fields from a byte slice, remembering the first error so that callers can
// read a whole record and check once.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.fail(ErrShortCommand)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// bool reads what appendBool wrote, refusing any byte but 0 and 1.
func (d *decoder) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail(ErrCorruptCommand)
	return false
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n == 0 {
		d.fail(ErrShortCommand)
		return 0
	}
	if n < 0 {
		d.fail(ErrCorruptCommand)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// int64 reads a uvarint that must fit a non-negative int64 (times, TTLs, waits).
func (d *decoder) int64() int64 {
	v := d.uvarint()
	if v > math.MaxInt64 {
		d.fail(ErrCorruptCommand)
		return 0
	}
	return int64(v)
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > maxStringLen {
		d.fail(ErrCorruptCommand)
		return ""
	}
	if uint64(len(d.b)) < n {
		d.fail(ErrShortCommand)
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// count reads the length of a list whose elements take at least size bytes each, refusing
// one the remaining bytes cannot hold, so that a corrupt count allocates nothing.
func (d *decoder) count(size int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/size) {
		d.fail(ErrCorruptCommand)
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

// strings reads what appendStrings wrote; an empty list is nil.
func (d *decoder) strings() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.string()
	}
	return out
}

func (d *decoder) hash() (h [32]byte) {
	d.fixed(h[:])
	return h
}

func (d *decoder) leaseID() (id LeaseID) {
	d.fixed(id[:])
	return id
}

// fixed reads len(dst) bytes into dst; dst is left as it is when they are not there.
func (d *decoder) fixed(dst []byte) {
	if d.err != nil {
		return
	}
	if len(d.b) < len(dst) {
		d.fail(ErrShortCommand)
		return
	}
	copy(dst, d.b)
	d.b = d.b[len(dst):]
}
