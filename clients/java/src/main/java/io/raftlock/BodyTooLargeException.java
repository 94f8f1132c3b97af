package io.raftlock;

import java.time.Duration;

/** 413 body_too_large. */
public class BodyTooLargeException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public BodyTooLargeException(String message) {
        super("body_too_large", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public BodyTooLargeException(String message, Duration retryAfter, Throwable cause) {
        super("body_too_large", message, retryAfter, cause);
    }
}
