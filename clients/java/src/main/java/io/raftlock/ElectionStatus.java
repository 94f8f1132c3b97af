package io.raftlock;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * An election's state.
 *
 * @param name its name
 * @param elected whether someone leads
 * @param owner the leader's owner label
 * @param value the value the leader published
 * @param token the leadership's fencing token
 * @param candidates how many candidates wait
 * @param modifyIndex the index of its last change
 */
public record ElectionStatus(String name, boolean elected, String owner, String value, long token, int candidates, long modifyIndex) {
    static ElectionStatus of(JsonNode o) {
        return new ElectionStatus(o.path("name").asText(""), o.path("elected").asBoolean(), o.path("owner").asText(""), o.path("value").asText(""),
                o.path("token").asLong(), o.path("candidates").asInt(), o.path("modify_index").asLong());
    }
}
