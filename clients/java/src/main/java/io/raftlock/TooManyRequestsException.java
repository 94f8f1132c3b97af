package io.raftlock;

import java.time.Duration;

/** 429 too_many_requests: the node holds its limit of open requests. Retried after Retry-After. */
public class TooManyRequestsException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public TooManyRequestsException(String message) {
        super("too_many_requests", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public TooManyRequestsException(String message, Duration retryAfter, Throwable cause) {
        super("too_many_requests", message, retryAfter, cause);
    }
}
