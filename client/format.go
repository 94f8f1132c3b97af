package client

import (
	"fmt"
	"io"
	"strconv"
)

// Lease IDs authorize keepalive, release and revoke: fmt must never print them. Lease and
// the held primitives (Mutex, RWMutex, Semaphore, Election, LockSet, through the hold they
// embed) format themselves without the ID, whatever the verb (%v, %+v, %#v, %s, %q), as the
// other clients' repr and toString do.

// Format prints the lease without its ID: its TTL and whether it is lost.
func (l *Lease) Format(f fmt.State, verb rune) {
	if l == nil {
		_, _ = io.WriteString(f, "<nil>")
		return
	}
	lost := false
	select {
	case <-l.Done():
		lost = true
	default:
	}
	_, _ = fmt.Fprintf(f, "client.Lease{ttl: %v, lost: %v}", l.ttl, lost)
}

// String is the lease as Format prints it.
func (l *Lease) String() string { return fmt.Sprint(l) }

// Format prints a held primitive without its lease ID: its kind, name, token and whether
// it is held.
func (h *hold) Format(f fmt.State, verb rune) {
	if h == nil {
		_, _ = io.WriteString(f, "<nil>")
		return
	}
	h.mu.Lock()
	token, held, mode := h.grant.token, h.held, h.mode
	h.mu.Unlock()
	s := "client." + h.kind + "{name: " + strconv.Quote(h.name) + ", token: " + strconv.FormatUint(token, 10) + ", held: " + strconv.FormatBool(held)
	if mode != "" {
		s += ", mode: " + mode
	}
	_, _ = io.WriteString(f, s+"}")
}

// String is the primitive as Format prints it.
func (h *hold) String() string { return fmt.Sprint(h) }
