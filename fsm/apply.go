package fsm

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// The path of one entry, in the order it runs, for the live state and the snapshot shadow
// alike: step → decode → state.apply, which advances cluster time and ends what expired by
// it (advance, time.go), runs the command's handler from the commands table below, admits
// the shared waiters the entry put at the head of a queue (settle, locks.go), and returns
// the Result.

// step applies one entry to s: the only code that advances a state by an entry, for the
// live state and the shadow alike. It returns the command's type (0 for an entry that is
// not a valid command) and, for a command this node does not know and may not skip, the
// error that halts the FSM, with s unchanged. strs, when not nil, carries the strings the
// entry's command decoded to between the live state's apply and the shadow's (sharing.go).
func (f *FSM) step(s *state, index uint64, typ raft.LogType, data []byte, strs *entryStrings) (*Result, Type, error) {
	if typ != raft.LogCommand {
		if index > s.applied {
			s.applied = index
		}
		return &Result{Index: index}, 0, nil
	}
	c, err := f.decode(data)
	if strs != nil {
		strs.share(&c)
	}
	if err != nil {
		if errors.Is(err, ErrUnknownCommand) {
			return nil, 0, err
		}
		s.applied = index
		return &Result{Status: StatusInvalid, Index: index, Err: err}, 0, nil
	}
	// The handlers are called through the registry, so a command they are handed escapes
	// to the heap; the state's own scratch copy costs no allocation per entry. It is
	// cleared after, so that nothing of an entry outlives its apply.
	s.cmd = c
	r := s.apply(index, &s.cmd)
	s.cmd = Command{}
	return r, c.Type, nil
}

// decode decodes an entry as a node speaking f.maxVersion does. A SetVersion above that
// version is refused (StatusInvalid, nothing changes): the leader proposes a version only
// once every voter has registered it, so such an entry was never meant for this cluster.
func (f *FSM) decode(data []byte) (Command, error) {
	c, err := decodeCommand(data, f.maxVersion)
	if err == nil && c.Type.known(f.maxVersion) == TypeSetVersion && c.Version > f.maxVersion {
		err = fmt.Errorf("%w: set_version %d, this node speaks up to %d", ErrUnsupportedVersion, c.Version, f.maxVersion)
	}
	return c, err
}

// apply applies one decoded command at index and returns its Result: first the entry
// moves time and ends everything that has expired by it, then the command takes effect,
// then the shared waiters its removals put at the head of a queue are admitted.
func (s *state) apply(index uint64, c *Command) *Result {
	s.advance(index, c.Now)
	r := &Result{Index: index}
	s.handle(index, c, r)
	if s.version >= 6 {
		s.sweep(index) // what the command ended, with what is left of the budget
	}
	s.settle(index)
	return r
}

// handle runs the handler of c's type, as a node speaking s.maxVersion knows it. A type
// it does not know is skipped (decode let only skippable ones through); a command whose
// version the cluster has not activated is refused (active) and changes nothing.
func (s *state) handle(index uint64, c *Command, r *Result) {
	t := c.Type.known(s.maxVersion)
	cmd := commandOf(t)
	switch {
	case cmd.apply == nil:
		r.Status = StatusSkipped
	case !cmd.anyVersion && !s.active(c.Type, r):
	case cmd.exact && c.Type != t:
		// The type byte also carries FlagSkippable, which this type is never written with.
		// Nodes apply such an entry as a tick once the version gate has passed; a node
		// that applied it otherwise would diverge from its peers.
	case !s.mayUse(c, r):
		// Another identity's lease, or a caller whose token is gone (owner.go).
	default:
		cmd.apply(s, index, c, r)
	}
}

// handler applies one command at index, after advance, and reports its outcome in r.
// Handlers check before they change: a command refused (a missing lease, a quota, a
// conflict) changes nothing but time.
type handler func(s *state, index uint64, c *Command, r *Result)

// command is a command type's row in the registry.
type command struct {
	typ   Type   // the type without FlagSkippable: the row's index in commands
	name  string // as logs and the API name it (Type.String)
	since uint64 // the protocol version that introduced it (Type.Since)
	apply handler
	// body is its encoding after the type byte and Now: its fields in order (codec.go).
	body []field
	// lease is how it relates to the lease c.Lease names: whether it carries its caller
	// or creator as a trailing field (Command.Encode).
	lease leaseUse
	// callers: its leases' callers trail it from version 4 on (Renew).
	callers bool
	// anyVersion lets the command apply before the cluster activates its version: it is
	// how versions are activated. Every other command is refused until then (active).
	anyVersion bool
	// exact: see handle.
	exact bool
	// trailer is a field that a later protocol version (trailerSince) appends to the
	// body, written only when it is not zero (Command.hasField).
	trailer      field
	trailerSince uint64
}

// coreCommands are the rows of the commands that belong to no primitive: leases, time,
// nodes, versions, limits and ACLs. Each primitive brings its own rows (its commands in
// primitives.go).
var coreCommands = []command{
	{typ: TypeCreateLease, name: "create_lease", since: 1, apply: (*state).createLease, body: []field{fieldLease, fieldTTL}, lease: leaseCreates},
	{typ: TypeRenew, name: "renew", since: 1, apply: (*state).renew, body: []field{fieldLeases}, callers: true},
	{typ: TypeRevoke, name: "revoke", since: 1, apply: (*state).revoke, body: []field{fieldLease}, lease: leaseUses},
	{typ: TypeTick, name: "tick", since: 1, apply: (*state).tick},
	{typ: TypeRegisterNode, name: "register_node", since: 1, apply: (*state).registerNode, body: []field{fieldNodeID, fieldNodeAddrs}},
	{typ: TypeRemoveNode, name: "remove_node", since: 1, apply: (*state).removeNode, body: []field{fieldNodeID}},

	{typ: TypeSetVersion, name: "set_version", since: 2, apply: (*state).setVersion, body: []field{fieldVersion}, anyVersion: true},
	{typ: typeNodeVersion, name: "node_version", since: 2, apply: (*state).registerVersion, body: []field{fieldNodeID, fieldVersion}, anyVersion: true},
	{typ: TypeSetLimits, name: "set_limits", since: 2, apply: (*state).setLimits, body: []field{fieldLimits}, trailer: fieldLimitsV5, trailerSince: 5},

	{typ: TypeACLBootstrap, name: "acl_bootstrap", since: 2, apply: (*state).aclBootstrap, body: []field{fieldAccessor, fieldSecretHash}, exact: true},
	{typ: TypeACLSetPolicy, name: "acl_set_policy", since: 2, apply: (*state).aclSetPolicy, body: []field{fieldPolicy, fieldDescription, fieldRules}, exact: true, trailer: fieldQuotas, trailerSince: 5},
	{typ: TypeACLDeletePolicy, name: "acl_delete_policy", since: 2, apply: (*state).aclDeletePolicy, body: []field{fieldPolicy}, exact: true},
	{typ: TypeACLSetToken, name: "acl_set_token", since: 2, apply: (*state).aclSetToken, body: []field{fieldAccessor, fieldSecretHash, fieldDescription, fieldPolicies}, exact: true, trailer: fieldQuotas, trailerSince: 5},
	{typ: TypeACLDeleteToken, name: "acl_delete_token", since: 2, apply: (*state).aclDeleteToken, body: []field{fieldAccessor}, exact: true},
}

// commands is the registry: every command type this code knows, by its type without
// FlagSkippable: coreCommands and every primitive's rows, set by init (primitives.go)
// from registry, which refuses a type taken twice. A new command is one row and its constant; its row
// names its fields, so its encoding is the row too.
var commands [FlagSkippable]command

// registry builds the command registry from the core rows and every primitive's rows. A
// type out of range or taken twice, or a row without a name or handler, is a programming
// error that init stops on; the error names the row, so that the panic says which row to
// fix.
func registry(core []command, prims []primitive) (reg [FlagSkippable]command, err error) {
	rows := append([]command(nil), core...)
	for _, p := range prims {
		rows = append(rows, p.commands...)
	}
	for _, row := range rows {
		switch {
		case row.typ == 0 || row.typ >= FlagSkippable:
			return reg, fmt.Errorf("fsm: command type %d (%s): out of range", uint8(row.typ), row.name)
		case row.name == "" || row.apply == nil:
			return reg, fmt.Errorf("fsm: command type %d (%s): without a name or handler", uint8(row.typ), row.name)
		case reg[row.typ].name != "":
			return reg, fmt.Errorf("fsm: command type %d (%s): taken twice, by %s too", uint8(row.typ), row.name, reg[row.typ].name)
		}
		reg[row.typ] = row
	}
	return reg, nil
}

// noCommand is the row of a type this code does not know: no name, no handler, no body.
var noCommand command

// commandOf returns the registry row of type t (without its flag); the zero row, with no
// handler, for a type this code does not know.
func commandOf(t Type) *command {
	if int(t) < len(commands) {
		return &commands[t]
	}
	return &noCommand
}
