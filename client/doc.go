// Package client is the Go client of raftlock: leases kept alive in the background,
// a Mutex with fencing tokens and server-side blocking waits, a read/write lock
// (RWMutex), a counting Semaphore and a leader Election on the same machinery, and
// low-level calls that mirror the HTTP JSON API one to one.
//
// It imports only the api package and the standard library (plus go-hclog), so a worker
// can depend on it without pulling in a server.
//
// # Taking a lock
//
//	c, err := client.New([]string{"http://10.0.0.1:7001", "http://10.0.0.2:7001", "http://10.0.0.3:7001"})
//	lease, err := c.NewLease(ctx, 10*time.Second)
//	defer lease.Close(context.Background())
//	m := client.NewMutex(lease, "payments/order-1001")
//	if err := m.Lock(ctx); err != nil { ... }
//	// pass m.Token() with every write the storage must fence, e.g. "Fencing-Token: 4711"
//	m.Unlock(ctx)
//
// # Shared locks, semaphores and elections
//
// RWMutex, Semaphore and Election are held exactly like a Mutex: with a given Lease or
// one of their own per hold, the same options (WithOwner, WithLeaseTTL, WithWaitChunk),
// server-side FIFO waits re-issued in chunks, a fencing token per grant (Token), and Lost
// and SafeUntil. They differ only in what they hold:
//
//	rw := c.NewRWMutex("catalog/prices")     // RLock: any number of readers; Lock: one writer
//	sem := c.NewSemaphore("exports", 4)      // Acquire: one of 4 permits
//	el := c.NewElection("services/scheduler") // Campaign(ctx, addr): lead and publish addr
//	for l := range el.Observe(ctx) { ... }   // who leads, and what it published
//
// Their answers map to ErrModeConflict (no upgrade from shared to exclusive or back:
// release first), ErrSemaphoreFull, ErrLimitConflict (the semaphore is in use with another
// limit) and ErrElectionHeld.
//
// Any endpoint serves any request: followers forward to the leader. On a connection
// error, a timed-out attempt (WithTimeout) or a 503 answer (no_leader or unknown_outcome)
// the client tries the next endpoint, and pauses with exponential backoff and jitter after
// each full round, until the caller's context ends. Acquire, Release, KeepAlive and
// Revoke are safe to retry: an acquire with a lease is idempotent (a retry returns the
// same grant); an acquire without one carries a request ID, drawn at random once per call
// and sent with every retry, from which the server derives the lease it creates, so a
// retry returns the first attempt's grant instead of making a second lease; and a release
// names the grant's token, so a late or repeated release can never free a later grant.
//
// A 429 answer is one of two things. too_many_requests: the node serves its limit of
// held-open requests (waits, blocking queries) and proposed nothing; the client waits
// for the answer's Retry-After (or its backoff, if longer) and tries again, within the
// caller's context, giving up at once with ErrTooManyRequests if the context's deadline
// comes first. quota_exceeded: a limit of the cluster's state (leases, locks, waiters)
// is reached and nothing was applied; retrying cannot help until something is released,
// so the client returns ErrQuotaExceeded at once (RetryAfter gives the server's hint).
//
// Errors from the API match one of the package's sentinel errors (ErrLockHeld,
// ErrWaitTimeout, ErrNotHolder, ErrLeaseNotFound, ErrNoLeader, ErrQuotaExceeded,
// ErrUnauthenticated, ErrPermissionDenied, ErrConflict, ...)
// and the server's *api.Error, both with errors.Is. What the client retries is each
// code's retry class in the API's catalogue of outcomes (api.Outcomes). A code the client
// does not know (a newer server's) is ErrServer and is not retried; errors.As still gives
// its *api.Error, code and message.
//
// # TLS and ACL tokens
//
// WithTLS makes the client speak HTTPS; TLSFromFiles builds its config from the cluster's
// CA file and, when the cluster requires client certificates, a client certificate and
// key (`raftlock tls cert --client NAME` issues one). WithToken sends an ACL token's
// secret as "Authorization: Bearer <secret>" on every request:
//
//	cfg, err := client.TLSFromFiles("ca.pem", "worker.pem", "worker-key.pem")
//	c, err := client.New([]string{"https://10.0.0.1:7001"}, client.WithTLS(cfg),
//		client.WithToken(os.Getenv("RAFTLOCK_ACL_TOKEN")))
//
// Secrets stay out of sight: the token and lease IDs never appear in the client's log
// lines or error texts (even when a server echoes them), and printing a Client does not
// show the token. Keepalive, lease lookup and revoke send the lease ID in the request
// body (POST /v1/leases/keepalive, /lookup, /revoke), not in the URL, which ends up in
// access logs; against a server older than those routes the client falls back once to
// the old routes, which carry the ID in the path.
//
// With ACLs on, a request without a valid token fails with ErrUnauthenticated (401) and
// one whose token lacks the right with ErrPermissionDenied (403); a request that
// contradicts the cluster's state (bootstrapping twice, re-pointing a member without
// Replace) fails with ErrConflict (409). None is retried: every node would answer the
// same. A TLS handshake that fails on every endpoint (an untrusted certificate, a refused
// client certificate) fails with ErrTLS after one round instead of being waited out.
// ACLBootstrap and ACLTokenCreate, whose answers carry a secret shown once, are not
// retried after an attempt that may have been applied.
//
// # What a lock does not promise
//
// No lock service can promise that a client which believes it holds a lock still holds
// it: the holder can pause (a stop-the-world GC, swapping, SIGSTOP, a VM migration) between
// checking and writing, for longer than its lease. The lock gives mutual exclusion in the
// common case and efficiency; safety comes from the fencing token. Every grant carries a
// token that strictly increases, and the storage must accept a write only if its token is
// at least the highest it has accepted for that resource, atomically with the write (see
// the fencing package). A holder that wakes from a pause with an old token is refused.
// Tokens are Raft log indexes, global to the cluster and not bound to a lock name: a
// storage that cannot authenticate its writers checks the token against the lock it
// protects with CheckHolder (docs/FENCING.md, "What a token proves").
//
// # The timing contract: SafeUntil
//
// A Lease tells its holder until when it may assume the lease is still alive, on the
// client's own monotonic clock:
//
//	SafeUntil = send time of the last answered keepalive (or create, or acquire)
//	            + TTL - drift margin
//
// Why this is safe: the server stamps the lease's deadline as cluster time + TTL, reading
// cluster time after the request arrived (so after it was sent), and cluster time never
// runs faster than real time (it advances only with the leader's monotonic clock, and
// stands still while there is no leader). So the cluster cannot expire the lease before
// send time + TTL has passed on any correctly running clock. The drift margin (default
// DefaultDriftMargin: TTL/10, at least 100 ms) absorbs the rate difference between this
// machine's clock and the servers' and the delay before the holder reacts.
//
// A worked example, with a TTL of 10 s and the default margin of 1 s, times on the
// client's monotonic clock:
//
//	t = 0.000 s   NewLease sends POST /v1/leases
//	t = 0.030 s   answered: SafeUntil = 0 + 10 - 1 = 9.000 s
//	t = 3.100 s   keepalive sent (about every TTL/3, jittered)
//	t = 3.140 s   answered: SafeUntil = 3.100 + 9 = 12.100 s
//	t = 6.050 s   keepalive sent; the network to every node is cut
//	              the client retries across endpoints, faster than every TTL/3
//	t = 12.100 s  no keepalive answered: Done (and Mutex.Lost) close, Err matches
//	              ErrLeaseLost. The holder must stop writing.
//	              The cluster cannot expire the lease before 3.100 + 10 = 13.100 s,
//	              1 s after the holder was told.
//
// A keepalive answered after SafeUntil has passed does not revive the lease: once Done
// is closed it stays closed. A keepalive answered with lease_not_found (the lease expired
// or was revoked) closes Done at once.
//
// All the Leases of one Client are kept alive together: one loop per Client sends one
// batch keepalive (POST /v1/leases/keepalive with lease_ids) for every lease due within
// half its interval, so a process with thousands of leases sends about one request per
// interval. The contract above holds per lease: its send time is that of the batch attempt
// that was answered, and a batch answer listing it in not_found closes its Done at once.
// Against a server older than batch keepalives the client renews each lease on its own.
//
// SafeUntil is only as good as the holder's ability to look at it: a pause between
// "SafeUntil is in the future" and the write defeats it. That is what fencing tokens are
// for.
//
// # Waiting for a lock
//
// Mutex.Lock waits on the server (a PUT with wait_ms): the answer comes from the commit
// that hands the lock over, with no polling. Waits longer than the wait chunk (default
// DefaultWaitChunk) are re-issued; a re-issued wait joins the back of the queue. When the
// caller's context ends, the request is cancelled and the server takes the lease out of
// the queue (releasing the lock if it was granted in the meantime), so nothing is left
// behind. A waiter whose lease is lost stops waiting with ErrLeaseLost.
//
// # The package's files
//
// The Client and its calls:
//
//	client.go      Client, New, Endpoints
//	options.go     Option, the With* options and the Default* values they override
//	retry.go       do: failover across endpoints, backoff, Retry-After, once-only requests
//	attempt.go     one HTTP exchange with one endpoint, and its answer mapped to an error
//	paths.go       endpoint parsing, route paths, name and argument checks before sending
//	errors.go      the error values, the API-code mapping, RetryAfter
//	token.go       the ACL token, kept out of print, and redaction of secrets in errors
//	tls.go         TLSFromFiles
//	locks.go       Acquire, Release, Status, CheckHolder, List, and the acquire-like calls of every primitive
//	leases.go      CreateLease, KeepAlive(Many), Revoke, GetLease: the lease calls
//	watch.go       History, and Watch over the event stream
//	membership.go  Cluster, AddNode, RemoveNode, TransferLeader
//	acl.go         ACL bootstrap, policies and tokens
//	snapshot.go    Snapshot: a verified, streamed backup
//
// The primitives, built on those calls:
//
//	lease.go       Lease: a lease kept alive, SafeUntil, Done
//	keepalive.go   the per-Client loop that renews every Lease in batches
//	hold.go        what every held primitive shares: options, waits, give-back, loss
//	mutex.go       Mutex
//	rwmutex.go     RWMutex
//	semaphore.go   Semaphore
//	election.go    Election, Observe
//	lockset.go     LockSet, NewLockSet, AcquireSet, ReleaseSet; WithMaxHold, WithLockDelay
//	format.go      fmt of a Lease and of the primitives: never the lease ID
package client
