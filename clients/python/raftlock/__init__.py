"""raftlock: a client for the raftlock distributed lock manager (standard library only).

    from raftlock import Client

    client = Client(["http://127.0.0.1:7001", "http://127.0.0.1:7002", "http://127.0.0.1:7003"])
    with client.lock("accounts/A", ttl=10, wait=30) as held:
        if held.lost.is_set():
            raise SystemExit("lock lost")
        charge(token=held.token)   # the storage checks the token (raftlock.fencing)

Every grant carries a fencing token; ``held.lost`` (a threading.Event) is set as soon as
the client can no longer assume the lease is alive, before the cluster can have expired it
(``held.safe_until()``, on time.monotonic()'s clock), and reads as set once safe-until has
passed even if nothing noticed yet (after a pause of the whole process). Leaving the ``with``
block raises LeaseLost when the lock was lost inside it. See README.md.
"""

from ._core import Event, ElectionStatus, Grant, History, LockStatus, SemaphoreStatus, new_request_id
from .client import Client, Held, HeldSet, Leadership, tls_context
from .errors import (
    Conflict,
    CrossCluster,
    Deadlock,
    ElectionHeld,
    IndexCompacted,
    InvalidRequest,
    LeaseLost,
    LeaseNotFound,
    LimitConflict,
    LockHeld,
    ModeConflict,
    NoLeader,
    NoRoute,
    NotHolder,
    NotLocked,
    PermissionDenied,
    QuotaExceeded,
    RaftlockError,
    SemaphoreFull,
    ServerError,
    TLSError,
    TooManyRequests,
    Unauthenticated,
    Unavailable,
    UnknownOutcome,
    Unreachable,
    VersionInactive,
    WaitTimeout,
)
from .events import Watch
from .fencing import FencedDB, StaleToken
from .lease import Lease
from .lock import Lock
from .router import Route, Router

__version__ = "0.2.0"

__all__ = [
    "Watch",
    "VersionInactive",
    "Router",
    "Route",
    "NoRoute",
    "IndexCompacted",
    "HeldSet",
    "Event",
    "CrossCluster",
    "Client",
    "Conflict",
    "Deadlock",
    "ElectionHeld",
    "ElectionStatus",
    "FencedDB",
    "Grant",
    "Held",
    "History",
    "InvalidRequest",
    "Leadership",
    "Lease",
    "Lock",
    "LeaseLost",
    "LeaseNotFound",
    "LimitConflict",
    "LockHeld",
    "LockStatus",
    "ModeConflict",
    "NoLeader",
    "NotHolder",
    "NotLocked",
    "PermissionDenied",
    "QuotaExceeded",
    "RaftlockError",
    "SemaphoreFull",
    "SemaphoreStatus",
    "ServerError",
    "StaleToken",
    "TLSError",
    "TooManyRequests",
    "Unauthenticated",
    "Unavailable",
    "UnknownOutcome",
    "Unreachable",
    "WaitTimeout",
    "new_request_id",
    "tls_context",
]
