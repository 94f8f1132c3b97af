package io.raftlock;

import java.time.Duration;

/** 409 semaphore_full: every permit is held and the request did not wait. */
public class SemaphoreFullException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public SemaphoreFullException(String message) {
        super("semaphore_full", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public SemaphoreFullException(String message, Duration retryAfter, Throwable cause) {
        super("semaphore_full", message, retryAfter, cause);
    }
}
