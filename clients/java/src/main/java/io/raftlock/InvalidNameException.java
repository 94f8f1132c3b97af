package io.raftlock;

import java.time.Duration;

/** 400 invalid_name (or refused before sending): the name breaks the lock-name rule. */
public class InvalidNameException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public InvalidNameException(String message) {
        super("invalid_name", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public InvalidNameException(String message, Duration retryAfter, Throwable cause) {
        super("invalid_name", message, retryAfter, cause);
    }
}
