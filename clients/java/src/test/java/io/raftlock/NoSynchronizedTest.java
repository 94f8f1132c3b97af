package io.raftlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Virtual threads (JDK 21+) pin their carrier while inside a monitor, so a blocking wait
 * or I/O under {@code synchronized} stops other virtual threads. The client uses
 * java.util.concurrent locks only; this test reads the compiled classes of the client's
 * package with javap and fails on any synchronized method or monitorenter instruction.
 */
class NoSynchronizedTest {
    static List<String> offenders(Path classes, int atLeast, String only) throws Exception {
        ToolProvider javap = ToolProvider.findFirst("javap").orElseThrow(() -> new AssertionError("javap is not available (a JDK is needed)"));
        List<Path> files;
        try (Stream<Path> s = Files.walk(classes)) {
            files = s.filter(p -> p.toString().endsWith(".class") && p.getFileName().toString().startsWith(only)).sorted().toList();
        }
        assertTrue(files.size() >= atLeast, "too few classes found in " + classes + ": " + files.size());
        // One javap run for every class (a run per class costs a second or more on a loaded machine).
        List<String> args = new ArrayList<>(List.of("-c", "-p"));
        files.forEach(f -> args.add(f.toString()));
        StringWriter sw = new StringWriter();
        int rc = javap.run(new PrintWriter(sw), new PrintWriter(sw), args.toArray(new String[0]));
        assertEquals(0, rc, "javap: " + sw);
        List<String> out = new ArrayList<>();
        String cls = "";
        String method = "";
        boolean next = false;
        for (String line : sw.toString().split("\n")) {
            if (line.startsWith("Compiled from")) {
                next = true; // the class's declaration follows
                continue;
            }
            if (next && !line.isBlank()) {
                cls = line.strip();
                next = false;
                continue;
            }
            if (line.startsWith("  ") && !line.startsWith("   ") && line.contains("(")) {
                method = line.strip();
                if (method.matches("(.*\\s)?synchronized\\s.*")) {
                    out.add(cls + ": synchronized method " + method);
                }
            }
            if (line.contains(": monitorenter")) {
                out.add(cls + ": synchronized block in " + method);
            }
        }
        return out;
    }

    @Test
    void clientClassesHaveNoMonitors() throws Exception {
        Path classes = Path.of("target/classes/io/raftlock");
        List<String> bad = offenders(classes, 30, "");
        assertTrue(bad.isEmpty(), "the client must use java.util.concurrent locks, not monitors (they pin virtual threads):\n" + String.join("\n", bad));
    }

    /** The scanner itself sees both kinds of monitor (this test class has them on purpose). */
    @Test
    void scannerSeesMonitors() throws Exception {
        List<String> bad = offenders(Path.of("target/test-classes/io/raftlock"), 1, "NoSynchronizedTest$Bad").stream().filter(s -> s.contains("NoSynchronizedTest$Bad")).toList();
        assertEquals(2, bad.size(), "want the synchronized method and the synchronized block of Bad: " + bad);
    }

    /** A class with both kinds of monitor, for scannerSeesMonitors. */
    static final class Bad {
        private final Object mu = new Object();
        private int n;

        synchronized void method() {
            n++;
        }

        void block() {
            synchronized (mu) {
                n++;
            }
        }
    }
}
