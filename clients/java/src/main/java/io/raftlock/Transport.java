package io.raftlock;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;

/** The HTTP/1.1 transport and the retry loop every call goes through (as the Go client's do/attempt). */
final class Transport {
    static final String LEADER_HEADER = "X-Raftlock-Leader";
    static final ObjectMapper JSON = new ObjectMapper();
    private static final long MAX_RETRY_AFTER_NANOS = TimeUnit.DAYS.toNanos(1);

    /** One API call. */
    static final class Request {
        String op;
        String method;
        String path; // escaped
        Map<String, String> query;
        Supplier<Object> body; // per attempt (a waiting acquire sends the wait that remains)
        LongSupplier waitNanos; // the server-side wait of the next attempt, added to its timeout
        long attemptTimeoutNanos;
        long maxBackoffNanos;
        List<String> secrets = new ArrayList<>();
        Cancel cancel;

        Request(String op, String method, String path) {
            this.op = op;
            this.method = method;
            this.path = path;
        }

        Request body(Supplier<Object> b) {
            this.body = b;
            return this;
        }

        Request secret(String s) {
            if (s != null && !s.isEmpty()) {
                secrets.add(s);
            }
            return this;
        }
    }

    /** What the caller learns about a call's attempts (System.nanoTime values). */
    static final class Result {
        JsonNode body;
        long sent;
        long first;
        int attempts;
    }

    /** Cancels a call in flight from another thread (a waiting acquire whose lease is lost). */
    static final class Cancel {
        final AtomicReference<RaftLockException> error = new AtomicReference<>();
        final AtomicReference<CompletableFuture<?>> inflight = new AtomicReference<>();

        void cancel(RaftLockException e) {
            error.compareAndSet(null, e);
            CompletableFuture<?> f = inflight.get();
            if (f != null) {
                f.cancel(true);
            }
        }
    }

    /**
     * Set on a thread whose calls must go on through interrupts (Lock.lock()): an interrupt is
     * recorded here (element 0) and the call keeps waiting; {@link #deferringInterrupts} sets
     * the thread's flag again when the calls are over.
     */
    private static final ThreadLocal<boolean[]> DEFERRED = new ThreadLocal<>();

    /**
     * Runs fn with this thread's interrupts deferred: its calls neither stop nor fail on an
     * interrupt, and the interrupt flag is set again before this returns (or throws) when an
     * interrupt came meanwhile, or was set before.
     */
    static <T> T deferringInterrupts(Supplier<T> fn) {
        boolean[] outer = DEFERRED.get();
        if (outer != null) {
            return fn.get();
        }
        boolean[] d = {Thread.interrupted()};
        DEFERRED.set(d);
        try {
            return fn.get();
        } finally {
            DEFERRED.remove();
            if (d[0]) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Whether the calling thread stops at an interrupt: false while its interrupts are deferred (clearing, and recording, its flag). */
    private static boolean stopsAtInterrupt() {
        boolean[] d = DEFERRED.get();
        if (d == null) {
            return Thread.currentThread().isInterrupted();
        }
        if (Thread.interrupted()) {
            d[0] = true;
        }
        return false;
    }

    /** f.get with a timeout; an interrupt of a thread whose interrupts are deferred is recorded and the wait goes on. */
    private static <T> T await(CompletableFuture<T> f, long nanos) throws InterruptedException, ExecutionException, TimeoutException {
        boolean[] d = DEFERRED.get();
        if (d == null) {
            return f.get(nanos, TimeUnit.NANOSECONDS);
        }
        long end = System.nanoTime() + nanos;
        while (true) {
            try {
                return f.get(Math.max(end - System.nanoTime(), 0), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                d[0] = true;
            }
        }
    }

    final List<URI> endpoints;
    private final HttpClient http;
    private final String auth; // "Bearer ..." or null
    final long timeoutNanos;
    private final long minBackoffNanos;
    private final long maxBackoffNanos;
    private final AtomicInteger preferred = new AtomicInteger();

    Transport(List<URI> endpoints, HttpClient http, String token, Duration timeout, Duration minBackoff, Duration maxBackoff) {
        this.endpoints = List.copyOf(endpoints);
        this.http = http;
        this.auth = token == null || token.isBlank() ? null : "Bearer " + token.strip();
        this.timeoutNanos = timeout.toNanos();
        this.minBackoffNanos = minBackoff.toNanos();
        this.maxBackoffNanos = Math.max(maxBackoff.toNanos(), minBackoffNanos);
    }

    void noteLeader(String addr) {
        for (int i = 0; i < endpoints.size(); i++) {
            URI u = endpoints.get(i);
            if ((u.getHost() + ":" + u.getPort()).equals(addr) || ("[" + u.getHost() + "]:" + u.getPort()).equals(addr)) {
                preferred.set(i);
                return;
            }
        }
    }

    private static String redact(Request r, String text) {
        if (text == null) {
            return "";
        }
        for (String s : r.secrets) {
            text = text.replace(s, "[redacted]");
        }
        return text;
    }

    private static RaftLockException stamp(RaftLockException e, long sent, boolean dialed) {
        e.sentNanos = sent;
        e.dialFailed = dialed;
        return e;
    }

    /** Sends r once to endpoint ep; returns the decoded answer and stamps res.sent. */
    JsonNode attempt(int ep, Request r, long deadline, long[] sentOut) {
        URI base = endpoints.get(ep);
        long timeout = r.attemptTimeoutNanos > 0 ? r.attemptTimeoutNanos : timeoutNanos;
        if (r.waitNanos != null) {
            timeout += r.waitNanos.getAsLong();
        }
        timeout = Math.max(Math.min(timeout, deadline - System.nanoTime()), TimeUnit.MILLISECONDS.toNanos(1));
        HttpRequest.Builder b = HttpRequest.newBuilder(url(base, r))
                .timeout(Duration.ofNanos(timeout))
                .header("Accept", "application/json");
        if (auth != null) {
            b.header("Authorization", auth);
        }
        if (r.body != null) {
            byte[] data;
            try {
                data = JSON.writeValueAsBytes(r.body.get());
            } catch (IOException e) {
                throw new InvalidArgumentException(r.op + ": encoding the request failed");
            }
            b.header("Content-Type", "application/json").method(r.method, HttpRequest.BodyPublishers.ofByteArray(data));
        } else {
            b.method(r.method, HttpRequest.BodyPublishers.noBody());
        }
        long sent = System.nanoTime();
        sentOut[0] = sent;
        HttpResponse<byte[]> resp;
        CompletableFuture<HttpResponse<byte[]>> f = http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofByteArray());
        if (r.cancel != null) {
            r.cancel.inflight.set(f);
            if (r.cancel.error.get() != null) {
                f.cancel(true);
            }
        }
        try {
            // The request's own timeout bounds the exchange; the extra second covers a
            // client whose executor is slow to report it.
            resp = await(f, timeout + TimeUnit.SECONDS.toNanos(1));
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw stamp(new InterruptedCallException(r.op + ": interrupted"), sent, false);
        } catch (CancellationException e) {
            RaftLockException ce = r.cancel != null ? r.cancel.error.get() : null;
            throw ce != null ? ce : stamp(new UnavailableException(r.op + ": cancelled"), sent, false);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw stamp(new UnavailableException(r.op + ": " + base + ": timed out"), sent, false);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            RaftLockException ce = r.cancel != null ? r.cancel.error.get() : null;
            if (ce != null) {
                throw ce;
            }
            if (c instanceof SSLHandshakeException || (c instanceof SSLException && !(c.getCause() instanceof IOException))) {
                throw stamp(new TlsException(r.op + ": " + base + ": " + redact(r, String.valueOf(c.getMessage())), null, null), sent, false);
            }
            boolean dialed = c instanceof ConnectException;
            throw stamp(new UnavailableException(r.op + ": " + base + ": " + c.getClass().getSimpleName() + ": "
                    + redact(r, String.valueOf(c.getMessage())), null, null), sent, dialed);
        } finally {
            if (r.cancel != null) {
                r.cancel.inflight.set(null);
            }
        }
        String leader = resp.headers().firstValue(LEADER_HEADER).orElse("");
        if (!leader.isEmpty()) {
            noteLeader(leader);
        } else if (resp.statusCode() < 500) {
            preferred.set(ep);
        }
        byte[] data = resp.body();
        int st = resp.statusCode();
        if (st >= 200 && st < 300) {
            if (data == null || data.length == 0) {
                return JSON.createObjectNode();
            }
            try {
                return JSON.readTree(data);
            } catch (IOException e) {
                throw stamp(new InternalException(r.op + ": " + base + " answered " + st + " with a body that is not the API's JSON"), sent, false);
            }
        }
        throw stamp(errorOf(r, base, st, data, resp.headers().firstValue("Retry-After").orElse(null)), sent, false);
    }

    /** The URL of r on endpoint base: its path after the base's own, then its query. */
    private static URI url(URI base, Request r) {
        StringBuilder url = new StringBuilder(base.toString());
        if (url.charAt(url.length() - 1) == '/') {
            url.setLength(url.length() - 1);
        }
        url.append(r.path);
        if (r.query != null && !r.query.isEmpty()) {
            char sep = '?';
            for (Map.Entry<String, String> q : r.query.entrySet()) {
                url.append(sep).append(URLEncoder.encode(q.getKey(), StandardCharsets.UTF_8)).append('=')
                        .append(URLEncoder.encode(q.getValue(), StandardCharsets.UTF_8));
                sep = '&';
            }
        }
        return URI.create(url.toString());
    }

    /** The exception of an error answer (status st, body data) to r from base. */
    private static RaftLockException errorOf(Request r, URI base, int st, byte[] data, String retryAfter) {
        String code = "";
        String message = "";
        try {
            JsonNode n = JSON.readTree(data);
            if (n != null && n.path("error").isObject()) {
                code = n.path("error").path("code").asText("");
                message = n.path("error").path("message").asText("");
            }
        } catch (IOException | RuntimeException e) {
            // not the API's error body: judged by the status below
        }
        RaftLockException err;
        if (code.isEmpty()) {
            if (st == 502 || st == 503 || st == 504) {
                err = new UnavailableException(r.op + ": " + base + " answered " + st);
            } else if (st == 401) {
                err = new UnauthenticatedException(r.op + ": " + base + " answered 401");
            } else if (st == 403) {
                err = new PermissionDeniedException(r.op + ": " + base + " answered 403");
            } else {
                err = new InternalException(r.op + ": " + base + " answered " + st);
            }
        } else {
            err = RaftLockException.forCode(code, r.op + ": " + redact(r, message), parseRetryAfter(retryAfter));
        }
        return err;
    }

    /**
     * Opens a streaming GET of r (an event stream) on endpoint ep, with extra headers: the
     * answer's body once a 200 came within the attempt timeout; an error answer or a failed
     * connection throws as an attempt does (UnavailableException for the retryable ones).
     */
    java.io.InputStream openStream(int ep, Request r, Map<String, String> headers) {
        URI base = endpoints.get(ep);
        HttpRequest.Builder b = HttpRequest.newBuilder(url(base, r)).header("Accept", "text/event-stream").GET();
        if (auth != null) {
            b.header("Authorization", auth);
        }
        headers.forEach(b::header);
        CompletableFuture<HttpResponse<java.io.InputStream>> f = http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofInputStream());
        HttpResponse<java.io.InputStream> resp;
        try {
            resp = f.get(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw new InterruptedCallException(r.op + ": interrupted");
        } catch (TimeoutException e) {
            f.cancel(true);
            throw new UnavailableException(r.op + ": " + base + ": timed out");
        } catch (ExecutionException | CancellationException e) {
            Throwable c = e.getCause() != null ? e.getCause() : e;
            throw new UnavailableException(r.op + ": " + base + ": " + c.getClass().getSimpleName() + ": " + redact(r, String.valueOf(c.getMessage())), null, null);
        }
        if (resp.statusCode() == 200) {
            return resp.body();
        }
        byte[] data;
        try (java.io.InputStream in = resp.body()) {
            data = in.readNBytes(1 << 20);
        } catch (IOException e) {
            data = new byte[0];
        }
        throw errorOf(r, base, resp.statusCode(), data, resp.headers().firstValue("Retry-After").orElse(null));
    }

    /** The preferred endpoint (the one that answered last). */
    int preferred() {
        return preferred.get();
    }

    static Duration parseRetryAfter(String v) {
        if (v == null || v.isBlank()) {
            return null;
        }
        v = v.strip();
        try {
            long n = Long.parseLong(v);
            return n > 0 ? Duration.ofNanos(Math.min(TimeUnit.SECONDS.toNanos(n), MAX_RETRY_AFTER_NANOS)) : null;
        } catch (NumberFormatException e) {
            // an HTTP date
        }
        try {
            Duration d = Duration.between(java.time.Instant.now(), ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant());
            return d.isNegative() || d.isZero() ? null : d;
        } catch (RuntimeException e) {
            return null;
        }
    }

    static boolean retryable(RaftLockException e) {
        if (e instanceof InterruptedCallException) {
            return false; // the caller asked to stop
        }
        return e.retryClass() != RetryClass.NEVER;
    }

    private static long upperHalf(long backoff) {
        return backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1);
    }

    private static void sleepNanos(long n) {
        long end = System.nanoTime() + n;
        while (true) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return;
            }
            try {
                TimeUnit.NANOSECONDS.sleep(left);
            } catch (InterruptedException e) {
                boolean[] d = DEFERRED.get();
                if (d != null) {
                    d[0] = true;
                    continue;
                }
                Thread.currentThread().interrupt();
                throw new InterruptedCallException("interrupted while waiting to retry");
            }
        }
    }

    /**
     * Sends r until an endpoint answers with anything but no_leader, unknown_outcome or
     * too_many_requests (or a failed connection), or the deadline (System.nanoTime) passes:
     * the next endpoint at once after a failure, a pause of exponential backoff with jitter
     * after a whole round, at least the Retry-After of a too_many_requests answer (whose
     * error is thrown at once when the deadline falls before that pause would end).
     */
    Result call(Request r, long deadline) {
        Result res = new Result();
        int n = endpoints.size();
        int idx = preferred.get();
        long backoff = minBackoffNanos;
        long maxBackoff = maxBackoffNanos;
        if (r.maxBackoffNanos > 0) {
            maxBackoff = r.maxBackoffNanos;
            backoff = Math.min(backoff, maxBackoff);
        }
        RaftLockException last = null;
        RaftLockException[] lastByEndpoint = new RaftLockException[n];
        long[] sent = new long[1];
        while (true) {
            long throttled = 0;
            int tlsFails = 0;
            for (int i = 0; i < n; i++) {
                if (r.cancel != null && r.cancel.error.get() != null) {
                    throw fail(r.cancel.error.get(), res);
                }
                if (stopsAtInterrupt()) {
                    throw fail(new InterruptedCallException(r.op + ": interrupted"), res);
                }
                int ep = (idx + i) % n;
                res.attempts++;
                try {
                    JsonNode out = attempt(ep, r, deadline, sent);
                    if (res.attempts == 1) {
                        res.first = sent[0];
                    }
                    res.sent = sent[0];
                    res.body = out;
                    return res;
                } catch (RaftLockException e) {
                    if (res.attempts == 1) {
                        res.first = e.sentNanos != 0 ? e.sentNanos : System.nanoTime();
                    }
                    if (e instanceof LeaseLostException || !retryable(e)) {
                        throw fail(e, res);
                    }
                    last = e;
                    lastByEndpoint[ep] = e;
                    if (System.nanoTime() - deadline >= 0) {
                        throw fail(unreachable(r, e, lastByEndpoint), res);
                    }
                    if (e instanceof TlsException) {
                        tlsFails++;
                    }
                    if (e.retryClass() == RetryClass.AFTER_DELAY) {
                        throttled = Math.max(e.retryAfter().map(Duration::toNanos).orElse(0L), 1_000_000L);
                        break;
                    }
                    preferred.set((ep + 1) % n);
                }
            }
            if (tlsFails == n) {
                throw fail(last, res);
            }
            idx = preferred.get();
            long pause = upperHalf(backoff);
            if (throttled > 0) {
                pause = Math.max(pause, throttled);
            }
            if (System.nanoTime() + pause - deadline >= 0) {
                if (throttled == 0) {
                    sleepNanos(deadline - System.nanoTime());
                }
                throw fail(unreachable(r, last, lastByEndpoint), res);
            }
            sleepNanos(pause);
            backoff = Math.min(2 * backoff, maxBackoff);
        }
    }

    /**
     * The error a call that ran out of time ends in: an UnreachableException naming every
     * endpoint's last error when every endpoint was tried and none answered (each failed to
     * connect or timed out), else the last error as it was.
     */
    private RaftLockException unreachable(Request r, RaftLockException last, RaftLockException[] byEndpoint) {
        Map<String, String> errors = new LinkedHashMap<>();
        for (int i = 0; i < byEndpoint.length; i++) {
            RaftLockException e = byEndpoint[i];
            if (!(e instanceof UnavailableException)) {
                return last;
            }
            String msg = e.getMessage(), prefix = r.op + ": " + endpoints.get(i) + ": ";
            errors.put(endpoints.get(i).toString(), msg.startsWith(prefix) ? msg.substring(prefix.length()) : msg);
        }
        return new UnreachableException(r.op, errors);
    }

    private static RaftLockException fail(RaftLockException e, Result res) {
        e.attempts = res.attempts;
        return e;
    }

    /** route followed by name with each segment percent-escaped ("accounts/A" stays two segments). */
    static String namePath(String route, String name) {
        StringBuilder sb = new StringBuilder(route);
        String[] segs = name.split("/", -1);
        for (int i = 0; i < segs.length; i++) {
            if (i > 0) {
                sb.append('/');
            }
            sb.append(URLEncoder.encode(segs[i], StandardCharsets.UTF_8).replace("+", "%20"));
        }
        return sb.toString();
    }
}
