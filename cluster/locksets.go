package cluster

import (
	"context"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// Locksets, maximum holds and lock delays (protocol version 3): the node's side of
// fsm/locksets.go and fsm/maxhold.go.

// LockSetRequest asks for several locks at once, all granted in one entry or none; the
// Holder says by which lease and how long the set waits.
type LockSetRequest struct {
	Names []string // at least one; sorted and made unique here
	Holder
	Shared bool
	// MaxHold ends every grant of the set at most this long after it (0: none); LockDelay
	// keeps each lock from everyone this long after the lease ended without a release.
	MaxHold, LockDelay time.Duration
}

// LockToken is one lock of a set and its grant's token.
type LockToken struct {
	Name  string
	Token uint64
}

// LockSetGrant is a granted lockset.
type LockSetGrant struct {
	Lease  LeaseID
	TTL    time.Duration
	Owner  string
	Shared bool
	Locks  []LockToken
}

// AcquireSet takes every lock of req.Names at once. If one is not free for the lease
// and req.Wait > 0, the set waits in every queue as one request and AcquireSet returns
// when the commit that grants all of them (or ends the wait) is applied.
func (l *Locks) AcquireSet(ctx context.Context, req LockSetRequest) (LockSetGrant, error) {
	n := l.n
	if err := n.prop.versionReady(ctx, fsm.TypeLockSet); err != nil {
		return LockSetGrant{}, v3Inactive(err)
	}
	names := fsm.SortSetNames(req.Names)
	// The command's Name is not encoded: the wait listens on the set's first lock, which
	// every grant of it includes.
	c := req.Holder.command(ctx, n, fsm.TypeLockSet, names[0])
	c.Names, c.Shared, c.MaxHold, c.LockDelay = names, req.Shared, ms(n.cfg.capHold(req.MaxHold)), ms(req.LockDelay)
	release := func(ctx context.Context, _ string, lease LeaseID, _ uint64) error {
		return l.ReleaseSet(ctx, lease, l.heldTokens(names, lease))
	}
	w := &queuedWait{n: n, space: fsm.SpaceLock, holder: req.Holder, dequeue: fsm.TypeDequeue, release: release}
	propose := func(c *fsm.Command) (*fsm.Result, error) { return n.prop.propose(ctx, c) }
	return acquire(ctx, w, c, propose, func(r *fsm.Result) LockSetGrant {
		g := LockSetGrant{Lease: req.Lease, TTL: dur(r.TTL), Owner: req.Owner, Shared: req.Shared}
		for i, name := range names {
			// r.Tokens are the tokens of the entry that asked, also when the set queued.
			tok := r.Token // a queued set: every lock it waited for is granted by one entry
			switch {
			case r.Status == fsm.StatusOK && len(r.Tokens) == len(names):
				tok = r.Tokens[i] // granted at once
			case len(r.Tokens) == len(names) && r.Tokens[i] != 0:
				tok = r.Tokens[i] // held by the lease before it asked
			}
			g.Locks = append(g.Locks, LockToken{Name: name, Token: tok})
		}
		if g.Owner == "" {
			g.Owner = r.Owner
		}
		return g
	})
}

// heldTokens returns the tokens by which lease holds the locks of names, as applied
// here, leaving out those it does not hold.
func (l *Locks) heldTokens(names []string, lease LeaseID) []LockToken {
	var out []LockToken
	for _, name := range names {
		for _, h := range l.n.fsm.Lock(name).Holders {
			if h.Lease == lease {
				out = append(out, LockToken{Name: name, Token: h.Token})
			}
		}
	}
	return out
}

// ReleaseSet releases every lock of locks held by lease with its token, in one entry,
// or none (a *NamesError of ErrNotHolder naming those it does not hold so).
func (l *Locks) ReleaseSet(ctx context.Context, lease LeaseID, locks []LockToken) error {
	if len(locks) == 0 {
		return nil
	}
	n := l.n
	if err := n.prop.versionReady(ctx, fsm.TypeLockSetRelease); err != nil {
		return v3Inactive(err)
	}
	byName := make(map[string]uint64, len(locks))
	names := make([]string, 0, len(locks))
	for _, lt := range locks {
		if _, dup := byName[lt.Name]; !dup {
			names = append(names, lt.Name)
		}
		byName[lt.Name] = lt.Token
	}
	names = fsm.SortSetNames(names)
	c := &fsm.Command{Type: fsm.TypeLockSetRelease, Lease: lease, Names: names}
	for _, name := range names {
		c.Tokens = append(c.Tokens, byName[name])
	}
	r, err := n.prop.propose(ctx, c)
	if err != nil {
		return err
	}
	return outcomeError(c.Type, r, n.fsm.Limits)
}
