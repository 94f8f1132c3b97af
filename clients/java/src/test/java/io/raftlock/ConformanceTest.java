package io.raftlock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.raftlock.testing.Cluster;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The Java runner of the conformance suite (clients/conformance/FORMAT.md): one three-node
 * cluster of real `raftlock serve` processes, every scenario file run against it in file
 * order, one dynamic test per scenario. RAFTLOCK_CONFORMANCE_ONLY=name1,name2 runs only those.
 * Nothing here is specific to one scenario.
 */
class ConformanceTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory NF = JsonNodeFactory.instance;
    private static Cluster cluster;
    private static Cluster clusterB; // one node, b1, started before the first scenario naming it
    private static Path tmp;

    /** A step's outcome did not match, or a wait ran out. */
    static final class StepFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        StepFailure(String m) {
            super(m);
        }
    }

    /** ok with a result, or an error code. */
    record Outcome(ObjectNode result, String error) {}

    /**
     * What an acquire-like step (or a lease step) leaves behind, whatever made it: a
     * {@link Held}, a {@link LockSet}, a plain {@link Grant} (no lease kept alive, no loss
     * signal) or a {@link Lease}.
     */
    static final class Hold {
        RaftLock client; // the client of the cluster it lives on
        long token;
        String leaseId;
        Lease lease; // null for a plain grant
        Runnable release;
        java.util.function.Supplier<java.util.concurrent.CompletableFuture<Void>> lost; // null: no loss signal
        java.util.function.Supplier<Duration> safeFor;
        Leadership leadership; // for proclaim
        boolean isLease;

        static Hold of(RaftLock c, Held h) {
            Hold x = new Hold();
            x.client = c;
            x.token = h.token();
            x.leaseId = h.lease().id;
            x.lease = h.lease();
            x.release = h::release;
            x.lost = h::lost;
            x.safeFor = h::safeFor;
            x.leadership = h instanceof Leadership l ? l : null;
            return x;
        }
    }

    @AfterAll
    static void stopCluster() throws IOException {
        if (cluster != null) {
            cluster.close();
        }
        if (clusterB != null) {
            clusterB.close();
        }
        if (tmp != null) {
            try (Stream<Path> s = Files.walk(tmp)) {
                s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    @TestFactory
    Stream<DynamicTest> scenarios() throws Exception {
        Path dir = Cluster.repo().resolve("clients/conformance/scenarios");
        String onlyEnv = System.getenv().getOrDefault("RAFTLOCK_CONFORMANCE_ONLY", "");
        Set<String> only = new HashSet<>();
        for (String s : onlyEnv.split(",")) {
            if (!s.isBlank()) {
                only.add(s.strip());
            }
        }
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.toString().endsWith(".json")).sorted().toList();
        }
        List<JsonNode> specs = new ArrayList<>();
        for (Path f : files) {
            JsonNode spec = JSON.readTree(f.toFile());
            if (!only.isEmpty() && !only.contains(spec.path("name").asText())) {
                continue;
            }
            specs.add(spec);
        }
        assertFalse(specs.isEmpty(), "no scenarios found in " + dir);
        return specs.stream().map(spec -> DynamicTest.dynamicTest(spec.path("name").asText(), () -> runScenario(spec)));
    }

    private static void runScenario(JsonNode spec) throws Exception {
        for (JsonNode s : spec.path("skip")) {
            if (s.asText().equals("java")) {
                if (Cluster.inCI()) {
                    fail("scenario " + spec.path("name").asText() + " skips the java runner, and nothing may skip under CI=true");
                }
                System.out.println("SKIP " + spec.path("name").asText());
                return;
            }
        }
        if (cluster == null) {
            cluster = new Cluster();
            cluster.waitProtocol3(Duration.ofSeconds(30));
            tmp = Files.createTempDirectory("raftlock-java-conf-");
        }
        if (clusterB == null && spec.path("clients").toString().contains("\"b1\"")) {
            clusterB = new Cluster(1, "b", List.of("--snapshot-threshold", "1", "--snapshot-interval", "100ms"), false);
            clusterB.waitProtocol3(Duration.ofSeconds(30));
        }
        long t0 = System.nanoTime();
        Scenario sc = new Scenario(spec);
        String err = null;
        try {
            sc.run();
        } catch (StepFailure e) {
            err = e.getMessage();
        } finally {
            sc.cleanup();
            try {
                cluster.restore();
                if (clusterB != null) {
                    clusterB.restore();
                }
            } catch (RuntimeException e) {
                err = (err == null ? "" : err) + "\nrestoring the cluster: " + e.getMessage();
            }
        }
        double dt = (System.nanoTime() - t0) / 1e9;
        if (err != null) {
            System.out.printf("FAIL %s (%.1fs): %s%n%s%n", spec.path("name").asText(), dt, err, cluster.logs(15));
            fail(err);
        }
        System.out.printf("PASS %s (%.1fs)%n", spec.path("name").asText(), dt);
    }

    /** The state of one scenario's run. */
    static final class Scenario {
        final JsonNode spec;
        final Map<String, RaftLock> clients = new LinkedHashMap<>();
        final Map<String, RaftLockRouter> routers = new LinkedHashMap<>();
        final Map<String, FaultProxy.State> proxies = new HashMap<>();
        final List<FaultProxy> proxyServers = new ArrayList<>();
        final Map<String, ObjectNode> results = new HashMap<>();
        final Map<String, Hold> holds = new LinkedHashMap<>();
        final Map<String, Connection> stores = new HashMap<>();
        final Map<String, Thread> bgThreads = new HashMap<>();
        final Map<String, Outcome[]> bgOutcomes = new HashMap<>();
        final Map<String, Stream_> streams = new HashMap<>();

        Scenario(JsonNode spec) throws IOException {
            this.spec = spec;
            JsonNode cs = spec.path("clients");
            if (cs.isMissingNode() || cs.isNull()) {
                ObjectNode d = NF.objectNode();
                d.putObject("a");
                d.putObject("b");
                d.putObject("c");
                cs = d;
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = cs.fields(); it.hasNext();) {
                Map.Entry<String, JsonNode> e = it.next();
                JsonNode o = e.getValue();
                if (o.has("routes")) {
                    RaftLockRouter.Builder b = RaftLockRouter.builder();
                    for (JsonNode r : o.get("routes")) {
                        List<String> prefixes = new ArrayList<>();
                        r.path("prefixes").forEach(p -> prefixes.add(p.asText()));
                        b.route(r.path("name").asText(""), prefixes, RaftLock.builder().endpoints(endpoints(r.path("nodes"))).build());
                    }
                    routers.put(e.getKey(), b.build());
                    continue;
                }
                List<String> eps = o.has("nodes") ? endpoints(o.get("nodes")) : cluster.endpoints();
                if (o.path("proxy").asBoolean()) {
                    FaultProxy.State st = new FaultProxy.State();
                    proxies.put(e.getKey(), st);
                    List<String> targets = eps;
                    eps = new ArrayList<>();
                    for (String t : targets) {
                        FaultProxy p = new FaultProxy(st, Integer.parseInt(t.substring(t.lastIndexOf(':') + 1)));
                        proxyServers.add(p);
                        eps.add("http://127.0.0.1:" + p.port());
                    }
                }
                clients.put(e.getKey(), RaftLock.builder().endpoints(eps).build());
            }
        }

        /** The endpoints of the nodes labelled in nodes (n1..n3 of cluster A, b1 of B), in that order. */
        static List<String> endpoints(JsonNode nodes) {
            List<String> out = new ArrayList<>();
            for (JsonNode n : nodes) {
                String id = n.asText();
                Cluster c = id.startsWith("b") ? clusterB : cluster;
                int i = c == null ? -1 : c.index(id);
                if (i < 0) {
                    throw new StepFailure("no node " + id);
                }
                out.add(c.endpoints().get(i));
            }
            return out;
        }

        /** The cluster and index of node id. */
        static Object[] node(String id) {
            Cluster c = id.startsWith("b") ? clusterB : cluster;
            int i = c == null ? -1 : c.index(id);
            if (i < 0) {
                throw new StepFailure("no node " + id);
            }
            return new Object[] {c, i};
        }

        JsonNode ref(JsonNode v) {
            if (v != null && v.isTextual() && v.asText().startsWith("$")) {
                String s = v.asText().substring(1);
                int dot = s.indexOf('.');
                String label = s.substring(0, dot);
                String field = s.substring(dot + 1);
                ObjectNode r = results.get(label);
                if (r == null || !r.has(field)) {
                    throw new StepFailure("reference " + v.asText() + ": no such result");
                }
                return r.get(field);
            }
            return v;
        }

        static boolean same(JsonNode a, JsonNode b) {
            if (a.isNumber() && b.isNumber()) {
                return a.decimalValue().compareTo(b.decimalValue()) == 0;
            }
            return a.equals(b);
        }

        String matches(ObjectNode result, JsonNode want) {
            for (Iterator<Map.Entry<String, JsonNode>> it = want.fields(); it.hasNext();) {
                Map.Entry<String, JsonNode> e = it.next();
                String k = e.getKey();
                JsonNode w = e.getValue();
                if (!result.has(k)) {
                    return "result has no field " + k + " (has " + result + ")";
                }
                JsonNode got = result.get(k);
                if (w.isObject()) {
                    if (w.size() != 1) {
                        return "matcher " + w + " must have one key";
                    }
                    String op = w.fieldNames().next();
                    JsonNode v = ref(w.get(op));
                    int c = got.decimalValue().compareTo(v.decimalValue());
                    boolean ok;
                    switch (op) {
                        case "eq": ok = c == 0; break;
                        case "ne": ok = c != 0; break;
                        case "gt": ok = c > 0; break;
                        case "ge": ok = c >= 0; break;
                        case "lt": ok = c < 0; break;
                        case "le": ok = c <= 0; break;
                        default: return "unknown matcher " + op;
                    }
                    if (!ok) {
                        return k + " = " + got + ", want " + op + " " + v;
                    }
                } else if (!same(got, ref(w))) {
                    return k + " = " + got + ", want " + ref(w);
                }
            }
            return null;
        }

        void check(JsonNode step, Outcome out) {
            JsonNode exp = step.path("expect");
            if (exp.has("one_of")) {
                String got = out.error == null ? "ok" : out.error;
                for (JsonNode o : exp.get("one_of")) {
                    if (o.asText().equals(got)) {
                        return;
                    }
                }
                throw new StepFailure("outcome " + got + ", want one of " + exp.get("one_of"));
            }
            if (exp.has("error")) {
                if (out.error == null) {
                    throw new StepFailure("succeeded with " + out.result + ", want error " + exp.get("error").asText());
                }
                if (!out.error.equals(exp.get("error").asText())) {
                    throw new StepFailure("error " + out.error + ", want " + exp.get("error").asText());
                }
                return;
            }
            if (out.error != null) {
                throw new StepFailure("error " + out.error + ", want success");
            }
            String diff = matches(out.result, exp.path("result").isObject() ? exp.get("result") : NF.objectNode());
            if (diff != null) {
                throw new StepFailure(diff);
            }
        }

        RaftLock client(JsonNode step) {
            RaftLock c = clients.get(step.path("client").asText("a"));
            if (c == null) {
                throw new StepFailure("no client " + step.path("client").asText("a"));
            }
            return c;
        }

        Hold hold(JsonNode step) {
            return holdNamed(step.path("hold").asText());
        }

        Hold holdNamed(String label) {
            Hold h = holds.get(label);
            if (h == null) {
                throw new StepFailure("no hold " + label);
            }
            return h;
        }

        Hold held(JsonNode step) {
            Hold h = hold(step);
            if (h.lost == null) {
                throw new StepFailure("hold " + step.path("hold").asText() + " has no loss signal");
            }
            return h;
        }

        /** The lease of the step's lease field, null when it has none. */
        Lease givenLease(JsonNode step) {
            if (!step.has("lease")) {
                return null;
            }
            Hold h = holdNamed(step.path("lease").asText());
            if (!h.isLease) {
                throw new StepFailure("hold " + step.path("lease").asText() + " is not a lease");
            }
            return h.lease;
        }

        static Duration ms(JsonNode step, String k, long dflt) {
            return Duration.ofMillis(step.path(k).asLong(dflt));
        }

        static HoldOptions opts(JsonNode step) {
            HoldOptions o = HoldOptions.defaults().owner(step.path("owner").asText(""));
            if (step.has("max_hold_ms")) {
                o = o.maxHold(ms(step, "max_hold_ms", 0));
            }
            if (step.has("lock_delay_ms")) {
                o = o.lockDelay(ms(step, "lock_delay_ms", 0));
            }
            return "shared".equals(step.path("mode").asText("exclusive")) ? o.shared() : o;
        }

        static ObjectNode obj(Object... kv) {
            ObjectNode o = NF.objectNode();
            for (int i = 0; i < kv.length; i += 2) {
                o.set((String) kv[i], JSON.valueToTree(kv[i + 1]));
            }
            return o;
        }

        ObjectNode op(JsonNode step) throws Exception {
            String o = step.path("op").asText();
            String as = step.path("as").asText("");
            RaftLockRouter router = routers.get(step.path("client").asText("a"));
            if (router != null) {
                return routerOp(step, router);
            }
            switch (o) {
                case "lock":
                case "semaphore":
                case "campaign": {
                    RaftLock c = client(step);
                    Duration ttl = ms(step, "ttl_ms", 10000);
                    Duration wait = ms(step, "wait_ms", 0);
                    Held h;
                    Lease given = givenLease(step);
                    if (o.equals("lock") && given != null) {
                        h = c.lock(given, step.path("name").asText(), wait, opts(step));
                    } else if (o.equals("lock")) {
                        h = c.lock(step.path("name").asText(), ttl, wait, opts(step));
                    } else if (o.equals("semaphore")) {
                        h = c.semaphore(step.path("name").asText(), step.path("limit").asInt(), ttl, wait, opts(step));
                    } else {
                        h = c.campaign(step.path("name").asText(), step.path("value").asText(), ttl, wait, opts(step));
                    }
                    if (!as.isEmpty()) {
                        holds.put(as, Hold.of(c, h));
                    }
                    return obj("token", h.token());
                }
                case "lockset": {
                    RaftLock c = client(step);
                    List<String> names = new ArrayList<>();
                    step.path("names").forEach(n -> names.add(n.asText()));
                    LockSet ls = c.lockSet(names, ms(step, "ttl_ms", 10000), ms(step, "wait_ms", 0), opts(step));
                    Hold x = new Hold();
                    x.client = c;
                    x.token = ls.token(names.get(0));
                    x.lease = ls.lease();
                    x.leaseId = ls.lease().id;
                    x.release = ls::close;
                    x.lost = ls::lost;
                    x.safeFor = ls::safeFor;
                    if (!as.isEmpty()) {
                        holds.put(as, x);
                    }
                    return obj("token", x.token, "locks", ls.tokens().size());
                }
                case "lease": {
                    RaftLock c = client(step);
                    Lease l = c.lease(ms(step, "ttl_ms", 10000));
                    holds.put(as, leaseHold(c, l));
                    return obj();
                }
                case "revoke": {
                    Hold h = hold(step);
                    h.client.revoke(h.leaseId, null);
                    return obj();
                }
                case "acquire": {
                    RaftLock c = client(step);
                    Grant g = c.acquire(step.path("name").asText(), ms(step, "ttl_ms", 10000), step.path("owner").asText(""));
                    if (!as.isEmpty()) {
                        holds.put(as, grantHold(c, g, () -> c.release(g.name(), g.leaseId(), g.token())));
                    }
                    return obj("token", g.token());
                }
                case "release":
                    hold(step).release.run();
                    return obj();
                case "release_token":
                    client(step).release(step.path("name").asText(), hold(step).leaseId, ref(step.path("token")).asLong());
                    return obj();
                case "proclaim": {
                    Hold h = hold(step);
                    if (h.leadership == null) {
                        throw new StepFailure("proclaim on a hold that is not a leadership");
                    }
                    return obj("token", h.leadership.proclaim(step.path("value").asText()));
                }
                case "check_hold": {
                    Hold h = held(step);
                    return obj("lost", h.lost.get().isDone(), "token", h.token, "safe_ms", Math.floorDiv(h.safeFor.get().toNanos(), 1_000_000L));
                }
                case "wait_lost": {
                    Hold h = held(step);
                    long t = step.path("timeout_ms").asLong();
                    try {
                        h.lost.get().get(t, TimeUnit.MILLISECONDS);
                    } catch (java.util.concurrent.TimeoutException e) {
                        throw new StepFailure("the loss signal was not set within " + t + " ms (safe-until in " + h.safeFor.get().toMillis() + " ms)");
                    }
                    return obj("lost", true, "safe_ms", Math.floorDiv(h.safeFor.get().toNanos(), 1_000_000L));
                }
                case "watch":
                case "observe":
                case "wait_seen":
                case "stop_stream":
                    return streamOp(step);
                case "stop_node": {
                    Object[] n = node(step.path("node").asText());
                    ((Cluster) n[0]).stopNode((Integer) n[1]);
                    return obj();
                }
                case "kill_node": {
                    Object[] n = node(step.path("node").asText());
                    ((Cluster) n[0]).killNode((Integer) n[1]);
                    return obj();
                }
                case "snapshot_restart": {
                    Object[] n = node(step.path("node").asText());
                    try {
                        ((Cluster) n[0]).snapshotRestart((Integer) n[1]);
                    } catch (IllegalStateException e) {
                        throw new StepFailure(e.getMessage());
                    }
                    return obj();
                }
                case "status":
                    return status(step);
                case "semaphore_status": {
                    SemaphoreStatus st = client(step).semaphoreStatus(step.path("name").asText());
                    return obj("limit", st.limit(), "permits", st.permits(), "waiters", st.waiters());
                }
                case "election_status": {
                    ElectionStatus es = client(step).electionStatus(step.path("name").asText());
                    return obj("elected", es.elected(), "owner", es.owner(), "value", es.value(), "token", es.token(), "candidates", es.candidates());
                }
                case "history": {
                    List<History.Event> ev = client(step).history(step.path("name").asText()).events();
                    long grants = ev.stream().filter(e -> e.kind().equals("granted")).count();
                    return obj("grants", grants, "events", ev.size(), "last_kind", ev.isEmpty() ? "" : ev.get(ev.size() - 1).kind());
                }
                case "wait_status": {
                    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(step.path("timeout_ms").asLong());
                    while (true) {
                        ObjectNode r = status(step);
                        if (matches(r, step.path("until")) == null) {
                            return r;
                        }
                        if (System.nanoTime() - end >= 0) {
                            throw new StepFailure("status never matched " + step.path("until") + " within " + step.path("timeout_ms") + " ms; last " + r);
                        }
                        Thread.sleep(50);
                    }
                }
                case "fenced_write": {
                    Connection conn = store(step.path("store").asText());
                    String resource = step.path("resource").asText();
                    String value = step.path("value").asText();
                    Fence.write(conn, resource, ref(step.path("token")).asLong(), c -> {
                        try (PreparedStatement ps = c.prepareStatement(
                                "INSERT INTO kv (resource, value) VALUES (?, ?) ON CONFLICT (resource) DO UPDATE SET value = excluded.value")) {
                            ps.setString(1, resource);
                            ps.setString(2, value);
                            return ps.executeUpdate();
                        }
                    });
                    return obj();
                }
                case "read_store": {
                    Connection conn = store(step.path("store").asText());
                    try (PreparedStatement ps = conn.prepareStatement("SELECT value FROM kv WHERE resource = ?")) {
                        ps.setString(1, step.path("resource").asText());
                        try (ResultSet rs = ps.executeQuery()) {
                            return obj("value", rs.next() ? rs.getString(1) : "");
                        }
                    }
                }
                case "fault": {
                    FaultProxy.State st = proxies.get(step.path("client").asText());
                    if (st == null) {
                        throw new StepFailure("client " + step.path("client").asText() + " has no proxy");
                    }
                    Map<String, Object> f = new HashMap<>();
                    f.put("kind", step.path("kind").asText());
                    f.put("method", step.path("method").asText());
                    f.put("path_prefix", step.path("path_prefix").asText());
                    f.put("count", step.path("count").asInt(1));
                    st.mu.lock();
                    try {
                        st.faults.add(f);
                    } finally {
                        st.mu.unlock();
                    }
                    return obj();
                }
                case "proxy_log": {
                    FaultProxy.State st = proxies.get(step.path("client").asText());
                    if (st == null) {
                        throw new StepFailure("client " + step.path("client").asText() + " has no proxy");
                    }
                    int n = 0;
                    int without = 0;
                    Set<String> ids = new HashSet<>();
                    st.mu.lock();
                    try {
                        for (String[] r : st.log) {
                            if (r[0].equals(step.path("method").asText()) && r[1].startsWith(step.path("path_prefix").asText())) {
                                n++;
                                if (r[2] == null) {
                                    without++;
                                } else {
                                    ids.add(r[2]);
                                }
                            }
                        }
                    } finally {
                        st.mu.unlock();
                    }
                    return obj("requests", n, "distinct_request_ids", ids.size(), "without_request_id", without);
                }
                case "stop_all":
                    cluster.stopAll();
                    return obj();
                case "cont_all":
                    cluster.contAll();
                    return obj();
                case "kill_leader":
                    return obj("node", cluster.killLeader());
                case "restart":
                    cluster.restartKilled();
                    if (clusterB != null) {
                        clusterB.restartKilled();
                    }
                    return obj();
                case "wait_leader":
                    try {
                        cluster.waitLeader(ms(step, "timeout_ms", 20000));
                    } catch (IllegalStateException e) {
                        throw new StepFailure(e.getMessage());
                    }
                    return obj();
                case "pause":
                    Thread.sleep(step.path("ms").asLong());
                    return obj();
                default:
                    throw new StepFailure("unknown op " + o + " (this runner is out of date with FORMAT.md)");
            }
        }

        ObjectNode status(JsonNode step) {
            return statusResult(client(step).status(step.path("name").asText()));
        }

        static ObjectNode statusResult(LockStatus st) {
            return obj("held", st.held(), "token", st.token(), "holder_count", st.holderCount(), "waiters", st.waiters(), "owner", st.owner(), "mode", st.mode(),
                    "delay_ms", st.lockDelayRemainingMs());
        }

        static Hold leaseHold(RaftLock c, Lease l) {
            Hold x = new Hold();
            x.client = c;
            x.lease = l;
            x.leaseId = l.id;
            x.release = l::close;
            x.lost = l::lost;
            x.safeFor = l::safeFor;
            x.isLease = true;
            return x;
        }

        static Hold grantHold(RaftLock c, Grant g, Runnable release) {
            Hold x = new Hold();
            x.client = c;
            x.token = g.token();
            x.leaseId = g.leaseId();
            x.release = release;
            return x;
        }

        /** A step on a client that is a router (FORMAT.md, "routes"). */
        ObjectNode routerOp(JsonNode step, RaftLockRouter r) {
            String o = step.path("op").asText();
            String as = step.path("as").asText("");
            String name = step.path("name").asText();
            switch (o) {
                case "lock": {
                    Lease given = givenLease(step);
                    Held h = given != null ? r.lock(given, name, ms(step, "wait_ms", 0), opts(step))
                            : r.lock(name, ms(step, "ttl_ms", 10000), ms(step, "wait_ms", 0), opts(step));
                    if (!as.isEmpty()) {
                        holds.put(as, Hold.of(r.clientFor(name), h));
                    }
                    return obj("token", h.token());
                }
                case "acquire": {
                    Grant g = r.acquire(name, ms(step, "ttl_ms", 10000), step.path("owner").asText(""));
                    if (!as.isEmpty()) {
                        holds.put(as, grantHold(r.clientFor(name), g, () -> r.release(g.name(), g.leaseId(), g.token())));
                    }
                    return obj("token", g.token());
                }
                case "lease": {
                    Lease l = r.lease(name, ms(step, "ttl_ms", 10000));
                    holds.put(as, leaseHold(r.clientFor(name), l));
                    return obj();
                }
                case "release_token":
                    r.release(name, hold(step).leaseId, ref(step.path("token")).asLong());
                    return obj();
                case "release":
                    hold(step).release.run();
                    return obj();
                case "status":
                    return statusResult(r.status(name));
                default:
                    throw new StepFailure("op " + o + " is not one a router client runs (FORMAT.md)");
            }
        }

        /** A watch or an observe the runner keeps reading (FORMAT.md, "streams"). */
        static final class Stream_ {
            final java.util.concurrent.locks.ReentrantLock mu = new java.util.concurrent.locks.ReentrantLock();
            final boolean observe;
            final List<Watcher.Event> events = new ArrayList<>();
            final List<ElectionStatus> states = new ArrayList<>();
            AutoCloseable closer;
            java.util.concurrent.CompletableFuture<Void> done;

            Stream_(boolean observe) {
                this.observe = observe;
            }

            ObjectNode summary() {
                mu.lock();
                try {
                    if (observe) {
                        ElectionStatus l = states.isEmpty() ? null : states.get(states.size() - 1);
                        return obj("states", states.size(), "elected", l != null && l.elected(), "owner", l == null ? "" : l.owner(),
                                "value", l == null ? "" : l.value(), "token", l == null ? 0 : l.token());
                    }
                    Set<String> seen = new HashSet<>();
                    int grants = 0;
                    int repeated = 0;
                    boolean inOrder = true;
                    long first = 0;
                    long last = 0;
                    String lastKind = "";
                    String lastName = "";
                    for (int i = 0; i < events.size(); i++) {
                        Watcher.Event e = events.get(i);
                        if (!seen.add(e.index() + "\u0000" + e.name() + "\u0000" + e.kind())) {
                            repeated++;
                        }
                        if (e.kind().equals("granted")) {
                            grants++;
                        }
                        if (i == 0) {
                            first = e.index();
                        } else if (e.index() < last) {
                            inOrder = false;
                        }
                        last = e.index();
                        lastKind = e.kind();
                        lastName = e.name();
                    }
                    String err = "";
                    if (done != null && done.isCompletedExceptionally()) {
                        try {
                            done.join();
                        } catch (java.util.concurrent.CompletionException ce) {
                            err = ce.getCause() instanceof RaftLockException re ? re.code() : String.valueOf(ce.getCause());
                        }
                    }
                    return obj("events", events.size(), "grants", grants, "repeated", repeated, "in_order", inOrder, "first_index", first,
                            "last_index", last, "last_kind", lastKind, "last_name", lastName, "error", err);
                } finally {
                    mu.unlock();
                }
            }

            void stop() {
                try {
                    closer.close();
                } catch (Exception e) {
                    // best effort
                }
            }
        }

        ObjectNode streamOp(JsonNode step) throws InterruptedException {
            String o = step.path("op").asText();
            switch (o) {
                case "watch": {
                    Stream_ st = new Stream_(false);
                    Watcher w = client(step).watch(step.path("prefix").asText(), ref(step.path("from_index")).asLong(0), e -> {
                        st.mu.lock();
                        try {
                            st.events.add(e);
                        } finally {
                            st.mu.unlock();
                        }
                    });
                    st.closer = w;
                    st.done = w.done();
                    streams.put(step.path("as").asText(), st);
                    return obj();
                }
                case "observe": {
                    Stream_ st = new Stream_(true);
                    Observation ob = client(step).observe(step.path("name").asText(), e -> {
                        st.mu.lock();
                        try {
                            st.states.add(e);
                        } finally {
                            st.mu.unlock();
                        }
                    });
                    st.closer = ob;
                    st.done = ob.done();
                    streams.put(step.path("as").asText(), st);
                    return obj();
                }
                case "wait_seen": {
                    Stream_ st = streams.get(step.path("stream").asText());
                    if (st == null) {
                        throw new StepFailure("no stream " + step.path("stream").asText());
                    }
                    long t = step.path("timeout_ms").asLong(10000);
                    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(t);
                    while (true) {
                        ObjectNode sum = st.summary();
                        if (matches(sum, step.path("until")) == null) {
                            return sum;
                        }
                        if (System.nanoTime() - end >= 0) {
                            throw new StepFailure("the stream never matched " + step.path("until") + " within " + t + " ms; last " + sum);
                        }
                        Thread.sleep(20);
                    }
                }
                default: {
                    Stream_ st = streams.get(step.path("stream").asText());
                    if (st == null) {
                        throw new StepFailure("no stream " + step.path("stream").asText());
                    }
                    st.stop();
                    return obj();
                }
            }
        }

        Connection store(String label) throws SQLException {
            Connection c = stores.get(label);
            if (c != null) {
                return c;
            }
            Properties p = new Properties();
            p.setProperty("transaction_mode", "IMMEDIATE");
            p.setProperty("busy_timeout", "10000");
            c = DriverManager.getConnection("jdbc:sqlite:" + tmp.resolve(spec.path("name").asText() + "-" + label + ".db"), p);
            Fence.createTable(c);
            try (Statement st = c.createStatement()) {
                st.execute("CREATE TABLE IF NOT EXISTS kv (resource TEXT PRIMARY KEY, value TEXT NOT NULL)");
            }
            stores.put(label, c);
            return c;
        }

        Outcome outcome(JsonNode step) {
            try {
                return new Outcome(op(step), null);
            } catch (RaftLockException e) {
                return new Outcome(null, e.code());
            } catch (StepFailure e) {
                throw e;
            } catch (Exception e) {
                java.io.StringWriter sw = new java.io.StringWriter();
                e.printStackTrace(new java.io.PrintWriter(sw));
                throw new StepFailure("step " + step + ": " + sw);
            }
        }

        void run() throws InterruptedException {
            int i = 0;
            for (JsonNode step : spec.path("steps")) {
                i++;
                try {
                    runStep(step);
                } catch (StepFailure e) {
                    throw new StepFailure("step " + i + " (" + step.path("op").asText() + "): " + e.getMessage());
                }
            }
        }

        void runStep(JsonNode step) throws InterruptedException {
            String op = step.path("op").asText();
            String as = step.path("as").asText("");
            if (step.path("background").asBoolean()) {
                if (as.isEmpty()) {
                    throw new StepFailure("a background step needs as");
                }
                Outcome[] box = new Outcome[1];
                String[] failure = new String[1];
                Thread t = new Thread(() -> {
                    try {
                        box[0] = outcome(step);
                    } catch (StepFailure e) {
                        failure[0] = e.getMessage();
                    }
                }, "conformance-bg-" + as);
                t.setDaemon(true);
                t.start();
                bgThreads.put(as, t);
                bgOutcomes.put(as, box);
                bgFailures.put(as, failure);
                return;
            }
            Outcome out;
            if (op.equals("await")) {
                String name = step.path("step").asText();
                Thread t = bgThreads.get(name);
                if (t == null) {
                    throw new StepFailure("no background step " + name);
                }
                t.join(step.path("timeout_ms").asLong(30000));
                if (t.isAlive()) {
                    throw new StepFailure("background step " + name + " did not end in time");
                }
                if (bgFailures.get(name)[0] != null) {
                    throw new StepFailure(bgFailures.get(name)[0]);
                }
                out = bgOutcomes.get(name)[0];
            } else {
                out = outcome(step);
            }
            check(step, out);
            if (out.error == null && op.equals("await")) {
                results.put(step.path("step").asText(), out.result);
            } else if (out.error == null && !as.isEmpty()) {
                results.put(as, out.result);
            }
        }

        final Map<String, String[]> bgFailures = new HashMap<>();

        void cleanup() {
            for (Stream_ st : streams.values()) {
                st.stop();
            }
            for (boolean leases : new boolean[] {false, true}) {
                for (Hold h : holds.values()) {
                    if (h.isLease != leases) {
                        continue;
                    }
                    try {
                        h.release.run();
                    } catch (RuntimeException e) {
                        // best effort
                    }
                }
            }
            for (RaftLockRouter r : routers.values()) {
                r.close();
            }
            for (RaftLock c : clients.values()) {
                c.close();
            }
            for (FaultProxy p : proxyServers) {
                try {
                    p.close();
                } catch (IOException e) {
                    // best effort
                }
            }
            for (Connection c : stores.values()) {
                try {
                    c.close();
                } catch (SQLException e) {
                    // best effort
                }
            }
        }
    }
}
