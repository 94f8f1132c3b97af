package io.raftlock;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.function.BooleanSupplier;

/**
 * A {@link Lock} over one raftlock lock, for code written against {@code Lock}.
 *
 * <p>Limits, by design:
 * <ul>
 * <li>Not reentrant: {@code lock()} by the thread that holds it throws
 *     IllegalStateException (a reentrant distributed lock hides which token protects what).</li>
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
    private static final Duration CHUNK = Duration.ofSeconds(60);

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
            throw new IllegalStateException("RaftLockLock is not reentrant: this thread holds " + name);
        }
    }

    private boolean take(long nanos) {
        long end = System.nanoTime() + nanos;
        while (true) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            try {
                return hold(client.lock(name, ttl, Duration.ofNanos(Math.min(left, CHUNK.toNanos()))));
            } catch (WaitTimeoutException e) {
                // next chunk
            }
        }
    }

    @Override
    public void lock() {
        checkNotHolder();
        local.acquireUninterruptibly();
        try {
            take(Long.MAX_VALUE / 4);
        } catch (RuntimeException e) {
            local.release();
            throw e;
        }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        checkNotHolder();
        local.acquire();
        try {
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
            take(Long.MAX_VALUE / 4);
        } catch (RuntimeException | InterruptedException e) {
            local.release();
            throw e;
        }
    }

    /** Records h as the current hold, of this thread. */
    private boolean hold(Held h) {
        held.set(h);
        holder.set(Thread.currentThread());
        return true;
    }

    /** Takes the lock if it is free, without waiting; LockHeldException when it is not. */
    private boolean takeNow() {
        return hold(client.lock(name, ttl, Duration.ZERO));
    }

    /**
     * Runs attempt with the local permit held: the permit stays with a taken lock and is given
     * back when the attempt did not take it (false, or LockHeldException) or failed.
     */
    private boolean keepPermitIf(BooleanSupplier attempt) {
        try {
            if (attempt.getAsBoolean()) {
                return true;
            }
        } catch (LockHeldException e) {
            // held by another lease: not taken
        } catch (RuntimeException e) {
            local.release();
            throw e;
        }
        local.release();
        return false;
    }

    @Override
    public boolean tryLock() {
        checkNotHolder();
        return local.tryAcquire() && keepPermitIf(this::takeNow);
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        checkNotHolder();
        long end = System.nanoTime() + unit.toNanos(time);
        return local.tryAcquire(time, unit) && keepPermitIf(() -> {
            long left = end - System.nanoTime();
            return left <= 0 ? takeNow() : take(left);
        });
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
            h.close();
        } finally {
            local.release();
        }
    }

    /** Unsupported: a distributed lock has no condition variables. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("RaftLockLock has no conditions");
    }
}
