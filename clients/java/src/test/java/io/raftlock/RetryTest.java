package io.raftlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.raftlock.testing.Cluster;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The retry rules against a scripted server: unknown_outcome, Retry-After, failover, secrets. */
class RetryTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final String LEASE = "0123456789abcdef0123456789abcdef";
    static final String GRANT = "{\"name\":\"x\",\"token\":7,\"lease_id\":\"" + LEASE + "\",\"ttl_ms\":2000}";

    /** One scripted answer: status, headers (name, value pairs) and body. */
    record Answer(int status, String body, String... headers) {}

    private final List<HttpServer> servers = new ArrayList<>();
    final ConcurrentLinkedQueue<Answer> script = new ConcurrentLinkedQueue<>();
    final List<JsonNode> bodies = new CopyOnWriteArrayList<>();
    final List<Long> times = new CopyOnWriteArrayList<>();
    final List<String> paths = new CopyOnWriteArrayList<>();

    String server() throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        s.createContext("/", ex -> {
            byte[] in = ex.getRequestBody().readAllBytes();
            times.add(System.nanoTime());
            paths.add(ex.getRequestURI().getRawPath());
            bodies.add(in.length == 0 ? JSON.createObjectNode() : JSON.readTree(in));
            Answer a = script.poll();
            if (a == null) {
                a = new Answer(200, "{}");
            }
            for (int i = 0; i + 1 < a.headers().length; i += 2) {
                ex.getResponseHeaders().add(a.headers()[i], a.headers()[i + 1]);
            }
            ex.getResponseHeaders().add("Content-Type", "application/json");
            byte[] out = a.body().getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(a.status(), out.length);
            ex.getResponseBody().write(out);
            ex.close();
        });
        s.start();
        servers.add(s);
        return "http://127.0.0.1:" + s.getAddress().getPort();
    }

    @AfterEach
    void stop() {
        for (HttpServer s : servers) {
            s.stop(0);
        }
    }

    static String err(String code, String msg) {
        return "{\"error\":{\"code\":\"" + code + "\",\"message\":\"" + msg + "\"}}";
    }

    RaftLock client(String... eps) {
        return RaftLock.builder().endpoints(eps).backoff(Duration.ofMillis(5), Duration.ofMillis(20)).callTimeout(Duration.ofSeconds(5)).build();
    }

    @Test
    void unknownOutcomeRetriesWithTheSameRequestId() throws IOException {
        String ep = server();
        script.add(new Answer(503, err("unknown_outcome", "lost"), "Retry-After", "0"));
        script.add(new Answer(503, err("unknown_outcome", "lost"), "Retry-After", "0"));
        script.add(new Answer(200, GRANT));
        try (RaftLock c = client(ep)) {
            Grant g = c.acquire("x", Duration.ofSeconds(2), "");
            assertEquals(7, g.token());
        }
        assertEquals(3, bodies.size());
        String rid = bodies.get(0).path("request_id").asText();
        assertEquals(32, rid.length(), "a request_id of 128 random bits in hex");
        for (JsonNode b : bodies) {
            assertEquals(rid, b.path("request_id").asText(), "every retry carries the first attempt's request_id");
        }
    }

    /** The test above fails when a retry draws a new request_id (the hook breaks it on purpose). */
    @Test
    void newRequestIdPerAttemptIsCaught() throws IOException {
        String ep = server();
        script.add(new Answer(503, err("unknown_outcome", "lost")));
        script.add(new Answer(200, GRANT));
        try (RaftLock c = client(ep)) {
            c.reuseRequestId = false;
            c.acquire("x", Duration.ofSeconds(2), "");
        }
        assertNotEquals(bodies.get(0).path("request_id").asText(), bodies.get(1).path("request_id").asText());
    }

    @Test
    void retryAfterIsHonoured() throws IOException {
        String ep = server();
        script.add(new Answer(429, err("too_many_requests", "busy"), "Retry-After", "1"));
        script.add(new Answer(200, GRANT));
        try (RaftLock c = client(ep)) {
            c.acquire("x", Duration.ofSeconds(2), "");
        }
        assertEquals(2, times.size());
        long gap = times.get(1) - times.get(0);
        assertTrue(gap >= 1_000_000_000L, "the retry came " + gap / 1e6 + " ms after a Retry-After of 1 s");
    }

    @Test
    void retryAfterPastTheDeadlineFailsAtOnce() throws IOException {
        String ep = server();
        script.add(new Answer(429, err("too_many_requests", "busy"), "Retry-After", "60"));
        try (RaftLock c = client(ep)) {
            long t0 = System.nanoTime();
            TooManyRequestsException e = assertThrows(TooManyRequestsException.class, () -> c.acquire("x", Duration.ofSeconds(2), ""));
            assertEquals(Duration.ofSeconds(60), e.retryAfter().orElseThrow());
            assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "it waited for the call's deadline instead of failing at once");
        }
        assertEquals(1, bodies.size());
    }

    @Test
    void failsOverToTheNextEndpoint() throws IOException {
        int dead = Cluster.freePorts(1)[0];
        String ep = server();
        script.add(new Answer(200, GRANT));
        try (RaftLock c = client("http://127.0.0.1:" + dead, ep)) {
            assertEquals(7, c.acquire("x", Duration.ofSeconds(2), "").token());
        }
        script.add(new Answer(503, err("no_leader", "none")));
        script.add(new Answer(200, "{\"name\":\"x\",\"held\":false}"));
        try (RaftLock c = client(ep)) {
            assertFalse(c.status("x").held());
        }
    }

    @Test
    void endpointPathPrefixIsKept() throws IOException {
        String ep = server();
        script.add(new Answer(200, GRANT));
        try (RaftLock c = client(ep + "/raftlock/")) {
            c.acquire("x/y z", Duration.ofSeconds(2), "");
        }
        assertEquals(List.of("/raftlock/v1/locks/x/y%20z"), paths);
    }

    @Test
    void environmentDefaults() throws IOException {
        String ep = server();
        script.add(new Answer(200, "{\"name\":\"x\",\"held\":false}"));
        java.util.Map<String, String> env = java.util.Map.of("RAFTLOCK_ENDPOINTS", "http://127.0.0.1:1," + ep, "RAFTLOCK_TOKEN", "env-token");
        RaftLock.Builder b = RaftLock.builder();
        b.env = env::get;
        try (RaftLock c = b.build()) {
            assertEquals(List.of("http://127.0.0.1:1", ep), c.endpoints());
            c.status("x");
        }
        RaftLock.Builder none = RaftLock.builder();
        none.env = k -> null;
        assertThrows(InvalidArgumentException.class, none::build);
    }

    @Test
    void lostReadsSetOncePastSafeUntil() {
        try (RaftLock c = client("http://127.0.0.1:1")) {
            // A lease whose last answered keepalive was sent 2 s ago with a TTL of 1 s, that no
            // keepalive thread has looked at: as after a pause of the whole process.
            Lease l = new Lease(c, LEASE, 1_000_000_000L, System.nanoTime() - 2_000_000_000L, null, null);
            assertTrue(l.lost().isDone(), "lost() is completed as soon as safe-until has passed");
        }
    }

    @Test
    void notRetried() throws IOException {
        String ep = server();
        script.add(new Answer(409, err("lock_held", "held")));
        try (RaftLock c = client(ep)) {
            LockHeldException e = assertThrows(LockHeldException.class, () -> c.acquire("x", Duration.ofSeconds(2), ""));
            assertEquals("lock_held", e.code());
            assertTrue(e instanceof RaftLockException);
        }
        assertEquals(1, bodies.size());
    }

    @Test
    void secretsAreRedactedAndNeverPrinted() throws IOException {
        String ep = server();
        script.add(new Answer(409, err("not_holder", "lease " + LEASE + " does not hold x")));
        String token = "s3cret-acl-token-value";
        try (RaftLock c = RaftLock.builder().endpoints(ep).token(token).build()) {
            NotHolderException e = assertThrows(NotHolderException.class, () -> c.release("x", LEASE, 7));
            assertFalse(e.getMessage().contains(LEASE), e.getMessage());
            assertTrue(e.getMessage().contains("[redacted]"), e.getMessage());
            assertFalse(c.toString().contains(token));
            Grant g = new Grant("x", 7, LEASE, 2000);
            assertFalse(g.toString().contains(LEASE), g.toString());
        }
    }

    @Test
    void errorCodesMapToTheirClasses() {
        String[][] m = {{"lock_held", "LockHeldException"}, {"wait_timeout", "WaitTimeoutException"}, {"not_holder", "NotHolderException"},
            {"lease_not_found", "LeaseNotFoundException"}, {"mode_conflict", "ModeConflictException"}, {"semaphore_full", "SemaphoreFullException"},
            {"limit_conflict", "LimitConflictException"}, {"election_held", "ElectionHeldException"}, {"deadlock", "DeadlockException"},
            {"conflict", "ConflictException"}, {"quota_exceeded", "QuotaExceededException"}, {"too_many_requests", "TooManyRequestsException"},
            {"no_leader", "NoLeaderException"}, {"unknown_outcome", "UnknownOutcomeException"}, {"unauthenticated", "UnauthenticatedException"},
            {"permission_denied", "PermissionDeniedException"}, {"invalid_json", "InvalidJsonException"}, {"invalid_name", "InvalidNameException"},
            {"invalid_ttl", "InvalidTtlException"}, {"invalid_argument", "InvalidArgumentException"}, {"not_found", "NotFoundException"},
            {"method_not_allowed", "MethodNotAllowedException"}, {"body_too_large", "BodyTooLargeException"}, {"internal", "InternalException"},
            {"version_inactive", "VersionInactiveException"}, {"index_compacted", "IndexCompactedException"},
            {"unsupported_media_type", "UnsupportedMediaTypeException"}, {"misdirected_request", "MisdirectedRequestException"}};
        for (String[] cm : m) {
            RaftLockException e = RaftLockException.forCode(cm[0], "m", null);
            assertEquals(cm[1], e.getClass().getSimpleName());
            assertEquals(cm[0], e.code());
        }
        assertEquals("brand_new", RaftLockException.forCode("brand_new", "m", null).code());
    }

    /** A code the client does not know (a newer server's), even on a 503, is a plain RaftLockException: thrown at once, code and message kept. */
    @Test
    void unknownCodeIsAPlainExceptionNotRetried() throws IOException {
        String ep = server();
        script.add(new Answer(503, err("leader_busy", "a newer server"), "Retry-After", "0"));
        try (RaftLock c = client(ep)) {
            RaftLockException e = assertThrows(RaftLockException.class, () -> c.acquire("x", Duration.ofSeconds(2), ""));
            assertEquals(RaftLockException.class, e.getClass());
            assertEquals("leader_busy", e.code());
            assertEquals(RetryClass.NEVER, e.retryClass());
            assertTrue(e.getMessage().contains("a newer server"), e.getMessage());
        }
        assertEquals(1, bodies.size(), "an unknown code was retried");
    }
}
