package io.raftlock;

import java.time.Duration;

/** 400 invalid_argument: a field of the request is out of range or malformed. */
public class InvalidArgumentException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public InvalidArgumentException(String message) {
        super("invalid_argument", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public InvalidArgumentException(String message, Duration retryAfter, Throwable cause) {
        super("invalid_argument", message, retryAfter, cause);
    }

    /** For subclasses with a code of their own (refusals made by the client). */
    InvalidArgumentException(Throwable cause, String code, String message) {
        super(code, message, null, cause);
    }
}
