package io.raftlock;

import java.time.Duration;

/** 429 quota_exceeded: a cluster limit would be exceeded; nothing was applied. Not retried. */
public class QuotaExceededException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public QuotaExceededException(String message) {
        super("quota_exceeded", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public QuotaExceededException(String message, Duration retryAfter, Throwable cause) {
        super("quota_exceeded", message, retryAfter, cause);
    }
}
