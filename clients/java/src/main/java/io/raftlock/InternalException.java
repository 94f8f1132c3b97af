package io.raftlock;

import java.time.Duration;

/** 500 internal, or an answer that is not the API's JSON. */
public class InternalException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public InternalException(String message) {
        super("internal", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public InternalException(String message, Duration retryAfter, Throwable cause) {
        super("internal", message, retryAfter, cause);
    }
}
