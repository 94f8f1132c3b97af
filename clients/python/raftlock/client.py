"""The threaded raftlock client: the HTTP API's calls, and held locks, locksets, semaphores
and elections whose leases are kept alive in the background. Requests, answers and retries
come from the protocol core (``_core``), which ``raftlock.aio`` shares."""

from __future__ import annotations

import logging
import ssl
import threading
import time
from types import TracebackType
from typing import Any, Iterator

from . import _core as core
from ._core import (
    DEFAULT_TTL,
    ELECTIONS,
    HISTORY,
    LOCKS,
    LOCKSETS,
    SEMAPHORES,
    WAIT_CHUNK,
    ElectionStatus,
    Grant,
    History,
    LockStatus,
    Request,
    Result,
    SemaphoreStatus,
    new_request_id,
)
from ._http import Cancel, Transport
from .errors import (
    InvalidRequest,
    LeaseLost,
    LeaseNotFound,
    NotHolder,
    NotLocked,
    RaftlockError,
    WaitTimeout,
)
from .events import Watch
from .lease import GrantLostSignal, Keepaliver, Lease

log = logging.getLogger("raftlock")


def tls_context(ca: str | None = None, cert: str | None = None, key: str | None = None) -> ssl.SSLContext:
    """An SSLContext that verifies the cluster against the CA file ``ca`` (the system's
    roots when None) and presents the client certificate ``cert``/``key`` when given (for
    clusters started with --tls-client-auth require). Both clients take it."""
    ctx = ssl.create_default_context(cafile=ca)
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


def tls_of(tls: ssl.SSLContext | bool | None) -> ssl.SSLContext | None:
    """The SSLContext a client was given: True is the system's roots, None/False no TLS."""
    if tls is True:
        return ssl.create_default_context()
    if tls is False or tls is None:
        return None
    return tls


class Held:
    """A grant held with a lease the client keeps alive: a lock (either mode) or a
    semaphore permit (a leadership is a Leadership, a lockset a HeldSet). A context manager:
    leaving the ``with`` block releases it.

    Attributes:
        name: the lock's (semaphore's, election's) name.
        kind: "lock", "semaphore" or "election".
        token: the fencing token of the grant. Pass it with every write the grant
            protects; the storage must refuse tokens lower than the highest it has seen.
        lost: a threading.Event set when the grant can no longer be assumed held (the
            lease was lost, revoked or closed, its safe-until passed without an answered
            keepalive, or its maximum hold ended). Check it before each write.
        mode: "exclusive" or "shared" for a lock, "" otherwise.
        lease: the lease holding the grant.
    """

    def __init__(self, client: Client, kind: str, route: str, name: str, token: int, lease: Lease, *, mode: str = "", own_lease: bool = True,
                 max_hold_end: float | None = None) -> None:
        self._client = client
        self._own_lease = own_lease
        self.kind = kind
        self._route = route
        self.name = name
        self.token = token
        self.mode = mode
        self.lease = lease
        self.lost: threading.Event = lease.lost if max_hold_end is None else GrantLostSignal(lease, max_hold_end)
        self._mu = threading.Lock()
        self._held = True

    @property
    def lease_id(self) -> str:
        """The ID of the lease holding the grant (a secret: never log it)."""
        return self.lease.id

    def __repr__(self) -> str:
        # Neither the lease ID (a secret) nor anything derived from it.
        return f"<raftlock.{type(self).__name__} {self.kind} {self.name!r} token={self.token} lost={self.lost.is_set()}>"

    def safe_until(self) -> float:
        """The latest moment (time.monotonic()) at which the grant may still be assumed
        held: the send time of the last answered keepalive plus TTL minus the drift margin,
        or the end of its maximum hold when sooner."""
        if isinstance(self.lost, GrantLostSignal):
            return self.lost.safe_until()
        return self.lease.safe_until()

    def is_lost(self) -> bool:
        """True once ``lost`` is set, safe-until has passed or the maximum hold ended."""
        return self.lost.is_set()

    def _give_back(self, timeout: float | None) -> None:
        self._client._call(core.release_request(self._route, self.name, self.lease.id, self.token), timeout)

    def release(self, timeout: float | None = None) -> None:
        """Give the grant back with its lease and token (a late or repeated release can never
        free a later grant), then revoke the lease (unless it was given: Lease.lock). Raises
        NotLocked when already released, and NotHolder or LeaseNotFound when the grant had
        already been lost; in every case but a network failure the hold is over."""
        with self._mu:
            if not self._held:
                raise NotLocked(f"release {self.name!r}: nothing is held")
        err: RaftlockError | None = None
        try:
            self._give_back(timeout)
        except NotHolder as e:
            attempts = getattr(getattr(e, "result", None), "attempts", 1)
            if not (attempts > 1 and not self.lease.lost.is_set()):
                err = e  # an earlier attempt, whose answer was lost, released it otherwise
        except RaftlockError as e:
            err = e
        gone = err is None or isinstance(err, (NotHolder, LeaseNotFound))
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
            raise LeaseLost(f"{self.kind} {self.name!r} was lost inside the with block ({why.message if why else 'its safe time or maximum hold passed'})")


class Leadership(Held):
    """A held leadership of an election (Client.campaign): ``value`` is what it published
    last; ``proclaim`` publishes a new one under the same token; ``resign`` gives it up."""

    value: str = ""

    def proclaim(self, value: str, timeout: float | None = None) -> int:
        """Publish ``value`` as the leader's, keeping the leadership and its token (the
        request carries the token, so it can only proclaim, never campaign anew)."""
        if self.lost.is_set():
            raise LeaseLost(f"proclaim {self.name!r}: the leadership is lost")
        out, res = self._client._call(core.proclaim_request(self.name, self.lease.id, self.token, value), timeout)
        self.lease.observe(res.sent)
        self.value = value
        return int(out["token"])

    def resign(self, timeout: float | None = None) -> None:
        """Give the leadership up (the next candidate leads, with its own value)."""
        self.release(timeout)


class HeldSet(Held):
    """A lockset held with one lease (Client.lockset): every lock of ``names`` taken in one
    commit, each with its own token (``tokens``; ``token`` is the first name's). Released in
    one commit."""

    def __init__(self, client: Client, names: list[str], tokens: dict[str, int], lease: Lease, *, mode: str, own_lease: bool, max_hold_end: float | None) -> None:
        super().__init__(client, "lockset", LOCKSETS, ",".join(names), tokens.get(names[0], 0), lease, mode=mode, own_lease=own_lease, max_hold_end=max_hold_end)
        self.names = list(names)
        self.tokens = dict(tokens)

    def _give_back(self, timeout: float | None) -> None:
        self._client._call(core.release_set_request(self.lease.id, self.tokens), timeout)


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
    when done: that revokes its leases, ends its keepalive thread and closes its connections.
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
        endpoints, token = core.given_or_environment(endpoints, token)
        ctx = tls_of(tls)
        eps = core.parse_endpoints(endpoints, ctx is not None)
        if token and any(e.scheme == "http" for e in eps):
            log.warning("an ACL token is sent over plain HTTP, where anyone on the path can read it; use https endpoints and TLS")
        self.timeout = timeout
        self.call_timeout = call_timeout
        self._t = Transport(eps, tls=ctx, token=token, timeout=timeout, min_backoff=min_backoff, max_backoff=max_backoff)
        self._keepaliver = Keepaliver(self._renew, timeout)
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

    def _renew(self, ids: list[str], deadline: float, attempt: float, backoff: float) -> tuple[Any, Result]:
        return self._t.do(core.keepalive_many_request(ids, attempt, backoff), deadline)

    # --- leases -----------------------------------------------------------------------------

    def create_lease(self, ttl: float = DEFAULT_TTL, timeout: float | None = None) -> tuple[str, float, Result]:
        """Create a lease that nothing keeps alive; returns (lease ID, TTL in seconds, result).
        A create retried after an unanswered attempt may leave an unused lease behind,
        which expires after its TTL. Prefer Client.lease."""
        out, res = self._call(core.create_lease_request(ttl), timeout)
        return out["lease_id"], out["ttl_ms"] / 1000, res

    def lease(self, ttl: float = DEFAULT_TTL, *, drift: float | None = None, interval: float | None = None, timeout: float | None = None) -> Lease:
        """Create a lease and keep it alive in the background until it is closed or lost;
        ``lease.lock(name)`` (or ``client.lock(name, lease=lease)``) holds locks on it."""
        lid, server_ttl, res = self.create_lease(ttl, timeout)
        return self._start_lease(lid, server_ttl, res.sent, drift, interval)

    def _start_lease(self, lid: str, ttl: float, sent: float, drift: float | None, interval: float | None) -> Lease:
        try:
            lease = Lease(self, self._keepaliver, lid, ttl, sent, drift, interval)
        except ValueError:
            self._revoke_quietly(lid)
            raise
        self._keepaliver.add(lease)
        return lease

    def keepalive(self, lease_id: str, timeout: float | None = None) -> float:
        """Renew a lease once; returns its TTL in seconds. LeaseNotFound when it is gone."""
        out, _ = self._call(core.keepalive_request(lease_id), timeout)
        return out["ttl_ms"] / 1000

    def keepalive_many(self, lease_ids: list[str], timeout: float | None = None) -> tuple[list[str], list[str]]:
        """Renew up to 10,000 leases in one log entry; returns (renewed IDs, IDs not found)."""
        out, _ = self._t.do(core.keepalive_many_request(list(lease_ids), self.timeout), self._deadline(timeout))
        return [x["lease_id"] for x in out.get("leases") or []], list(out.get("not_found") or [])

    def revoke(self, lease_id: str, timeout: float | None = None) -> list[str]:
        """Revoke a lease, releasing everything it holds; returns the names released. A
        revoke that had to be retried and then finds no lease succeeds (an earlier attempt
        revoked it)."""
        try:
            out, _ = self._call(core.revoke_request(lease_id), timeout)
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

    def _request_id(self) -> str:
        return new_request_id()

    def _acquire_at(self, route: str, name: str, fields: dict[str, Any], *, lease_id: str = "", ttl: float = 0.0, wait: float = 0.0, owner: str = "",
                    request_id: str | None = None, timeout: float | None = None, cancel: Cancel | None = None, path: str | None = None,
                    method: str = "PUT", op: str | None = None) -> tuple[dict[str, Any], Result]:
        rid = "" if lease_id else (request_id or new_request_id())
        req = core.acquire_request(route, name, fields, lease_id=lease_id, ttl=ttl, wait=wait, owner=owner, request_id=rid, path=path, method=method, op=op)
        if rid and not self._reuse_request_id:
            body = req.body
            assert body is not None

            def fresh() -> dict[str, Any]:  # the broken behaviour, for tests only
                b = body()
                b["request_id"] = new_request_id()
                return b

            req.body = fresh
        return self._call(req, timeout, extra=wait, cancel=cancel)

    def acquire(
        self, name: str, *, ttl: float = 0.0, lease_id: str = "", wait: float = 0.0, owner: str = "", mode: str = "exclusive",
        max_hold: float = 0.0, lock_delay: float = 0.0, request_id: str | None = None, timeout: float | None = None,
    ) -> Grant:
        """One acquire of lock ``name`` (PUT /v1/locks/{name}). Without ``lease_id`` the
        server creates a lease of ``ttl`` (its default when 0) in the grant's entry, and
        **nothing keeps it alive**: use Client.lock for work that outlives one TTL."""
        if ttl:
            core.check_ttl(ttl)
        out, _ = self._acquire_at(LOCKS, name, core.hold_fields(mode, max_hold, lock_delay), lease_id=lease_id, ttl=ttl, wait=wait, owner=owner,
                                  request_id=request_id, timeout=timeout)
        return core.grant_of(out)

    def release(self, name: str, lease_id: str, token: int, timeout: float | None = None) -> None:
        """Release lock ``name`` held by ``lease_id`` with the grant's ``token``. A retried
        or late release can never free a later grant (it has another token): NotHolder."""
        self._call(core.release_request(LOCKS, name, lease_id, token), timeout)

    # --- holds ------------------------------------------------------------------------------

    def _hold(self, kind: str, route: str, name: str, fields: dict[str, Any], *, ttl: float, wait: float, owner: str, mode: str,
              drift: float | None, interval: float | None, timeout: float | None, lease: Lease | None = None, max_hold: float = 0.0,
              path: str | None = None, method: str = "PUT", names: list[str] | None = None) -> Held:
        core.check_wait(wait)
        if lease is not None:
            return self._take_with(kind, route, name, fields, lease, wait, owner, mode, False, max_hold, path, method, names)
        core.check_ttl(ttl)
        if wait <= 0:
            # One round trip: the lease is created in the entry that grants (nothing is
            # created when refused). Retries carry the same request_id, so they cannot
            # create a second lease. Safe-until counts from the first attempt: the lease
            # may have been created by it, its answer lost.
            out, res = self._acquire_at(route, name, fields, ttl=ttl, owner=owner, timeout=timeout, path=path, method=method,
                                        op=f"lockset {name}" if names else None)
            lease = self._start_lease(out["lease_id"], out["ttl_ms"] / 1000, res.first, drift, interval)
            return self._made(kind, route, name, out, lease, mode, True, res.first + max_hold if max_hold > 0 else None, names)
        lease = self.lease(ttl, drift=drift, interval=interval, timeout=timeout)
        try:
            return self._take_with(kind, route, name, fields, lease, wait, owner, mode, True, max_hold, path, method, names)
        except BaseException:
            try:
                lease.close(timeout=self.timeout)
            except RaftlockError:
                pass
            raise

    def _made(self, kind: str, route: str, name: str, out: dict[str, Any], lease: Lease, mode: str, own: bool, end: float | None,
              names: list[str] | None) -> Held:
        if names is not None:
            return HeldSet(self, names, core.lockset_tokens_of(out), lease, mode=mode, own_lease=own, max_hold_end=end)
        if kind == "election":
            h = Leadership(self, kind, route, name, int(out["token"]), lease, own_lease=own)
            h.value = out.get("value", "")
            return h
        return Held(self, kind, route, name, int(out["token"]), lease, mode=mode, own_lease=own, max_hold_end=end)

    def _take_with(self, kind: str, route: str, name: str, fields: dict[str, Any], lease: Lease, wait: float, owner: str, mode: str, own_lease: bool,
                   max_hold: float = 0.0, path: str | None = None, method: str = "PUT", names: list[str] | None = None) -> Held:
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
            sent = time.monotonic()
            try:
                out, res = self._acquire_at(route, name, fields, lease_id=lease.id, wait=min(left, WAIT_CHUNK), owner=owner, cancel=cancel, path=path,
                                            method=method, op=f"lockset {name}" if names else None)
            except LeaseNotFound:
                lease.lose(LeaseLost("the cluster no longer knows the lease"))
                raise LeaseLost(f"acquire {name!r}: the lease is gone") from None
            except WaitTimeout:
                if end - time.monotonic() > 0.001:
                    continue
                raise
            if not lease.observe(res.sent):
                raise LeaseLost(f"acquire {name!r}: the lease was lost as it was granted")
            # Granted at once: no earlier than the send; after a wait: at some point of it.
            granted = sent if wait <= 0 else time.monotonic()
            return self._made(kind, route, name, out, lease, mode, own_lease, granted + max_hold if max_hold > 0 else None, names)

    def lock(
        self, name: str, ttl: float = DEFAULT_TTL, wait: float = 0.0, *, mode: str = "exclusive", owner: str = "", lease: Lease | None = None,
        max_hold: float = 0.0, lock_delay: float = 0.0, drift: float | None = None, interval: float | None = None, timeout: float | None = None,
    ) -> Held:
        """Take lock ``name`` and keep its lease alive in the background.

        ``wait`` 0 fails at once with LockHeld when the lock is held; otherwise the call
        waits up to ``wait`` seconds in the lock's FIFO queue on the server (no polling)
        and raises WaitTimeout when it ends first. ``mode="shared"`` takes a shared
        (reader) grant. ``ttl`` is the lease's TTL; ``drift`` the margin subtracted from it
        for safe-until (default a tenth, at least 0.1 s); ``interval`` the keepalive period
        (default ttl/3). ``lease``: hold it on that lease (releasing keeps the lease).
        ``max_hold``: the grant ends that many seconds after it even while the lease is
        kept alive (``lost`` is set then, the next waiter granted); ``lock_delay``: after
        the lease expires or is revoked, the lock stays free for nobody that long.
        Use as ``with client.lock(...) as held:``.
        """
        fields = core.hold_fields(mode, max_hold, lock_delay)
        return self._hold("lock", LOCKS, name, fields, ttl=ttl, wait=wait, owner=owner, mode=mode, drift=drift, interval=interval, timeout=timeout,
                          lease=lease, max_hold=max_hold)

    def lockset(
        self, names: list[str], ttl: float = DEFAULT_TTL, wait: float = 0.0, *, mode: str = "exclusive", owner: str = "", lease: Lease | None = None,
        max_hold: float = 0.0, lock_delay: float = 0.0, drift: float | None = None, interval: float | None = None, timeout: float | None = None,
    ) -> HeldSet:
        """Take every lock of ``names`` in one commit, or none (LockHeld naming the held
        ones); with ``wait`` the set waits as one request in every queue and cannot starve.
        A wait that would close a cycle of waiting leases raises Deadlock at once. Each lock
        then has its own token (``held.tokens``); options as for lock."""
        core.check_lockset(names)
        fields = core.hold_fields(mode, max_hold, lock_delay)
        fields["names"] = list(names)
        h = self._hold("lockset", LOCKSETS, ",".join(names), fields, ttl=ttl, wait=wait, owner=owner, mode=mode, drift=drift, interval=interval,
                       timeout=timeout, lease=lease, max_hold=max_hold, path=LOCKSETS, method="POST", names=list(names))
        assert isinstance(h, HeldSet)
        return h

    def Lock(self, name: str, ttl: float = DEFAULT_TTL, *, mode: str = "exclusive", owner: str = "", lease: Lease | None = None) -> Any:
        """Deprecated since 0.2.0: ``raftlock.Lock(client, name, ...)`` makes the same
        reusable lock object; ``client.lock(name, ...)`` is the one method that takes a lock."""
        import warnings

        from .lock import Lock

        warnings.warn("Client.Lock is deprecated: use raftlock.Lock(client, name, ...) (client.lock(...) takes a lock at once)", DeprecationWarning, stacklevel=2)
        return Lock(self, name, ttl, mode=mode, owner=owner, lease=lease)

    def semaphore(
        self, name: str, limit: int, ttl: float = DEFAULT_TTL, wait: float = 0.0, *, owner: str = "", lease: Lease | None = None,
        drift: float | None = None, interval: float | None = None, timeout: float | None = None,
    ) -> Held:
        """Take a permit of semaphore ``name`` (at most ``limit`` holders at once): like
        lock, with SemaphoreFull instead of LockHeld and LimitConflict when the semaphore
        is in use with another limit."""
        if not 1 <= limit <= 10000:
            raise InvalidRequest(f"limit {limit}: want 1 to 10000")
        return self._hold("semaphore", SEMAPHORES, name, {"limit": limit}, ttl=ttl, wait=wait, owner=owner, mode="", drift=drift, interval=interval,
                          timeout=timeout, lease=lease)

    def campaign(
        self, name: str, value: str, ttl: float = DEFAULT_TTL, wait: float = 0.0, *, owner: str = "", lease: Lease | None = None,
        drift: float | None = None, interval: float | None = None, timeout: float | None = None,
    ) -> Leadership:
        """Campaign in election ``name`` with ``value``; returns once elected (ElectionHeld
        at once with ``wait`` 0, else WaitTimeout when the wait ends). The returned
        Leadership's ``lost`` is set when the leadership can no longer be assumed."""
        h = self._hold("election", ELECTIONS, name, {"value": value}, ttl=ttl, wait=wait, owner=owner, mode="", drift=drift, interval=interval,
                       timeout=timeout, lease=lease)
        assert isinstance(h, Leadership)
        h.value = value
        return h

    # --- reads ------------------------------------------------------------------------------

    def _get(self, route: str, name: str, timeout: float | None, wait_index: int = 0, wait: float = 0.0, stale: bool = False) -> Any:
        out, _ = self._call(core.read_request(route, name, wait_index, wait, stale), timeout, extra=wait)
        return out

    def status(self, name: str, *, wait_index: int = 0, wait: float = 0.0, stale: bool = False, timeout: float | None = None) -> LockStatus:
        """Read lock ``name`` (linearizable unless ``stale``). With ``wait`` > 0 it is a
        blocking query answered when the lock's modify_index exceeds ``wait_index``."""
        return core.lock_status_of(self._get(LOCKS, name, timeout, wait_index, wait, stale))

    def semaphore_status(self, name: str, *, wait_index: int = 0, wait: float = 0.0, stale: bool = False, timeout: float | None = None) -> SemaphoreStatus:
        """Read semaphore ``name``: its limit (0 when not in use), permits and waiters."""
        return core.semaphore_status_of(self._get(SEMAPHORES, name, timeout, wait_index, wait, stale))

    def election_status(self, name: str, *, wait_index: int = 0, wait: float = 0.0, stale: bool = False, timeout: float | None = None) -> ElectionStatus:
        """Read election ``name``: who leads, with which value and token."""
        return core.election_status_of(self._get(ELECTIONS, name, timeout, wait_index, wait, stale))

    def observe(self, name: str, *, duration: float | None = None, chunk: float = core.OBSERVE_WAIT) -> Iterator[ElectionStatus]:
        """Yield election ``name``'s state now and at every change of leader or value
        (blocking reads, no polling), for ``duration`` seconds (forever when None). A read
        that fails is retried with backoff; close the generator to stop."""
        end = None if duration is None else time.monotonic() + duration
        st = self.election_status(name)
        yield st
        idx = st.modify_index
        backoff = 0.05
        while end is None or time.monotonic() < end:
            w = chunk if end is None else max(min(chunk, end - time.monotonic()), 0.001)
            try:
                st = self.election_status(name, wait_index=idx, wait=w)
            except (InvalidRequest, LeaseLost):
                raise
            except RaftlockError:
                time.sleep(core.upper_half(backoff))
                backoff = min(2 * backoff, 1.0)
                continue
            backoff = 0.05
            if st.modify_index > idx:
                idx = st.modify_index
                yield st

    def history(self, name: str, *, stale: bool = False, timeout: float | None = None) -> History:
        """Lock ``name``'s recent events (who held it, and why they lost it)."""
        return core.history_of(self._get(HISTORY, name, timeout, stale=stale))

    def watch(self, prefix: str = "", *, from_index: int = 0) -> Watch:
        """Follow the lock events of the locks whose names start with ``prefix`` (every
        lock when ""), from now on or from entry index ``from_index``: iterate the returned
        Watch (``for event in client.watch("accounts/"):``). It reconnects by itself, with
        the last event ID, to the next endpoint, so no event is lost or repeated. The first
        connection is made here: an index older than the node holds raises IndexCompacted
        (read the state, then watch again from now on)."""
        return Watch(self._t, prefix, from_index)

    def cluster(self, timeout: float | None = None) -> dict[str, Any]:
        """The cluster as the answering node sees it: leader_id, term, indexes, nodes."""
        out, _ = self._call(Request(op="cluster", method="GET", path="/v1/cluster"), timeout)
        return dict(out)


__all__ = [
    "Client",
    "ElectionStatus",
    "Grant",
    "Held",
    "HeldSet",
    "History",
    "Leadership",
    "LockStatus",
    "SemaphoreStatus",
    "new_request_id",
    "tls_context",
]
