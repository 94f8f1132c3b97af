package io.raftlock;

/**
 * A fenced write was refused: its token is lower than one the resource (or row) has
 * accepted. Nothing the write did was applied.
 */
public class StaleTokenException extends RaftLockException {
    private static final long serialVersionUID = 1L;

    private final String resource;
    private final long offered;
    private final long current;

    /** The refusal of token {@code offered} on {@code resource}, which has accepted {@code current}. */
    public StaleTokenException(String resource, long offered, long current) {
        super("stale_token", "stale token " + offered + " for " + resource + ": it has already accepted token " + current);
        this.resource = resource;
        this.offered = offered;
        this.current = current;
    }

    /** The fenced resource (or "table id=..."). */
    public String resource() {
        return resource;
    }

    /** The refused token. */
    public long offered() {
        return offered;
    }

    /** The highest token the resource had accepted (greater than offered). */
    public long current() {
        return current;
    }
}
