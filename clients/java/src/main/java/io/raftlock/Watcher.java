package io.raftlock;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * Follows the lock events of a prefix over {@code GET /v1/events} (Server-Sent Events), made
 * by {@link RaftLock#watch}. Each event is handed to the listener, in log order, on the
 * watcher's own thread. After a disconnect (a node that stops, restarts or drops the stream)
 * it reconnects by itself, to the next endpoint, sending the last entry index it received as
 * {@code Last-Event-ID}: no event is lost or repeated, as long as some node still holds the
 * events since.
 *
 * <p>When the node reached no longer holds them (it restored a snapshot taken after that
 * index), the watch ends: {@link #done()} completes exceptionally with
 * {@link IndexCompactedException}. What to do then: read the state you derive from events
 * ({@link RaftLock#status}, {@link RaftLock#history}), then watch again without a start index.
 */
public final class Watcher implements AutoCloseable {
    /**
     * One lock event.
     *
     * @param name the lock's name
     * @param kind granted, released, expired, revoked, wait_abandoned, wait_timed_out,
     *     wait_lease_ended, deadlock_refused...
     * @param index the log index of the entry (the SSE id)
     * @param token the grant concerned (0 when none)
     * @param owner the owner label of the grantee, holder or waiter
     * @param timeMs the cluster time of the entry
     */
    public record Event(String name, String kind, long index, long token, String owner, long timeMs) {}

    private final RaftLock client;
    private final String prefix;
    private final Consumer<Event> listener;
    private final CompletableFuture<Void> done = new CompletableFuture<>();
    private final ReentrantLock mu = new ReentrantLock();
    private InputStream current; // guarded by mu
    private volatile boolean closed;
    private volatile long last; // the index of the last entry delivered (or the stream's start - 1)
    private volatile boolean known; // last is set: a reconnection sends it
    private Thread thread;

    private Watcher(RaftLock client, String prefix, Consumer<Event> listener) {
        this.client = client;
        this.prefix = prefix;
        this.listener = listener;
    }

    static Watcher start(RaftLock c, String prefix, long fromIndex, Consumer<Event> listener) {
        if (fromIndex < 0) {
            throw new InvalidArgumentException("watch: fromIndex " + fromIndex + " is negative");
        }
        Watcher w = new Watcher(c, prefix, listener);
        if (fromIndex > 0) {
            w.last = fromIndex - 1;
            w.known = true;
        }
        int ep = c.transport.preferred();
        InputStream in = w.open(ep, fromIndex); // the first connection's refusal is the caller's
        w.thread = new Thread(() -> w.run(in, ep), "raftlock-watch");
        w.thread.setDaemon(true);
        w.thread.start();
        return w;
    }

    private InputStream open(int ep, long fromIndex) {
        Transport.Request r = new Transport.Request("watch \"" + prefix + "\"", "GET", "/v1/events");
        r.query = new LinkedHashMap<>();
        if (!prefix.isEmpty()) {
            r.query.put("prefix", prefix);
        }
        if (fromIndex > 0) {
            r.query.put("from_index", Long.toString(fromIndex));
        }
        Map<String, String> h = new HashMap<>();
        if (known && fromIndex == 0) {
            h.put("Last-Event-ID", Long.toString(last));
        }
        InputStream in = client.transport.openStream(ep, r, h);
        mu.lock();
        try {
            if (closed) {
                closeQuietly(in);
                throw new InterruptedCallException("watch: closed");
            }
            current = in;
        } finally {
            mu.unlock();
        }
        return in;
    }

    private void run(InputStream first, int ep) {
        InputStream in = first;
        long backoff = TimeUnit.MILLISECONDS.toNanos(50);
        try {
            while (!closed) {
                RaftLockException err = null;
                boolean got;
                try {
                    got = read(in);
                } catch (RaftLockException e) {
                    got = false;
                    err = e;
                }
                closeQuietly(in);
                if (closed) {
                    break;
                }
                if (err != null && !Transport.retryable(err)) {
                    done.completeExceptionally(err);
                    return;
                }
                if (got) {
                    backoff = TimeUnit.MILLISECONDS.toNanos(50);
                }
                in = null;
                while (in == null && !closed) {
                    TimeUnit.NANOSECONDS.sleep(backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1));
                    backoff = Math.min(2 * backoff, TimeUnit.SECONDS.toNanos(1));
                    ep = (ep + 1) % client.transport.endpoints.size();
                    try {
                        in = open(ep, 0);
                    } catch (RaftLockException e) {
                        if (closed) {
                            break;
                        }
                        if (!Transport.retryable(e)) {
                            done.completeExceptionally(e);
                            return;
                        }
                    }
                }
            }
        } catch (InterruptedException e) {
            // closed
        } catch (RuntimeException e) {
            done.completeExceptionally(e); // the listener's
            return;
        }
        done.complete(null);
    }

    /** Delivers the stream's events until it ends; whether any entry came. Throws the error event the server ended it with. */
    private boolean read(InputStream in) {
        boolean got = false;
        String id = null;
        String event = "";
        StringBuilder data = new StringBuilder();
        try (BufferedReader br = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = br.readLine()) != null) {
                if (!line.isEmpty()) {
                    if (line.startsWith(":")) {
                        continue; // a comment (ping)
                    }
                    int colon = line.indexOf(':');
                    String field = colon < 0 ? line : line.substring(0, colon);
                    String value = colon < 0 ? "" : line.substring(colon + 1);
                    if (value.startsWith(" ")) {
                        value = value.substring(1);
                    }
                    switch (field) {
                        case "id" -> id = value;
                        case "event" -> event = value;
                        case "data" -> {
                            if (data.length() + value.length() > (64 << 20)) {
                                throw new InternalException("watch: an event larger than 64 MiB");
                            }
                            data.append(value);
                        }
                        default -> { }
                    }
                    continue;
                }
                if (event.equals("entry") && data.length() > 0) {
                    JsonNode e = Transport.JSON.readTree(data.toString());
                    for (JsonNode ev : e.path("events")) {
                        if (closed) {
                            return got;
                        }
                        listener.accept(new Event(ev.path("name").asText(""), ev.path("kind").asText(""), ev.path("index").asLong(e.path("index").asLong()),
                                ev.path("token").asLong(), ev.path("owner").asText(""), ev.path("time_ms").asLong()));
                    }
                    got = true;
                } else if (event.equals("error") && data.length() > 0) {
                    JsonNode e = Transport.JSON.readTree(data.toString()).path("error");
                    throw RaftLockException.forCode(e.path("code").asText("internal"), "watch \"" + prefix + "\": " + e.path("message").asText(""), null);
                }
                if (id != null) {
                    try {
                        long n = Long.parseLong(id.strip());
                        if (!known || n > last) {
                            last = n;
                        }
                        known = true;
                    } catch (NumberFormatException ignored) {
                        // not an index: kept as it was
                    }
                }
                id = null;
                event = "";
                data.setLength(0);
            }
        } catch (IOException e) {
            // a disconnect: reconnect
        }
        return got;
    }

    private static void closeQuietly(InputStream in) {
        if (in == null) {
            return;
        }
        try {
            in.close();
        } catch (IOException e) {
            // gone
        }
    }

    /** The index of the last entry whose events were all delivered (or that the stream started after). */
    public long lastIndex() {
        return last;
    }

    /**
     * Completed when the watch ends: normally after {@link #close()}, exceptionally with the
     * error that ended it ({@link IndexCompactedException}, a refused token...).
     */
    public CompletableFuture<Void> done() {
        return done.copy();
    }

    /** Ends the watch (waiting up to 5 s for its thread). Idempotent. */
    @Override
    public void close() {
        closed = true;
        mu.lock();
        try {
            closeQuietly(current);
        } finally {
            mu.unlock();
        }
        Thread t = thread;
        if (t != null && t != Thread.currentThread()) {
            t.interrupt();
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
        return "Watcher{prefix=" + prefix + ", lastIndex=" + last + "}";
    }
}
