package io.raftlock;

import java.time.Duration;

/** 404 lease_not_found: the lease expired, was revoked, or never existed. */
public class LeaseNotFoundException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public LeaseNotFoundException(String message) {
        super("lease_not_found", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public LeaseNotFoundException(String message, Duration retryAfter, Throwable cause) {
        super("lease_not_found", message, retryAfter, cause);
    }
}
