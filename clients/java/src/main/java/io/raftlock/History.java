package io.raftlock;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * A lock's recent events, oldest first.
 *
 * @param name the lock's name
 * @param events the events (each with at least "kind": granted, released, expired...)
 * @param clusterTimeMs the cluster's time of the read
 */
public record History(String name, List<Event> events, long clusterTimeMs) {
    /**
     * One event.
     *
     * @param kind what happened ("granted", "released", "expired"...)
     * @param token the grant's token, 0 when none
     * @param owner the holder's owner label
     */
    public record Event(String kind, long token, String owner) {}

    static History of(JsonNode o) {
        List<Event> ev = new ArrayList<>();
        for (JsonNode e : o.path("events")) {
            ev.add(new Event(e.path("kind").asText(""), e.path("token").asLong(), e.path("owner").asText("")));
        }
        return new History(o.path("name").asText(""), List.copyOf(ev), o.path("cluster_time_ms").asLong());
    }
}
