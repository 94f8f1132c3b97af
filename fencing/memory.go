package fencing

import (
	"sync"

	"github.com/raftlock/raftlock/internal/mutant"
)

// MemoryGuard applies the fencing rule to state kept in memory: per resource, it runs a
// write only if the write's token is at least every token already accepted for that
// resource. The zero value is ready to use, and a MemoryGuard is safe for concurrent use.
//
// It keeps one small entry per resource ever fenced, for the guard's lifetime: a fence that
// were forgotten would let stale holders in again.
type MemoryGuard struct {
	mu     sync.Mutex
	fences map[string]*memoryFence
}

// memoryFence is one resource's fence. mu is held while a write runs, so the check, the
// write and the raise are one atomic step.
type memoryFence struct {
	mu    sync.Mutex
	token Token
}

// NewMemoryGuard returns an empty guard (the same as new(MemoryGuard)).
func NewMemoryGuard() *MemoryGuard { return new(MemoryGuard) }

// Do runs fn under the fence of resource, with token. While fn runs, no other Do for the same
// resource runs; Do calls for other resources run in parallel.
//
// If the fence is above token, Do returns a *StaleTokenError (matching ErrStaleToken) without
// calling fn. Otherwise it calls fn; if fn succeeds the fence is raised to token, and if fn
// returns an error (or panics) the fence is left where it was and fn's error is returned as
// is. Making fn's own changes all-or-nothing is fn's business. A nil fn only raises the fence.
//
// fn must not call Do for the same resource (it would deadlock). token must be between 1 and
// MaxToken (ErrInvalidToken, ErrTokenTooLarge otherwise), the same range as SQLGuard, and
// resource non-empty (ErrEmptyResource).
func (g *MemoryGuard) Do(resource string, token Token, fn func() error) error {
	if err := checkArgs(resource, token); err != nil {
		return err
	}
	f := g.fence(resource)
	f.mu.Lock()
	defer f.mu.Unlock()
	if token < f.token || mutant.Is("memory-fence-equal-stale") && token == f.token {
		return &StaleTokenError{Resource: resource, Offered: token, Current: f.token}
	}
	if fn != nil {
		if err := fn(); err != nil {
			return err
		}
	}
	f.token = token
	return nil
}

// Current returns the highest token resource has accepted, or 0 if it was never fenced. It
// waits for a Do in progress on resource to finish.
func (g *MemoryGuard) Current(resource string) Token {
	g.mu.Lock()
	f := g.fences[resource]
	g.mu.Unlock()
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.token
}

// fence returns the fence of resource, creating it at 0.
func (g *MemoryGuard) fence(resource string) *memoryFence {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.fences[resource]
	if f == nil {
		if g.fences == nil {
			g.fences = make(map[string]*memoryFence)
		}
		f = new(memoryFence)
		g.fences[resource] = f
	}
	return f
}
