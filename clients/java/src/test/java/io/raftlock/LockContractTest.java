package io.raftlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.raftlock.testing.Cluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The {@link java.util.concurrent.locks.Lock} contract of both adapters under interrupts
 * (lockInterruptibly and tryLock(time, unit) throw InterruptedException with the flag cleared
 * and leave no grant behind; lock() waits through interrupts and sets the flag again), and the
 * reentrant mutex: nested holds on one thread share one lease and token, other threads and
 * other processes are excluded, unlock from another thread is refused, a loss reaches every
 * nested level, and it works on virtual threads. Against a real three-node cluster.
 */
class LockContractTest {
    static Cluster cluster;

    @BeforeAll
    static void start() throws Exception {
        cluster = new Cluster();
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    RaftLock client() {
        return RaftLock.builder().endpoints(cluster.endpoints()).build();
    }

    static void waitFor(String what, BooleanSupplier cond) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                fail("timed out waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    /** The two adapters, made the same way. */
    static final List<Function<RaftLock, Function<String, Lock>>> ADAPTERS = List.of(
            c -> n -> c.newLock(n, Duration.ofSeconds(10)),
            c -> n -> c.newReentrantLock(n, Duration.ofSeconds(10)));

    /**
     * Runs wait on a thread while another client holds the lock, interrupts it once it
     * queues, and checks: InterruptedException, flag cleared, and no grant left (the holder's
     * release finds nobody queued: a wait still queued would be handed the lock in that very
     * commit).
     */
    void interruptedWaitLeavesNoGrant(String name, InterruptibleWait wait) throws Exception {
        try (RaftLock holder = client(); RaftLock c = client()) {
            Held h = holder.lock(name, Duration.ofSeconds(10), Duration.ZERO);
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            AtomicReference<Boolean> flagAfter = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    wait.run(c, name);
                    thrown.set(new AssertionError("the wait returned without an interrupt"));
                } catch (Throwable e) {
                    thrown.set(e);
                }
                flagAfter.set(Thread.currentThread().isInterrupted());
            });
            t.start();
            waitFor("the wait to queue", () -> holder.status(name).waiters() == 1);
            t.interrupt();
            t.join(TimeUnit.SECONDS.toMillis(20));
            assertFalse(t.isAlive(), "the interrupted wait ended");
            assertTrue(thrown.get() instanceof InterruptedException, "InterruptedException, not " + thrown.get());
            assertEquals(Boolean.FALSE, flagAfter.get(), "the interrupt flag is cleared");
            waitFor("the abandoned wait to leave the queue", () -> holder.status(name).waiters() == 0);
            h.release();
            LockStatus st = holder.status(name);
            assertFalse(st.held(), "no grant was left to the interrupted wait: " + st);
        }
    }

    @FunctionalInterface
    interface InterruptibleWait {
        void run(RaftLock c, String name) throws Exception;
    }

    @Test
    void lockInterruptiblyThrowsInterruptedExceptionAndLeavesNoGrant() throws Exception {
        int i = 0;
        for (var make : ADAPTERS) {
            interruptedWaitLeavesNoGrant("java/contract/li" + i++, (c, n) -> make.apply(c).apply(n).lockInterruptibly());
        }
    }

    @Test
    void tryLockWithTimeThrowsInterruptedExceptionAndLeavesNoGrant() throws Exception {
        int i = 0;
        for (var make : ADAPTERS) {
            interruptedWaitLeavesNoGrant("java/contract/tl" + i++, (c, n) -> make.apply(c).apply(n).tryLock(60, TimeUnit.SECONDS));
        }
    }

    /**
     * The race the revoke is for: the cluster grants the waiting acquire, and its answer is
     * still on the way (a proxy holds it) when the thread is interrupted. The adapter must
     * not leave that grant behind: it revokes the wait's lease, so the lock is free at once
     * (without the revoke the grant would stay, its lease kept alive by the client).
     */
    @Test
    void aGrantArrivingAsTheWaitIsInterruptedIsRevoked() throws Exception {
        int i = 0;
        for (var make : ADAPTERS) {
            String name = "java/contract/race" + i++;
            FaultProxy.State st = new FaultProxy.State();
            List<FaultProxy> proxies = new ArrayList<>();
            List<String> eps = new ArrayList<>();
            for (int port : cluster.httpPorts()) {
                FaultProxy p = new FaultProxy(st, port);
                proxies.add(p);
                eps.add("http://127.0.0.1:" + p.port());
            }
            try (RaftLock viaProxy = RaftLock.builder().endpoints(eps).build(); RaftLock c = client()) {
                st.mu.lock();
                try {
                    st.faults.add(new java.util.HashMap<>(java.util.Map.of("kind", "hang", "method", "PUT", "path_prefix", "/v1/locks/", "count", 1)));
                } finally {
                    st.mu.unlock();
                }
                Lock l = make.apply(viaProxy).apply(name);
                AtomicReference<Throwable> thrown = new AtomicReference<>();
                Thread t = new Thread(() -> {
                    try {
                        l.lockInterruptibly();
                    } catch (Throwable e) {
                        thrown.set(e);
                    }
                });
                t.start();
                waitFor("the cluster to grant the wait", () -> c.status(name).held());
                t.interrupt();
                t.join(TimeUnit.SECONDS.toMillis(20));
                assertTrue(thrown.get() instanceof InterruptedException, "InterruptedException, not " + thrown.get());
                waitFor("the grant made as the wait was interrupted to be revoked", () -> !c.status(name).held());
            } finally {
                for (FaultProxy p : proxies) {
                    p.close();
                }
            }
        }
    }

    @Test
    void interruptedBeforeTheCallThrowsAtOnce() throws Exception {
        int i = 0;
        try (RaftLock c = client()) {
            for (var make : ADAPTERS) {
                String name = "java/contract/pre" + i++;
                Lock l = make.apply(c).apply(name);
                Thread.currentThread().interrupt();
                assertThrows(InterruptedException.class, l::lockInterruptibly);
                assertFalse(Thread.currentThread().isInterrupted(), "flag cleared");
                Thread.currentThread().interrupt();
                assertThrows(InterruptedException.class, () -> l.tryLock(5, TimeUnit.SECONDS));
                assertFalse(Thread.interrupted(), "flag cleared");
                assertFalse(c.status(name).held(), "nothing was taken");
            }
        }
    }

    @Test
    void tryLockWithTimeEndsFalseAndLeavesNoGrant() throws Exception {
        int i = 0;
        try (RaftLock holder = client(); RaftLock c = client()) {
            for (var make : ADAPTERS) {
                String name = "java/contract/tt" + i++;
                Held h = holder.lock(name, Duration.ofSeconds(10), Duration.ZERO);
                Lock l = make.apply(c).apply(name);
                assertFalse(l.tryLock(700, TimeUnit.MILLISECONDS), "held by another process");
                waitFor("the ended wait to leave the queue", () -> holder.status(name).waiters() == 0);
                h.release();
                assertFalse(holder.status(name).held(), "no grant was left to the ended wait");
            }
        }
    }

    @Test
    void lockWaitsThroughInterruptsAndSetsTheFlagAgain() throws Exception {
        int i = 0;
        for (var make : ADAPTERS) {
            String name = "java/contract/lock" + i++;
            try (RaftLock holder = client(); RaftLock c = client()) {
                Held h = holder.lock(name, Duration.ofSeconds(10), Duration.ZERO);
                Lock l = make.apply(c).apply(name);
                AtomicReference<Throwable> thrown = new AtomicReference<>();
                AtomicReference<Boolean> flagAfter = new AtomicReference<>();
                CompletableFuture<Void> locked = new CompletableFuture<>();
                Thread t = new Thread(() -> {
                    try {
                        l.lock();
                        flagAfter.set(Thread.interrupted());
                        locked.complete(null);
                    } catch (Throwable e) {
                        thrown.set(e);
                        locked.completeExceptionally(e);
                    }
                });
                t.start();
                waitFor("the wait to queue", () -> holder.status(name).waiters() == 1);
                for (int k = 0; k < 3; k++) {
                    t.interrupt();
                    Thread.sleep(100); // each interrupt has a moment to act (it must not)
                    assertTrue(t.isAlive(), "lock() still waits after interrupt " + (k + 1) + ": " + thrown.get());
                }
                assertEquals(1, holder.status(name).waiters(), "still in the queue");
                h.release();
                locked.get(20, TimeUnit.SECONDS);
                assertEquals(Boolean.TRUE, flagAfter.get(), "lock() sets the interrupt flag again before returning");
                LockStatus st = holder.status(name);
                assertTrue(st.held(), "held by the waiter");
                Thread u = new Thread(l::unlock);
                if (l instanceof RaftLockReentrantLock) {
                    CompletableFuture<Throwable> other = new CompletableFuture<>();
                    u = new Thread(() -> {
                        try {
                            l.unlock();
                            other.complete(null);
                        } catch (Throwable e) {
                            other.complete(e);
                        }
                    });
                    u.start();
                    u.join();
                    assertTrue(other.get() instanceof IllegalMonitorStateException, "unlock from another thread: " + other.get());
                    // the owner thread has ended: release through its hold
                    ((RaftLockReentrantLock) l).held().orElseThrow().release();
                } else {
                    u.start();
                    u.join();
                }
                assertFalse(holder.status(name).held());
            }
        }
    }

    @Test
    void reentrantNestedHoldsShareOneLeaseAndToken() throws Exception {
        try (RaftLock c = client(); RaftLock other = client()) {
            String name = "java/reentrant/nested";
            RaftLockReentrantLock l = c.newReentrantLock(name, Duration.ofSeconds(10));
            l.lock();
            Held outer = l.held().orElseThrow();
            assertTrue(l.tryLock());
            l.lockInterruptibly();
            assertTrue(l.tryLock(1, TimeUnit.SECONDS));
            assertEquals(4, l.getHoldCount());
            assertTrue(l.held().orElseThrow() == outer, "nested holds share one hold: one lease, one token");
            LockStatus st = other.status(name);
            assertTrue(st.held());
            assertEquals(outer.token(), st.token());
            assertEquals(1, st.holderCount());
            assertEquals(1, c.history(name).events().stream().filter(e -> e.kind().equals("granted")).count(), "one grant for the nested holds");
            for (int k = 3; k >= 1; k--) {
                l.unlock();
                assertEquals(k, l.getHoldCount());
                assertTrue(other.status(name).held(), "still held at depth " + k);
            }
            assertFalse(l.toString().contains(outer.lease().id), "toString shows no lease ID");
            l.unlock();
            assertFalse(l.isHeldByCurrentThread());
            assertFalse(other.status(name).held(), "released when the count reached zero");
            assertThrows(IllegalMonitorStateException.class, l::unlock);
        }
    }

    @Test
    void reentrantExcludesOtherThreadsAndOtherProcesses() throws Exception {
        try (RaftLock c = client(); RaftLock d = client()) {
            String name = "java/reentrant/excl";
            RaftLockReentrantLock l = c.newReentrantLock(name, Duration.ofSeconds(10));
            RaftLockReentrantLock elsewhere = d.newReentrantLock(name, Duration.ofSeconds(10));
            l.lock();
            try {
                ExecutorService ex = VirtualThreadsTest.executor();
                Future<Boolean> sameJvm = ex.submit(() -> l.tryLock(300, TimeUnit.MILLISECONDS));
                assertFalse(sameJvm.get(10, TimeUnit.SECONDS), "another thread of this process is excluded");
                Future<Boolean> otherProcess = ex.submit(() -> elsewhere.tryLock(300, TimeUnit.MILLISECONDS));
                assertFalse(otherProcess.get(10, TimeUnit.SECONDS), "another client (process) is excluded by the cluster");
                Future<Throwable> unlockElsewhere = ex.submit(() -> {
                    try {
                        l.unlock();
                        return null;
                    } catch (Throwable e) {
                        return e;
                    }
                });
                assertTrue(unlockElsewhere.get() instanceof IllegalMonitorStateException);
                ex.shutdown();
                assertEquals(1, l.getHoldCount(), "the refused unlock counted nothing");
            } finally {
                l.unlock();
            }
            assertTrue(elsewhere.tryLock());
            elsewhere.unlock();
        }
    }

    @Test
    void reentrantLossReachesEveryNestedLevel() throws Exception {
        try (RaftLock c = client(); RaftLock other = client()) {
            String name = "java/reentrant/lost";
            RaftLockReentrantLock l = c.newReentrantLock(name, Duration.ofSeconds(3)); // keepalives every second: the loss is seen soon
            l.lock();
            l.lock();
            Held h = l.held().orElseThrow();
            other.revoke(h.lease().id, null); // as the cluster expiring the lease
            waitFor("the loss signal", h::isLost);
            assertThrows(LeaseLostException.class, l::lock, "a nested lock after the loss");
            assertEquals(2, l.getHoldCount(), "the refused nested lock counted nothing");
            assertThrows(LeaseLostException.class, l::unlock, "depth 2 learns of the loss");
            assertEquals(1, l.getHoldCount());
            assertThrows(LeaseLostException.class, l::unlock, "depth 1 learns of the loss");
            assertEquals(0, l.getHoldCount());
            assertFalse(l.isHeldByCurrentThread());
            assertTrue(l.tryLock(), "free again once the lost hold is given back");
            l.unlock();
        }
    }

    @Test
    void reentrantOnVirtualThreads() throws Exception {
        try (RaftLock c = client()) {
            RaftLockReentrantLock l = c.newReentrantLock("java/reentrant/vt", Duration.ofSeconds(10));
            ExecutorService ex = VirtualThreadsTest.executor();
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger most = new AtomicInteger();
            List<Future<Long>> fs = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                fs.add(ex.submit(() -> {
                    l.lock();
                    try {
                        l.lock();
                        try {
                            most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            long t = l.held().orElseThrow().token();
                            inside.decrementAndGet();
                            return t;
                        } finally {
                            l.unlock();
                        }
                    } finally {
                        l.unlock();
                    }
                }));
            }
            List<Long> tokens = new ArrayList<>();
            for (Future<Long> f : fs) {
                Long t = f.get(60, TimeUnit.SECONDS);
                assertNotNull(t);
                tokens.add(t);
            }
            ex.shutdown();
            assertEquals(20, tokens.stream().distinct().count(), "each thread's outer hold had its own grant");
            assertEquals(1, most.get(), "never two holders at once");
        }
    }

    @Test
    void asyncCallsCompleteAndCancelLeavesNoGrant() throws Exception {
        try (RaftLock holder = client(); RaftLock c = client()) {
            String name = "java/async/l";
            Held h = c.lockAsync(name, Duration.ofSeconds(10), Duration.ZERO, HoldOptions.defaults()).get(20, TimeUnit.SECONDS);
            assertEquals(h.token(), holder.statusAsync(name).get(20, TimeUnit.SECONDS).token());
            LockSet set = c.lockSetAsync(List.of("java/async/s1", "java/async/s2"), Duration.ofSeconds(10), Duration.ZERO, HoldOptions.defaults()).get(20, TimeUnit.SECONDS);
            Held permit = c.semaphoreAsync("java/async/sem", 2, Duration.ofSeconds(10), Duration.ZERO, HoldOptions.defaults()).get(20, TimeUnit.SECONDS);
            Leadership lead = c.campaignAsync("java/async/e", "v", Duration.ofSeconds(10), Duration.ZERO, HoldOptions.defaults()).get(20, TimeUnit.SECONDS);
            assertEquals("v", holder.electionStatus("java/async/e").value());
            set.close();
            permit.close();
            lead.close();
            // A waiting future, cancelled: it leaves the queue, and nothing is left to it.
            CompletableFuture<Held> waiting = holder.lockAsync(name, Duration.ofSeconds(10), Duration.ofSeconds(60), HoldOptions.defaults());
            waitFor("the async wait to queue", () -> c.status(name).waiters() == 1);
            assertTrue(waiting.cancel(true));
            waitFor("the cancelled wait to leave the queue", () -> c.status(name).waiters() == 0);
            h.release();
            assertFalse(c.status(name).held(), "no grant was left to the cancelled future");
        }
        // Cancelled as the cluster grants it (the answer held back by a proxy): given back.
        FaultProxy.State st = new FaultProxy.State();
        List<FaultProxy> proxies = new ArrayList<>();
        List<String> eps = new ArrayList<>();
        for (int port : cluster.httpPorts()) {
            FaultProxy p = new FaultProxy(st, port);
            proxies.add(p);
            eps.add("http://127.0.0.1:" + p.port());
        }
        try (RaftLock viaProxy = RaftLock.builder().endpoints(eps).build(); RaftLock c = client()) {
            st.mu.lock();
            try {
                st.faults.add(new java.util.HashMap<>(java.util.Map.of("kind", "hang", "method", "PUT", "path_prefix", "/v1/locks/", "count", 1)));
            } finally {
                st.mu.unlock();
            }
            String name = "java/async/race";
            CompletableFuture<Held> f = viaProxy.lockAsync(name, Duration.ofSeconds(30), Duration.ofSeconds(30), HoldOptions.defaults());
            waitFor("the cluster to grant the held-back acquire", () -> c.status(name).held());
            assertTrue(f.cancel(true));
            waitFor("the grant made as the future was cancelled to be revoked", () -> !c.status(name).held());
        } finally {
            for (FaultProxy p : proxies) {
                p.close();
            }
        }
    }

    @Test
    void leadershipHasProclaimALockDoesNot() {
        try (RaftLock c = client()) {
            try (Leadership lead = c.campaign("java/kind/e", "v1", Duration.ofSeconds(10), Duration.ZERO, HoldOptions.defaults());
                 Held lock = c.lock("java/kind/l", Duration.ofSeconds(10), Duration.ZERO)) {
                assertEquals("v1", lead.value());
                assertEquals(lead.token(), lead.proclaim("v2"));
                assertEquals("v2", c.electionStatus("java/kind/e").value());
                @SuppressWarnings("removal")
                Runnable deprecated = () -> lock.proclaim("x");
                assertThrows(IllegalStateException.class, deprecated::run, "a lock has no proclaim (deprecated on Held)");
            }
        }
    }
}
