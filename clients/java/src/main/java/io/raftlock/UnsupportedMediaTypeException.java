package io.raftlock;

import java.time.Duration;

/** 415 unsupported_media_type: a request with a body did not declare JSON (Content-Type: application/json); nothing was applied. */
public class UnsupportedMediaTypeException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public UnsupportedMediaTypeException(String message) {
        super("unsupported_media_type", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public UnsupportedMediaTypeException(String message, Duration retryAfter, Throwable cause) {
        super("unsupported_media_type", message, retryAfter, cause);
    }
}
