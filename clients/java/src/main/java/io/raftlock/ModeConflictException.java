package io.raftlock;

import java.time.Duration;

/** 409 mode_conflict: the lease holds or waits for the lock in the other mode. */
public class ModeConflictException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public ModeConflictException(String message) {
        super("mode_conflict", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public ModeConflictException(String message, Duration retryAfter, Throwable cause) {
        super("mode_conflict", message, retryAfter, cause);
    }
}
