package io.raftlock;

import java.time.Duration;

/** 403 permission_denied: the token does not grant the right the request needs. */
public class PermissionDeniedException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public PermissionDeniedException(String message) {
        super("permission_denied", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public PermissionDeniedException(String message, Duration retryAfter, Throwable cause) {
        super("permission_denied", message, retryAfter, cause);
    }
}
