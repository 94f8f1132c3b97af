package io.raftlock;

import java.time.Duration;

/** 405 method_not_allowed. */
public class MethodNotAllowedException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public MethodNotAllowedException(String message) {
        super("method_not_allowed", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public MethodNotAllowedException(String message, Duration retryAfter, Throwable cause) {
        super("method_not_allowed", message, retryAfter, cause);
    }
}
