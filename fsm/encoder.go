package fsm

import (
	"fmt"
	"io"
)

// spillSize is how many encoded bytes a streaming snapshot encoder buffers before it
// writes them out: large enough that a write is rare beside the encoding, small enough
// that a snapshot of 1,000,000 locks (about 60 MB) never lives in memory whole.
const spillSize = 64 << 10

// snapEncoder is where a state's snapshot encoding goes. With no writer the whole encoding
// stays in buf (encode, for the canonical-form check, backups and tests); with one, each
// record boundary past spillSize writes buf out and starts it again, so Persist holds one
// buffer, not the image. Both ways run the same appends, so the bytes are the same.
type snapEncoder struct {
	buf []byte
	w   io.Writer // nil: keep everything in buf
	err error     // the first write error; later spills write nothing
}

// spill writes the buffered bytes out once there are spillSize of them. Callers call it
// between records; a record never spans a decision, only a buffer.
func (e *snapEncoder) spill() {
	if e.w == nil || len(e.buf) < spillSize {
		return
	}
	e.flush()
}

// flush writes out whatever is buffered.
func (e *snapEncoder) flush() {
	if e.w == nil || e.err != nil {
		e.buf = e.buf[:0]
		return
	}
	if _, err := e.w.Write(e.buf); err != nil {
		e.err = fmt.Errorf("fsm: writing snapshot: %w", err)
	}
	e.buf = e.buf[:0]
}

// writeTo streams the encoding of s to w through a spillSize buffer.
func (s *state) writeTo(w io.Writer) error {
	e := snapEncoder{buf: make([]byte, 0, spillSize+spillSize/4), w: w}
	s.encodeInto(&e)
	e.flush()
	return e.err
}

// spillAt is spill for code that appends to its own slice: it takes the bytes appended so
// far and returns the slice to go on appending to.
func (e *snapEncoder) spillAt(buf []byte) []byte {
	e.buf = buf
	e.spill()
	return e.buf
}
