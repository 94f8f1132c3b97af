package io.raftlock;

import java.time.Duration;

/** 410 index_compacted: the asked index is older than the history kept. */
public class IndexCompactedException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public IndexCompactedException(String message) {
        super("index_compacted", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public IndexCompactedException(String message, Duration retryAfter, Throwable cause) {
        super("index_compacted", message, retryAfter, cause);
    }
}
