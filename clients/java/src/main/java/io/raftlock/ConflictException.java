package io.raftlock;

import java.time.Duration;

/** 409 conflict: the request contradicts the cluster's state. */
public class ConflictException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public ConflictException(String message) {
        super("conflict", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public ConflictException(String message, Duration retryAfter, Throwable cause) {
        super("conflict", message, retryAfter, cause);
    }
}
