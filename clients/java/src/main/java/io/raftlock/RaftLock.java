package io.raftlock;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * A client of a raftlock cluster over its HTTP JSON API (HTTP/1.1 keep-alive, TLS with
 * client certificates). Any endpoint serves any request; on a failed connection, a
 * no_leader, unknown_outcome or too_many_requests answer the client tries the other
 * endpoints, with exponential backoff and jitter between rounds (and Retry-After), until
 * the call's timeout. Every acquire that creates a lease carries a request_id drawn once
 * per call and sent with every retry, so a retry after a lost answer gets the first
 * attempt's grant rather than a second lease.
 *
 * <pre>{@code
 * try (RaftLock client = RaftLock.builder().endpoints("http://127.0.0.1:7001").build();
 *      Held held = client.lock("payments/card-42", Duration.ofSeconds(10), Duration.ofSeconds(5))) {
 *     charge(held.token());
 * }
 * }</pre>
 *
 * Thread-safe. {@link #close()} revokes every lease the client still keeps alive.
 */
public final class RaftLock implements AutoCloseable {
    static final String LOCKS = "/v1/locks/";
    static final String SEMAPHORES = "/v1/semaphores/";
    static final String ELECTIONS = "/v1/elections/";
    static final String HISTORY = "/v1/history/";
    static final String LOCKSETS = "/v1/locksets";
    /** Bounds of a lease's TTL (the server's). */
    public static final Duration MIN_TTL = Duration.ofMillis(500);
    /** The longest TTL. */
    public static final Duration MAX_TTL = Duration.ofHours(24);
    /** The longest single server-side wait a hold asks for; longer waits are re-issued. */
    static final long WAIT_CHUNK_NANOS = TimeUnit.SECONDS.toNanos(240);
    private static final SecureRandom RANDOM = new SecureRandom();

    final Transport transport;
    final Keepaliver keepaliver;
    private final long callTimeoutNanos;
    /** Test hook: false makes a retried acquire draw a new request_id per attempt (the bug tests must catch). */
    volatile boolean reuseRequestId = true;

    private RaftLock(Builder b) {
        if (b.endpoints.isEmpty()) {
            String env = b.env.apply("RAFTLOCK_ENDPOINTS");
            if (env != null) {
                b.endpoints(env);
            }
        }
        if (b.token == null) {
            b.token = b.env.apply("RAFTLOCK_TOKEN");
        }
        if (b.endpoints.isEmpty()) {
            throw new InvalidArgumentException("no endpoints given (and RAFTLOCK_ENDPOINTS is not set)");
        }
        List<URI> eps = new ArrayList<>();
        for (String e : b.endpoints) {
            String s = e.strip();
            if (!s.contains("://")) {
                s = (b.tls != null ? "https://" : "http://") + s;
            }
            URI u = URI.create(s);
            if (b.tls != null && "http".equals(u.getScheme())) {
                throw new InvalidArgumentException("endpoint " + u + " is http but TLS is configured: use https");
            }
            eps.add(u);
        }
        HttpClient.Builder hb = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(2));
        if (b.tls != null) {
            hb.sslContext(b.tls);
            SSLParameters p = new SSLParameters();
            p.setEndpointIdentificationAlgorithm("HTTPS");
            hb.sslParameters(p);
        }
        if (b.executor != null) {
            hb.executor(b.executor);
        }
        this.transport = new Transport(eps, hb.build(), b.token, b.timeout, b.minBackoff, b.maxBackoff);
        this.keepaliver = new Keepaliver(this);
        this.callTimeoutNanos = b.callTimeout.toNanos();
    }

    /** A builder: {@code RaftLock.builder().endpoints(...).token(...).tls(...).build()}. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds a {@link RaftLock}. */
    public static final class Builder {
        private final List<String> endpoints = new ArrayList<>();
        private String token;
        private SSLContext tls;
        private Executor executor;
        private Duration timeout = Duration.ofSeconds(5);
        private Duration callTimeout = Duration.ofSeconds(30);
        private Duration minBackoff = Duration.ofMillis(50);
        private Duration maxBackoff = Duration.ofSeconds(1);
        java.util.function.UnaryOperator<String> env = System::getenv; // a test hook

        private Builder() {}

        /**
         * The nodes' base URLs ("http://127.0.0.1:7001"; a bare host:port is http, or https
         * with TLS; a path prefix is kept); each may be a comma-separated list. Default:
         * $RAFTLOCK_ENDPOINTS.
         */
        public Builder endpoints(String... eps) {
            for (String e : eps) {
                for (String p : e.split(",")) {
                    if (!p.isBlank()) {
                        endpoints.add(p.strip());
                    }
                }
            }
            return this;
        }

        /** The nodes' base URLs. */
        public Builder endpoints(List<String> eps) {
            return endpoints(eps.toArray(new String[0]));
        }

        /** An ACL token's secret, sent as "Authorization: Bearer ..." (use TLS). Default: $RAFTLOCK_TOKEN. */
        public Builder token(String secret) {
            this.token = secret;
            return this;
        }

        /** TLS with this context (see {@link Tls#fromPem}); endpoints must be https. */
        public Builder tls(SSLContext ctx) {
            this.tls = ctx;
            return this;
        }

        /** Bounds one attempt on one endpoint, not counting a server-side wait (default 5 s). */
        public Builder timeout(Duration d) {
            this.timeout = d;
            return this;
        }

        /** Bounds a whole call with its retries, not counting a server-side wait (default 30 s). */
        public Builder callTimeout(Duration d) {
            this.callTimeout = d;
            return this;
        }

        /** The pause between rounds of failed attempts (default 50 ms to 1 s). */
        public Builder backoff(Duration min, Duration max) {
            this.minBackoff = min;
            this.maxBackoff = max;
            return this;
        }

        /** The HttpClient's executor (default: its own). */
        public Builder executor(Executor e) {
            this.executor = e;
            return this;
        }

        /** The client. */
        public RaftLock build() {
            return new RaftLock(this);
        }
    }

    /** The endpoints' base URLs. */
    public List<String> endpoints() {
        List<String> out = new ArrayList<>();
        for (URI u : transport.endpoints) {
            out.add(u.toString());
        }
        return out;
    }

    /** Never shows the token. */
    @Override
    public String toString() {
        return "RaftLock{endpoints=" + endpoints() + "}";
    }

    /**
     * Stops the keepalive thread and revokes every lease it still keeps alive (each with
     * one attempt timeout; a revoke that fails leaves the lease to expire by itself).
     */
    @Override
    public void close() {
        for (Lease l : keepaliver.stop()) {
            l.lose(new LeaseLostException("the client was closed"));
            uninterruptibly(() -> {
                try {
                    revoke(l.id, Duration.ofNanos(transport.timeoutNanos));
                } catch (RaftLockException e) {
                    // it expires a TTL after its last keepalive
                }
            });
        }
    }

    // --- plumbing -------------------------------------------------------------------------

    long deadline(Duration timeout, long extraNanos) {
        return System.nanoTime() + (timeout == null ? callTimeoutNanos : timeout.toNanos()) + extraNanos;
    }

    Transport.Result call(Transport.Request r, Duration timeout, long extraNanos) {
        return transport.call(r, deadline(timeout, extraNanos));
    }

    static String newRequestId() {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    static long ms(long nanos) {
        if (nanos <= 0) {
            return 0;
        }
        return Math.max((nanos + 999_999) / 1_000_000, 1);
    }

    static void checkTtl(Duration ttl) {
        if (ttl == null || ttl.compareTo(MIN_TTL) < 0 || ttl.compareTo(MAX_TTL) > 0) {
            throw new InvalidTtlException("TTL " + ttl + " is outside 500 ms to 24 h");
        }
    }

    static long waitNanos(Duration wait) {
        if (wait == null) {
            return 0;
        }
        if (wait.isNegative()) {
            throw new InvalidArgumentException("wait " + wait + " is negative");
        }
        return wait.toNanos();
    }

    // --- leases ---------------------------------------------------------------------------

    /** Creates a lease and keeps it alive in the background until it is closed or lost. */
    public Lease lease(Duration ttl) {
        checkTtl(ttl);
        Transport.Result res = call(new Transport.Request("create lease", "POST", "/v1/leases").body(() -> Map.of("ttl_ms", ms(ttl.toNanos()))), null, 0);
        String id = res.body.path("lease_id").asText();
        return startLease(id, res.body.path("ttl_ms").asLong() * 1_000_000L, res.sent, null);
    }

    Lease startLease(String id, long ttlNanos, long sent, HoldOptions o) {
        Lease l;
        try {
            l = new Lease(this, id, ttlNanos, sent, o == null ? null : o.drift, o == null ? null : o.interval);
        } catch (RaftLockException e) {
            revokeQuietly(id);
            throw e;
        }
        try {
            keepaliver.add(l);
        } catch (IllegalStateException e) {
            revokeQuietly(id); // the client was closed meanwhile: nothing would keep the lease alive
            throw e;
        }
        return l;
    }

    Transport.Result keepaliveMany(List<String> ids, long deadline, long attemptTimeout, long maxBackoff) {
        Transport.Request r = new Transport.Request("batch keepalive", "POST", "/v1/leases/keepalive").body(() -> Map.of("lease_ids", ids));
        r.attemptTimeoutNanos = attemptTimeout;
        r.maxBackoffNanos = maxBackoff;
        r.secrets.addAll(ids);
        return transport.call(r, deadline);
    }

    /**
     * Revokes a lease, releasing everything it holds. A revoke that had to be retried and
     * then finds no lease succeeds (an earlier attempt revoked it).
     */
    public void revoke(String leaseId, Duration timeout) {
        try {
            call(new Transport.Request("revoke", "POST", "/v1/leases/revoke").body(() -> Map.of("lease_id", leaseId)).secret(leaseId), timeout, 0);
        } catch (LeaseNotFoundException e) {
            if (e.attempts <= 1) {
                throw e;
            }
        }
    }

    void revokeQuietly(String id) {
        try {
            revoke(id, Duration.ofNanos(transport.timeoutNanos));
        } catch (RaftLockException e) {
            // it expires by itself
        }
    }

    // --- plain acquire and release ----------------------------------------------------------

    Transport.Result acquireAt(String route, String name, Map<String, Object> fields, String leaseId, Duration ttl, long waitNanos,
            String owner, Transport.Cancel cancel, Duration timeout) {
        Names.check(name);
        return acquireRaw("acquire \"" + name + "\"", "PUT", Transport.namePath(route, name), fields, leaseId, ttl, waitNanos, owner, cancel, timeout);
    }

    Transport.Result acquireRaw(String op, String method, String path, Map<String, Object> fields, String leaseId, Duration ttl, long waitNanos,
            String owner, Transport.Cancel cancel, Duration timeout) {
        boolean withLease = leaseId != null && !leaseId.isEmpty();
        String[] rid = {withLease ? "" : newRequestId()};
        long waitEnd = System.nanoTime() + waitNanos;
        java.util.function.LongSupplier remaining = () -> waitNanos > 0 ? Math.max(waitEnd - System.nanoTime(), 1_000_000L) : 0L;
        Transport.Request r = new Transport.Request(op, method, path);
        r.body = () -> {
            if (!rid[0].isEmpty() && !reuseRequestId) {
                rid[0] = newRequestId();
            }
            Map<String, Object> b = new LinkedHashMap<>(fields);
            if (withLease) {
                b.put("lease_id", leaseId);
            } else if (ttl != null) {
                b.put("ttl_ms", ms(ttl.toNanos()));
            }
            if (waitNanos > 0) {
                b.put("wait_ms", ms(remaining.getAsLong()));
            }
            if (owner != null && !owner.isEmpty()) {
                b.put("owner", owner);
            }
            if (!rid[0].isEmpty()) {
                b.put("request_id", rid[0]);
            }
            return b;
        };
        r.waitNanos = remaining;
        r.cancel = cancel;
        r.secret(leaseId).secret(rid[0]);
        return call(r, timeout, waitNanos);
    }

    /**
     * One acquire of lock {@code name} without a lease: the server creates a lease of
     * {@code ttl} with the grant, and nothing keeps it alive. Use {@link #lock} for work
     * that may outlive one TTL.
     */
    public Grant acquire(String name, Duration ttl, String owner) {
        checkTtl(ttl);
        Transport.Result res = acquireAt(LOCKS, name, Map.of(), null, ttl, 0, owner, null, null);
        JsonNode o = res.body;
        return new Grant(o.path("name").asText(name), o.path("token").asLong(), o.path("lease_id").asText(), o.path("ttl_ms").asLong());
    }

    Transport.Result releaseAt(String route, String name, String leaseId, long token, Duration timeout) {
        if (token <= 0) {
            throw new InvalidArgumentException("release \"" + name + "\": the token of the grant is required");
        }
        Names.check(name);
        return call(new Transport.Request("release \"" + name + "\"", "DELETE", Transport.namePath(route, name))
                .body(() -> Map.of("lease_id", leaseId, "token", token)).secret(leaseId), timeout, 0);
    }

    /**
     * Releases lock {@code name} held by {@code leaseId} with the grant's {@code token}. A
     * retried or late release can never free a later grant (it has another token):
     * {@link NotHolderException}.
     */
    public void release(String name, String leaseId, long token) {
        releaseAt(LOCKS, name, leaseId, token, null);
    }

    // --- holds -----------------------------------------------------------------------------

    /**
     * Takes a grant with a lease of its own: with no wait in one round trip (the lease is
     * created in the entry that grants), else a lease first, then a wait on it.
     */
    Held hold(Held.Kind kind, String route, String name, Map<String, Object> fields, Duration ttl, Duration wait, HoldOptions o) {
        checkTtl(ttl);
        long w = waitNanos(wait);
        Names.check(name);
        if (w == 0) {
            // One round trip: the lease is created in the entry that grants. Safe-until counts
            // from the first attempt: it may have created the lease, its answer lost.
            Transport.Result res = acquireAt(route, name, fields, null, ttl, 0, o.owner, null, null);
            Lease l = startLease(res.body.path("lease_id").asText(), res.body.path("ttl_ms").asLong() * 1_000_000L, res.first, o);
            return newHeld(kind, route, name, res.body, l, o, true, new GrantLoss(l, o.maxHoldNanos(), res.first));
        }
        Lease l = lease(ttl, o);
        try {
            JsonNode[] body = new JsonNode[1];
            takeWith(route, name, fields, l, w, o.owner, b -> body[0] = b);
            return newHeld(kind, route, name, body[0], l, o, true, new GrantLoss(l, o.maxHoldNanos(), System.nanoTime()));
        } catch (RuntimeException e) {
            closeQuietly(l);
            throw e;
        }
    }

    private Held newHeld(Held.Kind kind, String route, String name, JsonNode answer, Lease l, HoldOptions o, boolean ownsLease, GrantLoss loss) {
        long token = answer.path("token").asLong();
        if (kind == Held.Kind.ELECTION) {
            return new Leadership(this, name, token, l, ownsLease, loss, answer.path("value").asText(""));
        }
        return new Held(this, kind, route, name, token, l, o.shared, ownsLease, loss);
    }

    /** Closes l (revoking it) with the thread's interrupt flag cleared meanwhile, ignoring failures: it expires by itself. */
    static void closeQuietly(Lease l) {
        uninterruptibly(() -> {
            try {
                l.close();
            } catch (RaftLockException ignored) {
                // the lease expires by itself
            }
        });
    }

    /**
     * Runs fn with the thread's interrupt flag cleared, then sets the flag again if it was
     * set: for cleanup calls (revoking the lease of an interrupted wait) that an interrupt
     * must not cut short.
     */
    static void uninterruptibly(Runnable fn) {
        boolean was = Thread.interrupted();
        try {
            fn.run();
        } finally {
            if (was) {
                Thread.currentThread().interrupt();
            }
        }
    }

    Lease lease(Duration ttl, HoldOptions o) {
        Transport.Result res = call(new Transport.Request("create lease", "POST", "/v1/leases").body(() -> Map.of("ttl_ms", ms(ttl.toNanos()))), null, 0);
        return startLease(res.body.path("lease_id").asText(), res.body.path("ttl_ms").asLong() * 1_000_000L, res.sent, o);
    }

    /**
     * Takes lock {@code name} with {@code lease} (made by {@link #lease(Duration)}), which may
     * hold several locks: releasing the returned hold leaves the lease open; closing the
     * lease releases every lock it holds.
     */
    public Held lock(Lease lease, String name, Duration waitUpTo, HoldOptions o) {
        return lockOn(lease, name, waitNanos(waitUpTo), o, false);
    }

    /** Takes lock name with lease, which the hold closes on release when it owns it. */
    Held lockOn(Lease lease, String name, long waitNanos, HoldOptions o, boolean ownsLease) {
        Names.check(name);
        Map<String, Object> fields = new LinkedHashMap<>();
        o.addFields(fields);
        long sent = System.nanoTime();
        JsonNode[] body = new JsonNode[1];
        takeWith(LOCKS, name, fields, lease, waitNanos, o.owner, b -> body[0] = b);
        long from = waitNanos == 0 ? sent : System.nanoTime();
        return newHeld(Held.Kind.LOCK, LOCKS, name, body[0], lease, o, ownsLease, new GrantLoss(lease, o.maxHoldNanos(), from));
    }

    /** Takes the grant with lease l, waiting at most waitNanos in the server's queue (re-issued in chunks); cut off when l is lost. */
    long takeWith(String route, String name, Map<String, Object> fields, Lease l, long waitNanos, String owner, Consumer<JsonNode> answer) {
        long end = System.nanoTime() + waitNanos;
        while (true) {
            if (l.isLost()) {
                throw new LeaseLostException("acquire \"" + name + "\": the lease is lost");
            }
            long left = end - System.nanoTime();
            if (left <= 0 && waitNanos > 0) {
                throw new WaitTimeoutException("acquire \"" + name + "\": the wait ended");
            }
            Transport.Cancel cancel = new Transport.Cancel();
            l.onLost(() -> cancel.cancel(new LeaseLostException("acquire \"" + name + "\": the lease was lost while waiting")));
            Transport.Result res;
            try {
                res = acquireAt(route, name, fields, l.id, null, waitNanos > 0 ? Math.min(left, WAIT_CHUNK_NANOS) : 0, owner, cancel, null);
            } catch (LeaseNotFoundException e) {
                l.lose(new LeaseLostException("the cluster no longer knows the lease"));
                throw new LeaseLostException("acquire \"" + name + "\": the lease is gone");
            } catch (WaitTimeoutException e) {
                if (waitNanos > 0 && end - System.nanoTime() > 1_000_000L) {
                    continue;
                }
                throw e;
            }
            long token = res.body.path("token").asLong();
            if (!l.observe(res.sent)) {
                try {
                    releaseAt(route, name, l.id, token, Duration.ofNanos(transport.timeoutNanos));
                } catch (RaftLockException ignored) {
                    // the lease is lost; its grant goes with it
                }
                throw new LeaseLostException("acquire \"" + name + "\": the lease was lost as it was granted");
            }
            answer.accept(res.body);
            return token;
        }
    }

    /**
     * Takes lock {@code name} exclusively and keeps its lease alive in the background.
     * {@code waitUpTo} zero (or null) fails at once with {@link LockHeldException} when it is
     * held; otherwise waits up to that long in the lock's FIFO queue on the server and
     * throws {@link WaitTimeoutException} when the wait ends first.
     */
    public Held lock(String name, Duration ttl, Duration waitUpTo) {
        return lock(name, ttl, waitUpTo, HoldOptions.defaults());
    }

    /** {@link #lock(String, Duration, Duration)} with options (shared mode, owner, drift, interval). */
    public Held lock(String name, Duration ttl, Duration waitUpTo, HoldOptions o) {
        Map<String, Object> fields = new LinkedHashMap<>();
        o.addFields(fields);
        return hold(Held.Kind.LOCK, LOCKS, name, fields, ttl, waitUpTo, o);
    }

    /** Takes a permit of semaphore {@code name} (at most {@code limit} holders at once). */
    public Held semaphore(String name, int limit, Duration ttl, Duration waitUpTo, HoldOptions o) {
        if (limit < 1 || limit > 10000) {
            throw new InvalidArgumentException("limit " + limit + ": want 1 to 10000");
        }
        return hold(Held.Kind.SEMAPHORE, SEMAPHORES, name, Map.of("limit", limit), ttl, waitUpTo, o);
    }

    /**
     * Campaigns in election {@code name} with {@code value}; returns the leadership once
     * elected (a {@link Leadership}, a {@link Held} with {@code proclaim}; its type since 0.2.0).
     */
    public Leadership campaign(String name, String value, Duration ttl, Duration waitUpTo, HoldOptions o) {
        return (Leadership) hold(Held.Kind.ELECTION, ELECTIONS, name, Map.of("value", value), ttl, waitUpTo, o);
    }

    /**
     * Takes every lock of {@code names} at once with a lease of its own (one commit; each
     * lock has its own token). Zero wait fails at once when one is held; a wait that would
     * close a cycle of waiting leases fails with {@link DeadlockException}.
     */
    public LockSet lockSet(List<String> names, Duration ttl, Duration waitUpTo, HoldOptions o) {
        return LockSet.take(this, names, ttl, waitUpTo, o);
    }

    /**
     * A {@link java.util.concurrent.locks.Lock} over lock {@code name} (see
     * {@link RaftLockLock} for what it can and cannot do).
     */
    public RaftLockLock newLock(String name, Duration ttl) {
        return new RaftLockLock(this, name, ttl);
    }

    /**
     * A reentrant {@link java.util.concurrent.locks.Lock} over lock {@code name}, per thread
     * as {@link java.util.concurrent.locks.ReentrantLock} (and Curator's
     * {@code InterProcessMutex}, Redisson's {@code RLock}): the holding thread may lock again,
     * and nested holds share one lease and one token (see {@link RaftLockReentrantLock}).
     */
    public RaftLockReentrantLock newReentrantLock(String name, Duration ttl) {
        return new RaftLockReentrantLock(this, name, ttl);
    }

    // --- asynchronous ------------------------------------------------------------------------

    /** A hold taken with a lease of its own created first, so that an interrupt can revoke whatever it was granted. */
    private Held holdLeaseFirst(Held.Kind kind, String route, String name, Map<String, Object> fields, Duration ttl, Duration wait, HoldOptions o) {
        checkTtl(ttl);
        long w = waitNanos(wait);
        Names.check(name);
        Lease l = lease(ttl, o);
        try {
            JsonNode[] body = new JsonNode[1];
            long sent = System.nanoTime();
            takeWith(route, name, fields, l, w, o.owner, b -> body[0] = b);
            return newHeld(kind, route, name, body[0], l, o, true, new GrantLoss(l, o.maxHoldNanos(), w == 0 ? sent : System.nanoTime()));
        } catch (RuntimeException e) {
            closeQuietly(l);
            throw e;
        }
    }

    private static void releaseQuietly(AutoCloseable h) {
        try {
            h.close();
        } catch (Exception e) {
            // lost or unreachable: the lease expires by itself
        }
    }

    /**
     * {@link #lock(String, Duration, Duration, HoldOptions)} without blocking the caller: the
     * future completes with the hold (or the exception). Cancelling it ends the wait, leaves
     * the lock's queue and leaves no grant behind (the wait's lease is revoked; a hold that
     * arrives as it is cancelled is released). Runs on a virtual thread on JDK 21+.
     */
    public CompletableFuture<Held> lockAsync(String name, Duration ttl, Duration waitUpTo, HoldOptions o) {
        Map<String, Object> fields = new LinkedHashMap<>();
        o.addFields(fields);
        return AsyncCalls.run(() -> holdLeaseFirst(Held.Kind.LOCK, LOCKS, name, fields, ttl, waitUpTo, o), RaftLock::releaseQuietly);
    }

    /** {@link #semaphore} without blocking the caller (see {@link #lockAsync}). */
    public CompletableFuture<Held> semaphoreAsync(String name, int limit, Duration ttl, Duration waitUpTo, HoldOptions o) {
        if (limit < 1 || limit > 10000) {
            throw new InvalidArgumentException("limit " + limit + ": want 1 to 10000");
        }
        return AsyncCalls.run(() -> holdLeaseFirst(Held.Kind.SEMAPHORE, SEMAPHORES, name, Map.of("limit", limit), ttl, waitUpTo, o), RaftLock::releaseQuietly);
    }

    /** {@link #campaign} without blocking the caller (see {@link #lockAsync}). */
    public CompletableFuture<Leadership> campaignAsync(String name, String value, Duration ttl, Duration waitUpTo, HoldOptions o) {
        return AsyncCalls.run(() -> (Leadership) holdLeaseFirst(Held.Kind.ELECTION, ELECTIONS, name, Map.of("value", value), ttl, waitUpTo, o),
                RaftLock::releaseQuietly);
    }

    /** {@link #lockSet} without blocking the caller (see {@link #lockAsync}). */
    public CompletableFuture<LockSet> lockSetAsync(List<String> names, Duration ttl, Duration waitUpTo, HoldOptions o) {
        return AsyncCalls.run(() -> LockSet.take(this, names, ttl, waitUpTo, o, true), RaftLock::releaseQuietly);
    }

    /** {@link #status} without blocking the caller. */
    public CompletableFuture<LockStatus> statusAsync(String name) {
        return AsyncCalls.run(() -> status(name), s -> { });
    }

    // --- reads ------------------------------------------------------------------------------

    JsonNode get(String route, String name, Duration timeout) {
        Names.check(name);
        return call(new Transport.Request("status \"" + name + "\"", "GET", Transport.namePath(route, name)), timeout, 0).body;
    }

    /** Reads lock {@code name} (linearizable). */
    public LockStatus status(String name) {
        return LockStatus.of(get(LOCKS, name, null));
    }

    /** Reads semaphore {@code name}. */
    public SemaphoreStatus semaphoreStatus(String name) {
        return SemaphoreStatus.of(get(SEMAPHORES, name, null));
    }

    /** Reads election {@code name}. */
    public ElectionStatus electionStatus(String name) {
        return ElectionStatus.of(get(ELECTIONS, name, null));
    }

    /** Lock {@code name}'s recent events. */
    public History history(String name) {
        return History.of(get(HISTORY, name, null));
    }

    /**
     * Follows the lock events of the locks whose names start with {@code prefix} ("" for
     * every lock) from now on, or from entry index {@code fromIndex} when it is above 0,
     * handing each to {@code listener} on the watcher's thread (see {@link Watcher}: it
     * reconnects by itself with the last event ID). The first connection is made before this
     * returns: an index older than the events the node holds throws
     * {@link IndexCompactedException} here.
     */
    public Watcher watch(String prefix, long fromIndex, Consumer<Watcher.Event> listener) {
        return Watcher.start(this, prefix, fromIndex, listener);
    }

    /**
     * Follows election {@code name}: {@code listener} gets its state now, then every change of
     * leader or value (see {@link Observation}). Close the observation to stop.
     */
    public Observation observe(String name, Consumer<ElectionStatus> listener) {
        return Observation.start(this, name, listener);
    }

    /** The cluster as the answering node sees it (leader_id, term, nodes...), as JSON. */
    public JsonNode cluster() {
        return call(new Transport.Request("cluster", "GET", "/v1/cluster"), null, 0).body;
    }

}
