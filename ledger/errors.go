package ledger

import "errors"

// Errors returned by the ledger. Match them with errors.Is. A refused stale write returns the
// fencing package's *fencing.StaleTokenError (errors.Is(err, fencing.ErrStaleToken)).
var (
	// ErrInvalidArgument means a request field is missing or out of range.
	ErrInvalidArgument = errors.New("ledger: invalid argument")
	// ErrAccountNotFound means the account has never been charged or created.
	ErrAccountNotFound = errors.New("ledger: account not found")
	// ErrChargeConflict means a charge_id was reused for a different account or amount.
	ErrChargeConflict = errors.New("ledger: charge_id already used for a different charge")
)

// errChargeRace means a concurrent transaction recorded the same charge_id first; the charge
// is retried, and then answered as a replay.
var errChargeRace = errors.New("ledger: concurrent charge with the same charge_id")
