package io.raftlock;

import java.time.Duration;

/** 409 election_held: another lease leads and the campaign did not wait. */
public class ElectionHeldException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public ElectionHeldException(String message) {
        super("election_held", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public ElectionHeldException(String message, Duration retryAfter, Throwable cause) {
        super("election_held", message, retryAfter, cause);
    }
}
