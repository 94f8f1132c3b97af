package io.raftlock;

import java.time.Duration;

/** 421 misdirected_request: the node does not answer for the Host the request named (see the server's --allowed-hosts); nothing was done. */
public class MisdirectedRequestException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public MisdirectedRequestException(String message) {
        super("misdirected_request", message, null, null);
    }

    /** An exception with {@code message}, the server's Retry-After delay (or null) and a cause (or null). */
    public MisdirectedRequestException(String message, Duration retryAfter, Throwable cause) {
        super("misdirected_request", message, retryAfter, cause);
    }
}
