package io.raftlock;

import java.time.Duration;

/** 400 invalid_json: the request body is not the API's JSON. */
public class InvalidJsonException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public InvalidJsonException(String message) {
        super("invalid_json", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public InvalidJsonException(String message, Duration retryAfter, Throwable cause) {
        super("invalid_json", message, retryAfter, cause);
    }
}
