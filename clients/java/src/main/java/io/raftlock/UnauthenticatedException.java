package io.raftlock;

import java.time.Duration;

/** 401 unauthenticated: ACLs are on and the request carried no token the cluster knows. */
public class UnauthenticatedException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public UnauthenticatedException(String message) {
        super("unauthenticated", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public UnauthenticatedException(String message, Duration retryAfter, Throwable cause) {
        super("unauthenticated", message, retryAfter, cause);
    }
}
