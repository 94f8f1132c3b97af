package io.raftlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The client's error map against the server's catalogue of outcomes (api/outcomes.json,
 * generated from api/outcomes.go): every code has its exception class and the catalogue's
 * retry class, the retries go by it, every code the client maps is the catalogue's, and a
 * code the client does not know is its generic exception. Needs no cluster.
 */
class OutcomesTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path CATALOGUE = Path.of("..", "..", "api", "outcomes.json");
    private static final Path SOURCE = Path.of("src", "main", "java", "io", "raftlock", "RaftLockException.java");

    private static JsonNode catalogue() throws IOException {
        return JSON.readTree(Files.readString(CATALOGUE));
    }

    @Test
    void everyCodeHasItsClassAndRetryClass() throws IOException {
        JsonNode c = catalogue();
        Set<String> classes = new HashSet<>();
        c.path("retry_classes").forEach(r -> classes.add(r.asText()));
        int n = 0;
        for (JsonNode o : c.path("outcomes")) {
            n++;
            String code = o.path("code").asText();
            String retry = o.path("retry").asText();
            RaftLockException e = RaftLockException.forCode(code, "m", null);
            assertNotEquals(RaftLockException.class, e.getClass(), "no exception class for the catalogue's code " + code);
            assertEquals(code, e.code());
            assertEquals(retry, e.retryClass().wire(), code + ": retry class");
            assertEquals(!retry.equals("never"), Transport.retryable(e), code + ": retried");
        }
        assertTrue(n >= 20, "found only " + n + " outcomes in " + CATALOGUE);
        for (RetryClass r : RetryClass.values()) {
            assertTrue(classes.contains(r.wire()), r + " is not a retry class of the catalogue");
        }
    }

    /** Every code forCode and the retry classes name is the catalogue's (or, for the retry classes, the client's own). */
    @Test
    void everyCodeTheClientMapsIsCatalogued() throws IOException {
        Set<String> codes = new HashSet<>();
        catalogue().path("outcomes").forEach(o -> codes.add(o.path("code").asText()));
        String src = Files.readString(SOURCE);
        Matcher cases = Pattern.compile("case \"([a-z_]+)\":").matcher(src);
        int n = 0;
        while (cases.find()) {
            n++;
            assertTrue(codes.contains(cases.group(1)), "forCode maps " + cases.group(1) + ", which is not in the catalogue");
        }
        assertEquals(codes.size(), n, "forCode should have one case per code of the catalogue");
        Matcher retried = Pattern.compile("\"([a-z_]+)\", RetryClass\\.").matcher(src);
        int m = 0;
        while (retried.find()) {
            m++;
            String code = retried.group(1);
            assertTrue(codes.contains(code) || code.equals("unavailable") || code.equals("tls"), "a retry class for " + code + ", which is not in the catalogue");
        }
        assertTrue(m >= 3, "found only " + m + " retried codes in " + SOURCE);
    }

    @Test
    void unknownCodeIsAPlainExceptionNeverRetried() {
        RaftLockException e = RaftLockException.forCode("a_code_of_a_newer_server", "m", null);
        assertEquals(RaftLockException.class, e.getClass());
        assertEquals("a_code_of_a_newer_server", e.code());
        assertEquals(RetryClass.NEVER, e.retryClass());
        assertFalse(Transport.retryable(e));
    }
}
