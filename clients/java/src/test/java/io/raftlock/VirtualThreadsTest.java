package io.raftlock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.raftlock.testing.Cluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Many callers blocked in the client at once: on JDK 21+ each is a virtual thread
 * (Executors.newVirtualThreadPerTaskExecutor, found by reflection so that this compiles for
 * 17); on 17 they are platform threads. 100 callers queue on one lock (each waits in the
 * server's queue, blocked in an HttpClient send) and every one is granted in turn.
 */
class VirtualThreadsTest {
    static ExecutorService executor() {
        try {
            ExecutorService e = (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
            System.out.println("VirtualThreadsTest: virtual threads (JDK " + Runtime.version().feature() + ")");
            return e;
        } catch (ReflectiveOperationException e) {
            System.out.println("VirtualThreadsTest: JDK " + Runtime.version().feature() + " has no virtual threads; platform threads");
            return Executors.newCachedThreadPool();
        }
    }

    @Test
    void manyCallersWaitingOnOneLock() throws Exception {
        int n = 100;
        try (Cluster cluster = new Cluster(); RaftLock c = RaftLock.builder().endpoints(cluster.endpoints()).build()) {
            ExecutorService ex = executor();
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger most = new AtomicInteger();
            List<Future<Long>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                fs.add(ex.submit(() -> {
                    try (Held h = c.lock("java/vt", Duration.ofSeconds(10), Duration.ofSeconds(120))) {
                        most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                        inside.decrementAndGet();
                        return h.token();
                    }
                }));
            }
            List<Long> tokens = new ArrayList<>();
            for (Future<Long> f : fs) {
                tokens.add(f.get());
            }
            ex.shutdown();
            assertEquals(n, tokens.stream().distinct().count(), "every caller was granted once, each with its own token");
            assertEquals(1, most.get(), "never two holders at once");
        }
    }
}
