package io.raftlock;

/**
 * What may be done with a call that failed: each API error code's retry class, as the
 * server's catalogue of outcomes says (api/outcomes.json; {@code OutcomesTest} checks this
 * client against it). The client's retries go by it ({@link RaftLockException#retryClass()}).
 */
public enum RetryClass {
    /** Thrown at once: repeating the same call cannot change the answer. */
    NEVER("never"),
    /** Nothing was applied: tried again on the next endpoint, with backoff between rounds. */
    OTHER_NODE("other_node"),
    /** Nothing was applied: tried again after the answer's Retry-After delay. */
    AFTER_DELAY("after_delay"),
    /** It may have been applied: tried again only as the same call, with the same request_id. */
    AMBIGUOUS("ambiguous");

    private final String wire;

    RetryClass(String wire) {
        this.wire = wire;
    }

    /** The class's name in api/outcomes.json ({@code "other_node"}...). */
    public String wire() {
        return wire;
    }
}
