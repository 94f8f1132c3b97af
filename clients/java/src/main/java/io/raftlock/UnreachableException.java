package io.raftlock;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * No endpoint answered before the call's timeout (client-side): every endpoint's last
 * attempt failed to connect, timed out or was refused. The message and {@link #errors()} name
 * every endpoint with its last error, so that one unreachable node is not mistaken for a
 * cluster down. A subclass of {@link UnavailableException}, so code that catches that still does.
 */
public class UnreachableException extends UnavailableException {
    private static final long serialVersionUID = 1L;

    private final Map<String, String> errors;

    /** An exception for op with each endpoint's last error, in endpoint order. */
    public UnreachableException(String op, Map<String, String> errors) {
        super(message(op, errors), null, null);
        this.errors = Collections.unmodifiableMap(new LinkedHashMap<>(errors));
    }

    /** Each endpoint (as configured) with the last error it gave, in endpoint order. */
    public Map<String, String> errors() {
        return errors;
    }

    private static String message(String op, Map<String, String> errors) {
        StringBuilder sb = new StringBuilder(op).append(": no endpoint answered (");
        int i = 0;
        for (Map.Entry<String, String> e : errors.entrySet()) {
            if (i++ > 0) {
                sb.append("; ");
            }
            sb.append(e.getKey()).append(": ").append(e.getValue());
        }
        return sb.append("); check that the nodes run and that the endpoints are right").toString();
    }
}
