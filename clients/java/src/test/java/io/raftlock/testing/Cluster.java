package io.raftlock.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * A real three-node raftlock cluster of `raftlock serve` processes on loopback (the flags of
 * clients/conformance/FORMAT.md, free ports), for the tests, the conformance runner and the
 * gc-pause demo. Always close it: it kills every node and removes its directory.
 */
public final class Cluster implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(1)).build();
    private final String bin;
    private final Path dir;
    private final List<String> ids;
    private final Process[] procs;
    private final List<String> extra;
    private final Set<Integer> stopped = new HashSet<>();
    private int[] httpPorts;
    private int[] raftPorts;
    private final Thread hook;

    /** True when CI is set to anything but "", "false" or "0": nothing may skip then. */
    public static boolean inCI() {
        String ci = System.getenv("CI");
        return ci != null && !ci.isEmpty() && !ci.equals("false") && !ci.equals("0");
    }

    /** The repository's root: $RAFTLOCK_REPO, else the first parent of the working directory with go.mod. */
    public static Path repo() {
        String r = System.getenv("RAFTLOCK_REPO");
        if (r != null && !r.isEmpty()) {
            return Path.of(r).toAbsolutePath().normalize();
        }
        Path p = Path.of("").toAbsolutePath();
        while (p != null && !Files.exists(p.resolve("go.mod"))) {
            p = p.getParent();
        }
        if (p == null) {
            throw new IllegalStateException("cannot find the repository (set RAFTLOCK_REPO)");
        }
        return p;
    }

    /** $RAFTLOCK_BIN, or bin/raftlock at the repository's root (built with go when missing). */
    public static String binary() throws IOException, InterruptedException {
        String b = System.getenv("RAFTLOCK_BIN");
        if (b != null && !b.isEmpty()) {
            return b;
        }
        Path p = repo().resolve("bin/raftlock");
        if (!Files.isExecutable(p)) {
            Process go = new ProcessBuilder("go", "build", "-o", p.toString(), "./cmd/raftlock").directory(repo().toFile()).inheritIO().start();
            if (go.waitFor() != 0) {
                throw new IOException("go build ./cmd/raftlock failed");
            }
        }
        return p.toString();
    }

    /** n distinct free loopback ports (every socket held until all are read). */
    public static int[] freePorts(int n) throws IOException {
        List<ServerSocket> socks = new ArrayList<>();
        try {
            int[] out = new int[n];
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                socks.add(s);
                out[i] = s.getLocalPort();
            }
            return out;
        } finally {
            for (ServerSocket s : socks) {
                s.close();
            }
        }
    }

    /** Starts three nodes (plain HTTP). */
    public Cluster() throws IOException, InterruptedException {
        this(false);
    }

    /** Starts three nodes n1..n3, with TLS when tls. */
    public Cluster(boolean tls) throws IOException, InterruptedException {
        this(3, "n", List.of(), tls);
    }

    private final boolean tls;

    /** The directory of the TLS files (ca.pem, local.pem, local-key.pem) when started with TLS. */
    public Path tlsDir() {
        return dir.resolve("tls");
    }

    private void run(String... argv) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (p.waitFor() != 0) {
            throw new IOException(String.join(" ", argv) + " failed");
        }
    }

    /**
     * Starts three nodes and waits for a ready leader (on new ports when one finds its port
     * taken); with tls, HTTPS with client certificates required (`raftlock tls` makes a CA,
     * the nodes' certificates and a client certificate "local").
     */
    public Cluster(int n, String idPrefix, List<String> extraFlags, boolean tls) throws IOException, InterruptedException {
        List<String> idl = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            idl.add(idPrefix + i);
        }
        ids = List.copyOf(idl);
        procs = new Process[n];
        extra = List.copyOf(extraFlags);
        bin = binary();
        this.tls = tls;
        dir = Files.createTempDirectory("raftlock-java-");
        if (tls) {
            String t = tlsDir().toString();
            run(bin, "tls", "ca", "--dir", t);
            for (String id : ids) {
                run(bin, "tls", "cert", "--node", id, "--dir", t);
            }
            run(bin, "tls", "cert", "--client", "local", "--dir", t);
            try {
                http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(1))
                        .sslContext(io.raftlock.Tls.fromPem(tlsDir().resolve("ca.pem"), tlsDir().resolve("local.pem"), tlsDir().resolve("local-key.pem")))
                        .build();
            } catch (java.security.GeneralSecurityException e) {
                throw new IOException(e);
            }
        }
        hook = new Thread(this::killAll);
        Runtime.getRuntime().addShutdownHook(hook);
        for (int attempt = 0; ; attempt++) {
            newPorts();
            for (int i = 0; i < ids.size(); i++) {
                start(i);
            }
            try {
                waitLeader(Duration.ofSeconds(20));
                return;
            } catch (IllegalStateException e) {
                if (attempt >= 2 || !portTaken()) {
                    close();
                    throw e;
                }
                killAll();
                for (String id : ids) {
                    deleteTree(dir.resolve(id));
                    Files.deleteIfExists(dir.resolve(id + ".log"));
                }
            }
        }
    }

    private void newPorts() throws IOException {
        int n = ids.size();
        int[] p = freePorts(2 * n);
        httpPorts = java.util.Arrays.copyOfRange(p, 0, n);
        raftPorts = java.util.Arrays.copyOfRange(p, n, 2 * n);
    }

    /** Every node's base URL, in node order. */
    public List<String> endpoints() {
        List<String> out = new ArrayList<>();
        for (int p : httpPorts) {
            out.add((tls ? "https" : "http") + "://127.0.0.1:" + p);
        }
        return out;
    }

    /** The HTTP ports, in node order. */
    public int[] httpPorts() {
        return httpPorts.clone();
    }

    private String bootstrap() {
        List<String> b = new ArrayList<>();
        for (int i = 0; i < ids.size(); i++) {
            b.add(ids.get(i) + "=127.0.0.1:" + raftPorts[i]);
        }
        return String.join(",", b);
    }

    private void start(int i) throws IOException {
        if (procs[i] != null && procs[i].isAlive()) {
            return;
        }
        Path d = dir.resolve(ids.get(i));
        Files.createDirectories(d);
        File log = dir.resolve(ids.get(i) + ".log").toFile();
        List<String> argv = new ArrayList<>(List.of(bin, "serve", "--id", ids.get(i), "--http-addr", "127.0.0.1:" + httpPorts[i], "--raft-addr",
                "127.0.0.1:" + raftPorts[i], "--data-dir", d.toString(), "--bootstrap", bootstrap()));
        argv.addAll(extra);
        if (tls) {
            String t = tlsDir().toString();
            String id = ids.get(i);
            argv.addAll(List.of("--tls-cert", t + "/" + id + ".pem", "--tls-key", t + "/" + id + "-key.pem", "--tls-ca", t + "/ca.pem",
                    "--tls-client-auth", "require"));
        }
        procs[i] = new ProcessBuilder(argv)
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log)).start();
    }

    private boolean running(int i) {
        return procs[i] != null && procs[i].isAlive();
    }

    private static void signal(Process p, String sig) {
        try {
            new ProcessBuilder("kill", "-" + sig, Long.toString(p.pid())).inheritIO().start().waitFor();
        } catch (IOException e) {
            throw new IllegalStateException("kill -" + sig + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** SIGSTOP every running node. */
    public void stopAll() {
        for (int i = 0; i < ids.size(); i++) {
            if (running(i)) {
                signal(procs[i], "STOP");
                stopped.add(i);
            }
        }
    }

    /** SIGCONT every stopped node. */
    public void contAll() {
        for (int i : stopped) {
            if (running(i)) {
                signal(procs[i], "CONT");
            }
        }
        stopped.clear();
    }

    private void kill(int i) {
        Process p = procs[i];
        if (p == null) {
            return;
        }
        stopped.remove(i);
        p.destroyForcibly();
        try {
            p.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        procs[i] = null;
    }

    private void killAll() {
        for (int i = 0; i < ids.size(); i++) {
            if (procs[i] != null) {
                if (stopped.contains(i)) {
                    signal(procs[i], "CONT");
                }
                kill(i);
            }
        }
    }

    /** Starts again every node that is not running (with its data directory). */
    public void restartKilled() throws IOException {
        for (int i = 0; i < ids.size(); i++) {
            if (!running(i)) {
                start(i);
            }
        }
    }

    private JsonNode get(int port, String path) {
        try {
            HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(URI.create((tls ? "https" : "http") + "://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(1)).build(),
                    HttpResponse.BodyHandlers.ofByteArray());
            if (r.statusCode() != 200) {
                return null;
            }
            return r.body().length == 0 ? JSON.createObjectNode() : JSON.readTree(r.body());
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /** The index of a ready leader (it names itself leader and serves a linearizable read), or -1. */
    public int leaderIndex() {
        for (int i = 0; i < ids.size(); i++) {
            if (!running(i) || stopped.contains(i)) {
                continue;
            }
            JsonNode info = get(httpPorts[i], "/v1/cluster");
            if (info == null || !ids.get(i).equals(info.path("leader_id").asText())) {
                continue;
            }
            if (get(httpPorts[i], "/v1/locks?prefix=%00") != null) {
                return i;
            }
        }
        return -1;
    }

    /** Waits for a ready leader; IllegalStateException with the logs' tails when there is none in time. */
    public int waitLeader(Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() - end < 0) {
            int i = leaderIndex();
            if (i >= 0) {
                return i;
            }
            if (portTaken()) {
                break;
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("no ready leader after " + timeout + "\n" + logs(30));
    }

    private boolean portTaken() {
        for (int i = 0; i < ids.size(); i++) {
            if (procs[i] != null && !procs[i].isAlive()) {
                try {
                    if (Files.readString(dir.resolve(ids.get(i) + ".log"), StandardCharsets.UTF_8).contains("address already in use")) {
                        return true;
                    }
                } catch (IOException e) {
                    // no log
                }
            }
        }
        return false;
    }

    /** The node IDs, in node order. */
    public List<String> ids() {
        return ids;
    }

    /** The index of node id, or -1. */
    public int index(String id) {
        return ids.indexOf(id);
    }

    /** SIGSTOPs node i. */
    public void stopNode(int i) {
        if (running(i)) {
            signal(procs[i], "STOP");
            stopped.add(i);
        }
    }

    /** SIGKILLs node i (stopped or not). */
    public void killNode(int i) {
        kill(i);
    }

    /** Waits until the leader answers protocol_version 3 or more (locksets, maximum holds, lock delays). */
    public void waitProtocol3(Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() - end < 0) {
            int i = leaderIndex();
            if (i >= 0) {
                JsonNode info = get(httpPorts[i], "/v1/cluster");
                if (info != null && info.path("protocol_version").asLong() >= 3) {
                    return;
                }
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("protocol version 3 not active after " + timeout);
    }

    /**
     * Waits (at most 20 s) until node i's data directory holds a snapshot at or above the index
     * it had applied when called, kills it, starts it again and waits for a ready leader.
     */
    public void snapshotRestart(int i) throws IOException, InterruptedException {
        JsonNode info = get(httpPorts[i], "/v1/cluster");
        if (info == null) {
            throw new IllegalStateException(ids.get(i) + " did not answer /v1/cluster");
        }
        long applied = info.path("applied_index").asLong();
        Path snaps = dir.resolve(ids.get(i)).resolve("snapshots");
        long end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        long newest = 0;
        while (true) {
            newest = 0;
            if (Files.isDirectory(snaps)) {
                try (Stream<Path> s = Files.list(snaps)) {
                    for (Path p : s.toList()) {
                        String n = p.getFileName().toString();
                        String[] parts = n.split("-");
                        if (Files.isDirectory(p) && !n.endsWith(".tmp") && parts.length == 3) {
                            try {
                                newest = Math.max(newest, Long.parseLong(parts[1]));
                            } catch (NumberFormatException e) {
                                // not a snapshot
                            }
                        }
                    }
                }
            }
            if (newest >= applied) {
                break;
            }
            if (System.nanoTime() - end >= 0) {
                throw new IllegalStateException(ids.get(i) + " holds no snapshot at or above index " + applied + " after 20 s (newest " + newest + ")");
            }
            Thread.sleep(50);
        }
        kill(i);
        start(i);
        waitLeader(Duration.ofSeconds(20));
    }

    /** SIGKILLs the leader; returns its ID. */
    public String killLeader() throws InterruptedException {
        int i = waitLeader(Duration.ofSeconds(20));
        kill(i);
        return ids.get(i);
    }

    /** Back to three running nodes with a ready leader. */
    public void restore() throws IOException, InterruptedException {
        contAll();
        restartKilled();
        waitLeader(Duration.ofSeconds(20));
    }

    /** The last lines of every node's log. */
    public String logs(int lines) {
        StringBuilder sb = new StringBuilder();
        for (String id : ids) {
            sb.append("--- ").append(id).append(" ---\n");
            try {
                List<String> all = Files.readAllLines(dir.resolve(id + ".log"), StandardCharsets.UTF_8);
                for (String l : all.subList(Math.max(0, all.size() - lines), all.size())) {
                    sb.append(l).append('\n');
                }
            } catch (IOException e) {
                // no log
            }
        }
        return sb.toString();
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> s = Files.walk(p)) {
            for (Path q : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(q);
            }
        }
    }

    /** Kills every node and removes the directory. */
    @Override
    public void close() {
        contAll();
        killAll();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // shutting down already
        }
        try {
            deleteTree(dir);
        } catch (IOException e) {
            // a temporary directory left behind
        }
    }
}
