package io.raftlock;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The loss signal of one grant: its lease's, or the end of its maximum hold
 * ({@link HoldOptions#maxHold}), whichever comes first. Without a maximum hold it is the
 * lease's signal.
 */
final class GrantLoss {
    private final Lease lease;
    private final boolean bounded;
    private final long end; // System.nanoTime at which the maximum hold ends, when bounded
    private final CompletableFuture<Void> lost = new CompletableFuture<>();

    /** The loss of a grant on lease, granted no earlier than from (System.nanoTime), ended maxHoldNanos after (0: never). */
    GrantLoss(Lease lease, long maxHoldNanos, long from) {
        this.lease = lease;
        this.bounded = maxHoldNanos > 0;
        this.end = from + maxHoldNanos;
        lease.onLost(() -> lost.complete(null));
        if (bounded) {
            long d = Math.max(end - System.nanoTime(), 0);
            CompletableFuture.delayedExecutor(d, TimeUnit.NANOSECONDS).execute(() -> lost.complete(null));
        }
    }

    /** Whether the grant is lost; reading it after its time has passed sets the signal. */
    boolean isLost() {
        if (lost.isDone()) {
            return true;
        }
        if (lease.isLost() || (bounded && System.nanoTime() - end >= 0)) {
            lost.complete(null);
            return true;
        }
        return false;
    }

    /** Whether the signal is set, without comparing times. */
    boolean isSet() {
        return lost.isDone();
    }

    CompletableFuture<Void> lost() {
        isLost();
        return lost.copy();
    }

    void onLost(Runnable fn) {
        isLost();
        lost.whenComplete((v, e) -> fn.run());
    }

    /** Time left before the grant may no longer be assumed held: the lease's safe time, or the maximum hold's end when sooner. */
    Duration safeFor() {
        long left = lease.safeFor().toNanos();
        if (bounded) {
            left = Math.min(left, end - System.nanoTime());
        }
        return Duration.ofNanos(left);
    }
}
