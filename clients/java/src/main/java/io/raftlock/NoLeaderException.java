package io.raftlock;

import java.time.Duration;

/** 503 no_leader: no leader; nothing was applied. Retried. */
public class NoLeaderException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public NoLeaderException(String message) {
        super("no_leader", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public NoLeaderException(String message, Duration retryAfter, Throwable cause) {
        super("no_leader", message, retryAfter, cause);
    }
}
