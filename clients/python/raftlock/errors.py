"""Exceptions of the raftlock client, one per API error code.

Every error the server answers is raised as a subclass of :class:`RaftlockError` carrying
the API's ``code`` and ``message`` (and the answer's ``Retry-After`` delay in seconds, when
it had one). Catch the subclass (``except LockHeld``) or compare ``err.code``.

Each error has its ``retry_class``, the API's for its code (api/outcomes.json, the server's
catalogue of outcomes; tests/test_outcomes.py checks this module against it), which is what
the client's retries go by: ``"never"`` (raised at once), ``"other_node"`` (nothing was
applied: tried again on the next endpoint, with backoff between rounds), ``"after_delay"``
(tried again after the answer's Retry-After) and ``"ambiguous"`` (it may have been applied:
tried again only as the same request, with the same request_id).

A code this client does not know (a newer server's) raises :class:`ServerError` with that
code and the server's message kept, and is not retried: it never crashes the client.
"""

from __future__ import annotations


class RaftlockError(Exception):
    """Base class of every error raised by this package.

    Attributes:
        code: the API error code (``"lock_held"``...), or a client-side code such as
            ``"unavailable"`` or ``"lease_lost"``.
        message: a human-readable explanation (never a lease ID or a token secret).
        retry_after: the server's suggested pause in seconds (``Retry-After``), or None.
        retry_class: how the client retries it (see the module's documentation).
    """

    code: str = "error"
    retry_class: str = "never"

    def __init__(self, message: str = "", *, code: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.retry_after = retry_after

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.message else self.code


class InvalidRequest(RaftlockError):
    """The request is malformed (400 invalid_*, 404 not_found, 405, 413): retrying cannot help."""

    code = "invalid_argument"


class LockHeld(RaftlockError):
    """409 lock_held: another lease holds the lock and the request did not wait."""

    code = "lock_held"


class WaitTimeout(RaftlockError):
    """409 wait_timeout: the wait ended before the grant; the lease left the queue."""

    code = "wait_timeout"


class NotHolder(RaftlockError):
    """409 not_holder: the lease and token given do not hold the grant (released, expired, or granted again)."""

    code = "not_holder"


class LeaseNotFound(RaftlockError):
    """404 lease_not_found: the lease expired, was revoked, or never existed."""

    code = "lease_not_found"


class ModeConflict(RaftlockError):
    """409 mode_conflict: the lease holds or waits for the lock in the other mode."""

    code = "mode_conflict"


class SemaphoreFull(RaftlockError):
    """409 semaphore_full: every permit is held and the request did not wait."""

    code = "semaphore_full"


class LimitConflict(RaftlockError):
    """409 limit_conflict: the semaphore is in use with another limit (the message says which)."""

    code = "limit_conflict"


class ElectionHeld(RaftlockError):
    """409 election_held: another lease leads and the campaign did not wait."""

    code = "election_held"


class Deadlock(RaftlockError):
    """409 deadlock: the waiting acquire would close a cycle of waiting leases; nothing was queued."""

    code = "deadlock"


class Conflict(RaftlockError):
    """409 conflict: the request contradicts the cluster's state (ACLs bootstrapped already...)."""

    code = "conflict"


class QuotaExceeded(RaftlockError):
    """429 quota_exceeded: a cluster limit would be exceeded; nothing was applied. Not retried."""

    code = "quota_exceeded"


class TooManyRequests(RaftlockError):
    """429 too_many_requests: the node holds its limit of open requests. Retried after Retry-After."""

    code = "too_many_requests"
    retry_class = "after_delay"


class NoLeader(RaftlockError):
    """503 no_leader: no leader for the whole hold; nothing was applied. Retried."""

    code = "no_leader"
    retry_class = "other_node"


class UnknownOutcome(RaftlockError):
    """503 unknown_outcome: the request may or may not have been applied. Retried with the same request_id."""

    code = "unknown_outcome"
    retry_class = "ambiguous"


class Unauthenticated(RaftlockError):
    """401: ACLs are on and the request carried no token the cluster knows."""

    code = "unauthenticated"


class PermissionDenied(RaftlockError):
    """403: the token does not grant the right the request needs."""

    code = "permission_denied"


class ServerError(RaftlockError):
    """The server failed (500) or answered something that is not the API's JSON, or an error
    code this client does not know (a newer server's; ``code`` is the server's). Not retried."""

    code = "internal"


class Unavailable(RaftlockError):
    """No endpoint could be reached or answered in time before the call's deadline."""

    code = "unavailable"
    retry_class = "other_node"


class Unreachable(Unavailable):
    """No endpoint answered before the call's deadline: the message names every endpoint
    and the last error each one gave (a connection refused, a connect timeout...). A
    subclass of Unavailable, so ``except Unavailable`` still catches it.

    Attributes:
        errors: the endpoints' base URLs, each with the message of its last error.
    """

    code = "unavailable"

    def __init__(self, message: str = "", *, errors: dict[str, str] | None = None, code: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(message, code=code, retry_after=retry_after)
        self.errors = dict(errors or {})


class TLSError(RaftlockError):
    """The TLS handshake failed in a way retrying cannot fix (an untrusted certificate...):
    the other endpoints are tried, until a whole round failed this way."""

    code = "tls"
    retry_class = "other_node"


class LeaseLost(RaftlockError):
    """The client can no longer assume the lease is alive: work under its grants must stop."""

    code = "lease_lost"


class NotLocked(RaftlockError):
    """release() on a hold that holds nothing (already released)."""

    code = "not_locked"


class IndexCompacted(RaftlockError):
    """A watch asked for (or had to resume at) an entry index older than the events the node
    still holds (it restored a snapshot taken after it): events were missed. Read the state
    you derive from events (status, history), then watch again from now on."""

    code = "index_compacted"


class VersionInactive(RaftlockError):
    """The request uses what a protocol version the cluster has not yet activated adds (a
    lockset, a maximum hold or a lock delay during a rolling upgrade). Nothing was applied."""

    code = "version_inactive"


class CrossCluster(InvalidRequest):
    """A lease of one cluster was given for a name another cluster owns (raftlock.Router).
    Nothing was sent: a lease, its grants and their tokens exist on one cluster only."""

    code = "cross_cluster"


class NoRoute(InvalidRequest):
    """No route of a raftlock.Router owns the name (no routed prefix matches it and there is
    no default route ""). Nothing was sent."""

    code = "no_route"


#: The exception of each API error code: every code of api/outcomes.json (tests/test_outcomes.py).
_BY_CODE: dict[str, type[RaftlockError]] = {
    "index_compacted": IndexCompacted,
    "version_inactive": VersionInactive,
    "lock_held": LockHeld,
    "wait_timeout": WaitTimeout,
    "not_holder": NotHolder,
    "lease_not_found": LeaseNotFound,
    "mode_conflict": ModeConflict,
    "semaphore_full": SemaphoreFull,
    "limit_conflict": LimitConflict,
    "election_held": ElectionHeld,
    "conflict": Conflict,
    "deadlock": Deadlock,
    "quota_exceeded": QuotaExceeded,
    "too_many_requests": TooManyRequests,
    "no_leader": NoLeader,
    "unknown_outcome": UnknownOutcome,
    "unauthenticated": Unauthenticated,
    "permission_denied": PermissionDenied,
    "invalid_json": InvalidRequest,
    "invalid_name": InvalidRequest,
    "invalid_ttl": InvalidRequest,
    "invalid_argument": InvalidRequest,
    "not_found": InvalidRequest,
    "method_not_allowed": InvalidRequest,
    "body_too_large": InvalidRequest,
    "unsupported_media_type": InvalidRequest,
    "misdirected_request": InvalidRequest,
    "internal": ServerError,
}


def error_for(code: str, message: str, retry_after: float | None = None) -> RaftlockError:
    """Return the exception for an API error answer with ``code``: ServerError, not retried,
    for a code this client does not know."""
    cls = _BY_CODE.get(code, ServerError) if isinstance(code, str) else ServerError
    return cls(message, code=code, retry_after=retry_after)
