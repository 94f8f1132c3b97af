package io.raftlock;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;

/**
 * A grant held with a lease the client keeps alive: a lock (either mode) or a semaphore
 * permit; a leadership is a {@link Leadership}, this with {@code proclaim}.
 * {@link #close()} (try-with-resources) releases it.
 *
 * <p>{@link #token()} is the fencing token: pass it with every write the grant protects
 * (see {@link Fence}); storage that refuses lower tokens makes a late write harmless.
 * {@link #isLost()} tells whether the grant can still be assumed held <em>now</em>; it
 * cannot tell whether this process is about to be paused between the check and the write:
 * the token is what protects the data.
 */
public class Held implements AutoCloseable {
    /** What a hold holds. */
    public enum Kind {
        /** A lock, exclusive or shared. */
        LOCK,
        /** A semaphore permit. */
        SEMAPHORE,
        /** A leadership of an election ({@link Leadership}). */
        ELECTION
    }

    final RaftLock client;
    private final Kind kind;
    private final String route;
    final String name;
    final long token;
    final Lease lease;
    private final boolean shared;
    private final boolean ownsLease; // false: a lease the caller gave, which release leaves open
    final GrantLoss loss;
    // Each access is one read or one write, so volatile is all the synchronization it needs.
    private volatile boolean held = true;

    Held(RaftLock client, Kind kind, String route, String name, long token, Lease lease, boolean shared, boolean ownsLease, GrantLoss loss) {
        this.ownsLease = ownsLease;
        this.client = client;
        this.kind = kind;
        this.route = route;
        this.name = name;
        this.token = token;
        this.lease = lease;
        this.shared = shared;
        this.loss = loss;
    }

    /** The lock's (semaphore's, election's) name. */
    public String name() {
        return name;
    }

    /** What it holds. */
    public Kind kind() {
        return kind;
    }

    /** The fencing token of the grant (still readable after a loss). */
    public long token() {
        return token;
    }

    /** Whether a lock is held shared. */
    public boolean isShared() {
        return shared;
    }

    /**
     * The value a leadership published last ("" for a lock or a permit).
     *
     * @deprecated only a leadership has a value: use {@link Leadership#value()}, the type
     *     {@link RaftLock#campaign} returns since 0.2.0.
     */
    @Deprecated(since = "0.2.0", forRemoval = true)
    public String value() {
        return "";
    }

    /** The lease holding the grant. */
    public Lease lease() {
        return lease;
    }

    /**
     * Whether the grant can no longer be assumed held: the loss signal is set, safe-until has
     * passed, or the maximum hold ({@link HoldOptions#maxHold}) has ended.
     */
    public boolean isLost() {
        return loss.isLost();
    }

    /**
     * The latest moment at which the grant may still be assumed held: the send time of the
     * last answered keepalive (System.nanoTime) plus the TTL minus the drift margin, or the end
     * of the maximum hold when sooner, converted to an Instant now.
     */
    public Instant safeUntil() {
        return Instant.now().plus(safeFor());
    }

    /** Time left before safe-until (zero or negative once passed). */
    public Duration safeFor() {
        return loss.safeFor();
    }

    /** Completed when the grant is lost (or released). */
    public CompletableFuture<Void> lost() {
        return loss.lost();
    }

    /** Runs fn when the grant is lost (from the thread that notices: keep it short); at once if it is. */
    public void onLost(Runnable fn) {
        loss.onLost(fn);
    }

    /**
     * Publishes {@code value} as the leader's.
     *
     * @deprecated a lock or a permit cannot proclaim (this throws IllegalStateException for
     *     them): {@link RaftLock#campaign} returns a {@link Leadership} since 0.2.0, whose
     *     {@code proclaim} this is.
     */
    @Deprecated(since = "0.2.0", forRemoval = true)
    public long proclaim(String value) {
        throw new IllegalStateException("proclaim: not a leadership (" + kind + ")");
    }

    /**
     * Gives the grant back with its lease and token (a late or repeated release can never
     * free a later grant), then revokes the lease. Throws {@link NotLockedException} when
     * already released, and {@link NotHolderException} or {@link LeaseNotFoundException}
     * when the grant had already been lost; in every case but a network failure the hold is
     * over.
     */
    public void release() {
        if (!held) {
            throw new NotLockedException("release \"" + name + "\": nothing is held");
        }
        RaftLockException err = null;
        try {
            client.releaseAt(route, name, lease.id, token, null);
        } catch (NotHolderException e) {
            if (!(e.attempts > 1 && !lease.isLostSignal())) {
                err = e; // else an earlier attempt, whose answer was lost, released it
            }
        } catch (RaftLockException e) {
            err = e;
        }
        boolean gone = err == null || err instanceof NotHolderException || err instanceof LeaseNotFoundException;
        if (ownsLease) { // a lease the caller gave may hold other grants too: only the hold's own is closed
            try {
                lease.close();
                if (!gone) {
                    err = null; // the release did not get through, but the revoke did
                }
                gone = true;
            } catch (RaftLockException e) {
                if (err == null) {
                    err = e;
                }
            }
        }
        if (gone) {
            held = false;
        }
        if (err != null) {
            throw err;
        }
    }

    /** Whether release has ended the hold. */
    boolean released() {
        return !held;
    }

    /**
     * Releases the grant (the end of a try-with-resources block). When the grant was lost
     * before (its loss signal set, safe-until passed, or its maximum hold ended) it throws
     * {@link LeaseLostException}: the work of the block may have run without the lock (an
     * exception of the block itself wins; this one is then suppressed). A hold released
     * already inside the block is not a loss.
     */
    @Override
    public void close() {
        if (!held) {
            return;
        }
        boolean lostBefore = isLost();
        try {
            release();
        } catch (NotHolderException | LeaseNotFoundException | NotLockedException e) {
            // lost meanwhile: the hold is over either way
        }
        if (lostBefore) {
            throw new LeaseLostException("\"" + name + "\": the hold was lost before the end of the block");
        }
    }

    /** Never shows the lease ID. */
    @Override
    public String toString() {
        return getClass().getSimpleName() + "{" + kind + " " + name + ", token=" + token + ", lost=" + loss.isSet() + "}";
    }
}
