package io.raftlock;

import java.time.Duration;

/** No endpoint could be reached or answered in time (client-side). */
public class UnavailableException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public UnavailableException(String message) {
        super("unavailable", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public UnavailableException(String message, Duration retryAfter, Throwable cause) {
        super("unavailable", message, retryAfter, cause);
    }

    /** For subclasses with a code of their own. */
    UnavailableException(Throwable cause, String code, String message) {
        super(code, message, null, cause);
    }
}
