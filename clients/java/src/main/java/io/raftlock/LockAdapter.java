package io.raftlock;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * How the {@link java.util.concurrent.locks.Lock} adapters take the lock: a lease of the
 * hold's own first, then a wait in the lock's queue on that lease, re-issued in chunks. Every
 * way the take can end without a grant (an interrupt, a timeout, an error) revokes that
 * lease, with the interrupt flag cleared meanwhile, so that no grant made as the wait was
 * given up is left behind.
 */
final class LockAdapter {
    /** The longest server-side wait of one request of a Lock adapter's wait. */
    static final long CHUNK_NANOS = TimeUnit.SECONDS.toNanos(60);
    /** A wait without bound. */
    static final long FOREVER = -1;

    private LockAdapter() {}

    /**
     * Interruptibly takes lock name with a lease of its own, waiting at most nanos (FOREVER:
     * without bound; 0: not at all). Returns null when the wait ended first, or when a wait of
     * 0 found the lock held. An interrupt (before or during the take) throws
     * InterruptedException with the flag cleared, as the Lock contract says.
     */
    static Held takeInterruptibly(RaftLock c, String name, Duration ttl, HoldOptions o, long nanos) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        try {
            return take(c, name, ttl, o, nanos);
        } catch (InterruptedCallException e) {
            Thread.interrupted(); // the contract: InterruptedException with the flag cleared
            InterruptedException ie = new InterruptedException("waiting for \"" + name + "\" was interrupted; no grant is left behind");
            ie.initCause(e);
            throw ie;
        }
    }

    /**
     * Takes lock name, waiting without bound through interrupts: an interrupt neither stops
     * nor fails the wait, and the thread's flag is set again before this returns.
     */
    static Held takeUninterruptibly(RaftLock c, String name, Duration ttl, HoldOptions o) {
        return Transport.deferringInterrupts(() -> take(c, name, ttl, o, FOREVER));
    }

    /**
     * Takes lock name if it is free now, in one request (the lease is created with the grant);
     * null when another lease holds it. Interrupts are deferred: the request ends either way.
     */
    static Held takeNow(RaftLock c, String name, Duration ttl, HoldOptions o) {
        return Transport.deferringInterrupts(() -> {
            try {
                return c.lock(name, ttl, Duration.ZERO, o);
            } catch (LockHeldException e) {
                return null;
            }
        });
    }

    private static Held take(RaftLock c, String name, Duration ttl, HoldOptions o, long nanos) {
        long end = System.nanoTime() + Math.max(nanos, 0);
        Lease l = c.lease(ttl, o);
        try {
            while (true) {
                long left = nanos == FOREVER ? CHUNK_NANOS : end - System.nanoTime();
                if (nanos != 0 && left <= 0) {
                    RaftLock.closeQuietly(l);
                    return null;
                }
                try {
                    return c.lockOn(l, name, nanos == 0 ? 0 : Math.min(left, CHUNK_NANOS), o, true);
                } catch (WaitTimeoutException e) {
                    // next chunk
                } catch (LockHeldException e) {
                    if (nanos != 0) {
                        throw e;
                    }
                    RaftLock.closeQuietly(l);
                    return null;
                }
            }
        } catch (RuntimeException e) {
            RaftLock.closeQuietly(l);
            throw e;
        }
    }
}
