package workload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/verify/checker"
)

// fingerprint is the fingerprint the server shows for lease id ("" if id is not one),
// computed from its definition in docs/DECISIONS.md ("Fingerprints, not lease IDs"):
// SHA-256("raftlock lease fingerprint\0" ‖ the ID's 16 bytes)[:4] in hex. The workload
// derives it on its own rather than importing the state machine it checks (test/deps);
// TestFingerprint_MatchesTheServers pins both to one vector.
func fingerprint(id string) string {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != 16 {
		return ""
	}
	sum := sha256.Sum256(append([]byte("raftlock lease fingerprint\x00"), raw...))
	return hex.EncodeToString(sum[:4])
}

var (
	cycleHead = regexp.MustCompile(`lease ([0-9a-f]+) waits for lock `)
	cycleStep = regexp.MustCompile(`waits for lock (\S+) \(held or asked for ahead of it by lease ([0-9a-f]+)\)`)
)

// parseCycle reads the cycle out of a deadlock answer's message (fsm.DescribeCycle's
// form): the first lease, then each lock and the lease it waits for there.
func parseCycle(msg string) []checker.CycleStep {
	head := cycleHead.FindStringSubmatch(msg)
	steps := cycleStep.FindAllStringSubmatch(msg, -1)
	if head == nil || len(steps) == 0 {
		return nil
	}
	out := make([]checker.CycleStep, len(steps))
	lease := head[1]
	for i, st := range steps {
		out[i] = checker.CycleStep{Lease: lease, Lock: st[1]}
		lease = st[2]
	}
	return out
}

// namesIn reads the lock names of a lockset's lock_held ("held by other leases: a, b;
// ...") or not_holder ("does not hold a, b with those tokens") answer.
func namesIn(msg string) []string {
	var list string
	switch {
	case strings.HasPrefix(msg, "held by other leases: "):
		list, _, _ = strings.Cut(strings.TrimPrefix(msg, "held by other leases: "), "; ")
	case strings.Contains(msg, "does not hold "):
		_, rest, _ := strings.Cut(msg, "does not hold ")
		list, _, _ = strings.Cut(rest, " with those tokens")
	default:
		return nil
	}
	return strings.Split(list, ", ")
}

// AcquireHeld takes lock with lease, waiting up to waitMs, its grant ended at most
// maxHoldMs after it (0: no maximum) and kept from everyone lockDelayMs after its lease
// ends without a release (0: no lock delay).
func (c *Client) AcquireHeld(ctx context.Context, lock, lease, owner string, waitMs, maxHoldMs, lockDelayMs int64) Op {
	n := c.node()
	op := Op{Kind: checker.KindAcquire, Node: n, Lock: lock, Lease: lease, Owner: owner, WaitMs: waitMs, MaxHoldMs: maxHoldMs, LockDelayMs: lockDelayMs, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodPut, "/v1/locks/"+lock,
		api.AcquireRequest{LeaseID: lease, WaitMs: waitMs, Owner: owner, MaxHoldMs: maxHoldMs, LockDelayMs: lockDelayMs}, 0, time.Duration(waitMs)*time.Millisecond)
	var g api.Grant
	decode(&r, "grant", &g)
	if r.outcome == checker.OutOK && g.Token == 0 {
		r.outcome, r.err = checker.OutAmbiguous, fmt.Sprintf("bad grant answer %q", r.body)
	}
	op.Token = g.Token
	if r.outcome == checker.OutDeadlock {
		op.Cycle = parseCycle(r.msg)
	}
	return c.record(op, r)
}

// AcquireSet takes the locks names (sorted here) with lease in one commit, waiting up to
// waitMs, each ended at most maxHoldMs after the grant (0: no maximum) and kept from
// everyone lockDelayMs after its lease ends without a release (0: none).
func (c *Client) AcquireSet(ctx context.Context, names []string, lease, owner string, waitMs, maxHoldMs, lockDelayMs int64) Op {
	names = append([]string(nil), names...)
	sort.Strings(names)
	n := c.node()
	op := Op{Kind: checker.KindLockSet, Node: n, Names: names, Lease: lease, Owner: owner, WaitMs: waitMs, MaxHoldMs: maxHoldMs, LockDelayMs: lockDelayMs, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodPost, "/v1/locksets",
		api.LockSetRequest{Names: names, LeaseID: lease, WaitMs: waitMs, Owner: owner, MaxHoldMs: maxHoldMs, LockDelayMs: lockDelayMs}, 0, time.Duration(waitMs)*time.Millisecond)
	var g api.LockSetGrant
	decode(&r, "lockset", &g)
	switch r.outcome {
	case checker.OutOK:
		tok := map[string]uint64{}
		for _, lt := range g.Locks {
			tok[lt.Name] = lt.Token
		}
		for _, name := range names {
			if tok[name] == 0 {
				r.outcome, r.err = checker.OutAmbiguous, fmt.Sprintf("lockset answer without %s: %q", name, r.body)
				break
			}
			op.Tokens = append(op.Tokens, tok[name])
		}
	case checker.OutHeld:
		op.HeldNames = namesIn(r.msg)
	case checker.OutDeadlock:
		op.Cycle = parseCycle(r.msg)
	}
	return c.record(op, r)
}

// ReleaseSet gives back the locks names, held by lease with tokens, in one commit.
func (c *Client) ReleaseSet(ctx context.Context, names []string, tokens []uint64, lease, owner string) Op {
	n := c.node()
	op := Op{Kind: checker.KindLockSetRelease, Node: n, Names: names, Tokens: tokens, Lease: lease, Owner: owner, Call: c.Rec.Clock.Now()}
	req := api.LockSetRelease{LeaseID: lease}
	for i, name := range names {
		req.Locks = append(req.Locks, api.LockToken{Name: name, Token: tokens[i]})
	}
	r := c.send(ctx, c.Endpoints[n], http.MethodDelete, "/v1/locksets", req, 0, 0)
	if r.outcome == checker.OutNotHolder {
		op.HeldNames = namesIn(r.msg)
	}
	return c.record(op, r)
}
