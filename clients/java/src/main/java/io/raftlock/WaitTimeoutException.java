package io.raftlock;

import java.time.Duration;

/** 409 wait_timeout: the wait ended before the grant. */
public class WaitTimeoutException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public WaitTimeoutException(String message) {
        super("wait_timeout", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public WaitTimeoutException(String message, Duration retryAfter, Throwable cause) {
        super("wait_timeout", message, retryAfter, cause);
    }
}
