package io.raftlock;

import java.time.Duration;

/** The TLS handshake failed in a way retrying cannot fix (client-side). */
public class TlsException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public TlsException(String message) {
        super("tls", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public TlsException(String message, Duration retryAfter, Throwable cause) {
        super("tls", message, retryAfter, cause);
    }
}
