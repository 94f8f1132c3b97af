package fsm

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
)

// Type is the first byte of an encoded command. Its high bit (FlagSkippable) marks a
// command that a node which does not know the type may apply as a plain tick instead of
// refusing, so newer nodes can add advisory commands without stopping older ones.
type Type uint8

// Command types. Values are part of the log format: never renumber them.
const (
	TypeCreateLease  Type = 1
	TypeRenew        Type = 2
	TypeRevoke       Type = 3
	TypeAcquire      Type = 4
	TypeRelease      Type = 5
	TypeTick         Type = 6
	TypeRegisterNode Type = 7
	TypeDequeue      Type = 8
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

	// The commands of the primitives beside the lock are declared in their files:
	// semaphores.go (19 to 21, 28) and elections.go (22 to 24). None of them, and none of
	// the lock's, is skippable: a node that skipped one would grant differently from its
	// peers. The registry refuses a number taken twice (primitives.go).

	// TypeAcquireShared asks for a lock in shared mode (since version 2); its body is
	// TypeAcquire's. Release and Dequeue of a lock serve both modes.
	TypeAcquireShared Type = 18

	// The lock commands of protocol version 3 (fsm/locksets.go, fsm/maxhold.go).

	// TypeAcquireEx asks for a lock in either mode (Shared) with a maximum hold (MaxHold)
	// and a lock delay (LockDelay); its body is TypeAcquire's followed by those three.
	TypeAcquireEx Type = 25
	// TypeLockSet asks for every lock of Names at once, in one mode.
	TypeLockSet Type = 26
	// TypeLockSetRelease releases every lock of Names, each with its token of Tokens.
	TypeLockSetRelease Type = 27

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

// Limits on decoded fields: far above what the API accepts, low enough that a corrupt
// length cannot make a node allocate without bound.
const (
	maxStringLen = 4096
	maxRenewIDs  = 1 << 20
)

// Encode appends the command's binary form to buf and returns the extended buffer.
// The form is the type byte, then Now as a uvarint, then the fields of the type's row
// (apply.go), then the trailing fields: the caller (Creator) and a Renew's Callers.
func (c *Command) Encode(buf []byte) []byte {
	buf = append(buf, byte(c.Type))
	buf = binary.AppendUvarint(buf, uint64(c.Now))
	row := commandOf(c.Type &^ FlagSkippable)
	for _, f := range row.body {
		buf = c.appendField(buf, f)
	}
	if c.Creator != "" && row.lease != leaseNone {
		// A trailing field: since version 3 on the commands that create a lease, since
		// version 4 on every one that uses one.
		buf = appendString(buf, c.Creator)
	}
	if row.callers && c.Type == TypeRenew && len(c.Callers) == len(c.Leases) && anyCaller(c.Callers) {
		buf = appendCallers(buf, c.Callers) // a trailing field, since version 4
	}
	if row.trailer != 0 && c.hasField(row.trailer) {
		buf = c.appendField(buf, row.trailer) // a trailing field of a later version
	}
	return buf
}

// hasField reports whether a trailing field f of c has anything to encode: the encoder
// writes it only then, so that an older version's command keeps its bytes, and the decoder
// refuses one that is all zero (not the canonical form).
func (c *Command) hasField(f field) bool {
	switch f {
	case fieldQuotas:
		return !c.ACL.Quotas.IsZero()
	case fieldLimitsV5:
		return c.Limits != c.Limits.v4()
	}
	return true
}

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

// anyCaller reports whether any of a Renew's callers is set.
func anyCaller(callers []string) bool {
	for _, c := range callers {
		if c != "" {
			return true
		}
	}
	return false
}

// appendCallers appends a Renew's callers compactly, since a batch renews thousands of
// leases of a few identities: the distinct callers in first-seen order, then per lease the
// uvarint position of its caller in that table plus one (0: none).
func appendCallers(buf []byte, callers []string) []byte {
	var table []string
	pos := make(map[string]uint64)
	for _, c := range callers {
		if _, ok := pos[c]; !ok && c != "" {
			table = append(table, c)
			pos[c] = uint64(len(table))
		}
	}
	buf = appendStrings(buf, table)
	for _, c := range callers {
		buf = binary.AppendUvarint(buf, pos[c])
	}
	return buf
}

// callers reads what appendCallers wrote for n leases.
func (d *decoder) callers(n int) []string {
	table := d.strings()
	out := make([]string, n)
	for i := 0; i < n && d.err == nil; i++ {
		switch p := d.uvarint(); {
		case p > uint64(len(table)):
			d.fail(ErrCorruptCommand)
		case p > 0:
			out[i] = table[p-1]
		}
	}
	if d.err == nil && !anyCaller(out) {
		d.fail(ErrCorruptCommand) // the encoder writes no table without a caller
	}
	return out
}

// DecodeCommand parses a command written by Encode. It never panics: truncated or
// malformed input yields an error wrapping ErrShortCommand, ErrCorruptCommand or
// ErrUnknownCommand. A skippable command of an unknown type decodes to its type and Now
// with no other fields.
func DecodeCommand(b []byte) (Command, error) {
	return decodeCommand(b, Version)
}

// decodeCommand decodes as a node speaking protocol version max: a type introduced after
// max is unknown to it.
func decodeCommand(b []byte, max uint64) (Command, error) {
	var c Command
	d := decoder{b: b}
	c.Type = Type(d.byte())
	c.Now = d.int64()
	t := c.Type.known(max)
	if t == 0 {
		if d.err == nil && c.Type&FlagSkippable == 0 {
			d.fail(fmt.Errorf("%w: %d", ErrUnknownCommand, uint8(c.Type)))
		}
		return c, d.err
	}
	row := commandOf(t)
	for _, f := range row.body {
		c.readField(&d, f)
	}
	if d.err == nil && len(d.b) != 0 && (max >= 3 && c.createsLease() || max >= 4 && c.usesLease()) {
		c.Creator = d.string()
	}
	if d.err == nil && len(d.b) != 0 && max >= 4 && row.callers && c.Type == TypeRenew {
		c.Callers = d.callers(len(c.Leases))
	}
	if d.err == nil && len(d.b) != 0 && row.trailer != 0 && max >= row.trailerSince {
		c.readField(&d, row.trailer)
		if d.err == nil && !c.hasField(row.trailer) {
			d.fail(fmt.Errorf("%w: a trailing field of zeros", ErrCorruptCommand))
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Errorf("%w: %d trailing bytes", ErrCorruptCommand, len(d.b)))
	}
	return c, d.err
}

// field is one field of a command type's body: a type's row (its commands entry) lists
// its fields in order, and Encode and decodeCommand write and read each with the two
// switches below, the whole vocabulary, so two types that share a field share its bytes.
// They are plain switches, not functions on the row, so that the Command being decoded
// stays on the stack.
type field uint8

const (
	fieldLease       field = iota + 1 // Lease
	fieldTTL                          // TTL
	fieldLeases                       // a Renew's batch: a count, then each lease ID
	fieldAcquire                      // the body of an Acquire (appendAcquire)
	fieldOptions                      // what version 3 adds to a request for a lock
	fieldLimit                        // Limit
	fieldMaxHold                      // MaxHold
	fieldNames                        // Names
	fieldTokens                       // Tokens: a count, then each token
	fieldName                         // Name
	fieldValue                        // Value
	fieldToken                        // Token
	fieldNodeID                       // Node.ID
	fieldNodeAddrs                    // Node.RaftAddr, then Node.HTTPAddr
	fieldVersion                      // Version
	fieldLimits                       // the three Limits
	fieldAccessor                     // ACL.Accessor
	fieldSecretHash                   // ACL.SecretHash
	fieldPolicy                       // ACL.Policy
	fieldDescription                  // ACL.Description
	fieldRules                        // ACL.Rules
	fieldPolicies                     // ACL.Policies
	fieldQuotas                       // ACL.Quotas: the three quotas (version 5)
	fieldLimitsV5                     // the limits of version 5 in Limits
)

// appendField appends field f of c.
func (c *Command) appendField(buf []byte, f field) []byte {
	switch f {
	case fieldLease:
		return append(buf, c.Lease[:]...)
	case fieldTTL:
		return binary.AppendUvarint(buf, uint64(c.TTL))
	case fieldLeases:
		buf = binary.AppendUvarint(buf, uint64(len(c.Leases)))
		for i := range c.Leases {
			buf = append(buf, c.Leases[i][:]...)
		}
		return buf
	case fieldAcquire:
		return c.appendAcquire(buf)
	case fieldOptions:
		return c.appendOptions(buf)
	case fieldLimit:
		return binary.AppendUvarint(buf, c.Limit)
	case fieldMaxHold:
		return binary.AppendUvarint(buf, uint64(c.MaxHold))
	case fieldNames:
		return appendStrings(buf, c.Names)
	case fieldTokens:
		buf = binary.AppendUvarint(buf, uint64(len(c.Tokens)))
		for _, t := range c.Tokens {
			buf = binary.AppendUvarint(buf, t)
		}
		return buf
	case fieldName:
		return appendString(buf, c.Name)
	case fieldValue:
		return appendString(buf, c.Value)
	case fieldToken:
		return binary.AppendUvarint(buf, c.Token)
	case fieldNodeID:
		return appendString(buf, c.Node.ID)
	case fieldNodeAddrs:
		return appendString(appendString(buf, c.Node.RaftAddr), c.Node.HTTPAddr)
	case fieldVersion:
		return binary.AppendUvarint(buf, c.Version)
	case fieldLimits:
		buf = binary.AppendUvarint(buf, c.Limits.MaxLeases)
		buf = binary.AppendUvarint(buf, c.Limits.MaxLocksPerLease)
		return binary.AppendUvarint(buf, c.Limits.MaxWaitersPerLock)
	case fieldAccessor:
		return appendString(buf, c.ACL.Accessor)
	case fieldSecretHash:
		return append(buf, c.ACL.SecretHash[:]...)
	case fieldPolicy:
		return appendString(buf, c.ACL.Policy)
	case fieldDescription:
		return appendString(buf, c.ACL.Description)
	case fieldRules:
		return appendRules(buf, c.ACL.Rules)
	case fieldPolicies:
		return appendStrings(buf, c.ACL.Policies)
	case fieldQuotas:
		return appendQuotas(buf, c.ACL.Quotas)
	case fieldLimitsV5:
		buf = binary.AppendUvarint(buf, c.Limits.MaxLocks)
		buf = binary.AppendUvarint(buf, c.Limits.MaxWaiters)
		return appendQuotas(buf, c.Limits.PerIdentity)
	}
	panic(fmt.Sprintf("fsm: command field %d has no encoding", f))
}

// readField reads what appendField wrote for f into c.
func (c *Command) readField(d *decoder, f field) {
	switch f {
	case fieldLease:
		c.Lease = d.leaseID()
	case fieldTTL:
		c.TTL = d.int64()
	case fieldLeases:
		n := d.uvarint()
		if n > maxRenewIDs || n*16 > uint64(len(d.b)) {
			d.fail(ErrCorruptCommand)
			return
		}
		c.Leases = make([]LeaseID, n)
		for i := range c.Leases {
			c.Leases[i] = d.leaseID()
		}
	case fieldAcquire:
		c.decodeAcquire(d)
	case fieldOptions:
		c.decodeOptions(d)
	case fieldLimit:
		c.Limit = d.uvarint()
	case fieldMaxHold:
		c.MaxHold = d.int64()
	case fieldNames:
		c.Names = d.strings()
	case fieldTokens:
		n := d.count(1)
		for i := 0; i < n && d.err == nil; i++ {
			c.Tokens = append(c.Tokens, d.uvarint())
		}
	case fieldName:
		c.Name = d.string()
	case fieldValue:
		c.Value = d.string()
	case fieldToken:
		c.Token = d.uvarint()
	case fieldNodeID:
		c.Node.ID = d.string()
	case fieldNodeAddrs:
		c.Node.RaftAddr, c.Node.HTTPAddr = d.string(), d.string()
	case fieldVersion:
		c.Version = d.uvarint()
	case fieldLimits:
		c.Limits = Limits{MaxLeases: d.uvarint(), MaxLocksPerLease: d.uvarint(), MaxWaitersPerLock: d.uvarint()}
	case fieldAccessor:
		c.ACL.Accessor = d.string()
	case fieldSecretHash:
		c.ACL.SecretHash = d.hash()
	case fieldPolicy:
		c.ACL.Policy = d.string()
	case fieldDescription:
		c.ACL.Description = d.string()
	case fieldRules:
		c.ACL.Rules = d.rules()
	case fieldPolicies:
		c.ACL.Policies = d.strings()
	case fieldQuotas:
		c.ACL.Quotas = d.quotas()
	case fieldLimitsV5:
		c.Limits.MaxLocks, c.Limits.MaxWaiters = d.uvarint(), d.uvarint()
		c.Limits.PerIdentity = d.quotas()
	default:
		panic(fmt.Sprintf("fsm: command field %d has no decoding", f))
	}
}

// Bodies that several command types share.
var (
	// bodyRelease: a grant given back, or a leadership given up.
	bodyRelease = []field{fieldLease, fieldName, fieldToken}
	// bodyDequeue: a waiting client gave up.
	bodyDequeue = []field{fieldLease, fieldName}
)

// appendAcquire appends the body of an Acquire, which the other requests for a grant
// (AcquireShared, SemAcquire, Campaign) start with: lease, new-lease flag and TTL, name,
// wait, owner.
func (c *Command) appendAcquire(buf []byte) []byte {
	buf = append(buf, c.Lease[:]...)
	if c.NewLease {
		buf = append(buf, 1)
		buf = binary.AppendUvarint(buf, uint64(c.TTL))
	} else {
		buf = append(buf, 0)
	}
	buf = appendString(buf, c.Name)
	buf = binary.AppendUvarint(buf, uint64(c.Wait))
	return appendString(buf, c.Owner)
}

// decodeAcquire reads what appendAcquire wrote.
func (c *Command) decodeAcquire(d *decoder) {
	c.Lease = d.leaseID()
	switch d.byte() {
	case 0:
	case 1:
		c.NewLease = true
		c.TTL = d.int64()
	default:
		d.fail(ErrCorruptCommand)
	}
	c.Name = d.string()
	c.Wait = d.int64()
	c.Owner = d.string()
}

// appendOptions appends what version 3 adds to a request for a lock: the mode byte, the
// maximum hold and the lock delay.
func (c *Command) appendOptions(buf []byte) []byte {
	buf = appendBool(buf, c.Shared)
	buf = binary.AppendUvarint(buf, uint64(c.MaxHold))
	return binary.AppendUvarint(buf, uint64(c.LockDelay))
}

// decodeOptions reads what appendOptions wrote.
func (c *Command) decodeOptions(d *decoder) {
	c.Shared = d.bool()
	c.MaxHold = d.int64()
	c.LockDelay = d.int64()
}

// appendQuotas appends the three quotas of q.
func appendQuotas(buf []byte, q Quotas) []byte {
	buf = binary.AppendUvarint(buf, q.MaxLeases)
	buf = binary.AppendUvarint(buf, q.MaxLocks)
	return binary.AppendUvarint(buf, q.MaxWaiters)
}

// quotas reads what appendQuotas wrote.
func (d *decoder) quotas() Quotas {
	return Quotas{MaxLeases: d.uvarint(), MaxLocks: d.uvarint(), MaxWaiters: d.uvarint()}
}

// appendBool appends a flag as one byte, 1 or 0.
func appendBool(buf []byte, b bool) []byte {
	if b {
		return append(buf, 1)
	}
	return append(buf, 0)
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// appendStrings appends a count, then each string.
func appendStrings(buf []byte, ss []string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(ss)))
	for _, s := range ss {
		buf = appendString(buf, s)
	}
	return buf
}

// appendRules appends a count, then each rule as its prefix and one access byte.
func appendRules(buf []byte, rules []ACLRule) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(rules)))
	for _, r := range rules {
		buf = appendString(buf, r.Prefix)
		buf = append(buf, byte(r.Access))
	}
	return buf
}

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

// rules reads what appendRules wrote; an empty list is nil. Any access byte decodes: which
// are valid is the state machine's rule, not the encoding's.
func (d *decoder) rules() []ACLRule {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	out := make([]ACLRule, n)
	for i := range out {
		out[i] = ACLRule{Prefix: d.string(), Access: Access(d.byte())}
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
