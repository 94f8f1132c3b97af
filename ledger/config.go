package ledger

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/fencing"
)

// Defaults and limits.
const (
	// DefaultOpeningBalanceCents is the balance of an account created by its first charge.
	DefaultOpeningBalanceCents = 100000
	// MaxAmountCents is the largest charge (10^12 cents).
	MaxAmountCents = 1_000_000_000_000
	// MaxBalanceCents is the largest balance PUT or the opening balance may set (10^15).
	MaxBalanceCents = 1_000_000_000_000_000
	// MaxIDBytes is the longest account id or charge_id, in bytes.
	MaxIDBytes = 128
	// MaxBodyBytes is the largest request body.
	MaxBodyBytes = 64 << 10
)

// Config configures a Ledger. Start from DefaultConfig: unlike most configs, the zero value of
// Fenced is not the default.
type Config struct {
	// DB is the ledger's database. Required. For SQLite open it with fencing.OpenSQLite (or
	// OpenDB); the ledger creates its tables if they do not exist.
	DB *sql.DB
	// Dialect is DB's dialect, fencing.SQLite or fencing.Postgres. Required.
	Dialect fencing.Dialect
	// Fenced makes charges check the fencing token (DefaultConfig sets it). When false the
	// ledger accepts any token (and records it): the unsafe "plain lock" half of the demo.
	Fenced bool
	// OpeningBalanceCents is the balance of an account created by its first charge. Zero
	// means DefaultOpeningBalanceCents; create an account with another balance, zero
	// included, with PUT /v1/accounts/{id}.
	OpeningBalanceCents int64
	// Logger receives the ledger's logs. Nil means no logging.
	Logger hclog.Logger
}

// DefaultConfig returns a fenced configuration with the default opening balance; set DB and
// Dialect.
func DefaultConfig() Config {
	return Config{Fenced: true, OpeningBalanceCents: DefaultOpeningBalanceCents}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.DB == nil {
		return errors.New("ledger: Config.DB is required")
	}
	if c.Dialect != fencing.SQLite && c.Dialect != fencing.Postgres {
		return fmt.Errorf("ledger: Config.Dialect: %w: %v", fencing.ErrUnknownDialect, c.Dialect)
	}
	if c.OpeningBalanceCents < 0 || c.OpeningBalanceCents > MaxBalanceCents {
		return fmt.Errorf("ledger: Config.OpeningBalanceCents %d is outside 0..%d", c.OpeningBalanceCents, int64(MaxBalanceCents))
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.OpeningBalanceCents == 0 {
		c.OpeningBalanceCents = DefaultOpeningBalanceCents
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}
