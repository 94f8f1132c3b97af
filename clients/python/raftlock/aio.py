"""raftlock for asyncio: ``AsyncClient`` and ``async with client.lock(...)`` on asyncio
streams (standard library only).

    from raftlock.aio import AsyncClient

    async with AsyncClient(["http://127.0.0.1:7001", "http://127.0.0.1:7002"]) as client:
        async with client.lock("accounts/A", ttl=10, wait=30) as held:
            if held.lost.is_set():
                raise SystemExit("lock lost")
            await charge(token=held.token)

The semantics are the threaded client's (clients/README.md): names checked before sending,
retries on the other endpoints until the call's timeout, ``Unreachable`` naming every
endpoint, a 2 s connect timeout per endpoint, ``held.lost`` that reads set once safe-until
has passed, ``LeaseLost`` on leaving a block whose lock was lost, and ``close()`` revoking
every lease still open. One task per client renews every lease of the client. Plain HTTP
only in this module: use the threaded client for TLS.
"""

from __future__ import annotations

import asyncio
import json
import random
import secrets
import time
from types import TracebackType
from typing import Any

from ._http import DIAL_TIMEOUT, LEADER_HEADER, given_or_environment, name_path, parse_endpoints, parse_retry_after, retryable, upper_half, ms
from .errors import (
    InvalidRequest,
    LeaseLost,
    LeaseNotFound,
    NotHolder,
    NotLocked,
    RaftlockError,
    ServerError,
    Unavailable,
    Unreachable,
    WaitTimeout,
    error_for,
)
from .lease import default_drift_margin

_WAIT_CHUNK = 240.0


def _check_seconds(what: str, v: object) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InvalidRequest(f"{what} {v!r} is a {type(v).__name__}; durations are seconds as a number (int or float), such as 10 or 0.5")


class AsyncLostSignal:
    """A lease's loss signal: ``is_set()`` is true once the lease is lost, closed, or its
    safe-until (time.monotonic()) has passed, even before the keepalive task noticed."""

    def __init__(self, lease: AsyncLease) -> None:
        self._lease = lease
        self._ev = asyncio.Event()

    def is_set(self) -> bool:
        if self._ev.is_set():
            return True
        if time.monotonic() >= self._lease._safe_until:
            self._lease._lose(LeaseLost("its safe time passed without an answered keepalive"))
            return True
        return False

    async def wait(self) -> bool:
        """Wait until the lease is lost (by safe-until at the latest)."""
        while not self.is_set():
            try:
                await asyncio.wait_for(self._ev.wait(), max(self._lease._safe_until - time.monotonic(), 0) + 0.001)
            except asyncio.TimeoutError:
                pass
        return True


class AsyncLease:
    """A lease kept alive by its client's keepalive task. ``id`` is a secret."""

    def __init__(self, client: AsyncClient, lease_id: str, ttl: float, sent: float) -> None:
        self._client = client
        self.id = lease_id
        self.ttl = ttl
        self.drift = default_drift_margin(ttl)
        self.interval = ttl / 3
        self._safe_until = sent + ttl - self.drift
        self.error: RaftlockError | None = None
        self.lost = AsyncLostSignal(self)
        self._closed = False

    def safe_until(self) -> float:
        return self._safe_until

    def observe(self, sent: float) -> bool:
        if self.lost.is_set():
            return False
        self._safe_until = max(self._safe_until, sent + self.ttl - self.drift)
        return True

    def _lose(self, err: RaftlockError) -> None:
        if self.error is not None:
            return
        self.error = err
        self._safe_until = min(self._safe_until, time.monotonic())
        self.lost._ev.set()
        self._client._leases.discard(self)

    async def close(self) -> None:
        """Stop renewing and revoke the lease (its locks are freed at once)."""
        if self._closed:
            return
        self._closed = True
        self._lose(LeaseLost("the lease was closed", code="lease_closed"))
        try:
            await self._client.revoke(self.id, timeout=self._client.timeout)
        except LeaseNotFound:
            pass

    def __repr__(self) -> str:
        return f"<raftlock.aio.AsyncLease ttl={self.ttl}s lost={self.lost.is_set()}>"


class AsyncHeld:
    """A lock held with a lease of its own; ``async with`` releases it and raises LeaseLost
    on leaving a block whose lock was lost (the block's own exception wins)."""

    def __init__(self, client: AsyncClient, name: str, token: int, lease: AsyncLease) -> None:
        self._client = client
        self.name = name
        self.token = token
        self.lease = lease
        self.lost = lease.lost
        self._held = True

    def safe_until(self) -> float:
        return self.lease.safe_until()

    async def release(self) -> None:
        if not self._held:
            raise NotLocked(f"release {self.name!r}: nothing is held")
        self._held = False
        try:
            await self._client._call("DELETE", name_path("/v1/locks/", self.name), {"lease_id": self.lease.id, "token": self.token}, f"release {self.name!r}", [self.lease.id])
        finally:
            await self.lease.close()

    async def __aenter__(self) -> AsyncHeld:
        return self

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        why = self.lease.error
        lost = self.lost.is_set() and (why is None or why.code != "lease_closed")
        why = self.lease.error
        try:
            if self._held:
                await self.release()
        except (LeaseNotFound, NotHolder):
            lost = True  # the cluster says the grant was gone before the block ended
        except RaftlockError:
            if et is None and not lost:
                raise
        if lost and et is None:
            raise LeaseLost(f"lock {self.name!r} was lost inside the async with block ({why.message if why else 'its safe time passed'})")

    def __repr__(self) -> str:
        return f"<raftlock.aio.AsyncHeld {self.name!r} token={self.token} lost={self.lost.is_set()}>"


class _LockCall:
    """What ``client.lock(...)`` returns: awaitable (an AsyncHeld) and an async context manager."""

    def __init__(self, client: AsyncClient, name: str, ttl: float, wait: float) -> None:
        self._client, self._name, self._ttl, self._wait = client, name, ttl, wait
        self._held: AsyncHeld | None = None

    def __await__(self):  # type: ignore[no-untyped-def]
        return self._client._lock(self._name, self._ttl, self._wait).__await__()

    async def __aenter__(self) -> AsyncHeld:
        self._held = await self._client._lock(self._name, self._ttl, self._wait)
        return self._held

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        assert self._held is not None
        await self._held.__aexit__(et, ev, tb)


class AsyncClient:
    """An asyncio client of a raftlock cluster (plain HTTP/1.1 on asyncio streams).

    Args:
        endpoints: base URLs, a list or a comma-separated string (default RAFTLOCK_ENDPOINTS).
        token: an ACL token's secret (default RAFTLOCK_TOKEN).
        timeout: bounds one attempt on one endpoint, besides a server-side wait.
        call_timeout: bounds a whole call with its retries (default 30 s).
    """

    def __init__(self, endpoints: list[str] | str | None = None, token: str | None = None, *, timeout: float = 5.0, call_timeout: float = 30.0) -> None:
        endpoints, token = given_or_environment(endpoints, token)
        self._eps = parse_endpoints(endpoints, False)
        if any(e.scheme != "http" for e in self._eps):
            raise ValueError("raftlock.aio speaks plain HTTP only; use raftlock.Client for TLS")
        self._auth = f"Bearer {token.strip()}" if token and token.strip() else None
        self.timeout = timeout
        self.call_timeout = call_timeout
        self._preferred = 0
        self._leases: set[AsyncLease] = set()
        self._task: asyncio.Task[None] | None = None

    @property
    def endpoints(self) -> list[str]:
        return [e.base for e in self._eps]

    def __repr__(self) -> str:
        return f"<raftlock.aio.AsyncClient endpoints={self.endpoints!r}>"

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Revoke every lease still open (within ``timeout`` in all), stop the keepalive task."""
        leases = list(self._leases)
        if leases:
            await asyncio.wait([asyncio.ensure_future(l.close()) for l in leases], timeout=self.timeout)
        for l in leases:
            l._lose(LeaseLost("the client was closed", code="lease_closed"))
        if self._task is not None:
            self._task.cancel()
            self._task = None

    # --- one attempt and the retry loop ------------------------------------------------

    async def _attempt(self, i: int, method: str, path: str, body: Any, timeout: float, op: str, hide: list[str]) -> tuple[float, Any]:
        e = self._eps[i]
        data = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
        head = [f"{method} {e.prefix}{path} HTTP/1.1", f"Host: {e.host}:{e.port}", "Accept: application/json", "Connection: close", f"Content-Length: {len(data)}"]
        if body is not None:
            head.append("Content-Type: application/json")
        if self._auth:
            head.append(f"Authorization: {self._auth}")
        sent = time.monotonic()

        def unavailable(what: str, dialed: bool) -> Unavailable:
            for s in hide:
                if s:
                    what = what.replace(s, "[redacted]")
            err = Unavailable(f"{op}: {e.base}: {what}")
            err.sent, err.dialed = sent, dialed  # type: ignore[attr-defined]
            return err

        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(e.host, e.port), min(DIAL_TIMEOUT, timeout))
        except (OSError, asyncio.TimeoutError) as exc:
            raise unavailable(repr(exc) if not isinstance(exc, asyncio.TimeoutError) else f"connect timed out after {min(DIAL_TIMEOUT, timeout)}s", True) from None
        try:
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
            raw = await asyncio.wait_for(reader.read(), timeout)
        except (OSError, asyncio.TimeoutError) as exc:
            raise unavailable(repr(exc) if not isinstance(exc, asyncio.TimeoutError) else "timed out", False) from None
        finally:
            writer.close()
        hdr, _, payload = raw.partition(b"\r\n\r\n")
        lines = hdr.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            raise unavailable("the answer broke off", False) from None
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        if headers.get("transfer-encoding", "").lower() == "chunked":
            payload = _dechunk(payload)
        leader = headers.get(LEADER_HEADER.lower())
        if leader:
            for j, x in enumerate(self._eps):
                if x.hostport == leader:
                    self._preferred = j
        elif status < 500:
            self._preferred = i
        if 200 <= status < 300:
            try:
                return sent, json.loads(payload) if payload else {}
            except ValueError:
                raise ServerError(f"{op}: {e.base} answered {status} with a body that is not the API's JSON") from None
        try:
            eb = json.loads(payload)
            code, msg = eb["error"]["code"], eb["error"].get("message", "")
        except (ValueError, KeyError, TypeError):
            code, msg = "", ""
        if not code:
            if status in (502, 503, 504):
                raise unavailable(f"answered {status}", False)
            raise ServerError(f"{op}: {e.base} answered {status}")
        for s in hide:
            if s:
                msg = msg.replace(s, "[redacted]")
        err = error_for(code, f"{op}: {msg}", parse_retry_after(headers.get("retry-after")))
        err.sent = sent  # type: ignore[attr-defined]
        raise err

    async def _call(self, method: str, path: str, body: Any, op: str, hide: list[str], *, wait: float = 0.0, timeout: float | None = None) -> tuple[Any, float, float]:
        """Send until answered (see the threaded Transport.do); returns (answer, sent, first sent)."""
        deadline = time.monotonic() + (self.call_timeout if timeout is None else timeout) + wait
        seen: dict[str, str] = {}
        backoff, first = 0.05, 0.0
        last: RaftlockError | None = None
        attempts = 0
        while True:
            n = len(self._eps)
            start = self._preferred
            throttled = 0.0
            for k in range(n):
                i = (start + k) % n
                attempts += 1
                t = max(min(self.timeout + wait, deadline - time.monotonic()), 0.001)
                try:
                    sent, out = await self._attempt(i, method, path, body, t, op, hide)
                except RaftlockError as err:
                    if attempts == 1:
                        first = getattr(err, "sent", time.monotonic())
                    if not retryable(err):
                        raise
                    last = err
                    seen[self._eps[i].base] = err.message.split(f"{self._eps[i].base}: ", 1)[-1]
                    if err.code == "too_many_requests":
                        throttled = max(err.retry_after or 0.0, 0.001)
                        break
                    self._preferred = (i + 1) % n
                    if time.monotonic() >= deadline:
                        break
                    continue
                return out, sent, first if attempts > 1 else sent
            assert last is not None
            pause = max(upper_half(backoff), throttled)
            if time.monotonic() + pause >= deadline:
                if isinstance(last, Unavailable):
                    parts = "; ".join(f"{e.base}: {seen.get(e.base, 'not tried before the deadline')}" for e in self._eps)
                    raise Unreachable(f"{op}: no endpoint answered before the deadline ({parts})", errors=seen)
                raise last
            await asyncio.sleep(pause)
            backoff = min(2 * backoff, 1.0)

    # --- leases and locks ----------------------------------------------------------------

    async def revoke(self, lease_id: str, timeout: float | None = None) -> None:
        """Revoke a lease (its locks are freed at once)."""
        await self._call("POST", "/v1/leases/revoke", {"lease_id": lease_id}, "revoke", [lease_id], timeout=timeout)

    async def status(self, name: str, timeout: float | None = None) -> dict[str, Any]:
        """Read lock ``name`` (the API's LockStatus object)."""
        out, _, _ = await self._call("GET", name_path("/v1/locks/", name), None, f"status {name!r}", [], timeout=timeout)
        return dict(out)

    def _start(self, lid: str, ttl: float, sent: float) -> AsyncLease:
        lease = AsyncLease(self, lid, ttl, sent)
        self._leases.add(lease)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._keepalive_loop())
        return lease

    async def _keepalive_loop(self) -> None:
        """Renew every lease of the client with one batch request per pass, at a third of the
        shortest TTL (jittered); a lease whose safe-until passes is lost."""
        while self._leases:
            live = [l for l in list(self._leases) if not l.lost.is_set()]
            if not live:
                break
            period = min(l.interval for l in live)
            await asyncio.sleep(period - random.uniform(0, period / 10))
            live = [l for l in list(self._leases) if not l.lost.is_set()]
            if not live:
                continue
            deadline = max(l.safe_until() for l in live) - time.monotonic()
            try:
                out, sent, _ = await self._call("POST", "/v1/leases/keepalive", {"lease_ids": [l.id for l in live]}, "batch keepalive", [l.id for l in live], timeout=max(deadline, 0.001))
            except RaftlockError:
                continue  # retried next pass; each lease is lost at its own safe-until
            gone = set(out.get("not_found") or [])
            for l in live:
                if l.id in gone:
                    l._lose(LeaseLost("the cluster no longer knows the lease (it expired or was revoked)"))
                else:
                    l.observe(sent)

    def lock(self, name: str, ttl: float = 10.0, wait: float = 0.0) -> _LockCall:
        """Take lock ``name`` with a lease of its own kept alive in the background: ``await
        client.lock(...)`` or ``async with client.lock(...) as held``. ``wait`` 0 raises
        LockHeld at once when held; otherwise the call waits up to ``wait`` seconds in the
        server's queue (WaitTimeout when it ends first)."""
        name_path("/v1/locks/", name)  # the name rule, before anything is sent
        _check_seconds("TTL", ttl)
        _check_seconds("wait", wait)
        if not 0.5 <= ttl <= 86400:
            raise InvalidRequest(f"TTL {ttl}s is outside 0.5s to 86400s", code="invalid_ttl")
        if wait < 0:
            raise InvalidRequest(f"wait {wait}s is negative")
        return _LockCall(self, name, ttl, wait)

    async def _lock(self, name: str, ttl: float, wait: float) -> AsyncHeld:
        path = name_path("/v1/locks/", name)
        if wait <= 0:
            rid = secrets.token_hex(16)  # one per call: a retry gets the first attempt's grant
            out, _, first = await self._call("PUT", path, {"ttl_ms": ms(ttl), "request_id": rid}, f"acquire {name!r}", [rid])
            return AsyncHeld(self, name, int(out["token"]), self._start(out["lease_id"], out["ttl_ms"] / 1000, first))
        out, sent, _ = await self._call("POST", "/v1/leases", {"ttl_ms": ms(ttl)}, "create lease", [])
        lease = self._start(out["lease_id"], out["ttl_ms"] / 1000, sent)
        end = time.monotonic() + wait
        try:
            while True:
                if lease.lost.is_set():
                    raise LeaseLost(f"acquire {name!r}: the lease was lost while waiting")
                left = end - time.monotonic()
                if left <= 0:
                    raise WaitTimeout(f"acquire {name!r}: the wait ended")
                chunk = min(left, _WAIT_CHUNK)
                try:
                    g, gsent, _ = await self._call("PUT", path, {"lease_id": lease.id, "wait_ms": ms(chunk)}, f"acquire {name!r}", [lease.id], wait=chunk)
                except WaitTimeout:
                    continue
                if not lease.observe(gsent):
                    raise LeaseLost(f"acquire {name!r}: the lease was lost as it was granted")
                return AsyncHeld(self, name, int(g["token"]), lease)
        except BaseException:
            try:
                await lease.close()
            except RaftlockError:
                pass
            raise


def _dechunk(b: bytes) -> bytes:
    out = bytearray()
    while b:
        size, _, rest = b.partition(b"\r\n")
        n = int(size.split(b";")[0] or b"0", 16)
        if n == 0:
            break
        out += rest[:n]
        b = rest[n + 2 :]
    return bytes(out)


__all__ = ["AsyncClient", "AsyncHeld", "AsyncLease", "AsyncLostSignal"]
