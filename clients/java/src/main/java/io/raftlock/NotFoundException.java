package io.raftlock;

import java.time.Duration;

/** 404 not_found: no such route or object. */
public class NotFoundException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public NotFoundException(String message) {
        super("not_found", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public NotFoundException(String message, Duration retryAfter, Throwable cause) {
        super("not_found", message, retryAfter, cause);
    }
}
