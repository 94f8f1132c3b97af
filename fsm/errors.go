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
