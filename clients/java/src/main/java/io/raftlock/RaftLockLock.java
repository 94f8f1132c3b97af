package io.raftlock;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A non-reentrant {@link Lock} over one raftlock lock, for code written against
 * {@code Lock}; {@link RaftLockReentrantLock} is the reentrant one.
 *
 * <p>Interrupts follow the {@code Lock} contract: {@link #lockInterruptibly()} and
 * {@link #tryLock(long, TimeUnit)} throw {@link InterruptedException} (the flag cleared) when
 * the thread is interrupted before or while they wait, and leave no grant behind (the wait's
 * lease is revoked, so a grant that came as the wait was given up is freed at once);
 * {@link #lock()} keeps waiting through interrupts and sets the flag again before it
 * returns.
 *
 * <p>Limits, by design:
 * <ul>
 * <li>Not reentrant: {@code lock()} by the thread that holds it throws
 *     IllegalStateException.</li>
 * <li>Threads of this process queue on a local semaphore first, then the holder waits in
 *     the cluster's queue; any thread may unlock (as with a Semaphore, unlike ReentrantLock).</li>
 * <li>{@code Lock} has no way to report a loss while locked: a hold lost meanwhile stays
 *     "locked" locally until {@code unlock()}, which then releases and throws
 *     {@link LeaseLostException}. Use {@link #held()} for the token and the loss signal, and
 *     fence every write with the token.</li>
 * <li>{@code newCondition()} is unsupported. {@code lock()} waits without bound, in chunks;
 *     errors other than a wait that ends (the cluster unreachable past the call timeout)
 *     are thrown as {@link RaftLockException}.</li>
 * </ul>
 */
public final class RaftLockLock implements Lock {
    private final RaftLock client;
    private final String name;
    private final Duration ttl;
    private final Semaphore local = new Semaphore(1, true);
    private final AtomicReference<Held> held = new AtomicReference<>();
    private final AtomicReference<Thread> holder = new AtomicReference<>();

    RaftLockLock(RaftLock client, String name, Duration ttl) {
        Names.check(name);
        RaftLock.checkTtl(ttl);
        this.client = client;
        this.name = name;
        this.ttl = ttl;
    }

    /** The current hold (its token, its loss signal), when locked. */
    public Optional<Held> held() {
        return Optional.ofNullable(held.get());
    }

    private void checkNotHolder() {
        if (holder.get() == Thread.currentThread()) {
            throw new IllegalStateException("RaftLockLock is not reentrant: this thread holds " + name + " (use newReentrantLock)");
        }
    }

    /** Records h as the current hold, of this thread; false (the local permit given back) when h is null. */
    private boolean keep(Held h) {
        if (h == null) {
            local.release();
            return false;
        }
        held.set(h);
        holder.set(Thread.currentThread());
        return true;
    }

    /** Waits for the lock through interrupts (the flag is set again before it returns). */
    @Override
    public void lock() {
        checkNotHolder();
        boolean interrupted = false;
        while (true) {
            try {
                local.acquire();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt(); // deferred again by the take, set again after it
        }
        try {
            keep(LockAdapter.takeUninterruptibly(client, name, ttl, HoldOptions.defaults()));
        } catch (RuntimeException e) {
            local.release();
            throw e;
        }
    }

    /** Waits for the lock; an interrupt throws InterruptedException (flag cleared) and leaves no grant. */
    @Override
    public void lockInterruptibly() throws InterruptedException {
        checkNotHolder();
        local.acquire();
        try {
            keep(LockAdapter.takeInterruptibly(client, name, ttl, HoldOptions.defaults(), LockAdapter.FOREVER));
        } catch (RuntimeException | InterruptedException e) {
            local.release();
            throw e;
        }
    }

    /** Takes the lock if it is free now (one request); false when another lease holds it. */
    @Override
    public boolean tryLock() {
        checkNotHolder();
        if (!local.tryAcquire()) {
            return false;
        }
        try {
            return keep(LockAdapter.takeNow(client, name, ttl, HoldOptions.defaults()));
        } catch (RuntimeException e) {
            local.release();
            throw e;
        }
    }

    /**
     * Waits at most {@code time} for the lock; false when the time passed first (nothing left
     * held). An interrupt throws InterruptedException (flag cleared) and leaves no grant.
     */
    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        checkNotHolder();
        long end = System.nanoTime() + unit.toNanos(time);
        if (!local.tryAcquire(time, unit)) {
            return false;
        }
        try {
            long left = end - System.nanoTime();
            return keep(LockAdapter.takeInterruptibly(client, name, ttl, HoldOptions.defaults(), Math.max(left, 0)));
        } catch (RuntimeException | InterruptedException e) {
            local.release();
            throw e;
        }
    }

    /** Releases the hold; throws {@link LeaseLostException} (after releasing) when it had been lost. */
    @Override
    public void unlock() {
        Held h = held.getAndSet(null);
        if (h == null) {
            throw new IllegalMonitorStateException("not locked: " + name);
        }
        holder.set(null);
        try {
            RaftLock.uninterruptibly(h::close);
        } finally {
            local.release();
        }
    }

    /** Unsupported: a distributed lock has no condition variables. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("RaftLockLock has no conditions");
    }

    /** Never shows the lease ID. */
    @Override
    public String toString() {
        Held h = held.get();
        return "RaftLockLock{" + name + (h == null ? ", unlocked" : ", token=" + h.token()) + "}";
    }
}
