package fsm

import "errors"

// Errors returned by command decoding and snapshot restore.
var (
	// ErrShortCommand means the command bytes ended before a field did.
	ErrShortCommand = errors.New("fsm: command truncated")
	// ErrUnknownCommand means the type byte names no command this node knows and the
	// command is not marked skippable.
	ErrUnknownCommand = errors.New("fsm: unknown command type")
	// ErrCorruptCommand means a field holds a value no encoder writes.
	ErrCorruptCommand = errors.New("fsm: corrupt command")
	// ErrBadSnapshot means a snapshot stream is not one this version can restore.
	ErrBadSnapshot = errors.New("fsm: bad snapshot")
)

// Errors of protocol versions and of the halt.
var (
	// ErrHalted means the state machine stopped before a command it does not know and may
	// not skip (see FSM.Halted); it applies nothing more.
	ErrHalted = errors.New("fsm: halted")
	// ErrUnsupportedVersion means a snapshot or a command needs a protocol version newer
	// than this node speaks: the node must be upgraded.
	ErrUnsupportedVersion = errors.New("fsm: protocol version not supported")
	// ErrInactiveVersion means a command needs a protocol version the cluster has not yet
	// activated (a node that does not speak it may still be a member).
	ErrInactiveVersion = errors.New("fsm: protocol version not active")
)

// Errors of the ACL commands, in Result.Err, each wrapped with the reason.
var (
	// ErrACLInvalid means an ACL command breaks a rule of names, sizes or access values
	// (StatusInvalid); ValidateACLPolicy and ValidateACLToken return it too.
	ErrACLInvalid = errors.New("fsm: invalid ACL request")
	// ErrACLConflict means an ACL command collides with the state (StatusConflict).
	ErrACLConflict = errors.New("fsm: ACL conflict")
	// ErrACLNotFound means an ACL command names a missing policy or token (StatusNotFound).
	ErrACLNotFound = errors.New("fsm: ACL policy or token not found")
)
