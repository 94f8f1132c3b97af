package io.raftlock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Sends each request to the cluster that owns its name, past one cluster's ceiling
 * (docs/SCALING.md), with the rules of the Go client's {@code client.Router}:
 *
 * <ul>
 * <li>Each cluster owns the names that start with its prefixes; a name goes to the cluster
 *     routed its <b>longest</b> prefix. The empty prefix is the default route. A name no
 *     route owns is refused with {@link NoRouteException} before anything is sent.</li>
 * <li>Clusters share nothing: a lease, its grants and their fencing tokens exist on one
 *     cluster only, and tokens are never compared across clusters (a lock's name always
 *     routes to the same cluster, so its tokens rise on that one). A lease of one cluster
 *     given for another's name is refused with {@link CrossClusterException} before anything
 *     is sent: by {@link Lease} object always, by lease ID when the router made or saw the
 *     lease ({@link #lease}, {@link #acquire}).</li>
 * <li>Each cluster has its own {@link RaftLock} (its own endpoints, TLS and ACL token: an ACL
 *     token of one cluster is never sent to another); {@link #close()} closes them all.</li>
 * </ul>
 *
 * <pre>{@code
 * try (RaftLockRouter r = RaftLockRouter.builder()
 *         .route("eu", List.of("eu/", ""), RaftLock.builder().endpoints(eu).build())
 *         .route("us", List.of("us/"), RaftLock.builder().endpoints(us).build())
 *         .build();
 *      Held h = r.lock("us/accounts/42", Duration.ofSeconds(10), Duration.ofSeconds(5), HoldOptions.defaults())) {
 *     write(h.token());
 * }
 * }</pre>
 *
 * Thread-safe.
 */
public final class RaftLockRouter implements AutoCloseable {
    private record Cluster(String name, RaftLock client) {}

    private record Prefix(String prefix, int cluster) {}

    private record Home(int cluster, long untilNanos, boolean forever) {}

    private final List<Cluster> clusters;
    private final List<Prefix> prefixes; // longest first
    private final ReentrantLock mu = new ReentrantLock();
    private final Map<String, Home> leases = new HashMap<>(); // lease ID -> cluster
    private int sweepAt = 64;

    private RaftLockRouter(List<Cluster> clusters, List<Prefix> prefixes) {
        this.clusters = List.copyOf(clusters);
        List<Prefix> p = new ArrayList<>(prefixes);
        p.sort(Comparator.comparingInt((Prefix x) -> x.prefix.length()).reversed());
        this.prefixes = List.copyOf(p);
    }

    /** A builder: one {@link Builder#route} per cluster. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds a {@link RaftLockRouter}. */
    public static final class Builder {
        private final List<Cluster> clusters = new ArrayList<>();
        private final List<Prefix> prefixes = new ArrayList<>();
        private final Map<String, String> owner = new LinkedHashMap<>();

        private Builder() {}

        /**
         * Gives cluster {@code name} (a label for errors; "" means "cluster N") the names that
         * start with {@code prefixes} ("" is the default route), through {@code client}, which
         * the router then owns (closes). A prefix may be routed to one cluster only.
         */
        public Builder route(String name, List<String> prefixes, RaftLock client) {
            String label = name == null || name.isEmpty() ? "cluster " + (clusters.size() + 1) : name;
            if (prefixes == null || prefixes.isEmpty()) {
                throw new InvalidArgumentException("router: route " + label + " has no prefixes (give \"\" for the default route)");
            }
            for (String p : prefixes) {
                String other = owner.putIfAbsent(p, label);
                if (other != null) {
                    throw new InvalidArgumentException("router: prefix \"" + p + "\" is routed to both " + other + " and " + label);
                }
                this.prefixes.add(new Prefix(p, clusters.size()));
            }
            clusters.add(new Cluster(label, client));
            return this;
        }

        /** The router; at least one route. */
        public RaftLockRouter build() {
            if (clusters.isEmpty()) {
                throw new InvalidArgumentException("router: no routes given");
            }
            return new RaftLockRouter(clusters, prefixes);
        }
    }

    private int route(String verb, String name) {
        for (Prefix p : prefixes) {
            if (name.startsWith(p.prefix)) {
                return p.cluster;
            }
        }
        throw new NoRouteException(verb + " \"" + name + "\": no route owns the name (no routed prefix matches it, and there is no default route \"\")");
    }

    /** The client of the cluster that owns {@code name}. */
    public RaftLock clientFor(String name) {
        return clusters.get(route("route", name)).client;
    }

    /** The label of the cluster that owns {@code name}. */
    public String clusterFor(String name) {
        return clusters.get(route("route", name)).name;
    }

    private String clusterOf(RaftLock c) {
        for (Cluster cl : clusters) {
            if (cl.client == c) {
                return cl.name;
            }
        }
        return "a client outside this router";
    }

    /** Throws {@link CrossClusterException} unless {@code lease} lives on the cluster that owns {@code name}. */
    public void checkLease(Lease lease, String name) {
        int i = route("lease for", name);
        if (lease.client() != clusters.get(i).client) {
            throw new CrossClusterException("lease for \"" + name + "\": the name is " + clusters.get(i).name + "'s, the lease "
                    + clusterOf(lease.client()) + "'s; take a lease on " + clusters.get(i).name);
        }
    }

    private void checkLeaseId(String verb, String name, int i, String leaseId) {
        Home h;
        mu.lock();
        try {
            h = leases.get(leaseId);
            if (h != null && !h.forever && System.nanoTime() - h.untilNanos > 0) {
                leases.remove(leaseId);
                h = null;
            }
        } finally {
            mu.unlock();
        }
        if (h != null && h.cluster != i) {
            throw new CrossClusterException(verb + " \"" + name + "\": the name is " + clusters.get(i).name + "'s, the lease "
                    + clusters.get(h.cluster).name + "'s; take a lease on " + clusters.get(i).name);
        }
    }

    private void remember(String leaseId, int i, long untilNanos, boolean forever) {
        mu.lock();
        try {
            leases.put(leaseId, new Home(i, untilNanos, forever));
            if (leases.size() < sweepAt) {
                return;
            }
            long now = System.nanoTime();
            leases.values().removeIf(h -> !h.forever && now - h.untilNanos > 0);
            sweepAt = 2 * leases.size() + 64;
        } finally {
            mu.unlock();
        }
    }

    private void forget(String leaseId) {
        mu.lock();
        try {
            leases.remove(leaseId);
        } finally {
            mu.unlock();
        }
    }

    /**
     * Creates a lease, kept alive, on the cluster that owns {@code name} (a lock name or a
     * prefix: the lease may hold any name of that cluster).
     */
    public Lease lease(String name, Duration ttl) {
        int i = route("new lease for", name);
        Lease l = clusters.get(i).client.lease(ttl);
        remember(l.id, i, 0, true);
        l.onLost(() -> forget(l.id));
        return l;
    }

    /** Takes lock {@code name} on the cluster that owns it, with a lease of its own (see {@link RaftLock#lock}). */
    public Held lock(String name, Duration ttl, Duration waitUpTo, HoldOptions o) {
        return clientFor(name).lock(name, ttl, waitUpTo, o);
    }

    /**
     * Takes lock {@code name} with {@code lease}; {@link CrossClusterException} (nothing sent)
     * when the lease lives on another cluster than the one that owns the name.
     */
    public Held lock(Lease lease, String name, Duration waitUpTo, HoldOptions o) {
        checkLease(lease, name);
        return lease.client().lock(lease, name, waitUpTo, o);
    }

    /**
     * Takes every lock of {@code names} in one commit on the cluster that owns them all;
     * {@link CrossClusterException} when they belong to several clusters (a lockset is one
     * commit of one cluster).
     */
    public LockSet lockSet(List<String> names, Duration ttl, Duration waitUpTo, HoldOptions o) {
        int home = -1;
        for (String n : names) {
            int i = route("lockset", n);
            if (home >= 0 && i != home) {
                throw new CrossClusterException("lockset: \"" + n + "\" is " + clusters.get(i).name + "'s, \"" + names.get(0) + "\" "
                        + clusters.get(home).name + "'s; a lockset is taken on one cluster");
            }
            home = i;
        }
        return clusters.get(Math.max(home, 0)).client.lockSet(names, ttl, waitUpTo, o);
    }

    /** Takes a permit of semaphore {@code name} on the cluster that owns it. */
    public Held semaphore(String name, int limit, Duration ttl, Duration waitUpTo, HoldOptions o) {
        return clientFor(name).semaphore(name, limit, ttl, waitUpTo, o);
    }

    /** Campaigns in election {@code name} on the cluster that owns it. */
    public Leadership campaign(String name, String value, Duration ttl, Duration waitUpTo, HoldOptions o) {
        return clientFor(name).campaign(name, value, ttl, waitUpTo, o);
    }

    /** One plain acquire on the cluster that owns {@code name}; its lease is remembered as that cluster's. */
    public Grant acquire(String name, Duration ttl, String owner) {
        int i = route("acquire", name);
        Grant g = clusters.get(i).client.acquire(name, ttl, owner);
        remember(g.leaseId(), i, System.nanoTime() + g.ttlMs() * 1_000_000L, false);
        return g;
    }

    /** Releases lock {@code name} on the cluster that owns it; a lease known to live on another is refused ({@link CrossClusterException}). */
    public void release(String name, String leaseId, long token) {
        int i = route("release", name);
        checkLeaseId("release", name, i, leaseId);
        clusters.get(i).client.release(name, leaseId, token);
    }

    /** Reads lock {@code name} on the cluster that owns it. */
    public LockStatus status(String name) {
        return clientFor(name).status(name);
    }

    /** Closes every cluster's client (revoking the leases they keep alive). */
    @Override
    public void close() {
        for (Cluster c : clusters) {
            c.client.close();
        }
    }

    /** Never shows a token. */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("RaftLockRouter{");
        for (Prefix p : prefixes) {
            sb.append('"').append(p.prefix).append("\"->").append(clusters.get(p.cluster).name).append(' ');
        }
        return sb.append('}').toString();
    }
}
