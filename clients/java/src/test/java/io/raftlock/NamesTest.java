package io.raftlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class NamesTest {
    @Test
    void rule() {
        for (String ok : List.of("a", "payments/card-42", "a/b/c", "é", "x".repeat(512), "a.b", "...", ".a", "a b")) {
            assertTrue(Names.isValid(ok), ok);
        }
        for (String bad : List.of("", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "a\u0000b", "a\nb", "a\u007fb", "a\u0085b",
                "x".repeat(513), "é".repeat(257), "\ud800")) {
            assertFalse(Names.isValid(bad), bad);
        }
    }

    @Test
    void refusedBeforeSending() {
        // Nothing listens on the endpoint: a request would fail as unavailable, not invalid_name.
        try (RaftLock c = RaftLock.builder().endpoints("http://127.0.0.1:1").callTimeout(Duration.ofMillis(200)).build()) {
            for (String bad : List.of("a//b", "../x", "a/")) {
                InvalidNameException e = assertThrows(InvalidNameException.class, () -> c.lock(bad, Duration.ofSeconds(2), Duration.ZERO));
                assertEquals("invalid_name", e.code());
                assertEquals("invalid_name: " + Names.RULE, e.getMessage());
                assertThrows(InvalidNameException.class, () -> c.status(bad));
                assertThrows(InvalidNameException.class, () -> c.lockSet(List.of("ok", bad), Duration.ofSeconds(2), Duration.ZERO, HoldOptions.defaults()));
            }
            assertThrows(UnavailableException.class, () -> c.status("fine"));
        }
    }

    /** An unreachable cluster is one UnreachableException naming every endpoint with its last error. */
    @Test
    void unreachableNamesEveryEndpoint() throws Exception {
        int[] ports = new int[2];
        for (int i = 0; i < 2; i++) {
            try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                ports[i] = s.getLocalPort(); // closed again at once: connections are refused
            }
        }
        String a = "http://127.0.0.1:" + ports[0], b = "http://127.0.0.1:" + ports[1];
        try (RaftLock c = RaftLock.builder().endpoints(a, b).callTimeout(Duration.ofMillis(300)).build()) {
            UnreachableException e = assertThrows(UnreachableException.class, () -> c.status("fine"));
            assertEquals(2, e.errors().size(), e.errors().toString());
            assertTrue(e.getMessage().contains(a) && e.getMessage().contains(b), e.getMessage());
            assertEquals("unavailable", e.code());
        }
    }

    @Test
    void escaping() {
        assertEquals("/v1/locks/a/b%20c/%25", Transport.namePath("/v1/locks/", "a/b c/%"));
    }
}
