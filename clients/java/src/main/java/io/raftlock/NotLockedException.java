package io.raftlock;

import java.time.Duration;

/** release of a hold that holds nothing (client-side). */
public class NotLockedException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public NotLockedException(String message) {
        super("not_locked", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public NotLockedException(String message, Duration retryAfter, Throwable cause) {
        super("not_locked", message, retryAfter, cause);
    }
}
