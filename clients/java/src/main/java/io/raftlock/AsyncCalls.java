package io.raftlock;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Runs the blocking calls behind the client's {@code *Async} methods: each call on a thread
 * of its own (a virtual thread on JDK 21+, found by reflection so that this compiles for 17;
 * a daemon platform thread otherwise). Cancelling the returned future interrupts that call
 * (an interrupted take revokes its own lease, so nothing is left held), and a result that
 * arrives after the cancel is given back with {@code discard}.
 */
final class AsyncCalls {
    static final Executor EXECUTOR = executor();

    private AsyncCalls() {}

    private static Executor executor() {
        try {
            return (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        } catch (ReflectiveOperationException e) {
            AtomicInteger n = new AtomicInteger();
            ThreadFactory tf = r -> {
                Thread t = new Thread(r, "raftlock-async-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            };
            return Executors.newCachedThreadPool(tf);
        }
    }

    static <T> CompletableFuture<T> run(Supplier<T> call, Consumer<T> discard) {
        CompletableFuture<T> f = new CompletableFuture<>();
        ReentrantLock mu = new ReentrantLock();
        Thread[] runner = new Thread[1];
        boolean[] ended = new boolean[1];
        EXECUTOR.execute(() -> {
            mu.lock();
            try {
                if (f.isDone()) {
                    return;
                }
                runner[0] = Thread.currentThread();
            } finally {
                mu.unlock();
            }
            try {
                T v = call.get();
                if (!f.complete(v)) {
                    RaftLock.uninterruptibly(() -> discard.accept(v)); // cancelled as it was granted: give it back
                }
            } catch (Throwable e) {
                f.completeExceptionally(e);
            } finally {
                mu.lock();
                try {
                    runner[0] = null;
                    ended[0] = true;
                    Thread.interrupted(); // a cancel's interrupt must not reach the thread's next task
                } finally {
                    mu.unlock();
                }
            }
        });
        f.whenComplete((v, e) -> {
            if (!f.isCancelled()) {
                return;
            }
            mu.lock();
            try {
                if (runner[0] != null && !ended[0]) {
                    runner[0].interrupt();
                }
            } finally {
                mu.unlock();
            }
        });
        return f;
    }
}
