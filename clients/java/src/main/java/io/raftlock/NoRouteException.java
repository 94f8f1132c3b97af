package io.raftlock;

/**
 * No route of a {@link RaftLockRouter} owns the name (no routed prefix matches it and there is
 * no default route ""; code {@code "no_route"}). Nothing was sent. An
 * {@link InvalidArgumentException}.
 */
public class NoRouteException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public NoRouteException(String message) {
        super(null, "no_route", message);
    }
}
