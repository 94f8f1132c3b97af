package io.raftlock;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A reentrant {@link Lock} over one raftlock lock, per thread, as
 * {@link ReentrantLock} is in one JVM and Curator's {@code InterProcessMutex} and Redisson's
 * {@code RLock} are across processes ({@link RaftLock#newReentrantLock}).
 *
 * <ul>
 * <li><b>Nested holds</b>: the thread that holds it may lock again; each lock counts one
 *     more ({@link #getHoldCount()}), each {@link #unlock()} one less, and the lock is
 *     released in the cluster when the count reaches zero. All nested holds share one lease
 *     and one fencing token ({@link #held()}).</li>
 * <li><b>Owner thread</b>: {@link #unlock()} by any other thread throws
 *     {@link IllegalMonitorStateException}, as {@code ReentrantLock}'s does.</li>
 * <li><b>Loss</b>: a hold lost meanwhile (its lease expired, the cluster unreachable past its
 *     safe time) is reported to every nested level: a nested {@link #lock()} throws
 *     {@link LeaseLostException} (counting nothing), and every {@link #unlock()} throws it
 *     after counting down (the outermost after releasing), so each level's {@code finally}
 *     learns that its work may have run without the lock. Fence every write with the token.</li>
 * <li><b>Interrupts</b>: as {@link RaftLockLock}: {@link #lockInterruptibly()} and
 *     {@link #tryLock(long, TimeUnit)} throw {@link InterruptedException} (flag cleared) and
 *     leave no grant behind; {@link #lock()} waits through interrupts and sets the flag again
 *     before it returns. A nested lock never waits.</li>
 * <li><b>Threads of this process</b> queue on a fair local {@link ReentrantLock} first; only its
 *     owner waits in the cluster's queue. No monitor is held anywhere, so virtual threads are
 *     not pinned. No {@code newCondition()}.</li>
 * </ul>
 */
public final class RaftLockReentrantLock implements Lock {
    private final RaftLock client;
    private final String name;
    private final Duration ttl;
    private final ReentrantLock local = new ReentrantLock(true);
    private volatile Held held; // written by the owner thread only, with local held

    RaftLockReentrantLock(RaftLock client, String name, Duration ttl) {
        Names.check(name);
        RaftLock.checkTtl(ttl);
        this.client = client;
        this.name = name;
        this.ttl = ttl;
    }

    /** The current hold (token, loss signal) shared by every nested level, when locked. */
    public Optional<Held> held() {
        return Optional.ofNullable(held);
    }

    /** How many holds the calling thread has (0 when it does not hold the lock). */
    public int getHoldCount() {
        return local.getHoldCount();
    }

    /** Whether the calling thread holds the lock. */
    public boolean isHeldByCurrentThread() {
        return local.isHeldByCurrentThread();
    }

    /**
     * Called with local just taken: a nested hold counts one more (or, lost, gives local back
     * and throws); the first takes the lock in the cluster with take, giving local back when
     * it does not. Returns whether the lock is held.
     */
    private boolean enter(Taker take) throws InterruptedException {
        if (local.getHoldCount() > 1) {
            Held h = held;
            if (h.isLost()) {
                local.unlock();
                throw new LeaseLostException("\"" + name + "\": the hold was lost (nested lock at depth " + local.getHoldCount() + ")");
            }
            return true;
        }
        Held h;
        try {
            h = take.take();
        } catch (RuntimeException | InterruptedException e) {
            local.unlock();
            throw e;
        }
        if (h == null) {
            local.unlock();
            return false;
        }
        held = h;
        return true;
    }

    @FunctionalInterface
    private interface Taker {
        Held take() throws InterruptedException;
    }

    /** Waits for the lock through interrupts (the flag is set again before it returns); nested: counts one more. */
    @Override
    public void lock() {
        local.lock();
        try {
            enter(() -> LockAdapter.takeUninterruptibly(client, name, ttl, HoldOptions.defaults()));
        } catch (InterruptedException e) {
            throw new IllegalStateException(e); // unreachable: the take defers interrupts
        }
    }

    /** Waits for the lock; an interrupt throws InterruptedException (flag cleared) and leaves no grant. */
    @Override
    public void lockInterruptibly() throws InterruptedException {
        local.lockInterruptibly();
        enter(() -> LockAdapter.takeInterruptibly(client, name, ttl, HoldOptions.defaults(), LockAdapter.FOREVER));
    }

    /** Takes the lock if it is free now (nested: counts one more); false otherwise. */
    @Override
    public boolean tryLock() {
        if (!local.tryLock()) {
            return false;
        }
        try {
            return enter(() -> LockAdapter.takeNow(client, name, ttl, HoldOptions.defaults()));
        } catch (InterruptedException e) {
            throw new IllegalStateException(e); // unreachable: takeNow defers interrupts
        }
    }

    /**
     * Waits at most {@code time} for the lock (nested: counts one more at once); false when the
     * time passed first. An interrupt throws InterruptedException (flag cleared) and leaves no
     * grant.
     */
    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        long end = System.nanoTime() + unit.toNanos(time);
        if (!local.tryLock(time, unit)) {
            return false;
        }
        return enter(() -> LockAdapter.takeInterruptibly(client, name, ttl, HoldOptions.defaults(), Math.max(end - System.nanoTime(), 0)));
    }

    /**
     * Counts one hold down; the last releases the lock in the cluster. Throws
     * {@link IllegalMonitorStateException} when the calling thread does not hold the lock,
     * and {@link LeaseLostException} (after counting down, and releasing for the last) when
     * the hold had been lost.
     */
    @Override
    public void unlock() {
        if (!local.isHeldByCurrentThread()) {
            throw new IllegalMonitorStateException("\"" + name + "\" is not held by this thread");
        }
        Held h = held;
        if (local.getHoldCount() > 1) {
            boolean lost = h.isLost();
            int depth = local.getHoldCount();
            local.unlock();
            if (lost) {
                throw new LeaseLostException("\"" + name + "\": the hold was lost (unlock at depth " + depth + ")");
            }
            return;
        }
        held = null;
        try {
            RaftLock.uninterruptibly(h::close); // throws LeaseLostException after releasing when lost
        } finally {
            local.unlock();
        }
    }

    /** Unsupported: a distributed lock has no condition variables. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("RaftLockReentrantLock has no conditions");
    }

    /** Never shows the lease ID. */
    @Override
    public String toString() {
        Held h = held;
        return "RaftLockReentrantLock{" + name + (h == null ? ", unlocked" : ", token=" + h.token()) + "}";
    }
}
