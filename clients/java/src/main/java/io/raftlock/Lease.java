package io.raftlock;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * A lease kept alive in the background by its client's keepalive thread.
 *
 * <p>Its <b>safe-until</b> time is, on this process's monotonic clock (System.nanoTime), the
 * send time of the last answered keepalive (or of the request that created the lease) plus
 * the TTL minus a drift margin. The cluster cannot have expired the lease before then: it
 * starts the TTL only after it received that request. When safe-until passes without a newer
 * answered keepalive, or the cluster says the lease is gone, the lease is <b>lost</b>.
 */
public final class Lease {
    /** The smallest default drift margin. */
    public static final Duration MIN_DRIFT_MARGIN = Duration.ofMillis(100);

    private final RaftLock client;
    final String id;
    final long ttlNanos;
    final long driftNanos;
    final long intervalNanos;

    private final ReentrantLock mu = new ReentrantLock();
    private long lastSent;
    private long safeUntil;
    private RaftLockException error;
    private boolean closed;
    private final List<Runnable> callbacks = new ArrayList<>();
    private final CompletableFuture<Void> lost = new CompletableFuture<>();

    Lease(RaftLock client, String id, long ttlNanos, long sent, Duration drift, Duration interval) {
        this.client = client;
        this.id = id;
        this.ttlNanos = ttlNanos;
        this.driftNanos = drift != null ? drift.toNanos() : Math.max(ttlNanos / 10, MIN_DRIFT_MARGIN.toNanos());
        this.intervalNanos = interval != null ? interval.toNanos() : ttlNanos / 3;
        if (driftNanos <= 0 || driftNanos >= ttlNanos) {
            throw new InvalidArgumentException("drift margin must be positive and shorter than the TTL");
        }
        if (intervalNanos <= 0 || intervalNanos >= ttlNanos - driftNanos) {
            throw new InvalidArgumentException("keepalive interval must be positive and shorter than TTL - drift margin");
        }
        this.lastSent = sent;
        this.safeUntil = sent + ttlNanos - driftNanos;
    }

    /** The client whose cluster the lease lives on. */
    RaftLock client() {
        return client;
    }

    /** The lease's TTL. */
    public Duration ttl() {
        return Duration.ofNanos(ttlNanos);
    }

    /** safe-until on System.nanoTime's clock. */
    long safeUntilNanos() {
        return locked(() -> safeUntil);
    }

    long lastSentNanos() {
        return locked(() -> lastSent);
    }

    /** Reads state the keepalive thread writes, under the lock that keeps it consistent. */
    private <T> T locked(Supplier<T> read) {
        mu.lock();
        try {
            return read.get();
        } finally {
            mu.unlock();
        }
    }

    /**
     * The latest moment at which the holder may still assume the lease alive, as an Instant:
     * the monotonic safe-until converted at the moment of the call (wall-clock steps after it
     * do not move the monotonic deadline the client itself uses).
     */
    public Instant safeUntil() {
        long left = safeUntilNanos() - System.nanoTime();
        return Instant.now().plusNanos(left);
    }

    /** Time left before safe-until (negative or zero once it passed). */
    public Duration safeFor() {
        return Duration.ofNanos(safeUntilNanos() - System.nanoTime());
    }

    /** Whether the lease is lost: its loss signal is set, or safe-until has passed (this sets it). */
    public boolean isLost() {
        if (lost.isDone()) {
            return true;
        }
        if (System.nanoTime() - safeUntilNanos() >= 0) {
            lose(new LeaseLostException("its safe time passed without an answered keepalive"));
            return true;
        }
        return false;
    }

    /**
     * A future completed when the lease is lost or closed. Read after safe-until has passed
     * (after a pause, before the keepalive thread noticed), it is already completed.
     */
    public CompletableFuture<Void> lost() {
        isLost();
        return lost.copy();
    }

    /** Why the lease was lost, or null while it is live. */
    public RaftLockException error() {
        return locked(() -> error);
    }

    /** Runs fn (from the thread that notices) when the lease is lost; at once if it is. */
    public void onLost(Runnable fn) {
        mu.lock();
        try {
            if (error == null) {
                callbacks.add(fn);
                return;
            }
        } finally {
            mu.unlock();
        }
        fn.run();
    }

    /**
     * Stops renewing the lease and revokes it, freeing its grants at once. A lease the
     * cluster no longer knows counts as revoked. Idempotent.
     */
    public void close() {
        mu.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
        } finally {
            mu.unlock();
        }
        lose(new LeaseLostException("the lease was closed"));
        client.keepaliver.remove(this);
        try {
            client.revoke(id, Duration.ofNanos(client.transport.timeoutNanos));
        } catch (LeaseNotFoundException e) {
            // already gone
        }
    }

    /**
     * Records that a request sent at {@code sent} renewed the lease. False when the lease was
     * already lost or its safe time has passed: a late answer does not revive it.
     */
    boolean observe(long sent) {
        boolean expired;
        mu.lock();
        try {
            if (error != null) {
                return false;
            }
            expired = System.nanoTime() - safeUntil >= 0;
            if (!expired) {
                long su = sent + ttlNanos - driftNanos;
                if (su - safeUntil > 0) {
                    lastSent = sent;
                    safeUntil = su;
                }
            }
        } finally {
            mu.unlock();
        }
        if (expired) {
            lose(new LeaseLostException("its safe time passed without an answered keepalive"));
            return false;
        }
        return true;
    }

    void lose(RaftLockException why) {
        List<Runnable> cbs;
        mu.lock();
        try {
            if (error != null) {
                return;
            }
            error = why;
            long now = System.nanoTime();
            if (safeUntil - now > 0) {
                safeUntil = now;
            }
            cbs = new ArrayList<>(callbacks);
            callbacks.clear();
        } finally {
            mu.unlock();
        }
        lost.complete(null);
        for (Runnable r : cbs) {
            try {
                r.run();
            } catch (RuntimeException e) {
                // a callback must not stop the others
            }
        }
    }

    boolean isLostSignal() {
        return lost.isDone();
    }

    /** Attempt timeout and retry pause of this lease's keepalives (nanoseconds). */
    long attemptTimeout() {
        return Math.min(client.transport.timeoutNanos, Math.max(intervalNanos / 2, TimeUnit.MILLISECONDS.toNanos(250)));
    }

    long retryPause() {
        return Math.max(Math.min(intervalNanos / 4, TimeUnit.SECONDS.toNanos(1)), TimeUnit.MILLISECONDS.toNanos(10));
    }

    /** Never shows the lease ID (a secret). */
    @Override
    public String toString() {
        return "Lease{ttl=" + ttl() + ", lost=" + lost.isDone() + "}";
    }
}
