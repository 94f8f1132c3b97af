package io.raftlock;

import java.time.Duration;

/** 409 deadlock: waiting would close a cycle of waiting leases; nothing was queued. */
public class DeadlockException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public DeadlockException(String message) {
        super("deadlock", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public DeadlockException(String message, Duration retryAfter, Throwable cause) {
        super("deadlock", message, retryAfter, cause);
    }
}
