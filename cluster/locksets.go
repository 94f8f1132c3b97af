package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// Locksets, maximum holds and lock delays (protocol version 3): the node's side of
// fsm/locksets.go and fsm/maxhold.go.

// Errors of protocol version 3.
var (
	// ErrDeadlock: a waiting request would have closed a cycle of waiting leases; nothing
	// was queued. The error is a *DeadlockError naming the cycle.
	ErrDeadlock = errors.New("cluster: deadlock")
	// ErrV3Inactive: the cluster has not activated protocol version 3, which locksets,
	// maximum holds and lock delays need; nothing was proposed. The error is an
	// *InactiveError too.
	ErrV3Inactive = errors.New("cluster: locksets, max_hold_ms and lock_delay_ms need protocol version 3 on every member")
)

// DeadlockError is the ErrDeadlock of one request: the cycle its wait would have closed,
// by lease fingerprints (never IDs) and lock names, starting with the requester.
type DeadlockError struct{ Cycle []fsm.CycleStep }

func (e *DeadlockError) Error() string {
	return "cluster: deadlock: " + fsm.DescribeCycle(e.Cycle)
}

// Is makes errors.Is(err, ErrDeadlock) hold.
func (e *DeadlockError) Is(target error) bool { return target == ErrDeadlock }

// NamesError is an ErrLockHeld or ErrNotHolder of a lockset: the locks concerned.
type NamesError struct {
	Err   error // ErrLockHeld or ErrNotHolder
	Names []string
}

func (e *NamesError) Error() string { return fmt.Sprintf("%v: %s", e.Err, strings.Join(e.Names, ", ")) }

// Unwrap gives the error it names locks for.
func (e *NamesError) Unwrap() error { return e.Err }

// v3Outcome maps the outcomes of version 3 commands that carry more than outcomeError's
// table says (the cycle, the locks concerned); nil for every other outcome.
func v3Outcome(r *fsm.Result) error {
	switch {
	case r.Status == fsm.StatusDeadlock:
		return &DeadlockError{Cycle: r.Cycle}
	case r.Status == fsm.StatusLockHeld && len(r.Held) > 0:
		return &NamesError{Err: ErrLockHeld, Names: r.Held}
	case r.Status == fsm.StatusNotHolder && len(r.Held) > 0:
		return &NamesError{Err: ErrNotHolder, Names: r.Held}
	}
	return nil
}

// LockSetRequest asks for several locks at once, all granted in one entry or none.
type LockSetRequest struct {
	Names     []string // at least one; sorted and made unique here
	Lease     LeaseID
	NewLease  bool
	RequestID string
	TTL       time.Duration // for NewLease
	Wait      time.Duration
	Owner     string
	Shared    bool
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

// capHold applies the node's maximum hold ceiling (Config.MaxHoldCeiling) to a request's
// maximum hold. A request without one is left without one.
func (n *Node) capHold(d time.Duration) time.Duration {
	if c := n.cfg.MaxHoldCeiling; c > 0 && d > c {
		return c
	}
	return d
}

// AcquireSet takes every lock of req.Names at once. If one is not free for the lease
// and req.Wait > 0, the set waits in every queue as one request and AcquireSet returns
// when the commit that grants all of them (or ends the wait) is applied.
func (l *Locks) AcquireSet(ctx context.Context, req LockSetRequest) (LockSetGrant, error) {
	n := l.n
	if err := n.prop.versionReady(ctx, fsm.TypeLockSet); err != nil {
		return LockSetGrant{}, v3Inactive(err)
	}
	req.Lease = n.leaseOf(ctx, req.NewLease, req.RequestID, req.Lease)
	names := fsm.SortSetNames(req.Names)
	c := &fsm.Command{Type: fsm.TypeLockSet, Names: names, Lease: req.Lease, NewLease: req.NewLease, TTL: ms(req.TTL),
		Wait: waitMs(req.Wait), Owner: req.Owner, Shared: req.Shared, MaxHold: ms(n.capHold(req.MaxHold)), LockDelay: ms(req.LockDelay)}
	c.Name = names[0] // not encoded: the wait listens on the set's first lock, which every grant of it includes
	release := func(ctx context.Context, _ string, lease LeaseID, _ uint64) error {
		return l.ReleaseSet(ctx, lease, l.heldTokens(names, lease))
	}
	w := &queuedWait{n: n, space: fsm.SpaceLock, ttl: req.TTL, wait: req.Wait, dequeue: fsm.TypeDequeue, release: release}
	var first []uint64
	propose := func(c *fsm.Command) (*fsm.Result, error) {
		r, err := n.prop.propose(ctx, c)
		if err == nil {
			if e := v3Outcome(r); e != nil {
				return nil, e
			}
			first = r.Tokens
		}
		return r, err
	}
	return acquire(ctx, w, c, propose, func(r *fsm.Result) LockSetGrant {
		g := LockSetGrant{Lease: req.Lease, TTL: dur(r.TTL), Owner: req.Owner, Shared: req.Shared}
		for i, name := range names {
			tok := r.Token // a queued set: every lock it waited for is granted by one entry
			switch {
			case r.Status == fsm.StatusOK && len(r.Tokens) == len(names):
				tok = r.Tokens[i] // granted at once
			case len(first) == len(names) && first[i] != 0:
				tok = first[i] // held by the lease before it asked
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
	if e := v3Outcome(r); e != nil {
		return e
	}
	return outcomeError(c.Type, r, n.fsm.Limits)
}

// v3Inactive marks an InactiveError of a version 3 command as ErrV3Inactive.
func v3Inactive(err error) error {
	var ie *InactiveError
	if errors.As(err, &ie) {
		return errors.Join(ErrV3Inactive, err)
	}
	return err
}
