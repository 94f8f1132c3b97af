package client

import (
	"context"
	"fmt"

	"github.com/raftlock/raftlock/api"
)

// RWMutex is a read/write lock held by a lease: any number of shared (read) holders, or
// one exclusive (write) holder. The lock's queue is one FIFO across both modes, so a
// queued exclusive request blocks every later shared one and writers do not starve;
// consecutive shared waiters at the head are granted together, in one commit.
//
// Every grant carries a fencing token (the index of the entry that granted it). Shared
// holders read; the token of an exclusive holder is what fences writes: a storage that
// checks tokens accepts a write only with a token at least the highest it has seen, and
// every exclusive grant's token is higher than the tokens of all the grants before it.
// A shared holder that writes must pass its token too, and then gets no more protection
// than that ordering: shared holders are not exclusive among themselves.
//
// One RWMutex holds one grant at a time, in one mode: there is no upgrade or downgrade.
// Asking for the other mode while holding fails with ErrModeConflict; Unlock first. It
// has the options, the lease handling, Lost and SafeUntil of Mutex.
type RWMutex struct {
	hold
}

// NewRWMutex returns an RWMutex for lock name held with lease. It shares the lock's
// namespace with Mutex: a Mutex of the same name is an exclusive holder of the same lock.
func NewRWMutex(lease *Lease, name string, opts ...MutexOption) *RWMutex {
	return newLockHold[RWMutex](lease.c, lease, name, opts)
}

// NewRWMutex returns an RWMutex for lock name that creates its own lease (WithLeaseTTL)
// for each hold and revokes it on Unlock.
func (c *Client) NewRWMutex(name string, opts ...MutexOption) *RWMutex {
	return newLockHold[RWMutex](c, nil, name, opts)
}

// RLock takes the lock shared, waiting in the lock's FIFO queue for as long as ctx
// allows, as Mutex.Lock does. It returns nil at once when the RWMutex holds it shared
// already, and ErrModeConflict when it holds it exclusive.
func (m *RWMutex) RLock(ctx context.Context) error { return m.lock(ctx, api.ModeShared, true) }

// TryRLock takes the lock shared if that can be done at once (the lock is free, or held
// shared with nobody waiting) and returns ErrLockHeld otherwise.
func (m *RWMutex) TryRLock(ctx context.Context) error { return m.lock(ctx, api.ModeShared, false) }

// Lock takes the lock exclusive, waiting in the lock's FIFO queue for as long as ctx
// allows, as Mutex.Lock does. It returns nil at once when the RWMutex holds it exclusive
// already, and ErrModeConflict when it holds it shared.
func (m *RWMutex) Lock(ctx context.Context) error { return m.lock(ctx, api.ModeExclusive, true) }

// TryLock takes the lock exclusive if it is free and returns ErrLockHeld otherwise.
func (m *RWMutex) TryLock(ctx context.Context) error {
	return m.lock(ctx, api.ModeExclusive, false)
}

func (m *RWMutex) lock(ctx context.Context, mode string, wait bool) error {
	m.op.Lock()
	defer m.op.Unlock()
	return m.take(ctx, fmt.Sprintf("lock %q %s", m.name, mode), mode, wait, m.c.lockAcquirer(m.name, mode))
}

// Unlock releases the grant the RWMutex holds, in either mode, with the lease and token
// of the hold, as Mutex.Unlock does; one made by Client.NewRWMutex then revokes its lease.
// It returns ErrNotLocked when nothing is held.
func (m *RWMutex) Unlock(ctx context.Context) error {
	return m.giveBack(ctx, fmt.Sprintf("unlock %q", m.name))
}

// RUnlock is Unlock, for symmetry with RLock.
func (m *RWMutex) RUnlock(ctx context.Context) error { return m.Unlock(ctx) }

// Mode returns the mode held, api.ModeShared or api.ModeExclusive, or "" when the RWMutex
// holds nothing.
func (m *RWMutex) Mode() string { return m.whileHeld(&m.mode) }
