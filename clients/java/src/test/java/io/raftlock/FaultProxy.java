package io.raftlock;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The conformance suite's fault proxy (clients/conformance/FORMAT.md): an HTTP/1.1 server on
 * a free loopback port that forwards every request to one node and relays the answer, with
 * a request log and a fault list shared by the proxies of one client.
 */
final class FaultProxy implements AutoCloseable {
    private final java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);
    /** The log and faults shared by one client's proxies. */
    static final class State {
        final ReentrantLock mu = new ReentrantLock();
        final List<String[]> log = new ArrayList<>(); // method, path, request_id (or null)
        final List<Map<String, Object>> faults = new ArrayList<>();

        String takeFault(String method, String path) {
            mu.lock();
            try {
                for (Map<String, Object> f : faults) {
                    int count = (Integer) f.get("count");
                    if (count > 0 && f.get("method").equals(method) && path.startsWith((String) f.get("path_prefix"))) {
                        f.put("count", count - 1);
                        return (String) f.get("kind");
                    }
                }
                return null;
            } finally {
                mu.unlock();
            }
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> HOP = Set.of("host", "connection", "content-length", "transfer-encoding", "keep-alive", "expect", "upgrade");
    private final State state;
    private final int target;
    private final ServerSocket server;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final List<Socket> conns = new ArrayList<>();
    private final ReentrantLock mu = new ReentrantLock();

    FaultProxy(State state, int targetPort) throws IOException {
        this.state = state;
        this.target = targetPort;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::accept, "fault-proxy-accept");
        t.setDaemon(true);
        t.start();
    }

    int port() {
        return server.getLocalPort();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                mu.lock();
                try {
                    conns.add(s);
                } finally {
                    mu.unlock();
                }
                Thread t = new Thread(() -> serve(s), "fault-proxy-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private static String line(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != -1) {
            if (c == '\n') {
                break;
            }
            b.write(c);
        }
        if (c == -1 && b.size() == 0) {
            return null;
        }
        String s = b.toString(StandardCharsets.ISO_8859_1);
        return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
    }

    private void serve(Socket s) {
        try (s) {
            InputStream in = new BufferedInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            while (true) {
                String reqLine = line(in);
                if (reqLine == null || reqLine.isEmpty()) {
                    return;
                }
                String[] parts = reqLine.split(" ");
                String method = parts[0];
                String uri = parts[1];
                List<String[]> headers = new ArrayList<>();
                int len = 0;
                String h;
                while ((h = line(in)) != null && !h.isEmpty()) {
                    int i = h.indexOf(':');
                    String k = h.substring(0, i).trim();
                    String v = h.substring(i + 1).trim();
                    if (k.equalsIgnoreCase("content-length")) {
                        len = Integer.parseInt(v);
                    }
                    headers.add(new String[] {k, v});
                }
                byte[] body = in.readNBytes(len);
                String path = uri.contains("?") ? uri.substring(0, uri.indexOf('?')) : uri;
                String rid = null;
                if (body.length > 0) {
                    try {
                        JsonNode n = JSON.readTree(body);
                        if (n != null && n.path("request_id").isTextual() && !n.path("request_id").asText().isEmpty()) {
                            rid = n.path("request_id").asText();
                        }
                    } catch (IOException e) {
                        // not JSON
                    }
                }
                state.mu.lock();
                try {
                    state.log.add(new String[] {method, path, rid});
                } finally {
                    state.mu.unlock();
                }
                String fault = state.takeFault(method, path);
                HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + target + uri)).timeout(Duration.ofSeconds(60))
                        .method(method, body.length > 0 ? HttpRequest.BodyPublishers.ofByteArray(body) : HttpRequest.BodyPublishers.noBody());
                for (String[] kv : headers) {
                    if (!HOP.contains(kv[0].toLowerCase(Locale.ROOT))) {
                        b.header(kv[0], kv[1]);
                    }
                }
                HttpResponse<byte[]> resp;
                try {
                    resp = http.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
                } catch (IOException e) {
                    return; // the node is gone: close without an answer
                }
                if ("drop".equals(fault)) {
                    return;
                }
                if ("hang".equals(fault)) {
                    // Java tests only (not in FORMAT.md): the request was applied, and its
                    // answer never comes while the proxy runs.
                    closed.await(60, java.util.concurrent.TimeUnit.SECONDS);
                    return;
                }
                int status = resp.statusCode();
                byte[] data = resp.body();
                List<String[]> rh = new ArrayList<>();
                if ("unknown_outcome".equals(fault)) {
                    status = 503;
                    data = "{\"error\":{\"code\":\"unknown_outcome\",\"message\":\"conformance fault: the answer was dropped\"}}".getBytes(StandardCharsets.UTF_8);
                    rh.add(new String[] {"Content-Type", "application/json"});
                    rh.add(new String[] {"Retry-After", "0"});
                } else {
                    resp.headers().map().forEach((k, vs) -> {
                        if (!HOP.contains(k.toLowerCase(Locale.ROOT)) && !k.startsWith(":")) {
                            for (String v : vs) {
                                rh.add(new String[] {k, v});
                            }
                        }
                    });
                }
                StringBuilder sb = new StringBuilder("HTTP/1.1 ").append(status).append(" X\r\n");
                for (String[] kv : rh) {
                    sb.append(kv[0]).append(": ").append(kv[1]).append("\r\n");
                }
                sb.append("Content-Length: ").append(data.length).append("\r\n\r\n");
                out.write(sb.toString().getBytes(StandardCharsets.ISO_8859_1));
                out.write(data);
                out.flush();
            }
        } catch (IOException e) {
            // the client went away
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() throws IOException {
        closed.countDown();
        server.close();
        mu.lock();
        try {
            for (Socket s : conns) {
                s.close();
            }
        } finally {
            mu.unlock();
        }
    }
}
