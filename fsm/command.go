package fsm

import (
	"encoding/hex"
	"fmt"
)

// What a command is: its type, the Command struct with every field any type uses, and the
// few types its fields are made of. How its fields are written and read is codec.go; the
// byte-level reader that commands and snapshots share is decoder.go.

// Type is the first byte of an encoded command. Its high bit (FlagSkippable) marks a
// command that a node which does not know the type may apply as a plain tick instead of
// refusing, so newer nodes can add advisory commands without stopping older ones.
type Type uint8

// Command types. Values are part of the log format: never renumber them.
const (
	TypeCreateLease  Type = 1
	TypeRenew        Type = 2
	TypeRevoke       Type = 3
	TypeTick         Type = 6
	TypeRegisterNode Type = 7
	TypeRemoveNode   Type = 9

	// TypeSetVersion raises the cluster's active protocol version (since version 2).
	TypeSetVersion Type = 10
	// TypeNodeVersion registers the newest protocol version a node speaks (since version
	// 2). It carries FlagSkippable, so a node that predates it applies it as a tick.
	TypeNodeVersion Type = 11 | FlagSkippable
	// TypeSetLimits replaces the quotas (since version 2).
	TypeSetLimits Type = 12

	// The ACL commands (since version 2). None is skippable: a node that skipped one
	// would authorize requests differently from its peers.

	// TypeACLBootstrap creates the global-management policy and the first token, once.
	TypeACLBootstrap Type = 13
	// TypeACLSetPolicy creates or replaces a policy.
	TypeACLSetPolicy Type = 14
	// TypeACLDeletePolicy deletes a policy and takes it out of every token.
	TypeACLDeletePolicy Type = 15
	// TypeACLSetToken creates a token (or updates one with the same secret).
	TypeACLSetToken Type = 16
	// TypeACLDeleteToken deletes a token.
	TypeACLDeleteToken Type = 17

	// The commands of the primitives are declared in their files, with their rows of the
	// registry: the lock's in locks.go (4, 5, 8, 18, 25 to 27), the semaphore's in
	// semaphores.go (19 to 21, 28), the election's in elections.go (22 to 24). None is
	// skippable: a node that skipped one would grant differently from its peers. The
	// registry refuses a number taken twice (primitives.go).

	// FlagSkippable, set in the type byte, lets a node that does not know the type skip
	// the command (it still advances time) instead of refusing it.
	FlagSkippable Type = 0x80
)

// String names the type for logs.
func (t Type) String() string {
	if name := commandOf(t &^ FlagSkippable).name; name != "" {
		return name
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// LeaseID is a lease's 128-bit identifier. The leader draws it at random before proposing,
// because knowing it is what authorizes keepalive, release and revoke.
type LeaseID [16]byte

// String returns the ID as 32 lowercase hex characters, its form in the HTTP API.
func (id LeaseID) String() string { return hex.EncodeToString(id[:]) }

// ParseLeaseID parses the hex form of a lease ID.
func ParseLeaseID(s string) (LeaseID, error) {
	var id LeaseID
	if len(s) != 2*len(id) {
		return id, fmt.Errorf("fsm: lease id %q: want %d hex characters", s, 2*len(id))
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("fsm: lease id %q: %w", s, err)
	}
	return id, nil
}

// NodeInfo is a cluster member's registration: how to reach its Raft and HTTP endpoints.
// It lives in the state machine so that any node can find the leader's HTTP address.
type NodeInfo struct {
	ID       string
	RaftAddr string
	HTTPAddr string
}

// Command is one state machine command. Which fields matter depends on Type; the rest
// stay zero and are not encoded.
type Command struct {
	// Type selects the command.
	Type Type
	// Now is the leader's cluster time in milliseconds when it proposed the command.
	Now int64
	// Lease is the lease the command acts on (CreateLease, Revoke, Acquire, Release, Dequeue).
	Lease LeaseID
	// Leases are the leases renewed by one batched Renew.
	Leases []LeaseID
	// TTL is the lease TTL in milliseconds (CreateLease, and Acquire with NewLease).
	TTL int64
	// NewLease makes an Acquire create Lease with TTL in the same entry.
	NewLease bool
	// Name is the lock's name (Acquire, Release, Dequeue).
	Name string
	// Wait is how long an Acquire may wait in the queue, in milliseconds; 0 means no wait.
	Wait int64
	// Owner is the holder's label (Acquire).
	Owner string
	// Token is the grant being released (Release, SemRelease, Resign), or, when not zero,
	// the leadership a Campaign proclaims under (proclaim only).
	Token uint64
	// Limit is a semaphore's number of permits (SemAcquire).
	Limit uint64
	// Value is the value a leader publishes (Campaign).
	Value string
	// Node is the member registered (RegisterNode) or removed (RemoveNode, ID only), or
	// the node whose version NodeVersion registers (ID only).
	Node NodeInfo
	// Version is the protocol version to activate (SetVersion) or the newest one the node
	// speaks (NodeVersion).
	Version uint64
	// Limits are the new quotas (SetLimits).
	Limits Limits
	// ACL holds the fields of the ACL commands.
	ACL ACLCommand
	// Names are a lockset's locks, sorted without duplicates (LockSet, LockSetRelease),
	// and Tokens the grants a LockSetRelease releases, one per name.
	Names  []string
	Tokens []uint64
	// Shared asks for shared mode (AcquireEx, LockSet).
	Shared bool
	// MaxHold is the longest the grant may last, in ms, however long its lease lives, and
	// LockDelay how long the lock stays unavailable after its lease ended without a
	// release, in ms; 0 for none (AcquireEx, LockSet).
	MaxHold, LockDelay int64
	// Creator is the ACL accessor of the caller that creates a lease (CreateLease, and the
	// acquiring types with NewLease), recorded on the lease so that only that identity may
	// use it. From protocol version 3 on; the leader leaves it empty before, and an empty
	// Creator is not encoded, so a version 2 cluster writes what it always wrote.
	//
	// From version 4 on every command that uses a lease (usesLease) carries its caller
	// here, CallerAnonymous for a caller without a token when ACLs are on, and the state
	// machine refuses it when the lease is another identity's (owner.go). Empty is the
	// node itself or a cluster without ACLs, which may use any lease.
	Creator string
	// Callers are the callers of a Renew's leases, one per lease in order, or nil when
	// none has one (version 4; see Creator).
	Callers []string
}

// CallerAnonymous is the caller (Command.Creator) of a request without a token on a
// cluster with ACLs on, from version 4: not a valid accessor (those are hex digits and
// dashes), so no token can pose as it.
const CallerAnonymous = "anonymous"

// ACLCommand holds the fields of the ACL commands. Which matter depends on the type; the
// rest stay zero and are not encoded.
type ACLCommand struct {
	// Accessor is the token's public ID (ACLBootstrap, ACLSetToken, ACLDeleteToken).
	Accessor string
	// SecretHash is the SHA-256 of the token's secret (ACLBootstrap, ACLSetToken; see
	// ACLSecretHash). The secret itself never enters the log.
	SecretHash [32]byte
	// Policy is the policy's name (ACLSetPolicy, ACLDeletePolicy).
	Policy string
	// Description is free text for operators (ACLSetPolicy, ACLSetToken).
	Description string
	// Rules are the policy's rules (ACLSetPolicy).
	Rules []ACLRule
	// Policies names the token's policies (ACLSetToken).
	Policies []string
	// Quotas are the policy's or the token's quotas (ACLSetPolicy, ACLSetToken), from
	// protocol version 5; zero for none, and then not encoded (quotas.go).
	Quotas Quotas
}

// typeNodeVersion is TypeNodeVersion without its flag: its index in the registry.
const typeNodeVersion = TypeNodeVersion &^ FlagSkippable

// leaseUse is how a command type relates to the lease c.Lease names, which decides the
// trailing caller field it carries.
type leaseUse uint8

const (
	leaseNone         leaseUse = iota // names no lease (Renew names many: see callers)
	leaseUses                         // acts on the lease: carries its caller from version 4
	leaseCreates                      // creates it: carries its creator from version 3
	leaseCreatesIfNew                 // acts on it, and creates it when NewLease is set
)

// UsesLease reports whether the command acts on the lease c.Lease names, and so carries
// its caller (Creator) from protocol version 4 on; CreatesLease, whether it creates it, and
// so carries its creator from version 3 on. Renew, which names many, carries Callers.
func (c *Command) UsesLease() bool { return c.usesLease() }

// CreatesLease: see UsesLease.
func (c *Command) CreatesLease() bool { return c.createsLease() }

func (c *Command) usesLease() bool {
	return commandOf(c.Type&^FlagSkippable).lease != leaseNone
}

// createsLease reports whether the command creates a lease, and so may carry Creator.
func (c *Command) createsLease() bool {
	switch commandOf(c.Type &^ FlagSkippable).lease {
	case leaseCreates:
		return true
	case leaseCreatesIfNew:
		return c.NewLease
	}
	return false
}
