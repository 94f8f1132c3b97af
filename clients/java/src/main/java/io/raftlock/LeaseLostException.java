package io.raftlock;

import java.time.Duration;

/** The client can no longer assume the lease is alive: work under its grants must stop (client-side). */
public class LeaseLostException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public LeaseLostException(String message) {
        super("lease_lost", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public LeaseLostException(String message, Duration retryAfter, Throwable cause) {
        super("lease_lost", message, retryAfter, cause);
    }
}
