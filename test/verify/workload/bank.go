package workload

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/raftlock/raftlock/test/verify/checker"
)

// BankConfig configures a bank worker.
type BankConfig struct {
	// Locks[i] protects Accounts[i].
	Locks    []string
	Accounts []string
	// TTLMs is the lease TTL; keepalives go every TTL/4.
	TTLMs int64
	// WaitMs is how long an acquire queues for a held lock.
	WaitMs int64
	// PauseProb is the chance that a holding attempt pauses once, at a random point, for
	// PauseMin to PauseMax times the TTL: no request at all goes out meanwhile, keepalives
	// included (the client GC pause).
	PauseProb          float64
	PauseMin, PauseMax float64
}

// JobCharge and ClaimCharge build charge ids: a claim raises the account's fence to the
// holder's token before it reads (amount 1); a job is the read-modify-write's write.
// checker.JobOf reads a job charge id back.
func JobCharge(account string, job int, attempt string) string {
	return fmt.Sprintf("j/%s/%d/%s", account, job, attempt)
}

// ClaimCharge returns a claim's charge id.
func ClaimCharge(account string, token uint64, attempt string) string {
	return fmt.Sprintf("c/%s/%d/%s", account, token, attempt)
}

// bankState is what the keepalive goroutine shares with the worker.
type bankState struct {
	run   sync.RWMutex // held for writing during a pause: nothing goes out
	mu    sync.Mutex
	lease string
	owner string
}

func (s *bankState) get() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease, s.owner
}

func (s *bankState) set(lease, owner string) {
	s.mu.Lock()
	s.lease, s.owner = lease, owner
	s.mu.Unlock()
}

// drop forgets the lease and revokes it, best effort: after an answer in doubt the lease
// may hold a lock, and one left to expire would only delay the others by a TTL.
func (s *bankState) drop(ctx context.Context, c *Client) {
	lease, owner := s.get()
	s.set("", "")
	if lease != "" {
		c.RevokeLease(ctx, lease, owner)
	}
}

// granted reads the answer to an acquire with the lease: true if the lock was granted.
// Otherwise it forgets a lease the cluster no longer knows, drops one whose acquire is in
// doubt, and after any other failure (a node down) waits a moment so as not to spin.
func (s *bankState) granted(ctx context.Context, c *Client, op Op) bool {
	switch op.Outcome {
	case checker.OutOK:
		return true
	case checker.OutLeaseNotFound:
		s.set("", "")
	case checker.OutAmbiguous:
		s.drop(ctx, c)
	case checker.OutHeld, checker.OutWaitTimeout:
	default:
		sleepCtx(ctx, 20*time.Millisecond)
	}
	return false
}

// released reads the answer to a release of the lease's lock: it forgets or drops the
// lease as granted does.
func (s *bankState) released(ctx context.Context, c *Client, op Op) {
	switch op.Outcome {
	case checker.OutLeaseNotFound:
		s.set("", "")
	case checker.OutAmbiguous:
		s.drop(ctx, c)
	}
}

// RunBank runs a bank worker until ctx ends. Each attempt:
//
//  1. acquire Locks[k] with the worker's lease, queueing up to WaitMs;
//  2. claim: a 1-cent charge with the token, which raises the account's fence so that no
//     older holder can write after this point;
//  3. read the account and compute the next job number (one more than the highest job
//     charged so far): the read of the read-modify-write;
//  4. read the lock's status (the holder's own check);
//  5. charge the job with the token and a charge id unique to this attempt: the write;
//  6. release.
//
// With fencing on, a job is charged at most once whatever pauses happen, because a holder's
// job write is accepted only if no later token wrote since its claim. A pause (PauseProb)
// can fall before 2, before 5 (the classic one: after the read) or before 6.
func RunBank(ctx context.Context, c *Client, cfg BankConfig) {
	rng := c.Rand()
	st := &bankState{}
	seq := 0
	defer startKeepAlive(c, st, cfg.TTLMs)()

	newLease := func() bool {
		st.run.RLock()
		defer st.run.RUnlock()
		seq++
		owner := fmt.Sprintf("bank%d.%d", c.Worker, seq)
		op := c.CreateLease(ctx, cfg.TTLMs, owner)
		if op.Outcome != checker.OutOK {
			return false
		}
		st.set(op.Lease, owner)
		return true
	}
	pause := func() {
		d := time.Duration((cfg.PauseMin + rng.Float64()*(cfg.PauseMax-cfg.PauseMin)) * float64(cfg.TTLMs) * float64(time.Millisecond))
		op := Op{Kind: checker.KindPause, Node: -1, Call: c.Rec.Clock.Now()}
		st.run.Lock()
		sleepCtx(ctx, d)
		st.run.Unlock()
		_, op.Owner = st.get()
		c.record(op, result{outcome: checker.OutOK})
	}
	attempt := 0
	for ctx.Err() == nil {
		lease, owner := st.get()
		if lease == "" {
			if !newLease() {
				sleepCtx(ctx, 50*time.Millisecond)
			}
			continue
		}
		k := rng.Intn(len(cfg.Locks))
		lock, account := cfg.Locks[k], cfg.Accounts[k]
		pauseAt := 0
		if rng.Float64() < cfg.PauseProb {
			pauseAt = 1 + rng.Intn(3)
		}
		attempt++
		attemptID := fmt.Sprintf("%d.%d", c.Worker, attempt)

		st.run.RLock()
		op := c.AcquireLock(ctx, lock, lease, owner, 0, cfg.WaitMs)
		st.run.RUnlock()
		if !st.granted(ctx, c, op) {
			continue
		}
		token := op.Token
		if pauseAt == 1 {
			pause()
		}
		st.run.RLock()
		claim := c.ChargeAccount(ctx, lock, owner, account, ClaimCharge(account, token, attemptID), 1, token)
		st.run.RUnlock()
		if claim.Outcome == checker.OutOK {
			st.run.RLock()
			rd, acct := c.ReadAccount(ctx, account)
			st.run.RUnlock()
			if rd.Outcome == checker.OutOK {
				job := 0
				for _, ch := range acct.Charges {
					if n := checker.JobOf(ch.ChargeID); n >= job {
						job = n + 1
					}
				}
				if pauseAt == 2 {
					pause()
				}
				st.run.RLock()
				c.LockStatus(ctx, lock)
				c.ChargeAccount(ctx, lock, owner, account, JobCharge(account, job, attemptID), int64(10+job%7), token)
				st.run.RUnlock()
			}
		}
		if pauseAt == 3 {
			pause()
		}
		st.run.RLock()
		rel := c.ReleaseLock(ctx, lock, lease, owner, token)
		st.run.RUnlock()
		st.released(ctx, c, rel)
	}
	// Leave nothing held for the next round.
	lease, owner := st.get()
	if lease != "" {
		c.RevokeUntilGone(lease, owner, 10*time.Second, 100*time.Millisecond)
	}
}

// startKeepAlive starts bankKeepAlive for st's lease on a client of its own, whose random
// source is seeded from c's (Client.Rand is the worker's and not safe for two goroutines),
// and returns the function that stops it and waits for it.
func startKeepAlive(c *Client, st *bankState, ttlMs int64) (stop func()) {
	kc := NewClient(c.Endpoints, c.LedgerURL, c.Rec, c.Workload, c.Worker, c.Rand().Int63())
	kc.Timeout = c.Timeout
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer kc.Close()
		bankKeepAlive(ctx, kc, st, ttlMs)
	}()
	return func() { cancel(); wg.Wait() }
}

// bankKeepAlive renews the worker's lease every TTL/4, and reads it every fourth time,
// except while the worker pauses.
func bankKeepAlive(ctx context.Context, kc *Client, st *bankState, ttlMs int64) {
	every := time.Duration(ttlMs) * time.Millisecond / 4
	for i := 0; ctx.Err() == nil; i++ {
		sleepCtx(ctx, every)
		st.run.RLock()
		lease, owner := st.get()
		if lease != "" && ctx.Err() == nil {
			op := kc.KeepAlive(ctx, lease, owner, ttlMs)
			if op.Outcome == checker.OutOK && i%4 == 3 {
				kc.ReadLease(ctx, lease, owner, ttlMs)
			}
		}
		st.run.RUnlock()
	}
}

// RunObserver reads the status of locks, one after another, until ctx ends.
func RunObserver(ctx context.Context, c *Client, locks []string, every time.Duration) {
	for i := 0; ctx.Err() == nil; i++ {
		c.LockStatus(ctx, locks[i%len(locks)])
		sleepCtx(ctx, every)
	}
}
