package io.raftlock;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A lock's state. A free lock has held false and token 0; owner and mode are "" then.
 *
 * @param name the lock's name
 * @param held whether anyone holds it
 * @param token the current grant's fencing token (0 when free)
 * @param owner the holder's owner label
 * @param mode "exclusive", "shared" or ""
 * @param holderCount how many hold it (shared locks have several)
 * @param waiters how many wait in its queue
 * @param modifyIndex the index of its last change (for blocking reads)
 * @param lockDelayRemainingMs how long (cluster time) a lock delay still keeps the lock from
 *     everyone, 0 when none (a component since 0.2.0)
 */
public record LockStatus(String name, boolean held, long token, String owner, String mode, int holderCount, int waiters, long modifyIndex,
        long lockDelayRemainingMs) {
    static LockStatus of(JsonNode o) {
        return new LockStatus(o.path("name").asText(""), o.path("held").asBoolean(), o.path("token").asLong(), o.path("owner").asText(""),
                o.path("mode").asText(""), o.path("holder_count").asInt(), o.path("waiters").asInt(), o.path("modify_index").asLong(),
                o.path("lock_delay_remaining_ms").asLong());
    }
}
