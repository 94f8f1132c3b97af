package io.raftlock;

/**
 * A lease of one cluster was given for a name another cluster owns ({@link RaftLockRouter};
 * code {@code "cross_cluster"}). Nothing was sent: a lease, its grants and their tokens exist
 * on one cluster only. An {@link InvalidArgumentException}.
 */
public class CrossClusterException extends InvalidArgumentException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public CrossClusterException(String message) {
        super(null, "cross_cluster", message);
    }
}
