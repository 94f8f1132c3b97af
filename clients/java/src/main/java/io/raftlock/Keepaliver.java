package io.raftlock;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The one keepalive thread of a client: it wakes when the earliest lease is due (or its
 * safe-until passes) and sends one batch keepalive for every lease due within half its
 * interval, so a client with many leases sends about one request per interval. The batch is
 * sent from a short-lived thread, so that a hung node delays no lease's watchdog.
 */
final class Keepaliver {
    static final int MAX_BATCH = 10000;

    private static final class State {
        long due;
        boolean inflight;

        State(long due) {
            this.due = due;
        }
    }

    private final RaftLock client;
    private final ReentrantLock mu = new ReentrantLock();
    private final Condition changed = mu.newCondition();
    private final Map<Lease, State> leases = new IdentityHashMap<>();
    private Thread thread;
    private boolean stopped;

    Keepaliver(RaftLock client) {
        this.client = client;
    }

    private static long jittered(long d) {
        return d - ThreadLocalRandom.current().nextLong(d / 10 + 1);
    }

    void add(Lease l) {
        mu.lock();
        try {
            if (stopped) {
                throw new IllegalStateException("the client is closed");
            }
            leases.put(l, new State(l.lastSentNanos() + jittered(l.intervalNanos)));
            if (thread == null) {
                thread = new Thread(this::loop, "raftlock-keepalive");
                thread.setDaemon(true);
                thread.start();
            }
            changed.signalAll();
        } finally {
            mu.unlock();
        }
    }

    void remove(Lease l) {
        mu.lock();
        try {
            leases.remove(l);
            changed.signalAll();
        } finally {
            mu.unlock();
        }
    }

    /** The leases still kept alive. */
    List<Lease> leases() {
        mu.lock();
        try {
            return new ArrayList<>(leases.keySet());
        } finally {
            mu.unlock();
        }
    }

    /** Ends the thread; the leases still scheduled are returned (the caller revokes them). */
    List<Lease> stop() {
        Thread t;
        List<Lease> out;
        mu.lock();
        try {
            stopped = true;
            out = new ArrayList<>(leases.keySet());
            leases.clear();
            t = thread;
            changed.signalAll();
        } finally {
            mu.unlock();
        }
        if (t != null) {
            try {
                t.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return out;
    }

    private void reschedule(Lease l, long due) {
        mu.lock();
        try {
            State st = leases.get(l);
            if (st != null) {
                st.due = due;
                st.inflight = false;
            }
            changed.signalAll();
        } finally {
            mu.unlock();
        }
    }

    private void loop() {
        while (true) {
            List<Lease> expired = new ArrayList<>();
            List<Lease> batch = new ArrayList<>();
            mu.lock();
            try {
                if (stopped) {
                    thread = null;
                    return;
                }
                long now = System.nanoTime();
                long wake = now + TimeUnit.HOURS.toNanos(1);
                var it = leases.entrySet().iterator();
                boolean anyDue = false;
                while (it.hasNext()) {
                    var e = it.next();
                    Lease l = e.getKey();
                    long su = l.safeUntilNanos();
                    if (now - su >= 0 || l.isLostSignal()) {
                        expired.add(l);
                        it.remove();
                        continue;
                    }
                    wake = Math.min(wake, su);
                    if (!e.getValue().inflight) {
                        wake = Math.min(wake, e.getValue().due);
                        if (e.getValue().due - now <= 0) {
                            anyDue = true;
                        }
                    }
                }
                if (anyDue) {
                    for (var e : leases.entrySet()) {
                        State st = e.getValue();
                        if (!st.inflight && st.due - (now + e.getKey().intervalNanos / 2) <= 0) {
                            st.inflight = true;
                            batch.add(e.getKey());
                        }
                    }
                } else if (expired.isEmpty()) {
                    try {
                        changed.awaitNanos(Math.max(wake - now, 0));
                    } catch (InterruptedException ex) {
                        thread = null;
                        return;
                    }
                }
            } finally {
                mu.unlock();
            }
            for (Lease l : expired) {
                l.lose(new LeaseLostException("its safe time passed without an answered keepalive"));
            }
            for (int i = 0; i < batch.size(); i += MAX_BATCH) {
                List<Lease> part = batch.subList(i, Math.min(batch.size(), i + MAX_BATCH));
                Thread t = new Thread(() -> send(new ArrayList<>(part)), "raftlock-keepalive-batch");
                t.setDaemon(true);
                t.start();
            }
        }
    }

    private void send(List<Lease> batch) {
        long deadline = 0;
        long attempt = client.transport.timeoutNanos;
        long retry = TimeUnit.SECONDS.toNanos(1);
        Map<String, List<Lease>> byId = new HashMap<>();
        boolean first = true;
        for (Lease l : batch) {
            if (l.isLostSignal()) {
                remove(l);
                continue;
            }
            long su = l.safeUntilNanos();
            if (first || su - deadline > 0) {
                deadline = su;
            }
            first = false;
            attempt = Math.min(attempt, l.attemptTimeout());
            retry = Math.min(retry, l.retryPause());
            byId.computeIfAbsent(l.id, k -> new ArrayList<>()).add(l);
        }
        if (byId.isEmpty()) {
            return;
        }
        Transport.Result res;
        try {
            res = client.keepaliveMany(new ArrayList<>(byId.keySet()), deadline, attempt, retry);
        } catch (RaftLockException e) {
            for (List<Lease> ls : byId.values()) {
                for (Lease l : ls) {
                    settle(l, 0, e);
                }
            }
            return;
        }
        for (JsonNode item : res.body.path("leases")) {
            List<Lease> ls = byId.remove(item.path("lease_id").asText(""));
            if (ls != null) {
                for (Lease l : ls) {
                    settle(l, res.sent, null);
                }
            }
        }
        for (JsonNode nf : res.body.path("not_found")) {
            List<Lease> ls = byId.remove(nf.asText(""));
            if (ls != null) {
                for (Lease l : ls) {
                    settle(l, res.sent, new LeaseNotFoundException("the cluster no longer knows the lease"));
                }
            }
        }
        for (List<Lease> ls : byId.values()) {
            for (Lease l : ls) {
                settle(l, res.sent, new InternalException("batch keepalive: the answer does not mention the lease"));
            }
        }
    }

    private void settle(Lease l, long sent, RaftLockException err) {
        if (err == null) {
            if (!l.observe(sent)) {
                remove(l);
                return;
            }
            reschedule(l, sent + jittered(l.intervalNanos));
        } else if (err instanceof LeaseNotFoundException) {
            l.lose(new LeaseLostException("the cluster no longer knows the lease (it expired or was revoked)"));
            remove(l);
        } else if (l.isLostSignal()) {
            remove(l);
        } else {
            reschedule(l, System.nanoTime() + jittered(l.retryPause()));
        }
    }
}
