package io.raftlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.raftlock.testing.Cluster;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The client against a real three-node cluster. */
class ClientTest {
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

    @Test
    void lockTokenSafeUntilAndRelease() {
        try (RaftLock c = client(); RaftLock other = client()) {
            Instant before = Instant.now();
            long token;
            try (Held held = c.lock("java/basic", Duration.ofSeconds(10), Duration.ZERO)) {
                token = held.token();
                assertTrue(token > 0);
                assertFalse(held.isLost());
                Instant su = held.safeUntil();
                assertTrue(su.isAfter(before) && su.isBefore(before.plusSeconds(10)), "safe-until " + su + " is within one TTL of the send");
                assertThrows(LockHeldException.class, () -> other.lock("java/basic", Duration.ofSeconds(2), Duration.ZERO));
                LockStatus st = other.status("java/basic");
                assertTrue(st.held());
                assertEquals(token, st.token());
                assertFalse(held.toString().contains(held.lease().id), "toString shows no lease ID");
            }
            assertFalse(other.status("java/basic").held());
            History h = other.history("java/basic");
            assertEquals("released", h.events().get(h.events().size() - 1).kind());
            try (Held again = other.lock("java/basic", Duration.ofSeconds(2), Duration.ofSeconds(1))) {
                assertTrue(again.token() > token);
            }
        }
    }

    @Test
    void closeRevokesHeldLeases() {
        RaftLock c = client();
        Held a = c.lock("java/close/a", Duration.ofSeconds(30), Duration.ZERO);
        Held b = c.semaphore("java/close/s", 2, Duration.ofSeconds(30), Duration.ofSeconds(1), HoldOptions.defaults());
        c.close();
        assertTrue(a.lost().isDone());
        assertTrue(b.isLost());
        try (RaftLock o = client()) {
            assertFalse(o.status("java/close/a").held(), "close() revoked the lock's lease at once (TTL 30 s)");
            assertEquals(0, o.semaphoreStatus("java/close/s").permits());
        }
    }

    @Test
    void waitingLockIsHandedOver() throws Exception {
        try (RaftLock c = client(); RaftLock d = client()) {
            Held first = c.lock("java/handover", Duration.ofSeconds(10), Duration.ZERO);
            CountDownLatch lost = new CountDownLatch(1);
            first.onLost(lost::countDown);
            Thread t = new Thread(() -> {
                try (Held second = d.lock("java/handover", Duration.ofSeconds(10), Duration.ofSeconds(20))) {
                    assertTrue(second.token() > first.token());
                }
            });
            t.start();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (c.status("java/handover").waiters() == 0 && System.nanoTime() < end) {
                Thread.sleep(20);
            }
            assertEquals(1, c.status("java/handover").waiters());
            first.close();
            t.join(20000);
            assertFalse(t.isAlive());
            assertTrue(lost.await(1, TimeUnit.SECONDS), "the loss callback runs when the hold is released");
            assertThrows(NotLockedException.class, first::release);
        }
    }

    @Test
    void lossInsideTheBlockIsReportedOnClose() throws Exception {
        try (RaftLock c = client()) {
            Held h = c.lock("java/lostinside", Duration.ofSeconds(5), Duration.ZERO);
            c.revoke(h.lease().id, null); // as if it expired during a pause
            h.lost().get(5, TimeUnit.SECONDS);
            assertThrows(LeaseLostException.class, h::close);
            h.close(); // once released, closing again is nothing
            try (Held ok = c.lock("java/lostinside", Duration.ofSeconds(5), Duration.ZERO)) {
                ok.release(); // a release inside the block is not a loss
            }
        }
    }

    @Test
    void severalLocksOnOneLease() throws Exception {
        try (RaftLock c = client()) {
            Lease lease = c.lease(Duration.ofSeconds(10));
            Held a = c.lock(lease, "java/onelease/a", Duration.ZERO, HoldOptions.defaults());
            Held b = c.lock(lease, "java/onelease/b", Duration.ofSeconds(1), HoldOptions.defaults());
            assertThrows(LockHeldException.class, () -> c.lock("java/onelease/a", Duration.ofSeconds(2), Duration.ZERO));
            a.release();
            assertFalse(lease.isLost(), "releasing one lock leaves the lease open");
            assertFalse(c.status("java/onelease/a").held());
            assertTrue(c.status("java/onelease/b").held());
            lease.close();
            assertFalse(c.status("java/onelease/b").held(), "closing the lease releases what it holds");
            assertTrue(b.lost().isDone());
        }
    }

    @Test
    void lockAdapter() throws Exception {
        try (RaftLock c = client()) {
            Lock l = c.newLock("java/adapter", Duration.ofSeconds(10));
            RaftLockLock rl = (RaftLockLock) l;
            l.lock();
            try {
                assertTrue(rl.held().orElseThrow().token() > 0);
                assertThrows(IllegalStateException.class, l::lock, "not reentrant");
                Thread t = new Thread(() -> assertFalse(l.tryLock()));
                t.start();
                t.join();
            } finally {
                l.unlock();
            }
            assertTrue(l.tryLock(1, TimeUnit.SECONDS));
            // Another adapter of the same lock is refused by the cluster, not locally, and
            // each refusal gives its local permit back: it takes the lock once it is free.
            Lock other = c.newLock("java/adapter", Duration.ofSeconds(10));
            assertFalse(other.tryLock());
            assertFalse(other.tryLock(0, TimeUnit.SECONDS));
            l.unlock();
            assertTrue(other.tryLock());
            other.unlock();
            assertThrows(IllegalMonitorStateException.class, l::unlock);
            assertThrows(UnsupportedOperationException.class, l::newCondition);
        }
    }

    @Test
    void lockSetElectionShared() {
        try (RaftLock c = client(); RaftLock d = client()) {
            try (LockSet s = c.lockSet(List.of("java/set/a", "java/set/b"), Duration.ofSeconds(10), Duration.ZERO, HoldOptions.defaults())) {
                Map<String, Long> t = s.tokens();
                assertEquals(2, t.size());
                assertTrue(d.status("java/set/b").held());
                assertThrows(LockHeldException.class, () -> d.lockSet(List.of("java/set/b", "java/set/c"), Duration.ofSeconds(2), Duration.ZERO, HoldOptions.defaults()));
                assertFalse(d.status("java/set/c").held(), "a refused set takes nothing");
            }
            assertFalse(d.status("java/set/a").held());
            try (Leadership lead = c.campaign("java/elect", "v1", Duration.ofSeconds(10), Duration.ZERO, HoldOptions.defaults())) {
                assertThrows(ElectionHeldException.class, () -> d.campaign("java/elect", "v2", Duration.ofSeconds(2), Duration.ZERO, HoldOptions.defaults()));
                assertEquals(lead.token(), lead.proclaim("v3"));
                assertEquals("v3", d.electionStatus("java/elect").value());
            }
            try (Held r1 = c.lock("java/shared", Duration.ofSeconds(10), Duration.ZERO, HoldOptions.defaults().shared());
                 Held r2 = d.lock("java/shared", Duration.ofSeconds(10), Duration.ZERO, HoldOptions.defaults().shared())) {
                assertEquals(2, c.status("java/shared").holderCount());
                assertTrue(r1.isShared() && r2.isShared());
                assertThrows(LockHeldException.class, () -> d.lock("java/shared", Duration.ofSeconds(2), Duration.ZERO));
            }
        }
    }

    @Test
    void manyHoldsKeptAliveByOneThread() throws Exception {
        try (RaftLock c = client()) {
            List<Held> hs = new java.util.ArrayList<>();
            for (int i = 0; i < 10; i++) {
                // TTL 3 s, as the TypeScript client's test: a keepalive attempt may take
                // TTL/6 before the next endpoint is tried, and a loaded 2-core machine
                // answers slower than the 333 ms a 2 s TTL leaves.
                hs.add(c.lock("java/batch/" + i, Duration.ofSeconds(3), Duration.ZERO));
            }
            long threads = Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("raftlock-keepalive")).count();
            assertTrue(threads >= 1);
            Thread.sleep(6500); // longer than two TTLs: every hold must have been renewed
            for (Held h : hs) {
                assertFalse(h.isLost(), "kept alive past two TTLs");
                h.close();
            }
            assertNotEquals(0, hs.size());
        }
    }

    @Test
    void tlsWithClientCertificates() throws Exception {
        try (Cluster tc = new Cluster(true)) {
            var ctx = Tls.fromPem(tc.tlsDir().resolve("ca.pem"), tc.tlsDir().resolve("local.pem"), tc.tlsDir().resolve("local-key.pem"));
            try (RaftLock c = RaftLock.builder().endpoints(tc.endpoints()).tls(ctx).build();
                 Held h = c.lock("java/tls", Duration.ofSeconds(5), Duration.ZERO)) {
                assertTrue(h.token() > 0);
            }
            // Without a client certificate the handshake is refused: not retried as unavailable.
            var noCert = Tls.fromPem(tc.tlsDir().resolve("ca.pem"), null, null);
            try (RaftLock c = RaftLock.builder().endpoints(tc.endpoints()).tls(noCert).callTimeout(Duration.ofSeconds(3)).build()) {
                RaftLockException e = assertThrows(RaftLockException.class, () -> c.status("java/tls"));
                assertTrue(e.code().equals("tls") || e.code().equals("unavailable"), e.getMessage());
            }
            assertThrows(InvalidArgumentException.class, () -> RaftLock.builder().endpoints("http://127.0.0.1:1").tls(noCert).build());
        }
    }
}
