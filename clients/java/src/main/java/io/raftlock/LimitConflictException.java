package io.raftlock;

import java.time.Duration;

/** 409 limit_conflict: the semaphore is in use with another limit. */
public class LimitConflictException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public LimitConflictException(String message) {
        super("limit_conflict", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public LimitConflictException(String message, Duration retryAfter, Throwable cause) {
        super("limit_conflict", message, retryAfter, cause);
    }
}
