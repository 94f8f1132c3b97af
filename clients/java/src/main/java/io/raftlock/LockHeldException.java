package io.raftlock;

import java.time.Duration;

/** 409 lock_held: another lease holds the lock and the request did not wait. */
public class LockHeldException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public LockHeldException(String message) {
        super("lock_held", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public LockHeldException(String message, Duration retryAfter, Throwable cause) {
        super("lock_held", message, retryAfter, cause);
    }
}
