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
     * A plain grant (acquire) and the client that took it: unlike a {@link Held} it has no
     * lease kept alive and no loss signal, so a step releases it through the client.
     */
    record Acquired(RaftLock client, Grant grant) {
        void release() {
            client.release(grant.name(), grant.leaseId(), grant.token());
        }
    }

    @AfterAll
    static void stopCluster() throws IOException {
        if (cluster != null) {
            cluster.close();
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
            tmp = Files.createTempDirectory("raftlock-java-conf-");
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
        final Map<String, FaultProxy.State> proxies = new HashMap<>();
        final List<FaultProxy> proxyServers = new ArrayList<>();
        final Map<String, ObjectNode> results = new HashMap<>();
        final Map<String, Object> holds = new HashMap<>(); // Held, or Acquired
        final Map<String, Connection> stores = new HashMap<>();
        final Map<String, Thread> bgThreads = new HashMap<>();
        final Map<String, Outcome[]> bgOutcomes = new HashMap<>();

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
                List<String> eps = cluster.endpoints();
                if (e.getValue().path("proxy").asBoolean()) {
                    FaultProxy.State st = new FaultProxy.State();
                    proxies.put(e.getKey(), st);
                    eps = new ArrayList<>();
                    for (int port : cluster.httpPorts()) {
                        FaultProxy p = new FaultProxy(st, port);
                        proxyServers.add(p);
                        eps.add("http://127.0.0.1:" + p.port());
                    }
                }
                clients.put(e.getKey(), RaftLock.builder().endpoints(eps).build());
            }
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

        Object hold(JsonNode step) {
            Object h = holds.get(step.path("hold").asText());
            if (h == null) {
                throw new StepFailure("no hold " + step.path("hold").asText());
            }
            return h;
        }

        Held held(JsonNode step) {
            Object h = hold(step);
            if (!(h instanceof Held)) {
                throw new StepFailure("hold " + step.path("hold").asText() + " has no loss signal");
            }
            return (Held) h;
        }

        static Duration ms(JsonNode step, String k, long dflt) {
            return Duration.ofMillis(step.path(k).asLong(dflt));
        }

        static HoldOptions opts(JsonNode step) {
            HoldOptions o = HoldOptions.defaults().owner(step.path("owner").asText(""));
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
            switch (o) {
                case "lock":
                case "semaphore":
                case "campaign": {
                    RaftLock c = client(step);
                    Duration ttl = ms(step, "ttl_ms", 10000);
                    Duration wait = ms(step, "wait_ms", 0);
                    Held h;
                    if (o.equals("lock")) {
                        h = c.lock(step.path("name").asText(), ttl, wait, opts(step));
                    } else if (o.equals("semaphore")) {
                        h = c.semaphore(step.path("name").asText(), step.path("limit").asInt(), ttl, wait, opts(step));
                    } else {
                        h = c.campaign(step.path("name").asText(), step.path("value").asText(), ttl, wait, opts(step));
                    }
                    if (!as.isEmpty()) {
                        holds.put(as, h);
                    }
                    return obj("token", h.token());
                }
                case "acquire": {
                    RaftLock c = client(step);
                    Grant g = c.acquire(step.path("name").asText(), ms(step, "ttl_ms", 10000), step.path("owner").asText(""));
                    if (!as.isEmpty()) {
                        holds.put(as, new Acquired(c, g));
                    }
                    return obj("token", g.token());
                }
                case "release": {
                    Object h = hold(step);
                    if (h instanceof Held held) {
                        held.release();
                    } else {
                        ((Acquired) h).release();
                    }
                    return obj();
                }
                case "release_token": {
                    Object h = hold(step);
                    String lid = h instanceof Held held ? held.lease().id : ((Acquired) h).grant().leaseId();
                    client(step).release(step.path("name").asText(), lid, ref(step.path("token")).asLong());
                    return obj();
                }
                case "proclaim":
                    return obj("token", held(step).proclaim(step.path("value").asText()));
                case "check_hold": {
                    Held h = held(step);
                    if (h.lease().error() != null) {
                        System.out.println("check_hold: lost: " + h.lease().error().getMessage());
                    }
                    return obj("lost", h.lost().isDone(), "token", h.token(), "safe_ms", Math.floorDiv(h.safeFor().toNanos(), 1_000_000L));
                }
                case "wait_lost": {
                    Held h = held(step);
                    long t = step.path("timeout_ms").asLong();
                    try {
                        h.lost().get(t, TimeUnit.MILLISECONDS);
                    } catch (java.util.concurrent.TimeoutException e) {
                        throw new StepFailure("the loss signal was not set within " + t + " ms (safe-until in " + h.safeFor().toMillis() + " ms)");
                    }
                    return obj("lost", true, "safe_ms", Math.floorDiv(h.safeFor().toNanos(), 1_000_000L));
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
            LockStatus st = client(step).status(step.path("name").asText());
            return obj("held", st.held(), "token", st.token(), "holder_count", st.holderCount(), "waiters", st.waiters(), "owner", st.owner(), "mode", st.mode());
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
            for (Object h : holds.values()) {
                try {
                    if (h instanceof Held held) {
                        held.close();
                    } else {
                        ((Acquired) h).release();
                    }
                } catch (RuntimeException e) {
                    // best effort
                }
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
