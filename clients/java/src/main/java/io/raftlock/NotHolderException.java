package io.raftlock;

import java.time.Duration;

/** 409 not_holder: the lease and token given do not hold the grant (released, expired, or granted again). */
public class NotHolderException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public NotHolderException(String message) {
        super("not_holder", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public NotHolderException(String message, Duration retryAfter, Throwable cause) {
        super("not_holder", message, retryAfter, cause);
    }
}
