package io.raftlock;

import java.util.Map;

/**
 * The leadership of an election, held like a lock ({@link Held}): while it is not lost, this
 * process leads, and {@link #proclaim} publishes a new value under the same token.
 * {@link #close()} resigns; the next candidate leads, with its own value, in that commit.
 */
public final class Leadership extends Held {
    private volatile String value;

    Leadership(RaftLock client, String name, long token, Lease lease, boolean ownsLease, GrantLoss loss, String value) {
        super(client, Kind.ELECTION, RaftLock.ELECTIONS, name, token, lease, false, ownsLease, loss);
        this.value = value;
    }

    /** The value this leadership published last. */
    @Override
    @SuppressWarnings("removal")
    public String value() {
        return value;
    }

    /** Publishes {@code value} as the leader's, keeping the leadership and its token; returns the token. */
    @Override
    @SuppressWarnings("removal")
    public long proclaim(String value) {
        if (isLost()) {
            throw new LeaseLostException("proclaim \"" + name + "\": the leadership is lost");
        }
        Transport.Result res = client.call(new Transport.Request("proclaim \"" + name + "\"", "PUT", Transport.namePath(RaftLock.ELECTIONS, name))
                .body(() -> Map.of("value", value, "lease_id", lease.id, "token", token)).secret(lease.id), null, 0);
        lease.observe(res.sent);
        this.value = value;
        return res.body.path("token").asLong();
    }
}
