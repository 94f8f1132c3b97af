package io.raftlock;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The base of every exception this client throws. {@link #code()} is the API's error code
 * ({@code "lock_held"}, {@code "unknown_outcome"}...) or a client-side code
 * ({@code "unavailable"}, {@code "tls"}, {@code "lease_lost"}, {@code "not_locked"},
 * {@code "stale_token"}). Each API code has its own subclass ({@link LockHeldException}...),
 * made by {@link #forCode}, and its {@link #retryClass()}, which the client's retries go by;
 * both are checked against the server's catalogue of outcomes (api/outcomes.json) by
 * {@code OutcomesTest}. A code this client does not know (a newer server's) is a plain
 * RaftLockException with that code and the server's message, never retried. Messages never
 * contain a lease ID, a request ID or an ACL token.
 */
public class RaftLockException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String code;
    private final transient Duration retryAfter;
    /** Attempts of the call that failed (more than one: an earlier one may have been applied). */
    transient int attempts = 1;
    /** When the failed attempt was sent (System.nanoTime), 0 when none was. */
    transient long sentNanos;
    /** The connection could not be made: the request certainly was not applied. */
    transient boolean dialFailed;

    /** An exception with {@code code} and {@code message}. */
    public RaftLockException(String code, String message) {
        this(code, message, null, null);
    }

    /** An exception with {@code code}, {@code message}, a Retry-After delay (or null) and a cause (or null). */
    public RaftLockException(String code, String message, Duration retryAfter, Throwable cause) {
        super(code + ": " + message, cause);
        this.code = code;
        this.retryAfter = retryAfter;
    }

    /** The API error code, or the client-side code. */
    public String code() {
        return code;
    }

    /**
     * The retry classes of the codes that are retried: the API's (api/outcomes.json), then
     * the client's own. Every other code's is {@link RetryClass#NEVER}.
     */
    private static final Map<String, RetryClass> RETRIED = Map.of(
            "no_leader", RetryClass.OTHER_NODE,
            "unknown_outcome", RetryClass.AMBIGUOUS,
            "too_many_requests", RetryClass.AFTER_DELAY,
            "unavailable", RetryClass.OTHER_NODE,
            "tls", RetryClass.OTHER_NODE);

    /** How the client retries this exception: its code's retry class (NEVER for a code it does not know). */
    public RetryClass retryClass() {
        return code == null ? RetryClass.NEVER : RETRIED.getOrDefault(code, RetryClass.NEVER);
    }

    /** The server's Retry-After delay, when its answer had one. */
    public Optional<Duration> retryAfter() {
        return Optional.ofNullable(retryAfter);
    }

    /**
     * The exception for an API error answer with {@code code}: one subclass per code of the
     * catalogue; a code this client does not know gives a plain RaftLockException with the
     * code kept (retry class NEVER).
     */
    public static RaftLockException forCode(String code, String message, Duration retryAfter) {
        switch (code) {
            case "invalid_json": return new InvalidJsonException(message, retryAfter, null);
            case "invalid_name": return new InvalidNameException(message, retryAfter, null);
            case "invalid_ttl": return new InvalidTtlException(message, retryAfter, null);
            case "invalid_argument": return new InvalidArgumentException(message, retryAfter, null);
            case "not_found": return new NotFoundException(message, retryAfter, null);
            case "method_not_allowed": return new MethodNotAllowedException(message, retryAfter, null);
            case "body_too_large": return new BodyTooLargeException(message, retryAfter, null);
            case "unsupported_media_type": return new UnsupportedMediaTypeException(message, retryAfter, null);
            case "misdirected_request": return new MisdirectedRequestException(message, retryAfter, null);
            case "lock_held": return new LockHeldException(message, retryAfter, null);
            case "wait_timeout": return new WaitTimeoutException(message, retryAfter, null);
            case "not_holder": return new NotHolderException(message, retryAfter, null);
            case "lease_not_found": return new LeaseNotFoundException(message, retryAfter, null);
            case "mode_conflict": return new ModeConflictException(message, retryAfter, null);
            case "semaphore_full": return new SemaphoreFullException(message, retryAfter, null);
            case "limit_conflict": return new LimitConflictException(message, retryAfter, null);
            case "election_held": return new ElectionHeldException(message, retryAfter, null);
            case "deadlock": return new DeadlockException(message, retryAfter, null);
            case "conflict": return new ConflictException(message, retryAfter, null);
            case "version_inactive": return new VersionInactiveException(message, retryAfter, null);
            case "index_compacted": return new IndexCompactedException(message, retryAfter, null);
            case "quota_exceeded": return new QuotaExceededException(message, retryAfter, null);
            case "too_many_requests": return new TooManyRequestsException(message, retryAfter, null);
            case "no_leader": return new NoLeaderException(message, retryAfter, null);
            case "unknown_outcome": return new UnknownOutcomeException(message, retryAfter, null);
            case "unauthenticated": return new UnauthenticatedException(message, retryAfter, null);
            case "permission_denied": return new PermissionDeniedException(message, retryAfter, null);
            case "internal": return new InternalException(message, retryAfter, null);
            default: {
                RaftLockException e = new RaftLockException(code, message, retryAfter, null);
                return e;
            }
        }
    }
}
