package io.raftlock;

import java.time.Duration;

/** 409 version_inactive: the cluster has not activated the protocol version the request needs. */
public class VersionInactiveException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public VersionInactiveException(String message) {
        super("version_inactive", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public VersionInactiveException(String message, Duration retryAfter, Throwable cause) {
        super("version_inactive", message, retryAfter, cause);
    }
}
