/**
 * Errors of the raftlock client. Every error the client throws is a {@link RaftlockError}
 * whose `code` is the API's error code (`lock_held`, `wait_timeout`, ...) when the server
 * answered one, or one of the client's own codes (`unavailable`, `tls`, `lease_lost`,
 * `aborted`, `not_locked`). Each code has its own class, so callers can match either way:
 *
 * ```ts
 * if (err instanceof LockHeldError) ...
 * if (err instanceof RaftlockError && err.code === "lock_held") ...
 * ```
 *
 * Each error has its `retryClass`, the API's for its code (api/outcomes.json, the server's
 * catalogue of outcomes; test/outcomes.test.ts checks this module against it), which is
 * what the client's retries go by. A code this client does not know (a newer server's) is
 * a {@link ServerError} with that code and the server's message, not retried: never a crash.
 */

/**
 * What may be done with a request that failed: `never` (thrown at once), `other_node`
 * (nothing was applied: tried again on the next endpoint, with backoff between rounds),
 * `after_delay` (tried again after the answer's Retry-After), `ambiguous` (it may have been
 * applied: tried again only as the same request, with the same request_id).
 */
export type RetryClass = "never" | "other_node" | "after_delay" | "ambiguous";

/** Options common to every client error. */
export interface ErrorOptions {
  /** HTTP status of the answer, when the error comes from one. */
  status?: number;
  /** The answer's Retry-After delay in milliseconds, when it had one. */
  retryAfterMs?: number;
  /** The underlying error (a network error, the signal's reason). */
  cause?: unknown;
}

/** The base class of every error the client throws. */
export class RaftlockError extends Error {
  /** The API error code, or the client's own code (see the module documentation). */
  readonly code: string;
  /** HTTP status of the answer the error comes from; undefined for client-side errors. */
  readonly status?: number;
  /** The Retry-After delay (ms) of the answer (429 and 503 answers carry one). */
  readonly retryAfterMs?: number;

  constructor(code: string, message: string, opts: ErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.status = opts.status;
    this.retryAfterMs = opts.retryAfterMs;
    this.name = new.target.name;
  }

  /** How the client retries this error: its code's retry class ("never" for a code it does not know). */
  get retryClass(): RetryClass {
    return Object.hasOwn(byCode, this.code) ? byCode[this.code].retry : "never";
  }
}

/** 409 lock_held: the lock is held by another lease and the request did not wait. */
export class LockHeldError extends RaftlockError {}
/** 409 wait_timeout: the wait ended before the grant; the lease has left the queue. */
export class WaitTimeoutError extends RaftlockError {}
/** 409 not_holder: the lease and token do not hold the grant (released, expired, granted again). */
export class NotHolderError extends RaftlockError {}
/** 404 lease_not_found: the lease expired, was revoked, or never existed. */
export class LeaseNotFoundError extends RaftlockError {}
/** 503 no_leader: no leader for the node's whole hold; nothing was applied. Retried until the call's deadline. */
export class NoLeaderError extends RaftlockError {}
/** 503 unknown_outcome: the request may or may not have been applied. Retried (with the same request_id). */
export class UnknownOutcomeError extends RaftlockError {}
/** 429 quota_exceeded: a cluster limit would be exceeded; nothing was applied. Not retried. */
export class QuotaExceededError extends RaftlockError {}
/** 429 too_many_requests: the node holds its limit of open requests. Retried after Retry-After. */
export class TooManyRequestsError extends RaftlockError {}
/** 401 unauthenticated: ACLs are on and the token is missing or unknown. */
export class UnauthenticatedError extends RaftlockError {}
/** 403 permission_denied: the token does not grant the right the request needs. */
export class PermissionDeniedError extends RaftlockError {}
/** 409 conflict: the request contradicts the cluster's state (ACL bootstrap done, member re-pointed). */
export class ConflictError extends RaftlockError {}
/** 409 mode_conflict: the lease holds or waits for the lock in the other mode; release first. */
export class ModeConflictError extends RaftlockError {}
/** 409 semaphore_full: every permit is held and the request did not wait. */
export class SemaphoreFullError extends RaftlockError {}
/** 409 limit_conflict: the semaphore is in use with another limit (the message says which). */
export class LimitConflictError extends RaftlockError {}
/** 409 election_held: another lease leads and the campaign did not wait. */
export class ElectionHeldError extends RaftlockError {}
/** 409 deadlock: a waiting acquire would close a cycle of waiting leases; refused at once, nothing queued. */
export class DeadlockError extends RaftlockError {}
/**
 * The request is malformed and retrying cannot help: 400 invalid_json, invalid_name,
 * invalid_ttl, invalid_argument; 404 not_found; 405 method_not_allowed; 413 body_too_large;
 * 415 unsupported_media_type; 421 misdirected_request; and the same checks made by the
 * client before sending. `code` says which.
 */
export class InvalidError extends RaftlockError {}
/** The server failed (500) or answered something that is not the API. */
export class ServerError extends RaftlockError {}
/** code "unavailable": no endpoint could be reached or answered in time before the call's deadline. */
export class UnavailableError extends RaftlockError {}
/**
 * code "unavailable", when a call's deadline passed and no endpoint answered: the message
 * names every endpoint with its last error, and `errors` holds them (base URL to message).
 * A subclass of UnavailableError.
 */
export class UnreachableError extends UnavailableError {
  /** Each endpoint's base URL with the message of its last error. */
  readonly errors: Readonly<Record<string, string>>;

  constructor(code: string, message: string, opts: ErrorOptions & { errors?: Record<string, string> } = {}) {
    super(code, message, opts);
    this.errors = { ...(opts.errors ?? {}) };
  }
}
/** code "tls": the TLS handshake failed in a way waiting cannot fix (untrusted certificate, refused client certificate). */
export class TLSError extends RaftlockError {}
/**
 * code "lease_lost": the client can no longer assume the lease is alive (the cluster said it
 * is gone, it was closed, or its safe time passed without an answered keepalive). Every grant
 * held with it must be treated as lost. It is the reason of a lost signal.
 */
export class LeaseLostError extends RaftlockError {}
/** code "aborted": the caller's signal ended the call, or the call's deadline passed. */
export class AbortedError extends RaftlockError {}
/** code "not_locked": release (resign, proclaim) of something that is not held. */
export class NotLockedError extends RaftlockError {}

/**
 * code "index_compacted": a watch asked for (or had to resume at) an entry index older than
 * the events the node still holds (it restored a snapshot taken after it): events were
 * missed. Read the state you derive from events (status, history), then watch again from now on.
 */
export class IndexCompactedError extends RaftlockError {}
/** code "version_inactive": a lockset, maximum hold or lock delay during a rolling upgrade; nothing was applied. */
export class VersionInactiveError extends RaftlockError {}
/**
 * code "cross_cluster": a lease of one cluster was given for a name another cluster owns
 * (Router). Nothing was sent: a lease, its grants and their tokens exist on one cluster only.
 * An InvalidError.
 */
export class CrossClusterError extends InvalidError {}
/** code "no_route": no route of a Router owns the name. Nothing was sent. An InvalidError. */
export class NoRouteError extends InvalidError {}

type ErrorClass = new (code: string, message: string, opts?: ErrorOptions) => RaftlockError;

/**
 * Each code's error class and retry class: every code of the API's catalogue
 * (api/outcomes.json; test/outcomes.test.ts checks both columns against it), then the
 * client's own codes.
 */
const byCode: Record<string, { cls: ErrorClass; retry: RetryClass }> = {
  lock_held: { cls: LockHeldError, retry: "never" },
  wait_timeout: { cls: WaitTimeoutError, retry: "never" },
  not_holder: { cls: NotHolderError, retry: "never" },
  lease_not_found: { cls: LeaseNotFoundError, retry: "never" },
  no_leader: { cls: NoLeaderError, retry: "other_node" },
  unknown_outcome: { cls: UnknownOutcomeError, retry: "ambiguous" },
  quota_exceeded: { cls: QuotaExceededError, retry: "never" },
  too_many_requests: { cls: TooManyRequestsError, retry: "after_delay" },
  unauthenticated: { cls: UnauthenticatedError, retry: "never" },
  permission_denied: { cls: PermissionDeniedError, retry: "never" },
  conflict: { cls: ConflictError, retry: "never" },
  mode_conflict: { cls: ModeConflictError, retry: "never" },
  semaphore_full: { cls: SemaphoreFullError, retry: "never" },
  limit_conflict: { cls: LimitConflictError, retry: "never" },
  election_held: { cls: ElectionHeldError, retry: "never" },
  deadlock: { cls: DeadlockError, retry: "never" },
  index_compacted: { cls: IndexCompactedError, retry: "never" },
  version_inactive: { cls: VersionInactiveError, retry: "never" },
  invalid_json: { cls: InvalidError, retry: "never" },
  invalid_name: { cls: InvalidError, retry: "never" },
  invalid_ttl: { cls: InvalidError, retry: "never" },
  invalid_argument: { cls: InvalidError, retry: "never" },
  not_found: { cls: InvalidError, retry: "never" },
  method_not_allowed: { cls: InvalidError, retry: "never" },
  body_too_large: { cls: InvalidError, retry: "never" },
  unsupported_media_type: { cls: InvalidError, retry: "never" },
  misdirected_request: { cls: InvalidError, retry: "never" },
  internal: { cls: ServerError, retry: "never" },
  // The client's own codes.
  unavailable: { cls: UnavailableError, retry: "other_node" },
  tls: { cls: TLSError, retry: "other_node" },
  lease_lost: { cls: LeaseLostError, retry: "never" },
  aborted: { cls: AbortedError, retry: "never" },
  not_locked: { cls: NotLockedError, retry: "never" },
  cross_cluster: { cls: CrossClusterError, retry: "never" },
  no_route: { cls: NoRouteError, retry: "never" },
};

/** The error of class matching code (ServerError, not retried, for a code the client does not know). */
export function errorFor(code: string, message: string, opts: ErrorOptions = {}): RaftlockError {
  const cls = Object.hasOwn(byCode, code) ? byCode[code].cls : ServerError;
  return new cls(code, message, opts);
}

/** Builds an InvalidError for a check the client makes before sending. */
export function invalid(code: string, message: string): InvalidError {
  return new InvalidError(code, message);
}
