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
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url.toString()))
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
            resp = f.get(timeout + TimeUnit.SECONDS.toNanos(1), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw stamp(new UnavailableException(r.op + ": interrupted"), sent, false);
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
            err = RaftLockException.forCode(code, r.op + ": " + redact(r, message),
                    parseRetryAfter(resp.headers().firstValue("Retry-After").orElse(null)));
        }
        throw stamp(err, sent, false);
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
        return e instanceof UnavailableException || e instanceof NoLeaderException || e instanceof UnknownOutcomeException
                || e instanceof TooManyRequestsException || e instanceof TlsException;
    }

    private static long upperHalf(long backoff) {
        return backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1);
    }

    private static void sleepNanos(long n) {
        if (n <= 0) {
            return;
        }
        try {
            TimeUnit.NANOSECONDS.sleep(n);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UnavailableException("interrupted");
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
                    if (e instanceof TooManyRequestsException) {
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
