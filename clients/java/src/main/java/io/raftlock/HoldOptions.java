package io.raftlock;

import java.time.Duration;

/** Options of a hold (lock, permit, leadership, lockset); every setter returns a new copy. */
public final class HoldOptions {
    final boolean shared;
    final String owner;
    final Duration drift;
    final Duration interval;

    private HoldOptions(boolean shared, String owner, Duration drift, Duration interval) {
        this.shared = shared;
        this.owner = owner;
        this.drift = drift;
        this.interval = interval;
    }

    /** Exclusive, no owner, drift margin a tenth of the TTL (at least 100 ms), keepalive every TTL/3. */
    public static HoldOptions defaults() {
        return new HoldOptions(false, "", null, null);
    }

    /** A shared (reader) grant of a lock or lockset. */
    public HoldOptions shared() {
        return new HoldOptions(true, owner, drift, interval);
    }

    /** The holder's name shown in status and history (not a secret, not an identity). */
    public HoldOptions owner(String owner) {
        return new HoldOptions(shared, owner == null ? "" : owner, drift, interval);
    }

    /** The margin subtracted from the TTL for safe-until. */
    public HoldOptions driftMargin(Duration d) {
        return new HoldOptions(shared, owner, d, interval);
    }

    /** The pause between keepalives. */
    public HoldOptions keepaliveInterval(Duration d) {
        return new HoldOptions(shared, owner, drift, d);
    }
}
