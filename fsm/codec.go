package fsm

import (
	"encoding/binary"
	"fmt"
)

// The encoding of a command (Command.Encode, DecodeCommand): the type byte, Now, then the
// fields its row in the registry lists (apply.go), each written and read by the field
// vocabulary below, so two types that share a field share its bytes; then the trailing
// fields of later versions. The byte-level writers are here, their readers in decoder.go.

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
