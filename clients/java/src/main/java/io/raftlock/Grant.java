package io.raftlock;

/**
 * The answer to a plain acquire: the fencing token and the lease that holds the grant.
 * Nothing keeps that lease alive. {@link #toString()} leaves the lease ID (a secret) out.
 *
 * @param name the lock's name
 * @param token the fencing token
 * @param leaseId the lease's ID (a secret: never log it)
 * @param ttlMs the lease's TTL in milliseconds
 */
public record Grant(String name, long token, String leaseId, long ttlMs) {
    @Override
    public String toString() {
        return "Grant{name=" + name + ", token=" + token + ", ttlMs=" + ttlMs + "}";
    }
}
