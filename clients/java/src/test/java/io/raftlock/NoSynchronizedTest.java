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
    static List<String> offenders(Path classes, int atLeast) throws Exception {
        ToolProvider javap = ToolProvider.findFirst("javap").orElseThrow(() -> new AssertionError("javap is not available (a JDK is needed)"));
        List<Path> files;
        try (Stream<Path> s = Files.walk(classes)) {
            files = s.filter(p -> p.toString().endsWith(".class")).sorted().toList();
        }
        assertTrue(files.size() >= atLeast, "too few classes found in " + classes + ": " + files.size());
        List<String> out = new ArrayList<>();
        for (Path f : files) {
            StringWriter sw = new StringWriter();
            int rc = javap.run(new PrintWriter(sw), new PrintWriter(sw), "-c", "-p", f.toString());
            assertEquals(0, rc, "javap " + f + ": " + sw);
            String cls = f.getFileName().toString();
            String method = "";
            for (String line : sw.toString().split("\n")) {
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
        }
        return out;
    }

    @Test
    void clientClassesHaveNoMonitors() throws Exception {
        Path classes = Path.of("target/classes/io/raftlock");
        List<String> bad = offenders(classes, 30);
        assertTrue(bad.isEmpty(), "the client must use java.util.concurrent locks, not monitors (they pin virtual threads):\n" + String.join("\n", bad));
    }

    /** The scanner itself sees both kinds of monitor (this test class has them on purpose). */
    @Test
    void scannerSeesMonitors() throws Exception {
        List<String> bad = offenders(Path.of("target/test-classes/io/raftlock"), 1).stream().filter(s -> s.startsWith("NoSynchronizedTest$Bad")).toList();
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
