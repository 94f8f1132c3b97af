package io.raftlock;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A semaphore's state.
 *
 * @param name its name
 * @param limit its limit (0 when not in use)
 * @param permits how many permits are held
 * @param waiters how many wait
 * @param modifyIndex the index of its last change
 */
public record SemaphoreStatus(String name, int limit, int permits, int waiters, long modifyIndex) {
    static SemaphoreStatus of(JsonNode o) {
        return new SemaphoreStatus(o.path("name").asText(""), o.path("limit").asInt(), o.path("permits").size(), o.path("waiters").asInt(),
                o.path("modify_index").asLong());
    }
}
