package io.raftlock;

import java.util.LinkedHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Follows an election with blocking reads, made by {@link RaftLock#observe}: the listener is
 * given the election's state now, then every state whose modify index is higher than the
 * last one given (a new leader, a proclaimed value, a resignation or an expiry), on the
 * observation's own thread. Changes that come faster than a read returns are coalesced: the
 * newest state is always given. Failed reads are retried with backoff; a read that asking
 * again cannot fix (an invalid name, a refused token) ends it, and {@link #done()} completes
 * exceptionally with that error.
 */
public final class Observation implements AutoCloseable {
    /** The server-side wait of each blocking read. */
    static final long WAIT_MS = 60_000;

    private final RaftLock client;
    private final String name;
    private final Consumer<ElectionStatus> listener;
    private final Transport.Cancel cancel = new Transport.Cancel();
    private final CompletableFuture<Void> done = new CompletableFuture<>();
    private volatile boolean closed;
    private Thread thread;

    private Observation(RaftLock client, String name, Consumer<ElectionStatus> listener) {
        this.client = client;
        this.name = name;
        this.listener = listener;
    }

    static Observation start(RaftLock c, String name, Consumer<ElectionStatus> listener) {
        Names.check(name);
        Observation o = new Observation(c, name, listener);
        o.thread = new Thread(o::run, "raftlock-observe");
        o.thread.setDaemon(true);
        o.thread.start();
        return o;
    }

    private void run() {
        long last = 0;
        boolean first = true;
        long backoff = TimeUnit.MILLISECONDS.toNanos(50);
        while (!closed) {
            Transport.Request r = new Transport.Request("observe \"" + name + "\"", "GET", Transport.namePath(RaftLock.ELECTIONS, name));
            r.cancel = cancel;
            if (!first) {
                r.query = new LinkedHashMap<>();
                r.query.put("wait_index", Long.toString(last));
                r.query.put("wait_ms", Long.toString(WAIT_MS));
                r.waitNanos = () -> TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
            }
            ElectionStatus st;
            try {
                st = ElectionStatus.of(client.call(r, null, first ? 0 : TimeUnit.MILLISECONDS.toNanos(WAIT_MS)).body);
            } catch (RaftLockException e) {
                if (closed) {
                    break;
                }
                if (e instanceof InvalidNameException || e instanceof UnauthenticatedException || e instanceof PermissionDeniedException
                        || e instanceof InvalidArgumentException) {
                    done.completeExceptionally(e);
                    return;
                }
                try {
                    TimeUnit.NANOSECONDS.sleep(backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1));
                } catch (InterruptedException ie) {
                    break;
                }
                backoff = Math.min(2 * backoff, TimeUnit.SECONDS.toNanos(1));
                continue;
            }
            backoff = TimeUnit.MILLISECONDS.toNanos(50);
            if (!first && st.modifyIndex() <= last) {
                continue; // the wait ended without a change
            }
            first = false;
            last = st.modifyIndex();
            try {
                listener.accept(st);
            } catch (RuntimeException e) {
                done.completeExceptionally(e);
                return;
            }
        }
        done.complete(null);
    }

    /** Completed when the observation ends: normally after {@link #close()}, else exceptionally with why. */
    public CompletableFuture<Void> done() {
        return done.copy();
    }

    /** Ends the observation (waiting up to 5 s for its thread). Idempotent. */
    @Override
    public void close() {
        closed = true;
        cancel.cancel(new InterruptedCallException("observe \"" + name + "\": closed"));
        Thread t = thread;
        if (t != null && t != Thread.currentThread()) {
            try {
                t.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        done.complete(null);
    }

    @Override
    public String toString() {
        return "Observation{" + name + "}";
    }
}
