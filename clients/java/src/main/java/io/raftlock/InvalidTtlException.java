package io.raftlock;

import java.time.Duration;

/** 400 invalid_ttl: the TTL is outside 500 ms to 24 h. */
public class InvalidTtlException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public InvalidTtlException(String message) {
        super("invalid_ttl", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public InvalidTtlException(String message, Duration retryAfter, Throwable cause) {
        super("invalid_ttl", message, retryAfter, cause);
    }
}
