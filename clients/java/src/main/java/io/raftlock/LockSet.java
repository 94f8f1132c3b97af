package io.raftlock;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Several locks held together by one lease, taken in one commit: two workers taking {a, b}
 * in different orders cannot deadlock, and a crash midway leaves nothing taken. Each lock
 * has its own fencing token. {@link #close()} releases them all in one commit and revokes
 * the lease.
 */
public final class LockSet implements AutoCloseable {
    /** The most locks in a set. */
    public static final int MAX_NAMES = 64;

    private final RaftLock client;
    final Lease lease;
    private final Map<String, Long> tokens;
    private final GrantLoss loss;

    private LockSet(RaftLock client, Lease lease, Map<String, Long> tokens, GrantLoss loss) {
        this.client = client;
        this.lease = lease;
        this.tokens = tokens;
        this.loss = loss;
    }

    static Map<String, Long> tokensOf(JsonNode o) {
        Map<String, Long> t = new LinkedHashMap<>();
        for (JsonNode l : o.path("locks")) {
            t.put(l.path("name").asText(), l.path("token").asLong());
        }
        return t;
    }

    static LockSet take(RaftLock c, List<String> names, Duration ttl, Duration wait, HoldOptions o) {
        return take(c, names, ttl, wait, o, false);
    }

    /** leaseFirst: create the lease before asking, even without a wait, so that an interrupted take can revoke what it may have been granted. */
    static LockSet take(RaftLock c, List<String> names, Duration ttl, Duration wait, HoldOptions o, boolean leaseFirst) {
        if (names.isEmpty() || names.size() > MAX_NAMES) {
            throw new InvalidArgumentException("a lockset names 1 to " + MAX_NAMES + " locks");
        }
        for (String n : names) {
            Names.check(n);
        }
        RaftLock.checkTtl(ttl);
        long w = RaftLock.waitNanos(wait);
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("names", new ArrayList<>(names));
        o.addFields(fields);
        String op = "lockset " + String.join(",", names);
        if (w == 0 && !leaseFirst) {
            Transport.Result res = c.acquireRaw(op, "POST", RaftLock.LOCKSETS, fields, null, ttl, 0, o.owner, null, null);
            Lease l = c.startLease(res.body.path("lease_id").asText(), res.body.path("ttl_ms").asLong() * 1_000_000L, res.first, o);
            return new LockSet(c, l, tokensOf(res.body), new GrantLoss(l, o.maxHoldNanos(), res.first));
        }
        Lease l = c.lease(ttl, o);
        try {
            long end = System.nanoTime() + w;
            boolean first = true;
            while (true) {
                long left = end - System.nanoTime();
                if (left <= 0 && !first) {
                    throw new WaitTimeoutException(op + ": the wait ended");
                }
                first = false;
                Transport.Cancel cancel = new Transport.Cancel();
                l.onLost(() -> cancel.cancel(new LeaseLostException(op + ": the lease was lost while waiting")));
                Transport.Result res;
                try {
                    res = c.acquireRaw(op, "POST", RaftLock.LOCKSETS, fields, l.id, null, w == 0 ? 0 : Math.min(left, RaftLock.WAIT_CHUNK_NANOS), o.owner, cancel, null);
                } catch (WaitTimeoutException e) {
                    if (w > 0 && end - System.nanoTime() > 1_000_000L) {
                        continue;
                    }
                    throw e;
                }
                if (!l.observe(res.sent)) {
                    throw new LeaseLostException(op + ": the lease was lost as it was granted");
                }
                return new LockSet(c, l, tokensOf(res.body), new GrantLoss(l, o.maxHoldNanos(), System.nanoTime()));
            }
        } catch (RuntimeException e) {
            RaftLock.closeQuietly(l);
            throw e;
        }
    }

    /** Each lock's fencing token, by name. */
    public Map<String, Long> tokens() {
        return Map.copyOf(tokens);
    }

    /** The token of lock {@code name} of the set. */
    public long token(String name) {
        Long t = tokens.get(name);
        if (t == null) {
            throw new IllegalArgumentException("not in the set: " + name);
        }
        return t;
    }

    /** The lease holding the set. */
    public Lease lease() {
        return lease;
    }

    /** Whether the set can no longer be assumed held (its lease lost, or its maximum hold ended). */
    public boolean isLost() {
        return loss.isLost();
    }

    /** Completed when the set is lost (or released). */
    public CompletableFuture<Void> lost() {
        return loss.lost();
    }

    /** Time left before the set may no longer be assumed held (zero or negative once passed). */
    public Duration safeFor() {
        return loss.safeFor();
    }

    /** Releases every lock in one commit, then revokes the lease. */
    @Override
    public void close() {
        List<Map<String, Object>> locks = new ArrayList<>();
        tokens.forEach((n, t) -> locks.add(Map.of("name", n, "token", t)));
        try {
            client.call(new Transport.Request("release lockset", "DELETE", RaftLock.LOCKSETS)
                    .body(() -> Map.of("lease_id", lease.id, "locks", locks)).secret(lease.id), null, 0);
        } catch (NotHolderException | LeaseNotFoundException e) {
            // lost meanwhile
        } finally {
            lease.close();
        }
    }

    /** Never shows the lease ID. */
    @Override
    public String toString() {
        return "LockSet{" + tokens.keySet() + ", lost=" + loss.isSet() + "}";
    }
}
