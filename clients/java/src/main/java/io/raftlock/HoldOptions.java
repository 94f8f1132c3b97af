package io.raftlock;

import java.time.Duration;
import java.util.Map;

/** Options of a hold (lock, permit, leadership, lockset); every setter returns a new copy. */
public final class HoldOptions {
    final boolean shared;
    final String owner;
    final Duration drift;
    final Duration interval;
    final Duration maxHold;
    final Duration lockDelay;

    private HoldOptions(boolean shared, String owner, Duration drift, Duration interval, Duration maxHold, Duration lockDelay) {
        this.shared = shared;
        this.owner = owner;
        this.drift = drift;
        this.interval = interval;
        this.maxHold = maxHold;
        this.lockDelay = lockDelay;
    }

    /**
     * Exclusive, no owner, drift margin a tenth of the TTL (at least 100 ms), keepalive every
     * TTL/3, no maximum hold, no lock delay.
     */
    public static HoldOptions defaults() {
        return new HoldOptions(false, "", null, null, null, null);
    }

    /** A shared (reader) grant of a lock or lockset. */
    public HoldOptions shared() {
        return new HoldOptions(true, owner, drift, interval, maxHold, lockDelay);
    }

    /** The holder's name shown in status and history (not a secret, not an identity). */
    public HoldOptions owner(String owner) {
        return new HoldOptions(shared, owner == null ? "" : owner, drift, interval, maxHold, lockDelay);
    }

    /** The margin subtracted from the TTL for safe-until. */
    public HoldOptions driftMargin(Duration d) {
        return new HoldOptions(shared, owner, d, interval, maxHold, lockDelay);
    }

    /** The pause between keepalives. */
    public HoldOptions keepaliveInterval(Duration d) {
        return new HoldOptions(shared, owner, drift, d, maxHold, lockDelay);
    }

    /**
     * The grant ends at most {@code d} after it, on cluster time, even while the lease is kept
     * alive ({@code max_hold_ms}): the next waiter is granted in that commit, and the hold's
     * loss signal is set then (timed from the request's send when it was granted at once,
     * from its answer when it waited). Null or zero: none. Locks and locksets only.
     */
    public HoldOptions maxHold(Duration d) {
        return new HoldOptions(shared, owner, drift, interval, d, lockDelay);
    }

    /**
     * After the hold's lease expires or is revoked without a release, the lock stays free for
     * nobody for {@code d} ({@code lock_delay_ms}): for storage that cannot check fencing
     * tokens. Exclusive locks and locksets only. Null or zero: none.
     */
    public HoldOptions lockDelay(Duration d) {
        return new HoldOptions(shared, owner, drift, interval, maxHold, d);
    }

    /** The maximum hold in nanoseconds, 0 for none. */
    long maxHoldNanos() {
        return maxHold == null || maxHold.isNegative() ? 0 : maxHold.toNanos();
    }

    /** Adds the request fields of these options (mode, max_hold_ms, lock_delay_ms) to fields. */
    void addFields(Map<String, Object> fields) {
        if (shared) {
            fields.put("mode", "shared");
        }
        if (maxHold != null && !maxHold.isZero()) {
            fields.put("max_hold_ms", RaftLock.ms(maxHold.toNanos()));
        }
        if (lockDelay != null && !lockDelay.isZero()) {
            fields.put("lock_delay_ms", RaftLock.ms(lockDelay.toNanos()));
        }
    }
}
