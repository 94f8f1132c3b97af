package workload

import (
	"context"
	"fmt"
	"time"

	"github.com/raftlock/raftlock/test/verify/checker"
)

// JobUnitCents is the amount of every job charge of RunHolds. Claims are 1 cent, so an
// account's deficit (opening balance minus balance) is claims + jobs*JobUnitCents, and as long
// as an account sees fewer than JobUnitCents claims its number of applied jobs is
// deficit / JobUnitCents: the balance a claim answers is the read of the read-modify-write.
const JobUnitCents = 1_000_000

// HoldsConfig configures RunHolds.
type HoldsConfig struct {
	// Locks[i] protects Accounts[i].
	Locks    []string
	Accounts []string
	// OpeningCents is every account's balance before the first charge.
	OpeningCents int64
	// TTLMs is the lease TTL; keepalives go every TTL/4.
	TTLMs int64
	// WaitMs is how long an acquire queues behind the holder of a lock.
	WaitMs int64
	// PauseEvery pauses one hold in PauseEvery (those whose sequence number is PauseOffset
	// modulo PauseEvery), right before its job write; zero never pauses.
	PauseEvery, PauseOffset int
	// Pause is called for a paused hold, right before the job write, and returns when the
	// worker may go on. In a worker process it asks the harness to SIGSTOP the process and
	// waits until the harness has let it continue. Required when PauseEvery > 0.
	Pause func(ctx context.Context) error
}

// HoldsResult is what a RunHolds worker did, by its own count.
type HoldsResult struct {
	Holds, Pauses int
}

// RunHolds runs a fenced-ledger worker until ctx ends: the bank workload of the
// multi-process campaign, reduced to the requests that matter so that it can make many lock
// competitions. Each hold:
//
//  1. acquires a random Locks[k] with the worker's lease (kept alive every TTL/4 in the
//     background), queueing up to WaitMs behind its holder;
//  2. claims: a 1-cent charge to Accounts[k] with the token, which raises the account's fence
//     so that no older holder can write after it, and whose answer (the balance right after
//     it, in the same transaction) tells how many jobs the account has had;
//  3. on a paused hold, calls cfg.Pause (the process is stopped for longer than its TTL);
//  4. charges the next job (JobUnitCents, a charge id unique to the hold) with the token:
//     the write, which the ledger must refuse if another holder claimed since step 2;
//  5. releases the lock (lease_not_found after a pause: a new lease is created).
//
// With fencing, a job is applied at most once whatever the pauses; without, a paused holder's
// job duplicates its successor's. Every request is recorded on c.Rec.
func RunHolds(ctx context.Context, c *Client, cfg HoldsConfig) (HoldsResult, error) {
	var res HoldsResult
	if cfg.PauseEvery > 0 && cfg.Pause == nil {
		return res, fmt.Errorf("workload: RunHolds: PauseEvery %d without a Pause function", cfg.PauseEvery)
	}
	if len(cfg.Locks) == 0 || len(cfg.Locks) != len(cfg.Accounts) {
		return res, fmt.Errorf("workload: RunHolds: %d locks for %d accounts", len(cfg.Locks), len(cfg.Accounts))
	}
	rng := c.Rand()
	st := &bankState{}
	defer startKeepAlive(c, st, cfg.TTLMs)()

	seq := 0
	var pauseErr error
	for ctx.Err() == nil && pauseErr == nil {
		lease, owner := st.get()
		if lease == "" {
			seq++
			owner = fmt.Sprintf("bank%d.%d", c.Worker, seq)
			op := c.CreateLease(ctx, cfg.TTLMs, owner)
			if op.Outcome != checker.OutOK {
				sleepCtx(ctx, 50*time.Millisecond)
				continue
			}
			st.set(op.Lease, owner)
			continue
		}
		k := rng.Intn(len(cfg.Locks))
		lock, account := cfg.Locks[k], cfg.Accounts[k]
		op := c.AcquireLock(ctx, lock, lease, owner, 0, cfg.WaitMs)
		if !st.granted(ctx, c, op) {
			continue
		}
		res.Holds++
		token := op.Token
		attemptID := fmt.Sprintf("%d.%d", c.Worker, res.Holds)
		claim := c.ChargeAccount(ctx, lock, owner, account, ClaimCharge(account, token, attemptID), 1, token)
		if claim.Outcome == checker.OutOK {
			job := int((cfg.OpeningCents - claim.Balance) / JobUnitCents)
			if cfg.PauseEvery > 0 && res.Holds%cfg.PauseEvery == cfg.PauseOffset%cfg.PauseEvery {
				p := Op{Kind: checker.KindPause, Node: -1, Owner: owner, Lock: lock, Token: token, Call: c.Rec.Clock.Now()}
				pauseErr = cfg.Pause(ctx)
				c.record(p, result{outcome: checker.OutOK})
				res.Pauses++
			}
			if pauseErr == nil {
				c.ChargeAccount(ctx, lock, owner, account, JobCharge(account, job, attemptID), JobUnitCents, token)
			}
		}
		st.released(ctx, c, c.ReleaseLock(ctx, lock, lease, owner, token))
	}
	// Leave nothing held: revoke the lease until a definite answer.
	lease, owner := st.get()
	st.set("", "")
	if lease != "" {
		c.RevokeUntilGone(lease, owner, 10*time.Second, 100*time.Millisecond)
	}
	if pauseErr != nil {
		return res, fmt.Errorf("workload: pause: %w", pauseErr)
	}
	return res, nil
}
