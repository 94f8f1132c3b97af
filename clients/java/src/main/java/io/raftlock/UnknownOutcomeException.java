package io.raftlock;

import java.time.Duration;

/** 503 unknown_outcome: the request may or may not have been applied. Retried with the same request_id. */
public class UnknownOutcomeException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public UnknownOutcomeException(String message) {
        super("unknown_outcome", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public UnknownOutcomeException(String message, Duration retryAfter, Throwable cause) {
        super("unknown_outcome", message, retryAfter, cause);
    }
}
