"""The raftlock client: the HTTP API's calls, and held locks, semaphores and elections
whose leases are kept alive in the background."""

from __future__ import annotations

import logging
import secrets
import ssl
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Iterator

from ._http import Cancel, Request, Result, Transport, given_or_environment, ms, name_path, parse_endpoints
from .errors import (
    InvalidRequest,
    LeaseLost,
    LeaseNotFound,
    LockHeld,
    NotHolder,
    NotLocked,
    RaftlockError,
    WaitTimeout,
)
from .lease import Keepaliver, Lease

log = logging.getLogger("raftlock")

LOCKS = "/v1/locks/"
SEMAPHORES = "/v1/semaphores/"
ELECTIONS = "/v1/elections/"
HISTORY = "/v1/history/"

#: Bounds of a lease's TTL, in seconds (the server's 500 ms to 24 h).
MIN_TTL, MAX_TTL = 0.5, 86400.0
#: The longest server-side wait (seconds).
MAX_WAIT = 300.0
#: The longest single server-side wait a held acquire asks for; longer waits are re-issued.
WAIT_CHUNK = 240.0
#: The default TTL of a hold's lease (seconds).
DEFAULT_TTL = 10.0


def new_request_id() -> str:
    """An acquire's request ID: 128 random bits as 32 hex characters, as unguessable as a
    lease ID (the server derives the implicit lease from it)."""
    return secrets.token_hex(16)


def tls_context(ca: str | None = None, cert: str | None = None, key: str | None = None) -> ssl.SSLContext:
    """An SSLContext that verifies the cluster against the CA file ``ca`` (the system's
    roots when None) and presents the client certificate ``cert``/``key`` when given (for
    clusters started with --tls-client-auth require)."""
    ctx = ssl.create_default_context(cafile=ca)
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


def _check_seconds(what: str, v: object) -> None:
    # A numeric string ("10") would fail deep inside with a TypeError, or be read as
    # milliseconds by a reader of another client: say what a duration is here.
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InvalidRequest(f"{what} {v!r} is a {type(v).__name__}; durations are seconds as a number (int or float), such as 10 or 0.5")


def _check_ttl(ttl: float) -> None:
    _check_seconds("TTL", ttl)
    if not MIN_TTL <= ttl <= MAX_TTL:
        raise InvalidRequest(f"TTL {ttl}s is outside {MIN_TTL}s to {MAX_TTL}s", code="invalid_ttl")


def _check_wait(wait: float) -> None:
    _check_seconds("wait", wait)
    if wait < 0:
        raise InvalidRequest(f"wait {wait}s is negative")


@dataclass
class Grant:
    """The answer to a plain acquire: the fencing token and the lease that holds the grant."""

    name: str
    token: int
    lease_id: str = field(repr=False)  # a secret: not in repr()
    ttl_ms: int
    owner: str = ""
    mode: str = ""


@dataclass
class LockStatus:
    """A lock's state (GET /v1/locks/{name}). A free lock has held False and token 0."""

    name: str
    held: bool
    token: int
    owner: str
    mode: str
    holders: list[dict[str, Any]]
    holder_count: int
    waiters: int
    modify_index: int


@dataclass
class SemaphoreStatus:
    """A semaphore's state: its limit (0 when not in use), the permits held, the waiters."""

    name: str
    limit: int
    permits: list[dict[str, Any]]
    waiters: int
    modify_index: int


@dataclass
class ElectionStatus:
    """An election's state: whether someone leads, with which value and token."""

    name: str
    elected: bool
    owner: str
    value: str
    token: int
    modify_index: int
    candidates: int


@dataclass
class History:
    """A lock's recent events, oldest first (grants, releases, expiries...)."""

    name: str
    events: list[dict[str, Any]]
    cluster_time_ms: int


class Held:
    """A grant held with a lease of its own that the client keeps alive: a lock (either
    mode), a semaphore permit or a leadership. A context manager: leaving the ``with``
    block releases it.

    Attributes:
        name: the lock's (semaphore's, election's) name.
        kind: "lock", "semaphore" or "election".
        token: the fencing token of the grant. Pass it with every write the grant
            protects; the storage must refuse tokens lower than the highest it has seen.
        lost: a threading.Event set when the grant can no longer be assumed held (the
            lease was lost, revoked or closed, or its safe-until passed without an
            answered keepalive). Check it before each write; stop working when set.
        mode: "exclusive" or "shared" for a lock, "" otherwise.
    """

    def __init__(self, client: Client, kind: str, route: str, name: str, token: int, lease: Lease, mode: str = "", own_lease: bool = True) -> None:
        self._client = client
        self._own_lease = own_lease
        self.kind = kind
        self._route = route
        self.name = name
        self.token = token
        self.mode = mode
        self.lease = lease
        self.lost: threading.Event = lease.lost
        self._mu = threading.Lock()
        self._held = True

    @property
    def lease_id(self) -> str:
        """The ID of the lease holding the grant (a secret: never log it)."""
        return self.lease.id

    def __repr__(self) -> str:
        # Neither the lease ID (a secret) nor anything derived from it.
        return f"<raftlock.Held {self.kind} {self.name!r} token={self.token} lost={self.lost.is_set()}>"

    def safe_until(self) -> float:
        """The latest moment (time.monotonic()) at which the grant may still be assumed
        held: the send time of the last answered keepalive plus TTL minus the drift margin."""
        return self.lease.safe_until()

    def is_lost(self) -> bool:
        """True once ``lost`` is set or safe-until has passed (it sets ``lost`` then)."""
        return self.lease.is_lost()

    def release(self, timeout: float | None = None) -> None:
        """Give the grant back with its lease and token (a late or repeated release can never
        free a later grant), then revoke the lease. Raises NotLocked when already released,
        and NotHolder or LeaseNotFound when the grant had already been lost; in every case
        but a network failure the hold is over."""
        with self._mu:
            if not self._held:
                raise NotLocked(f"release {self.name!r}: nothing is held")
        err: RaftlockError | None = None
        try:
            self._client._release_at(self._route, self.name, self.lease.id, self.token, timeout=timeout)
        except NotHolder as e:
            attempts = getattr(getattr(e, "result", None), "attempts", 1)
            if not (attempts > 1 and not self.lease.lost.is_set()):
                err = e  # an earlier attempt, whose answer was lost, released it otherwise
        except RaftlockError as e:
            err = e
        gone = err is None or isinstance(err, (NotHolder, LeaseNotFound))
        # A lease the caller gave (Lease.lock) may hold other grants too: only the hold's own is closed.
        if self._own_lease:
            try:
                self.lease.close(timeout=timeout)
                if not gone:
                    err = None  # the release did not get through, but the revoke did
                gone = True
            except RaftlockError as e:
                if err is None:
                    err = e
        if gone:
            with self._mu:
                self._held = False
        if err is not None:
            raise err

    def __enter__(self) -> Held:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        # Read before the release, which closes the lease (and so sets lost).
        why = self.lease.error
        # A loss, not a release or close by the caller inside the block (code lease_closed).
        lost = self.lost.is_set() and (why is None or why.code != "lease_closed")
        why = self.lease.error
        try:
            self.release()
        except (NotHolder, LeaseNotFound):
            lost = True  # the cluster says the grant was gone before the block ended
        except NotLocked:
            pass  # released inside the block
        except RaftlockError:
            if et is None and not lost:
                raise
        if lost and et is None:
            # The block ran (at least partly) without the lock: it must not look like a
            # success. An exception of the block's own wins over this one.
            raise LeaseLost(f"{self.kind} {self.name!r} was lost inside the with block ({why.message if why else 'its safe time passed'})")


#: What Lock.acquire waits for when blocking without a timeout (re-issued in chunks).
_FOREVER = 1e9


class Lock:
    """A reusable lock, in the manner of threading.Lock and redis-py's Lock:
    ``acquire(blocking=True, timeout=None)`` returns True once held (False when not
    blocking and held elsewhere, or when ``timeout`` seconds passed), ``release()`` gives it
    back, ``locked()`` says whether this object holds it now (its lease not lost), and
    ``extend()`` renews the lease at once. Each acquire takes the lock with a lease of its
    own, kept alive in the background, unless the Lock was made on a lease (Lease.lock
    semantics: the lease stays open after release). Usable as ``with lock:``, which raises
    LeaseLost on exit when the lock was lost inside the block.

    Attributes:
        name: the lock's name.
        token: the fencing token of the current grant (0 when not held).
    """

    def __init__(self, client: Client, name: str, ttl: float = DEFAULT_TTL, *, mode: str = "exclusive", owner: str = "", lease: Lease | None = None) -> None:
        from ._http import check_name

        check_name("lock", name)
        _check_ttl(ttl)
        if mode not in ("exclusive", "shared"):
            raise InvalidRequest(f"mode {mode!r}: want exclusive or shared")
        self._client = client
        self.name = name
        self._ttl = ttl
        self._mode = mode
        self._owner = owner
        self._lease = lease
        self._held: Held | None = None
        self._mu = threading.Lock()

    @property
    def token(self) -> int:
        h = self._held
        return h.token if h is not None else 0

    @property
    def lost(self) -> threading.Event | None:
        """The current grant's loss signal (None when not held)."""
        h = self._held
        return h.lost if h is not None else None

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lock: at once or not at all when ``blocking`` is False; else waiting in
        the server's queue up to ``timeout`` seconds (forever when None). Returns whether
        it is held. Raises InvalidRequest when this object already holds it."""
        with self._mu:
            if self._held is not None and not self._held.lost.is_set():
                raise InvalidRequest(f"acquire {self.name!r}: this Lock already holds it; release it first")
            if not blocking:
                if timeout is not None and timeout != -1:
                    raise ValueError("a timeout applies only to a blocking acquire")
                wait = 0.0
            elif timeout is None or timeout == -1:
                wait = _FOREVER
            else:
                _check_wait(timeout)
                wait = float(timeout)
            fields = {"mode": "shared"} if self._mode == "shared" else {}
            try:
                if self._lease is not None:
                    h = self._lease_take(fields, wait)
                else:
                    h = self._client._hold("lock", LOCKS, self.name, fields, ttl=self._ttl, wait=wait, owner=self._owner, mode=self._mode, drift=None, interval=None, timeout=None)
            except (LockHeld, WaitTimeout):
                return False
            self._held = h
            return True

    def _lease_take(self, fields: dict[str, Any], wait: float) -> Held:
        assert self._lease is not None
        return self._client._take_with("lock", LOCKS, self.name, fields, self._lease, wait, self._owner, self._mode, Held, own_lease=False)

    def release(self) -> None:
        """Give the lock back (see Held.release). NotLocked when this object holds nothing."""
        with self._mu:
            h, self._held = self._held, None
        if h is None:
            raise NotLocked(f"release {self.name!r}: this Lock holds nothing")
        h.release()

    def locked(self) -> bool:
        """Whether this object holds the lock now: acquired, not released, lease not lost
        (safe-until not passed). Unlike threading.Lock, it says nothing of other holders:
        read Client.status for that."""
        h = self._held
        return h is not None and not h.lost.is_set()

    def extend(self, timeout: float | None = None) -> float:
        """Renew the lock's lease now (besides the background keepalives); returns the new
        safe-until (time.monotonic()). Raises LeaseLost when the lease is already lost."""
        h = self._held
        if h is None:
            raise NotLocked(f"extend {self.name!r}: this Lock holds nothing")
        if h.lost.is_set():
            raise LeaseLost(f"extend {self.name!r}: the lease is lost")
        sent = time.monotonic()
        try:
            self._client.keepalive(h.lease.id, timeout=timeout)
        except LeaseNotFound:
            h.lease._lose(LeaseLost("the cluster no longer knows the lease (it expired or was revoked)"))
            raise LeaseLost(f"extend {self.name!r}: the lease is gone") from None
        if not h.lease.observe(sent):
            raise LeaseLost(f"extend {self.name!r}: the lease was lost before the renewal was answered")
        return h.lease.safe_until()

    def __enter__(self) -> Lock:
        self.acquire()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        with self._mu:
            h, self._held = self._held, None
        if h is not None:
            h.__exit__(et, ev, tb)

    def __repr__(self) -> str:
        return f"<raftlock.Lock {self.name!r} locked={self.locked()} token={self.token}>"


class Leadership(Held):
    """A held leadership of an election (Client.campaign). ``value`` is what it published."""

    value: str = ""

    def proclaim(self, value: str, timeout: float | None = None) -> int:
        """Publish ``value`` as the leader's, keeping the leadership and its token (the
        request carries the token, so it can only proclaim, never campaign anew)."""
        if self.lost.is_set():
            raise LeaseLost(f"proclaim {self.name!r}: the leadership is lost")
        body = {"value": value, "lease_id": self.lease.id, "token": self.token}
        out, res = self._client._call(
            Request(op=f"proclaim {self.name!r}", method="PUT", path=name_path(ELECTIONS, self.name), body=lambda: body, secrets=[self.lease.id]),
            timeout,
        )
        self.lease.observe(res.sent)
        self.value = value
        return int(out["token"])

    def resign(self, timeout: float | None = None) -> None:
        """Give the leadership up (the next candidate leads, with its own value)."""
        self.release(timeout)


class Client:
    """A client of a raftlock cluster over its HTTP JSON API (HTTP/1.1 keep-alive).

    Any endpoint serves any request (followers forward to the leader); on a connection
    error, a no_leader, unknown_outcome or too_many_requests answer the client tries the
    other endpoints, with exponential backoff and jitter between rounds (and Retry-After
    for too_many_requests), until the call's timeout. Every operation is safe to repeat:
    acquires carry a request_id drawn once per call, releases carry lease and token.

    Args:
        endpoints: base URLs ("http://127.0.0.1:7001"), a list or a comma-separated string;
            a bare "host:port" means http (https with ``tls``).
        token: an ACL token's secret, sent as "Authorization: Bearer ..." (use TLS).
        tls: an ssl.SSLContext (see tls_context), or True for the system's roots.
        timeout: bounds one attempt on one endpoint, not counting a server-side wait.
        call_timeout: bounds a whole call (all its retries) when the call is not given one.
        min_backoff, max_backoff: the pause between rounds of failed attempts.

    A Client is safe to use from many threads. Close it (or use it as a context manager)
    when done: that ends its keepalive thread and closes its connections.
    """

    def __init__(
        self,
        endpoints: list[str] | str | None = None,
        token: str | None = None,
        tls: ssl.SSLContext | bool | None = None,
        *,
        timeout: float = 5.0,
        call_timeout: float = 30.0,
        min_backoff: float = 0.05,
        max_backoff: float = 1.0,
    ) -> None:
        endpoints, token = given_or_environment(endpoints, token)
        ctx: ssl.SSLContext | None
        if tls is True:
            ctx = ssl.create_default_context()
        elif tls is False or tls is None:
            ctx = None
        else:
            ctx = tls
        eps = parse_endpoints(endpoints, ctx is not None)
        if token and any(e.scheme == "http" for e in eps):
            log.warning("an ACL token is sent over plain HTTP, where anyone on the path can read it; use https endpoints and TLS")
        self.timeout = timeout
        self.call_timeout = call_timeout
        self._t = Transport(eps, tls=ctx, token=token, timeout=timeout, min_backoff=min_backoff, max_backoff=max_backoff)
        self._keepaliver = Keepaliver(self)
        #: Test hook: when False, a retried acquire draws a new request_id per attempt
        #: (the mistake the conformance suite and the unit tests must catch).
        self._reuse_request_id = True

    @property
    def endpoints(self) -> list[str]:
        """The endpoints' base URLs."""
        return [e.base for e in self._t.endpoints]

    def close(self) -> None:
        """Revoke every lease still open (which frees its grants at once, each to its next
        waiter; all the revokes together take at most ``timeout`` seconds, after which the
        rest expire by themselves a TTL after their last keepalive), end the keepalive
        thread and close the connections. Every hold's ``lost`` is set."""
        end = time.monotonic() + self.timeout
        for lease in self._keepaliver.leases():
            try:
                lease.close(timeout=max(end - time.monotonic(), 0.001))
            except RaftlockError:
                pass
        self._keepaliver.stop()
        self._t.close()

    def __repr__(self) -> str:
        return f"<raftlock.Client endpoints={self.endpoints!r}>"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- plumbing ---------------------------------------------------------------------------

    def _deadline(self, timeout: float | None, extra: float = 0.0) -> float:
        return time.monotonic() + (self.call_timeout if timeout is None else timeout) + extra

    def _call(self, req: Request, timeout: float | None, extra: float = 0.0, cancel: Cancel | None = None) -> tuple[Any, Result]:
        return self._t.do(req, self._deadline(timeout, extra), cancel)

    # --- leases -----------------------------------------------------------------------------

    def create_lease(self, ttl: float = DEFAULT_TTL, timeout: float | None = None) -> tuple[str, float, Result]:
        """Create a lease that nothing keeps alive; returns (lease ID, TTL in seconds, result).
        A create retried after an unanswered attempt may leave an unused lease behind,
        which expires after its TTL. Prefer Client.lease."""
        _check_ttl(ttl)
        out, res = self._call(Request(op="create lease", method="POST", path="/v1/leases", body=lambda: {"ttl_ms": ms(ttl)}), timeout)
        return out["lease_id"], out["ttl_ms"] / 1000, res

    def lease(self, ttl: float = DEFAULT_TTL, *, drift: float | None = None, interval: float | None = None, timeout: float | None = None) -> Lease:
        """Create a lease and keep it alive in the background until it is closed or lost."""
        lid, server_ttl, res = self.create_lease(ttl, timeout)
        try:
            return self._start_lease(lid, server_ttl, res.sent, drift, interval)
        except ValueError:
            self._revoke_quietly(lid)
            raise

    def _start_lease(self, lid: str, ttl: float, sent: float, drift: float | None, interval: float | None) -> Lease:
        lease = Lease(self, lid, ttl, sent, drift, interval)
        self._keepaliver.add(lease)
        return lease

    def keepalive(self, lease_id: str, timeout: float | None = None) -> float:
        """Renew a lease once; returns its TTL in seconds. LeaseNotFound when it is gone."""
        out, _ = self._call(
            Request(op="keepalive", method="POST", path="/v1/leases/keepalive", body=lambda: {"lease_id": lease_id}, secrets=[lease_id]),
            timeout,
        )
        return out["ttl_ms"] / 1000

    def _keepalive_many(self, ids: list[str], *, deadline: float, attempt_timeout: float, max_backoff: float) -> tuple[Any, Result]:
        req = Request(
            op="batch keepalive", method="POST", path="/v1/leases/keepalive", body=lambda: {"lease_ids": ids},
            attempt_timeout=attempt_timeout, max_backoff=max_backoff, secrets=list(ids),
        )
        return self._t.do(req, deadline)

    def keepalive_many(self, lease_ids: list[str], timeout: float | None = None) -> tuple[list[str], list[str]]:
        """Renew up to 10,000 leases in one log entry; returns (renewed IDs, IDs not found)."""
        out, _ = self._keepalive_many(list(lease_ids), deadline=self._deadline(timeout), attempt_timeout=self.timeout, max_backoff=0)
        return [x["lease_id"] for x in out.get("leases") or []], list(out.get("not_found") or [])

    def revoke(self, lease_id: str, timeout: float | None = None) -> list[str]:
        """Revoke a lease, releasing everything it holds; returns the names released. A
        revoke that had to be retried and then finds no lease succeeds (an earlier attempt
        revoked it)."""
        try:
            out, _ = self._call(
                Request(op="revoke", method="POST", path="/v1/leases/revoke", body=lambda: {"lease_id": lease_id}, secrets=[lease_id]),
                timeout,
            )
        except LeaseNotFound as e:
            if getattr(getattr(e, "result", None), "attempts", 1) > 1:
                return []
            raise
        return list(out.get("released") or [])

    def _revoke_quietly(self, lid: str) -> None:
        try:
            self.revoke(lid, timeout=self.timeout)
        except RaftlockError:
            pass

    # --- plain acquire and release ----------------------------------------------------------

    def _acquire_at(
        self, route: str, name: str, fields: dict[str, Any], *, lease_id: str = "", ttl: float = 0.0, wait: float = 0.0,
        owner: str = "", request_id: str | None = None, timeout: float | None = None, cancel: Cancel | None = None,
    ) -> tuple[dict[str, Any], Result]:
        """Send an acquire-like request (a lock, a permit, a campaign). Without lease_id it
        carries a request_id drawn once for the call and sent with every retry, so that an
        attempt that was applied but whose answer was lost cannot leave a second lease
        behind: the retry gets the first attempt's grant or queue place."""
        _check_wait(wait)
        if lease_id and request_id:
            raise InvalidRequest("a request ID is only for an acquire without a lease")
        rid = "" if lease_id else (request_id or new_request_id())
        wait_end = time.monotonic() + wait

        def remaining() -> float:
            return max(wait_end - time.monotonic(), 0.001) if wait > 0 else 0.0

        def body() -> dict[str, Any]:
            nonlocal rid
            if rid and not self._reuse_request_id:
                rid = new_request_id()  # the broken behaviour, for tests only
            b = dict(fields)
            if lease_id:
                b["lease_id"] = lease_id
            if ttl and not lease_id:
                b["ttl_ms"] = ms(ttl)
            if wait > 0:
                b["wait_ms"] = ms(remaining())
            if owner:
                b["owner"] = owner
            if rid:
                b["request_id"] = rid
            return b

        req = Request(op=f"acquire {name!r}", method="PUT", path=name_path(route, name), body=body, wait=remaining, secrets=[lease_id, rid])
        return self._call(req, timeout, extra=wait, cancel=cancel)

    def acquire(
        self, name: str, *, ttl: float = 0.0, lease_id: str = "", wait: float = 0.0, owner: str = "", mode: str = "exclusive",
        request_id: str | None = None, timeout: float | None = None,
    ) -> Grant:
        """One acquire of lock ``name`` (PUT /v1/locks/{name}). Without ``lease_id`` the
        server creates a lease of ``ttl`` (its default when 0) in the grant's entry, and
        **nothing keeps it alive**: use Client.lock for work that outlives one TTL."""
        if ttl:
            _check_ttl(ttl)
        fields = {"mode": "shared"} if mode == "shared" else {}
        out, _ = self._acquire_at(LOCKS, name, fields, lease_id=lease_id, ttl=ttl, wait=wait, owner=owner, request_id=request_id, timeout=timeout)
        return Grant(name=out["name"], token=int(out["token"]), lease_id=out["lease_id"], ttl_ms=int(out["ttl_ms"]), owner=out.get("owner", ""), mode=out.get("mode", ""))

    def _release_at(self, route: str, name: str, lease_id: str, token: int, timeout: float | None = None) -> Result:
        if not token:
            raise InvalidRequest(f"release {name!r}: the token of the grant is required")
        _, res = self._call(
            Request(op=f"release {name!r}", method="DELETE", path=name_path(route, name), body=lambda: {"lease_id": lease_id, "token": token}, secrets=[lease_id]),
            timeout,
        )
        return res

    def release(self, name: str, lease_id: str, token: int, timeout: float | None = None) -> None:
        """Release lock ``name`` held by ``lease_id`` with the grant's ``token``. A retried
        or late release can never free a later grant (it has another token): NotHolder."""
        self._release_at(LOCKS, name, lease_id, token, timeout)

    # --- holds ------------------------------------------------------------------------------

    def _hold(
        self, kind: str, route: str, name: str, fields: dict[str, Any], *, ttl: float, wait: float, owner: str, mode: str,
        drift: float | None, interval: float | None, timeout: float | None, cls: type[Held] = Held,
    ) -> Held:
        _check_ttl(ttl)
        _check_wait(wait)
        if wait <= 0:
            # One round trip: the lease is created in the entry that grants (nothing is
            # created when refused). Retries carry the same request_id, so they cannot
            # create a second lease. Safe-until counts from the first attempt: the lease
            # may have been created by it, its answer lost.
            out, res = self._acquire_at(route, name, fields, ttl=ttl, owner=owner, timeout=timeout)
            try:
                lease = self._start_lease(out["lease_id"], out["ttl_ms"] / 1000, res.first, drift, interval)
            except ValueError:
                self._revoke_quietly(out["lease_id"])
                raise
            return cls(self, kind, route, name, int(out["token"]), lease, mode)
        lease = self.lease(ttl, drift=drift, interval=interval, timeout=timeout)
        try:
            return self._take_with(kind, route, name, fields, lease, wait, owner, mode, cls)
        except BaseException:
            try:
                lease.close(timeout=self.timeout)
            except RaftlockError:
                pass
            raise

    def _take_with(
        self, kind: str, route: str, name: str, fields: dict[str, Any], lease: Lease, wait: float, owner: str, mode: str, cls: type[Held],
        own_lease: bool = True,
    ) -> Held:
        """Take the grant with lease, waiting at most ``wait`` seconds in the server's
        queue (re-issued in chunks; one attempt without a wait when ``wait`` is 0); the
        request is cut off when the lease is lost."""
        end = time.monotonic() + wait
        first = True
        while True:
            if lease.is_lost():
                raise LeaseLost(f"acquire {name!r}: the lease is lost")
            left = max(end - time.monotonic(), 0.0)
            if left <= 0 and not first:
                raise WaitTimeout(f"acquire {name!r}: the wait ended")
            first = False
            cancel = Cancel()
            lease.on_lost(lambda: cancel.cancel(LeaseLost(f"acquire {name!r}: the lease was lost while waiting")))
            try:
                out, res = self._acquire_at(route, name, fields, lease_id=lease.id, wait=min(left, WAIT_CHUNK), owner=owner, cancel=cancel)
            except LeaseNotFound:
                lease._lose(LeaseLost("the cluster no longer knows the lease"))
                raise LeaseLost(f"acquire {name!r}: the lease is gone") from None
            except WaitTimeout:
                if end - time.monotonic() > 0.001:
                    continue
                raise
            if not lease.observe(res.sent):
                try:
                    self._release_at(route, name, lease.id, int(out["token"]), timeout=self.timeout)
                except RaftlockError:
                    pass
                raise LeaseLost(f"acquire {name!r}: the lease was lost as it was granted")
            return cls(self, kind, route, name, int(out["token"]), lease, mode, own_lease)

    def lock(
        self, name: str, ttl: float = DEFAULT_TTL, wait: float = 0.0, *, mode: str = "exclusive", owner: str = "",
        drift: float | None = None, interval: float | None = None, timeout: float | None = None,
    ) -> Held:
        """Take lock ``name`` and keep its lease alive in the background.

        ``wait`` 0 fails at once with LockHeld when the lock is held; otherwise the call
        waits up to ``wait`` seconds in the lock's FIFO queue on the server (no polling)
        and raises WaitTimeout when it ends first. ``mode="shared"`` takes a shared
        (reader) grant. ``ttl`` is the lease's TTL; ``drift`` the margin subtracted from it
        for safe-until (default a tenth, at least 0.1 s); ``interval`` the keepalive period
        (default ttl/3). Use as ``with client.lock(...) as held:``.
        """
        if mode not in ("exclusive", "shared"):
            raise InvalidRequest(f"mode {mode!r}: want exclusive or shared")
        fields = {"mode": "shared"} if mode == "shared" else {}
        return self._hold("lock", LOCKS, name, fields, ttl=ttl, wait=wait, owner=owner, mode=mode, drift=drift, interval=interval, timeout=timeout)

    def Lock(self, name: str, ttl: float = DEFAULT_TTL, *, mode: str = "exclusive", owner: str = "", lease: Lease | None = None) -> Lock:
        """A reusable lock object for ``name`` (see Lock), on a lease of its own per
        acquire, or on ``lease`` (several locks on one kept-alive lease)."""
        return Lock(self, name, ttl, mode=mode, owner=owner, lease=lease)

    def semaphore(
        self, name: str, limit: int, ttl: float = DEFAULT_TTL, wait: float = 0.0, *, owner: str = "",
        drift: float | None = None, interval: float | None = None, timeout: float | None = None,
    ) -> Held:
        """Take a permit of semaphore ``name`` (at most ``limit`` holders at once): like
        lock, with SemaphoreFull instead of LockHeld and LimitConflict when the semaphore
        is in use with another limit."""
        if not 1 <= limit <= 10000:
            raise InvalidRequest(f"limit {limit}: want 1 to 10000")
        return self._hold("semaphore", SEMAPHORES, name, {"limit": limit}, ttl=ttl, wait=wait, owner=owner, mode="", drift=drift, interval=interval, timeout=timeout)

    def campaign(
        self, name: str, value: str, ttl: float = DEFAULT_TTL, wait: float = 0.0, *, owner: str = "",
        drift: float | None = None, interval: float | None = None, timeout: float | None = None,
    ) -> Leadership:
        """Campaign in election ``name`` with ``value``; returns once elected (ElectionHeld
        at once with ``wait`` 0, else WaitTimeout when the wait ends). The returned
        Leadership's ``lost`` is set when the leadership can no longer be assumed."""
        h = self._hold("election", ELECTIONS, name, {"value": value}, ttl=ttl, wait=wait, owner=owner, mode="", drift=drift, interval=interval, timeout=timeout, cls=Leadership)
        assert isinstance(h, Leadership)
        h.value = value
        return h

    # --- reads ------------------------------------------------------------------------------

    def _get(self, route: str, name: str, timeout: float | None, wait_index: int = 0, wait: float = 0.0, stale: bool = False) -> Any:
        q: dict[str, str] = {}
        if stale:
            q["stale"] = "true"
        if wait > 0:
            q["wait_index"], q["wait_ms"] = str(wait_index), str(ms(wait))
        out, _ = self._call(
            Request(op=f"status {name!r}", method="GET", path=name_path(route, name), query=q, wait=(lambda: wait) if wait > 0 else None),
            timeout, extra=wait,
        )
        return out

    def status(self, name: str, *, wait_index: int = 0, wait: float = 0.0, stale: bool = False, timeout: float | None = None) -> LockStatus:
        """Read lock ``name`` (linearizable unless ``stale``). With ``wait`` > 0 it is a
        blocking query answered when the lock's modify_index exceeds ``wait_index``."""
        o = self._get(LOCKS, name, timeout, wait_index, wait, stale)
        return LockStatus(
            name=o["name"], held=bool(o.get("held")), token=int(o.get("token", 0)), owner=o.get("owner", ""), mode=o.get("mode", ""),
            holders=list(o.get("holders") or []), holder_count=int(o.get("holder_count", 0)), waiters=int(o.get("waiters", 0)),
            modify_index=int(o.get("modify_index", 0)),
        )

    def semaphore_status(self, name: str, *, wait_index: int = 0, wait: float = 0.0, stale: bool = False, timeout: float | None = None) -> SemaphoreStatus:
        """Read semaphore ``name``: its limit (0 when not in use), permits and waiters."""
        o = self._get(SEMAPHORES, name, timeout, wait_index, wait, stale)
        return SemaphoreStatus(name=o["name"], limit=int(o.get("limit", 0)), permits=list(o.get("permits") or []), waiters=int(o.get("waiters", 0)), modify_index=int(o.get("modify_index", 0)))

    def election_status(self, name: str, *, wait_index: int = 0, wait: float = 0.0, stale: bool = False, timeout: float | None = None) -> ElectionStatus:
        """Read election ``name``: who leads, with which value and token."""
        o = self._get(ELECTIONS, name, timeout, wait_index, wait, stale)
        return ElectionStatus(
            name=o["name"], elected=bool(o.get("elected")), owner=o.get("owner", ""), value=o.get("value", ""), token=int(o.get("token", 0)),
            modify_index=int(o.get("modify_index", 0)), candidates=int(o.get("candidates", 0)),
        )

    def observe(self, name: str, *, duration: float | None = None, chunk: float = 60.0) -> Iterator[ElectionStatus]:
        """Yield election ``name``'s state now and at every change of leader or value
        (blocking reads, no polling), for ``duration`` seconds (forever when None)."""
        end = None if duration is None else time.monotonic() + duration
        st = self.election_status(name)
        yield st
        last = (st.elected, st.owner, st.value, st.token)
        idx = st.modify_index
        while end is None or time.monotonic() < end:
            w = chunk if end is None else max(min(chunk, end - time.monotonic()), 0.001)
            st = self.election_status(name, wait_index=idx, wait=w)
            idx = max(idx, st.modify_index)
            cur = (st.elected, st.owner, st.value, st.token)
            if cur != last:
                last = cur
                yield st

    def history(self, name: str, *, stale: bool = False, timeout: float | None = None) -> History:
        """Lock ``name``'s recent events (who held it, and why they lost it)."""
        o = self._get(HISTORY, name, timeout, stale=stale)
        return History(name=o["name"], events=list(o.get("events") or []), cluster_time_ms=int(o.get("cluster_time_ms", 0)))

    def cluster(self, timeout: float | None = None) -> dict[str, Any]:
        """The cluster as the answering node sees it: leader_id, term, indexes, nodes."""
        out, _ = self._call(Request(op="cluster", method="GET", path="/v1/cluster"), timeout)
        return dict(out)


__all__ = [
    "Client",
    "Lock",
    "ElectionStatus",
    "Grant",
    "Held",
    "History",
    "Leadership",
    "LockStatus",
    "SemaphoreStatus",
    "new_request_id",
    "tls_context",
]
