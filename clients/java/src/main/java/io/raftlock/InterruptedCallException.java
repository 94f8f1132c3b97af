package io.raftlock;

/**
 * The calling thread was interrupted during a call (client-side, code {@code "interrupted"}).
 * The call stopped at once, without retrying; the thread's interrupt flag is set again before
 * this is thrown, so code above still sees it. A subclass of {@link UnavailableException}
 * (which an interrupted call threw before 0.2.0). What an interrupted acquire may have
 * applied on the server is left to its lease: {@link RaftLockLock} and
 * {@link RaftLockReentrantLock} revoke it, so no grant is left behind.
 */
public class InterruptedCallException extends UnavailableException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public InterruptedCallException(String message) {
        super(null, "interrupted", message);
    }
}
