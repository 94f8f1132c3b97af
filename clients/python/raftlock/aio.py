"""raftlock for asyncio: ``AsyncClient``, the threaded client's whole API as coroutines, on
asyncio streams (plain HTTP or TLS; standard library only).

    from raftlock.aio import AsyncClient

    async with AsyncClient(["https://10.0.0.1:7001"], tls=raftlock.tls_context(ca="ca.pem")) as client:
        async with client.lock("accounts/A", ttl=10, wait=30) as held:
            if held.lost.is_set():
                raise SystemExit("lock lost")
            await charge(token=held.token)

It shares the protocol core with the threaded client (``raftlock._core``: requests, the one
HTTP/1.1 parser, answers, errors, the retry policy, events, routing), so the semantics are
the same (clients/README.md): names checked before sending, retries on the other endpoints
until the call's timeout, ``Unreachable`` naming every endpoint, a 2 s connect timeout per
endpoint, ``held.lost`` that reads set once safe-until (or the maximum hold) has passed,
``LeaseLost`` on leaving a block whose lock was lost, and ``close()`` revoking every lease
still open. One task per client renews every lease of the client.

**Cancellation**: a task cancelled while it waits for a lock (or a permit, a leadership, a
lockset) leaves the server's queue (its connection is closed) and leaves no grant behind:
a grant that arrives as it is cancelled is given back by a cleanup task (its lease is
revoked), which ``close()`` awaits.
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
import time
from types import TracebackType
from typing import Any, AsyncIterator, Awaitable, Callable, Generator

from . import _core as core
from ._core import (
    DEFAULT_TTL,
    DIAL_TIMEOUT,
    ELECTIONS,
    HISTORY,
    LOCKS,
    LOCKSETS,
    SEMAPHORES,
    WAIT_CHUNK,
    BrokenAnswer,
    ElectionStatus,
    Endpoint,
    Endpoints,
    Event,
    EventStream,
    Grant,
    History,
    LockStatus,
    Request,
    ResponseParser,
    Result,
    SemaphoreStatus,
    new_request_id,
)
from .client import tls_of
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
from .lease import default_drift_margin

log = logging.getLogger("raftlock")

#: Bytes asked of a stream per read (never an unbounded read).
READ_SIZE = 65536


# --- transport -----------------------------------------------------------------------------


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        try:
            self.writer.close()
        except RuntimeError:
            pass  # the loop is closing


class AsyncStream:
    """An open streaming answer (the event stream)."""

    def __init__(self, conn: _Conn, parser: ResponseParser, first: list[bytes]) -> None:
        self._conn, self._parser, self._first = conn, parser, first

    async def pieces(self) -> AsyncIterator[bytes]:
        for p in self._first:
            yield p
        self._first = []
        while not self._parser.done:
            chunk = await self._conn.reader.read(READ_SIZE)
            if not chunk:
                self._parser.eof()
                return
            for p in self._parser.feed(chunk):
                yield p

    def close(self) -> None:
        self._conn.close()


class AsyncTransport:
    """Keep-alive connections on asyncio streams and the core's retry policy, driven with
    ``await``: the asyncio twin of the threaded Transport."""

    def __init__(self, endpoints: list[Endpoint], *, tls: ssl.SSLContext | None, token: str | None, timeout: float, min_backoff: float, max_backoff: float) -> None:
        self.eps = Endpoints(endpoints)
        self.endpoints = endpoints
        self.tls = tls
        self._auth = f"Bearer {token.strip()}" if token and token.strip() else None
        self.timeout = timeout
        self.min_backoff = min_backoff
        self.max_backoff = max(max_backoff, min_backoff)
        self._idle: dict[int, list[_Conn]] = {i: [] for i in range(len(endpoints))}
        self._closed = False

    def preferred(self) -> int:
        return self.eps.preferred()

    async def _dial(self, e: Endpoint, timeout: float) -> _Conn:
        ctx = None
        if e.scheme == "https":
            ctx = self.tls or ssl.create_default_context()
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(e.host, e.port, ssl=ctx, server_hostname=e.host if ctx else None, limit=READ_SIZE), timeout,
        )
        return _Conn(reader, writer)

    def close(self) -> None:
        self._closed = True
        for cs in self._idle.values():
            for c in cs:
                c.close()
            cs.clear()

    async def _read(self, conn: _Conn, parser: ResponseParser, end: float, body: bytearray | None) -> None:
        got = False
        while not (parser.done if body is not None else parser.head_done):
            chunk = await asyncio.wait_for(conn.reader.read(READ_SIZE), max(end - time.monotonic(), 0.001))
            if not chunk:
                if not got and body is not None:
                    raise ConnectionResetError("the connection closed before any answer")
                parser.eof()
                break
            got = True
            for piece in parser.feed(chunk):
                if body is not None:
                    body += piece

    async def attempt(self, ep: int, req: Request, timeout: float) -> tuple[float, Any]:
        """Send req once to endpoint ep; returns (send time, answer value), else raises a
        RaftlockError with ``sent`` set. A cancelled attempt closes its connection (the
        server then drops a wait)."""
        e = self.endpoints[ep]
        data = core.encode(req, e, self._auth)
        end = time.monotonic() + timeout
        for fresh_retry in (True, False):
            conn = self._idle[ep].pop() if self._idle[ep] else None
            reused = conn is not None
            sent = time.monotonic()
            dialing = False
            try:
                if conn is None:
                    dialing = True
                    conn = await self._dial(e, min(DIAL_TIMEOUT, timeout))
                    dialing = False
                conn.writer.write(data)
                await asyncio.wait_for(conn.writer.drain(), max(end - time.monotonic(), 0.001))
                parser = ResponseParser(head_only=req.method == "HEAD")
                body = bytearray()
                await self._read(conn, parser, end, body)
            except asyncio.CancelledError:
                if conn is not None:
                    conn.close()
                raise
            except (ssl.SSLCertVerificationError, ssl.SSLError) as exc:
                if conn is not None:
                    conn.close()
                raise core.tls_error(req, e, str(exc), sent) from None
            except (OSError, asyncio.TimeoutError, BrokenAnswer, asyncio.IncompleteReadError) as exc:
                if conn is not None:
                    conn.close()
                if reused and fresh_retry and isinstance(exc, (BrokenPipeError, ConnectionResetError)):
                    continue
                what = f"timed out after {timeout:.3g}s" if isinstance(exc, asyncio.TimeoutError) else repr(exc)
                if dialing and isinstance(exc, asyncio.TimeoutError):
                    what = f"connect timed out after {min(DIAL_TIMEOUT, timeout):.3g}s"
                raise core.unavailable(req, e, what, sent, dialing and isinstance(exc, (ConnectionRefusedError, asyncio.TimeoutError))) from None
            break
        if parser.keep_alive and not self._closed and len(self._idle[ep]) < 16:
            self._idle[ep].append(conn)
        else:
            conn.close()
        self.eps.note_answer(ep, parser.status, parser.headers)
        try:
            return sent, core.interpret(req, e, parser.status, parser.headers, bytes(body))
        except RaftlockError as err:
            err.sent = sent  # type: ignore[attr-defined]
            raise

    async def do(self, req: Request, deadline: float, cancelled: Callable[[], RaftlockError | None] = lambda: None) -> tuple[Any, Result]:
        """The core's retry policy (``_core.retry_policy``), driven with awaited attempts."""
        gen: Generator[Any, Any, tuple[Any, Result]] = core.retry_policy(
            self.eps, req, deadline, timeout=self.timeout, min_backoff=self.min_backoff, max_backoff=self.max_backoff, cancelled=cancelled,
        )
        try:
            action = next(gen)
            while True:
                if action[0] == "sleep":
                    await asyncio.sleep(action[1])
                    action = next(gen)
                    continue
                _, ep, t = action
                try:
                    sent, value = await self.attempt(ep, req, t)
                except RaftlockError as err:
                    action = gen.send(("err", err))
                else:
                    action = gen.send(("ok", sent, value))
        except StopIteration as stop:
            return stop.value

    async def open_stream(self, ep: int, req: Request) -> AsyncStream:
        """Open the streaming answer of req on endpoint ep (its 200 head within the client's
        timeout); an error answer raises its library error, a failed connection Unavailable."""
        e = self.endpoints[ep]
        sent = time.monotonic()
        end = sent + self.timeout
        conn: _Conn | None = None
        try:
            conn = await self._dial(e, min(DIAL_TIMEOUT, self.timeout))
            conn.writer.write(core.encode(req, e, self._auth))
            parser = ResponseParser(stream=True)
            body = bytearray()
            while not parser.head_done:
                chunk = await asyncio.wait_for(conn.reader.read(READ_SIZE), max(end - time.monotonic(), 0.001))
                if not chunk:
                    parser.eof()
                    break
                for p in parser.feed(chunk):
                    body += p
            if parser.status != 200:
                while not parser.done and len(body) < (1 << 20):
                    chunk = await asyncio.wait_for(conn.reader.read(READ_SIZE), max(end - time.monotonic(), 0.001))
                    if not chunk:
                        break
                    for p in parser.feed(chunk):
                        body += p
                conn.close()
                core.interpret(req, e, parser.status, parser.headers, bytes(body))
                raise core.unavailable(req, e, f"answered {parser.status}", sent, False)
        except asyncio.CancelledError:
            if conn is not None:
                conn.close()
            raise
        except (ssl.SSLCertVerificationError, ssl.SSLError) as exc:
            if conn is not None:
                conn.close()
            raise core.tls_error(req, e, str(exc), sent) from None
        except (OSError, asyncio.TimeoutError, BrokenAnswer) as exc:
            if conn is not None:
                conn.close()
            raise core.unavailable(req, e, "timed out" if isinstance(exc, asyncio.TimeoutError) else repr(exc), sent, conn is None) from None
        return AsyncStream(conn, parser, [bytes(body)] if body else [])


# --- leases and their loss signal ------------------------------------------------------------


class AsyncLostSignal:
    """A loss signal: ``is_set()`` is true once the lease is lost or closed, its safe-until
    (time.monotonic()) has passed, or (for a grant with a maximum hold) the hold's end has,
    even before the keepalive task noticed; ``await wait()`` returns then."""

    def __init__(self, lease: AsyncLease, end: float | None = None) -> None:
        self._lease = lease
        self._ev = asyncio.Event()
        self.end = end

    def _until(self) -> float:
        su = self._lease._safe_until
        return su if self.end is None else min(su, self.end)

    def is_set(self) -> bool:
        if self._ev.is_set():
            return True
        lease = self._lease
        if self is not lease._lost and lease._lost.is_set():  # a grant's signal: its lease's loss first
            self._ev.set()
            return True
        now = time.monotonic()
        if now >= lease._safe_until:
            lease._lose(LeaseLost("its safe time passed without an answered keepalive"))
            self._ev.set()
            return True
        if self.end is not None and now >= self.end:
            self._ev.set()
            return True
        return False

    def set(self) -> None:
        self._ev.set()

    async def wait(self) -> bool:
        """Wait until lost (by safe-until, or the maximum hold's end, at the latest)."""
        while not self.is_set():
            try:
                await asyncio.wait_for(self._ev.wait(), max(self._until() - time.monotonic(), 0) + 0.001)
            except asyncio.TimeoutError:
                pass
        return True


class AsyncLease:
    """A lease kept alive by its client's keepalive task. ``id`` is a secret."""

    def __init__(self, client: AsyncClient, lease_id: str, ttl: float, sent: float, drift: float | None = None, interval: float | None = None) -> None:
        self._client = client
        self.id = lease_id
        self.ttl = ttl
        self.drift = default_drift_margin(ttl) if drift is None else drift
        self.interval = ttl / 3 if interval is None else interval
        if not 0 < self.drift < ttl:
            raise ValueError(f"drift margin {self.drift}s must be positive and shorter than the TTL {ttl}s")
        if not 0 < self.interval < ttl - self.drift:
            raise ValueError(f"keepalive interval {self.interval}s must be positive and shorter than TTL - drift margin")
        self._safe_until = sent + ttl - self.drift
        self._last_sent = sent
        self.error: RaftlockError | None = None
        self._lost = AsyncLostSignal(self)
        self._signals: list[AsyncLostSignal] = []
        self._closed = False

    @property
    def lost(self) -> AsyncLostSignal:
        return self._lost

    @property
    def client(self) -> AsyncClient:
        """The client that made the lease (its cluster is the lease's)."""
        return self._client

    def safe_until(self) -> float:
        return self._safe_until

    def is_lost(self) -> bool:
        return self._lost.is_set()

    def observe(self, sent: float) -> bool:
        """Record that a request sent at ``sent`` renewed the lease; False when it was lost."""
        if self._lost.is_set():
            return False
        if sent + self.ttl - self.drift > self._safe_until:
            self._safe_until, self._last_sent = sent + self.ttl - self.drift, sent
        return True

    def grant_signal(self, end: float | None) -> AsyncLostSignal:
        """The loss signal of a grant on this lease, ended at ``end`` (its maximum hold)."""
        if end is None:
            return self._lost
        s = AsyncLostSignal(self, end)
        self._signals.append(s)
        asyncio.get_running_loop().call_at(asyncio.get_running_loop().time() + max(end - time.monotonic(), 0), s.set)
        return s

    def lose(self, err: RaftlockError) -> None:
        self._lose(err)

    def _lose(self, err: RaftlockError) -> None:
        if self.error is not None:
            return
        self.error = err
        self._safe_until = min(self._safe_until, time.monotonic())
        self._lost._ev.set()
        for s in self._signals:
            s.set()
        self._client._leases.discard(self)

    async def close(self, timeout: float | None = None) -> None:
        """Stop renewing and revoke the lease (its grants are freed at once). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._lose(LeaseLost("the lease was closed", code="lease_closed"))
        try:
            await self._client.revoke(self.id, timeout=timeout if timeout is not None else self._client.timeout)
        except LeaseNotFound:
            pass

    def lock(self, name: str, wait: float = 0.0, **kw: Any) -> _HoldCall:
        """Take lock ``name`` with this lease: ``client.lock(name, wait=..., lease=this)``."""
        return self._client.lock(name, wait=wait, lease=self, **kw)

    def __repr__(self) -> str:
        return f"<raftlock.aio.AsyncLease ttl={self.ttl}s lost={self._lost.is_set()}>"


# --- holds -------------------------------------------------------------------------------------


class AsyncHeld:
    """A grant held with a lease the client keeps alive (a lock or a permit): ``async
    with`` releases it and raises LeaseLost on leaving a block whose grant was lost (the
    block's own exception wins)."""

    def __init__(self, client: AsyncClient, kind: str, route: str, name: str, token: int, lease: AsyncLease, *, mode: str = "",
                 own_lease: bool = True, max_hold_end: float | None = None) -> None:
        self._client = client
        self.kind = kind
        self._route = route
        self.name = name
        self.token = token
        self.mode = mode
        self.lease = lease
        self._own_lease = own_lease
        self.lost = lease.grant_signal(max_hold_end)
        self._held = True

    @property
    def lease_id(self) -> str:
        """The ID of the lease holding the grant (a secret: never log it)."""
        return self.lease.id

    def safe_until(self) -> float:
        return self.lost._until()

    def is_lost(self) -> bool:
        return self.lost.is_set()

    async def _give_back(self, timeout: float | None) -> None:
        await self._client._call(core.release_request(self._route, self.name, self.lease.id, self.token), timeout)

    async def release(self, timeout: float | None = None) -> None:
        """Give the grant back with its lease and token, then revoke the lease (unless it
        was given); see Held.release."""
        if not self._held:
            raise NotLocked(f"release {self.name!r}: nothing is held")
        err: RaftlockError | None = None
        try:
            await self._give_back(timeout)
        except NotHolder as e:
            attempts = getattr(getattr(e, "result", None), "attempts", 1)
            if not (attempts > 1 and not self.lease.lost.is_set()):
                err = e
        except RaftlockError as e:
            err = e
        gone = err is None or isinstance(err, (NotHolder, LeaseNotFound))
        if self._own_lease:
            try:
                await self.lease.close(timeout)
                if not gone:
                    err = None
                gone = True
            except RaftlockError as e:
                if err is None:
                    err = e
        if gone:
            self._held = False
        if err is not None:
            raise err

    async def __aenter__(self) -> AsyncHeld:
        return self

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        why = self.lease.error
        lost = self.lost.is_set() and (why is None or why.code != "lease_closed")
        try:
            await self.release()
        except (LeaseNotFound, NotHolder):
            lost = True  # the cluster says the grant was gone before the block ended
        except NotLocked:
            pass
        except RaftlockError:
            if et is None and not lost:
                raise
        if lost and et is None:
            raise LeaseLost(f"{self.kind} {self.name!r} was lost inside the async with block ({why.message if why else 'its safe time or maximum hold passed'})")

    def __repr__(self) -> str:
        return f"<raftlock.aio.{type(self).__name__} {self.kind} {self.name!r} token={self.token} lost={self.lost.is_set()}>"


class AsyncLeadership(AsyncHeld):
    """A held leadership: ``value``, ``await proclaim(v)``, ``await resign()``."""

    value: str = ""

    async def proclaim(self, value: str, timeout: float | None = None) -> int:
        if self.lost.is_set():
            raise LeaseLost(f"proclaim {self.name!r}: the leadership is lost")
        out, res = await self._client._call(core.proclaim_request(self.name, self.lease.id, self.token, value), timeout)
        self.lease.observe(res.sent)
        self.value = value
        return int(out["token"])

    async def resign(self, timeout: float | None = None) -> None:
        await self.release(timeout)


class AsyncHeldSet(AsyncHeld):
    """A held lockset: ``tokens`` by name (``token`` the first name's); released in one commit."""

    def __init__(self, client: AsyncClient, names: list[str], tokens: dict[str, int], lease: AsyncLease, *, mode: str, own_lease: bool, max_hold_end: float | None) -> None:
        super().__init__(client, "lockset", LOCKSETS, ",".join(names), tokens.get(names[0], 0), lease, mode=mode, own_lease=own_lease, max_hold_end=max_hold_end)
        self.names = list(names)
        self.tokens = dict(tokens)

    async def _give_back(self, timeout: float | None) -> None:
        await self._client._call(core.release_set_request(self.lease.id, self.tokens), timeout)


class _HoldCall:
    """What ``client.lock(...)`` (semaphore, campaign, lockset) returns: awaitable (the
    hold) and an async context manager (``async with client.lock(...) as held``)."""

    def __init__(self, make: Callable[[], Awaitable[Any]]) -> None:
        self._make = make
        self._held: Any = None

    def __await__(self) -> Generator[Any, None, Any]:
        return self._make().__await__()

    async def __aenter__(self) -> Any:
        self._held = await self._make()
        return self._held

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        assert self._held is not None
        await self._held.__aexit__(et, ev, tb)


# --- the client ----------------------------------------------------------------------------------


class AsyncClient:
    """An asyncio client of a raftlock cluster: the threaded Client's API as coroutines.

    Args:
        endpoints: base URLs, a list or a comma-separated string (default RAFTLOCK_ENDPOINTS).
        token: an ACL token's secret (default RAFTLOCK_TOKEN; use TLS).
        tls: an ssl.SSLContext (raftlock.tls_context), or True for the system's roots.
        timeout: bounds one attempt on one endpoint, besides a server-side wait.
        call_timeout: bounds a whole call with its retries (default 30 s).
        min_backoff, max_backoff: the pause between rounds of failed attempts.
    """

    def __init__(
        self, endpoints: list[str] | str | None = None, token: str | None = None, tls: ssl.SSLContext | bool | None = None, *,
        timeout: float = 5.0, call_timeout: float = 30.0, min_backoff: float = 0.05, max_backoff: float = 1.0,
    ) -> None:
        endpoints, token = core.given_or_environment(endpoints, token)
        ctx = tls_of(tls)
        eps = core.parse_endpoints(endpoints, ctx is not None)
        if token and any(e.scheme == "http" for e in eps):
            log.warning("an ACL token is sent over plain HTTP, where anyone on the path can read it; use https endpoints and TLS")
        self.timeout = timeout
        self.call_timeout = call_timeout
        self._t = AsyncTransport(eps, tls=ctx, token=token, timeout=timeout, min_backoff=min_backoff, max_backoff=max_backoff)
        self._leases: set[AsyncLease] = set()
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._cleanups: set[asyncio.Task[Any]] = set()

    @property
    def endpoints(self) -> list[str]:
        return [e.base for e in self._t.endpoints]

    def __repr__(self) -> str:
        return f"<raftlock.aio.AsyncClient endpoints={self.endpoints!r}>"

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Give back what cancelled tasks were granted, revoke every lease still open (all
        within ``timeout``), stop the keepalive task and close the connections."""
        if self._cleanups:
            await asyncio.wait(list(self._cleanups), timeout=self.timeout)
        leases = list(self._leases)
        if leases:
            await asyncio.wait([asyncio.ensure_future(l.close()) for l in leases], timeout=self.timeout)
        for l in leases:
            l._lose(LeaseLost("the client was closed", code="lease_closed"))
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._t.close()

    # --- plumbing ---------------------------------------------------------------------------

    def _deadline(self, timeout: float | None, extra: float = 0.0) -> float:
        return time.monotonic() + (self.call_timeout if timeout is None else timeout) + extra

    async def _call(self, req: Request, timeout: float | None, extra: float = 0.0, lease: AsyncLease | None = None) -> tuple[Any, Result]:
        cancelled: Callable[[], RaftlockError | None] = lambda: None
        if lease is not None:
            cancelled = lambda: LeaseLost(f"{req.op}: the lease was lost while waiting") if lease.lost.is_set() else None  # noqa: E731
        return await self._t.do(req, self._deadline(timeout, extra), cancelled)

    def _in_background(self, coro: Awaitable[Any]) -> None:
        """Run coro to its end even though the task that needed it was cancelled."""
        t = asyncio.ensure_future(coro)
        self._cleanups.add(t)
        t.add_done_callback(self._cleanups.discard)
        t.add_done_callback(lambda f: f.cancelled() or f.exception())  # no "never retrieved"

    # --- leases -----------------------------------------------------------------------------

    async def create_lease(self, ttl: float = DEFAULT_TTL, timeout: float | None = None) -> tuple[str, float, Result]:
        """Create a lease that nothing keeps alive: (lease ID, TTL in seconds, result)."""
        out, res = await self._call(core.create_lease_request(ttl), timeout)
        return out["lease_id"], out["ttl_ms"] / 1000, res

    async def lease(self, ttl: float = DEFAULT_TTL, *, drift: float | None = None, interval: float | None = None, timeout: float | None = None) -> AsyncLease:
        """Create a lease and keep it alive until it is closed or lost."""
        lid, server_ttl, res = await self.create_lease(ttl, timeout)
        return self._start(lid, server_ttl, res.sent, drift, interval)

    def _start(self, lid: str, ttl: float, sent: float, drift: float | None = None, interval: float | None = None) -> AsyncLease:
        try:
            lease = AsyncLease(self, lid, ttl, sent, drift, interval)
        except ValueError:
            self._in_background(self._revoke_quietly(lid))
            raise
        self._leases.add(lease)
        if self._wake is not None:
            self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._keepalive_loop())
        return lease

    async def keepalive(self, lease_id: str, timeout: float | None = None) -> float:
        """Renew a lease once; returns its TTL in seconds. LeaseNotFound when it is gone."""
        out, _ = await self._call(core.keepalive_request(lease_id), timeout)
        return out["ttl_ms"] / 1000

    async def keepalive_many(self, lease_ids: list[str], timeout: float | None = None) -> tuple[list[str], list[str]]:
        """Renew up to 10,000 leases in one log entry; returns (renewed IDs, IDs not found)."""
        out, _ = await self._call(core.keepalive_many_request(list(lease_ids), self.timeout), timeout)
        return [x["lease_id"] for x in out.get("leases") or []], list(out.get("not_found") or [])

    async def revoke(self, lease_id: str, timeout: float | None = None) -> list[str]:
        """Revoke a lease, releasing everything it holds; returns the names released."""
        try:
            out, _ = await self._call(core.revoke_request(lease_id), timeout)
        except LeaseNotFound as e:
            if getattr(getattr(e, "result", None), "attempts", 1) > 1:
                return []
            raise
        return list(out.get("released") or [])

    async def _revoke_quietly(self, lid: str) -> None:
        try:
            await self.revoke(lid, timeout=self.timeout)
        except RaftlockError:
            pass

    async def _keepalive_loop(self) -> None:
        """Renew every lease of the client: each pass sends one batch for every lease due
        within half its interval; a lease whose safe-until passes is lost."""
        self._wake = asyncio.Event()
        due: dict[AsyncLease, float] = {}
        while self._leases:
            now = time.monotonic()
            live = [l for l in list(self._leases) if not l.lost.is_set()]
            if not live:
                break
            for l in live:
                due.setdefault(l, l._last_sent + l.interval - l.interval / 10 * random.random())
            nxt = min(min(due[l] for l in live), min(l.safe_until() for l in live))
            if nxt > now:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), nxt - now)
                except asyncio.TimeoutError:
                    pass
                continue
            now = time.monotonic()
            batch = [l for l in live if due[l] <= now + l.interval / 2 and not l.lost.is_set()]
            if not batch:
                continue
            attempt = min(min(self.timeout, max(l.interval / 2, 0.25)) for l in batch)
            backoff = max(min(min(l.interval / 4 for l in batch), 1.0), 0.01)
            try:
                out, res = await self._t.do(core.keepalive_many_request([l.id for l in batch], attempt, backoff), max(l.safe_until() for l in batch))
            except RaftlockError:
                for l in batch:
                    due[l] = time.monotonic() + backoff
                continue
            gone = set(out.get("not_found") or [])
            for l in batch:
                if l.id in gone:
                    l._lose(LeaseLost("the cluster no longer knows the lease (it expired or was revoked)"))
                    due.pop(l, None)
                elif l.observe(res.sent):
                    due[l] = res.sent + l.interval - l.interval / 10 * random.random()
            for l in list(due):
                if l not in self._leases:
                    due.pop(l, None)

    # --- plain acquire and release ----------------------------------------------------------

    async def acquire(
        self, name: str, *, ttl: float = 0.0, lease_id: str = "", wait: float = 0.0, owner: str = "", mode: str = "exclusive",
        max_hold: float = 0.0, lock_delay: float = 0.0, request_id: str | None = None, timeout: float | None = None,
    ) -> Grant:
        """One acquire of lock ``name``; without ``lease_id`` its lease is created with the
        grant and **nothing keeps it alive** (see Client.acquire)."""
        if ttl:
            core.check_ttl(ttl)
        rid = "" if lease_id else (request_id or new_request_id())
        req = core.acquire_request(LOCKS, name, core.hold_fields(mode, max_hold, lock_delay), lease_id=lease_id, ttl=ttl, wait=wait, owner=owner, request_id=rid)
        out, _ = await self._call(req, timeout, extra=wait)
        return core.grant_of(out)

    async def release(self, name: str, lease_id: str, token: int, timeout: float | None = None) -> None:
        """Release lock ``name`` held by ``lease_id`` with the grant's ``token``."""
        await self._call(core.release_request(LOCKS, name, lease_id, token), timeout)

    # --- holds ------------------------------------------------------------------------------

    def _made(self, kind: str, route: str, name: str, out: dict[str, Any], lease: AsyncLease, mode: str, own: bool, end: float | None,
              names: list[str] | None) -> AsyncHeld:
        if names is not None:
            return AsyncHeldSet(self, names, core.lockset_tokens_of(out), lease, mode=mode, own_lease=own, max_hold_end=end)
        if kind == "election":
            h = AsyncLeadership(self, kind, route, name, int(out["token"]), lease, own_lease=own)
            h.value = out.get("value", "")
            return h
        return AsyncHeld(self, kind, route, name, int(out["token"]), lease, mode=mode, own_lease=own, max_hold_end=end)

    async def _hold(self, kind: str, route: str, name: str, fields: dict[str, Any], *, ttl: float, wait: float, owner: str, mode: str,
                    lease: AsyncLease | None, max_hold: float, drift: float | None, interval: float | None, timeout: float | None,
                    path: str | None = None, method: str = "PUT", names: list[str] | None = None) -> AsyncHeld:
        core.check_wait(wait)
        op = f"lockset {name}" if names else None
        if lease is not None:
            return await self._take_with(kind, route, name, fields, lease, wait, owner, mode, False, max_hold, path, method, names)
        core.check_ttl(ttl)
        if wait <= 0:
            rid = new_request_id()  # one per call: a retry gets the first attempt's grant
            req = core.acquire_request(route, name, fields, ttl=ttl, owner=owner, request_id=rid, path=path, method=method, op=op)
            try:
                out, res = await self._call(req, timeout)
            except asyncio.CancelledError:
                # It may have been granted with a lease we never learnt of: ask again with
                # the same request_id (the same implicit lease), and revoke what it answers.
                self._in_background(self._give_back_late(req))
                raise
            lease = self._start(out["lease_id"], out["ttl_ms"] / 1000, res.first, drift, interval)
            return self._made(kind, route, name, out, lease, mode, True, res.first + max_hold if max_hold > 0 else None, names)
        try:
            lease = await self.lease(ttl, drift=drift, interval=interval, timeout=timeout)
        except asyncio.CancelledError:
            raise  # a lease that may have been created holds nothing: it expires after its TTL
        try:
            return await self._take_with(kind, route, name, fields, lease, wait, owner, mode, True, max_hold, path, method, names)
        except asyncio.CancelledError:
            self._in_background(lease.close())  # frees a grant that came as the task was cancelled
            raise
        except BaseException:
            try:
                await lease.close(self.timeout)
            except RaftlockError:
                pass
            raise

    async def _give_back_late(self, req: Request) -> None:
        assert req.body is not None
        body = req.body()
        body.pop("wait_ms", None)
        again = Request(op=req.op, method=req.method, path=req.path, body=lambda: body, secrets=req.secrets)
        try:
            out, _ = await self._call(again, self.timeout)
        except RaftlockError:
            return  # not granted: nothing to give back
        await self._revoke_quietly(out["lease_id"])

    async def _take_with(self, kind: str, route: str, name: str, fields: dict[str, Any], lease: AsyncLease, wait: float, owner: str, mode: str,
                         own: bool, max_hold: float, path: str | None, method: str, names: list[str] | None) -> AsyncHeld:
        end = time.monotonic() + wait
        first = True
        op = f"lockset {name}" if names else None
        while True:
            if lease.lost.is_set():
                raise LeaseLost(f"acquire {name!r}: the lease is lost")
            left = max(end - time.monotonic(), 0.0)
            if left <= 0 and not first:
                raise WaitTimeout(f"acquire {name!r}: the wait ended")
            first = False
            sent = time.monotonic()
            chunk = min(left, WAIT_CHUNK)
            req = core.acquire_request(route, name, fields, lease_id=lease.id, wait=chunk, owner=owner, path=path, method=method, op=op)
            lost_wait = asyncio.ensure_future(lease.lost.wait())
            call = asyncio.ensure_future(self._call(req, None, extra=chunk, lease=lease))
            try:
                done, _ = await asyncio.wait({call, lost_wait}, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                call.cancel()
                lost_wait.cancel()
                raise
            lost_wait.cancel()
            if call not in done:
                call.cancel()
                raise LeaseLost(f"acquire {name!r}: the lease was lost while waiting")
            try:
                out, res = call.result()
            except LeaseNotFound:
                lease._lose(LeaseLost("the cluster no longer knows the lease"))
                raise LeaseLost(f"acquire {name!r}: the lease is gone") from None
            except WaitTimeout:
                if end - time.monotonic() > 0.001:
                    continue
                raise
            if not lease.observe(res.sent):
                raise LeaseLost(f"acquire {name!r}: the lease was lost as it was granted")
            granted = sent if wait <= 0 else time.monotonic()
            return self._made(kind, route, name, out, lease, mode, own, granted + max_hold if max_hold > 0 else None, names)

    def lock(
        self, name: str, ttl: float = DEFAULT_TTL, wait: float = 0.0, *, mode: str = "exclusive", owner: str = "", lease: AsyncLease | None = None,
        max_hold: float = 0.0, lock_delay: float = 0.0, drift: float | None = None, interval: float | None = None, timeout: float | None = None,
    ) -> _HoldCall:
        """Take lock ``name`` (see Client.lock): ``held = await client.lock(...)`` or
        ``async with client.lock(...) as held``."""
        core.check_name("lock", name)
        core.check_ttl(ttl)
        core.check_wait(wait)
        fields = core.hold_fields(mode, max_hold, lock_delay)
        return _HoldCall(lambda: self._hold("lock", LOCKS, name, fields, ttl=ttl, wait=wait, owner=owner, mode=mode, lease=lease, max_hold=max_hold,
                                            drift=drift, interval=interval, timeout=timeout))

    def lockset(
        self, names: list[str], ttl: float = DEFAULT_TTL, wait: float = 0.0, *, mode: str = "exclusive", owner: str = "", lease: AsyncLease | None = None,
        max_hold: float = 0.0, lock_delay: float = 0.0, drift: float | None = None, interval: float | None = None, timeout: float | None = None,
    ) -> _HoldCall:
        """Take every lock of ``names`` in one commit, or none (see Client.lockset)."""
        core.check_lockset(names)
        core.check_ttl(ttl)
        core.check_wait(wait)
        fields = core.hold_fields(mode, max_hold, lock_delay)
        fields["names"] = list(names)
        return _HoldCall(lambda: self._hold("lockset", LOCKSETS, ",".join(names), fields, ttl=ttl, wait=wait, owner=owner, mode=mode, lease=lease,
                                            max_hold=max_hold, drift=drift, interval=interval, timeout=timeout, path=LOCKSETS, method="POST", names=list(names)))

    def semaphore(
        self, name: str, limit: int, ttl: float = DEFAULT_TTL, wait: float = 0.0, *, owner: str = "", lease: AsyncLease | None = None,
        drift: float | None = None, interval: float | None = None, timeout: float | None = None,
    ) -> _HoldCall:
        """Take a permit of semaphore ``name`` (see Client.semaphore)."""
        core.check_name("semaphore", name)
        core.check_ttl(ttl)
        core.check_wait(wait)
        if not 1 <= limit <= 10000:
            raise InvalidRequest(f"limit {limit}: want 1 to 10000")
        return _HoldCall(lambda: self._hold("semaphore", SEMAPHORES, name, {"limit": limit}, ttl=ttl, wait=wait, owner=owner, mode="", lease=lease,
                                            max_hold=0.0, drift=drift, interval=interval, timeout=timeout))

    def campaign(
        self, name: str, value: str, ttl: float = DEFAULT_TTL, wait: float = 0.0, *, owner: str = "", lease: AsyncLease | None = None,
        drift: float | None = None, interval: float | None = None, timeout: float | None = None,
    ) -> _HoldCall:
        """Campaign in election ``name`` with ``value`` (see Client.campaign): an
        AsyncLeadership once elected."""
        core.check_name("election", name)
        core.check_ttl(ttl)
        core.check_wait(wait)

        async def make() -> AsyncHeld:
            h = await self._hold("election", ELECTIONS, name, {"value": value}, ttl=ttl, wait=wait, owner=owner, mode="", lease=lease, max_hold=0.0,
                                 drift=drift, interval=interval, timeout=timeout)
            assert isinstance(h, AsyncLeadership)
            h.value = value
            return h

        return _HoldCall(make)

    # --- reads ------------------------------------------------------------------------------

    async def _get(self, route: str, name: str, timeout: float | None, wait_index: int = 0, wait: float = 0.0, stale: bool = False) -> Any:
        out, _ = await self._call(core.read_request(route, name, wait_index, wait, stale), timeout, extra=wait)
        return out

    async def status(self, name: str, *, wait_index: int = 0, wait: float = 0.0, stale: bool = False, timeout: float | None = None) -> LockStatus:
        """Read lock ``name`` (see Client.status)."""
        return core.lock_status_of(await self._get(LOCKS, name, timeout, wait_index, wait, stale))

    async def semaphore_status(self, name: str, *, wait_index: int = 0, wait: float = 0.0, stale: bool = False, timeout: float | None = None) -> SemaphoreStatus:
        return core.semaphore_status_of(await self._get(SEMAPHORES, name, timeout, wait_index, wait, stale))

    async def election_status(self, name: str, *, wait_index: int = 0, wait: float = 0.0, stale: bool = False, timeout: float | None = None) -> ElectionStatus:
        return core.election_status_of(await self._get(ELECTIONS, name, timeout, wait_index, wait, stale))

    async def history(self, name: str, *, stale: bool = False, timeout: float | None = None) -> History:
        return core.history_of(await self._get(HISTORY, name, timeout, stale=stale))

    async def cluster(self, timeout: float | None = None) -> dict[str, Any]:
        out, _ = await self._call(Request(op="cluster", method="GET", path="/v1/cluster"), timeout)
        return dict(out)

    async def observe(self, name: str, *, duration: float | None = None, chunk: float = core.OBSERVE_WAIT) -> AsyncIterator[ElectionStatus]:
        """Yield election ``name``'s state now and at every change of leader or value
        (blocking reads), for ``duration`` seconds (forever when None): ``async for``."""
        end = None if duration is None else time.monotonic() + duration
        st = await self.election_status(name)
        yield st
        idx = st.modify_index
        backoff = 0.05
        while end is None or time.monotonic() < end:
            w = chunk if end is None else max(min(chunk, end - time.monotonic()), 0.001)
            try:
                st = await self.election_status(name, wait_index=idx, wait=w)
            except InvalidRequest:
                raise
            except RaftlockError:
                await asyncio.sleep(core.upper_half(backoff))
                backoff = min(2 * backoff, 1.0)
                continue
            backoff = 0.05
            if st.modify_index > idx:
                idx = st.modify_index
                yield st

    async def watch(self, prefix: str = "", *, from_index: int = 0) -> AsyncWatch:
        """Follow the lock events under ``prefix`` (see Client.watch): ``async for event in
        await client.watch("accounts/")``. The first connection is made here: an index
        older than the node holds raises IndexCompacted."""
        w = AsyncWatch(self._t, prefix, from_index)
        await w._open()
        return w


class AsyncWatch:
    """The asyncio twin of raftlock.Watch: an async iterator of events that reconnects, with
    the last event ID, to the next endpoint; IndexCompacted when the node reached no longer
    holds the events since (read the state, then watch again from now on)."""

    def __init__(self, transport: AsyncTransport, prefix: str, from_index: int) -> None:
        if from_index < 0:
            raise ValueError("from_index must be 0 (from now on) or an entry index")
        self._t = transport
        self.prefix = prefix
        self._from = from_index
        self._parser = EventStream(last=from_index - 1 if from_index > 0 else None)
        self._ep = transport.preferred()
        self._stream: AsyncStream | None = None
        self._closed = False
        self.error: RaftlockError | None = None

    async def _open(self) -> None:
        self._stream = await self._t.open_stream(self._ep, core.events_request(self.prefix, self._from, None))

    @property
    def last_index(self) -> int:
        return self._parser.last or 0

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events()

    async def _events(self) -> AsyncIterator[Event]:
        backoff = 0.05
        while not self._closed:
            stream = self._stream
            got = False
            if stream is not None:
                try:
                    async for piece in stream.pieces():
                        for ev in self._parser.feed(piece):
                            got = True
                            yield ev
                except RaftlockError as err:
                    if not core.retryable(err):
                        self.error, self._closed = err, True
                        raise
                except (OSError, BrokenAnswer):
                    pass
                stream.close()
                self._stream = None
            if self._closed:
                return
            if got:
                backoff = 0.05
            await asyncio.sleep(core.upper_half(backoff))
            backoff = min(2 * backoff, 1.0)
            self._ep = (self._ep + 1) % len(self._t.endpoints)
            try:
                self._stream = await self._t.open_stream(self._ep, core.events_request(self.prefix, 0, self._parser.last))
            except RaftlockError as err:
                if not core.retryable(err):
                    self.error, self._closed = err, True
                    raise
            self._parser = EventStream(last=self._parser.last)

    def close(self) -> None:
        """End the watch (an iteration waiting for an event returns)."""
        self._closed = True
        if self._stream is not None:
            self._stream.close()

    def __repr__(self) -> str:
        return f"<raftlock.aio.AsyncWatch prefix={self.prefix!r} last_index={self.last_index}>"


class Lock:
    """The asyncio twin of raftlock.Lock: a reusable lock object over ``AsyncClient.lock``:
    ``await lock.acquire(blocking=True, timeout=None)``, ``await lock.release()``,
    ``lock.locked()``, ``async with lock:``."""

    def __init__(self, client: AsyncClient, name: str, ttl: float = DEFAULT_TTL, *, mode: str = "exclusive", owner: str = "", lease: AsyncLease | None = None) -> None:
        core.check_name("lock", name)
        core.check_ttl(ttl)
        core.check_mode(mode)
        self._client, self.name, self._ttl, self._mode, self._owner, self._lease = client, name, ttl, mode, owner, lease
        self._held: AsyncHeld | None = None

    @property
    def token(self) -> int:
        return self._held.token if self._held is not None else 0

    async def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if self._held is not None and not self._held.lost.is_set():
            raise InvalidRequest(f"acquire {self.name!r}: this Lock already holds it; release it first")
        wait = 0.0 if not blocking else (1e9 if timeout is None or timeout == -1 else float(timeout))
        try:
            self._held = await self._client.lock(self.name, self._ttl, wait, mode=self._mode, owner=self._owner, lease=self._lease)
        except (LockHeld, WaitTimeout):
            return False
        return True

    async def release(self) -> None:
        h, self._held = self._held, None
        if h is None:
            raise NotLocked(f"release {self.name!r}: this Lock holds nothing")
        await h.release()

    def locked(self) -> bool:
        return self._held is not None and not self._held.lost.is_set()

    async def __aenter__(self) -> Lock:
        await self.acquire()
        return self

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        h, self._held = self._held, None
        if h is not None:
            await h.__aexit__(et, ev, tb)

    def __repr__(self) -> str:
        return f"<raftlock.aio.Lock {self.name!r} locked={self.locked()} token={self.token}>"


__all__ = [
    "AsyncClient",
    "AsyncHeld",
    "AsyncHeldSet",
    "AsyncLeadership",
    "AsyncLease",
    "AsyncLostSignal",
    "AsyncTransport",
    "AsyncWatch",
    "Lock",
]
